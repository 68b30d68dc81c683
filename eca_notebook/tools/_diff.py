"""Unified diffs for the ``fileChange`` details shown to the user *before* a file-changing call is approved."""

from __future__ import annotations

import difflib
from pathlib import Path

from ..protocol import FileChangeHunk, JsonObject
from ._hunks import Hunk, diff_hunks
from ._output import split_lines
from ._paths import display
from .base import ToolContext

__all__ = ["diff_label", "file_change_details", "hunk_details", "unified_diff"]

_NO_EOL = "\\ No newline at end of file\n"


def diff_label(path: Path, ctx: ToolContext, prefix: str) -> str:
    """``a/src/x.py`` for a path inside the root (git style), the absolute path otherwise."""
    shown = display(path, ctx)
    return shown if Path(shown).is_absolute() else f"{prefix}{shown}"


def unified_diff(old: str, new: str, old_label: str, new_label: str, context: int = 3) -> tuple[str, int, int]:
    """``(diff text, lines added, lines removed)``; a missing final newline is marked the way git marks it.

    A new file is a diff from the empty string (``@@ -0,0 +1,N @@``). Identical contents give an empty diff.
    """
    out: list[str] = []
    for line in difflib.unified_diff(
        split_lines(old), split_lines(new), old_label, new_label, n=context
    ):
        out.append(line if line.endswith("\n") else line + "\n" + _NO_EOL)
    # The first two lines are the ---/+++ headers; every other +/- line is a body line (hunk headers start with @).
    added = sum(1 for line in out[2:] if line.startswith("+"))
    removed = sum(1 for line in out[2:] if line.startswith("-"))
    return "".join(out), added, removed


def file_change_details(
    path: Path, old: str, new: str, ctx: ToolContext, *, old_path: Path | None = None, hunks: bool = False
) -> JsonObject:
    """The ``fileChange`` details object: ``{type, path, diff, linesAdded, linesRemoved}`` (path absolute), and
    ``hunks`` for a tool that can apply part of the change (``hunks=True``; see ``_hunks.py``)."""
    diff, added, removed = unified_diff(
        old, new, diff_label(old_path or path, ctx, "a/"), diff_label(path, ctx, "b/")
    )
    details: JsonObject = {"type": "fileChange", "path": str(path), "diff": diff, "linesAdded": added,
                               "linesRemoved": removed}
    if hunks:
        details["hunks"] = [*hunk_details(diff_hunks(old, new))]
    return details


def hunk_details(hunks: list[Hunk], applied: set[str] | None = None) -> list[JsonObject]:
    """The wire form of *hunks* (``FileChangeHunk``); with *applied*, each says whether it was written."""
    return [FileChangeHunk(id=h.id, old_start=h.old_start, old_lines=h.old_lines, new_start=h.new_start,
                           new_lines=h.new_lines, text=h.text, lines_added=h.lines_added,
                           lines_removed=h.lines_removed, applied=None if applied is None else h.id in applied,
                           ).dump() for h in hunks]
