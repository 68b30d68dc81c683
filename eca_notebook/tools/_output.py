"""Truncation of what goes back to the LLM.

Tool output is paid for in context window. Keeping the head (rather than failing) gives the model something to act
on, and the note tells it *how much* it did not see and how to ask for the rest.
"""

from __future__ import annotations

import re

from .._text import human_size

__all__ = ["split_lines", "truncate_for_llm"]

DEFAULT_HINT = "use line_offset/limit or a narrower pattern"
_LINES = re.compile(r"[^\n]*\n|[^\n]+")


def split_lines(text: str) -> list[str]:
    """Lines with their "\\n" kept, split on "\\n" only (str.splitlines also breaks on form feeds and U+2028,
    which editors and diff tools do not)."""
    return _LINES.findall(text)


def _count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def truncate_for_llm(
    text: str,
    max_lines: int,
    max_bytes: int,
    *,
    hint: str = DEFAULT_HINT,
    total_lines: int | None = None,
    total_bytes: int | None = None,
) -> str:
    """Keep the head of `text` within `max_lines` lines and `max_bytes` UTF-8 bytes, appending a note when cut.

    `total_lines`/`total_bytes` describe the original when `text` is already only a head of it (e.g. a bounded
    capture of a process's output), so the note reports the real sizes. Cuts happen at line boundaries unless a
    single line is longer than the whole byte budget; multi-byte characters are never split.
    """
    data_len = len(text.encode("utf-8"))
    n_lines = _count_lines(text)
    real_lines = max(total_lines or 0, n_lines)
    real_bytes = max(total_bytes or 0, data_len)
    already_cut = real_lines > n_lines or real_bytes > data_len
    if n_lines <= max_lines and data_len <= max_bytes and not already_cut:
        return text

    lines = split_lines(text)[:max_lines]
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8"))
        if used + size > max_bytes:
            if not kept:  # a single over-long first line: cut inside it, on a character boundary
                kept.append(line.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore"))
                used = max_bytes
            break
        kept.append(line)
        used += size
    head = "".join(kept)
    shown_lines = _count_lines(head)
    note = (
        f"[output truncated: showing {shown_lines} of {real_lines} lines / "
        f"{human_size(len(head.encode('utf-8')))} of {human_size(real_bytes)}; {hint}]"
    )
    if head and not head.endswith("\n"):
        head += "\n"
    return f"{head}\n{note}"
