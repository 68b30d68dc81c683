"""Completion outside a chat: inline completion (ghost text in the editor) and rewrite of a selection.

``_inline`` answers ``completion/inline`` (a fill-in-the-middle prompt around the cursor, trimmed to what fits);
``_rewrite`` answers ``rewrite/prompt`` (a selection rewritten by the model, streamed as a diff); ``_text`` holds the
text windows and trimming they share. It sits above ``turn`` (a rewrite's tool calls run through the same runner).
"""

from __future__ import annotations

from ._inline import InlineCompleter
from ._rewrite import Rewriter

__all__ = [
    "InlineCompleter",
    "Rewriter",
]
