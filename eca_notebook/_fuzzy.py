"""The fuzzy match of every completion list (``/`` commands, ``@`` contexts, MCP prompts and resources).

``rms`` finds ``repo-map-show``: the query's characters appear in the text in order, not necessarily next to each
other. One function so every list a user types into matches the same way. Callers fold case (and whatever else) on
both sides first. (The workspace file index has its own regex-based scorer: it ranks half a million paths.)
"""

from __future__ import annotations

__all__ = ["is_subsequence"]


def is_subsequence(needle: str, hay: str) -> bool:
    """Whether the characters of *needle* occur in *hay* in the same order (``""`` is in everything)."""
    pos = 0
    for ch in needle:
        pos = hay.find(ch, pos) + 1
        if pos == 0:
            return False
    return True
