"""ACP ``diff`` tool-call content (``{path, oldText, newText}``) from what the engine shows for a file change.

The engine's ``toolCallRun`` carries the tool's arguments and a unified diff, not the texts. ACP clients render a
diff from the two texts, so we rebuild them without touching the file (which may be changing as we speak):

* ``write_file``: the new text is the ``content`` argument; the old text is that content with the unified diff
  applied in reverse — exact, and independent of when we look at the disk.
* ``edit_file``: the replaced and replacement snippets (``original_content`` / ``new_content``), the same shape
  other ACP agents send for their edit tools.
* ``notebook_edit_cell``: the cell's whole old and new source (``path`` is the notebook), rebuilt the same way.
* ``delete_file``: the file's whole text as the old text and an empty new text (its diff removes every line, to
  ``/dev/null``); a binary or empty file, whose diff has no hunk, is an empty old text.
* anything else with a diff: the hunks' old and new sides.
"""

from __future__ import annotations

import re

from ..protocol import JsonObject
from ._schema import DiffContent

__all__ = ["diff_contents", "hunks", "reverse_apply"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_LINES = re.compile(r"[^\n]*\n|[^\n]+")


def _split(text: str) -> list[str]:
    return _LINES.findall(text)


Hunk = tuple[int, int, int, int, list[tuple[str, str]]]


def hunks(diff: str) -> list[Hunk]:
    """``(old_start, old_count, new_start, new_count, [(tag, line)])`` for each hunk; ``line`` keeps its newline
    unless a ``\\ No newline at end of file`` marker follows it."""
    out: list[Hunk] = []
    body: list[tuple[str, str]] | None = None
    for line in _split(diff):
        match = _HUNK.match(line)
        if match:
            a, b, c, d = match.groups()
            body = []
            out.append((int(a), int(b) if b is not None else 1, int(c), int(d) if d is not None else 1, body))
            continue
        if body is None:
            continue  # the ---/+++ headers
        if line.startswith("\\"):
            if body:
                tag, text = body[-1]
                body[-1] = (tag, text.removesuffix("\n"))
            continue
        if line[:1] in (" ", "-", "+"):
            body.append((line[0], line[1:]))
    return out


def reverse_apply(new: str, diff: str) -> str | None:
    """The text `diff` was computed from, given the text it produced; None when they do not fit together."""
    lines = _split(new)
    out: list[str] = []
    pos = 0
    parsed = hunks(diff)
    if not parsed:
        return None
    for _, _, new_start, new_count, body in parsed:
        start = new_start if new_count == 0 else new_start - 1
        if start < pos or start > len(lines):
            return None
        out.extend(lines[pos:start])
        pos = start
        for tag, text in body:
            if tag in (" ", "+"):
                if pos >= len(lines) or lines[pos] != text:
                    return None
                pos += 1
            if tag in (" ", "-"):
                out.append(text)
    out.extend(lines[pos:])
    return "".join(out)


def _is_creation(diff: str) -> bool:
    parsed = hunks(diff)
    return bool(parsed) and parsed[0][0] == 0 and parsed[0][1] == 0


def _diff(path: str, old: str | None, new: str) -> DiffContent:
    if old is None:  # absent (not null) for a new file: the schema's "None for new files"
        return {"type": "diff", "path": path, "newText": new}
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def diff_contents(tool: str, arguments: JsonObject, details: JsonObject | None) -> list[DiffContent]:
    """ACP ``diff`` tool-call contents for a call whose details are a ``fileChange``; [] when there is none."""
    if not details or details.get("type") != "fileChange":
        return []
    path = str(details.get("path") or "")
    diff = str(details.get("diff") or "")
    if not path:
        return []
    if tool == "delete_file":
        return [_diff(path, reverse_apply("", diff) or "", "")]
    content, source, new_content = arguments.get("content"), arguments.get("source"), arguments.get("new_content")
    if tool == "write_file" and isinstance(content, str):
        new = content
        if _is_creation(diff):
            return [_diff(path, None, new)]
        old = reverse_apply(new, diff)
        if old is not None:
            return [_diff(path, old, new)]
    if tool == "notebook_edit_cell" and isinstance(source, str):
        # a notebook cell: its whole old and new source (the cell diff compares them newline-terminated)
        new = source
        old = reverse_apply(new if not new or new.endswith("\n") else new + "\n", diff)
        if old is not None:
            return [_diff(path, old if new.endswith("\n") else old.removesuffix("\n"), new)]
    if tool == "edit_file" and isinstance(new_content, str):
        original = arguments.get("original_content")
        old = original if isinstance(original, str) and original else None
        return [_diff(path, old, new_content)]
    out = []
    for old_start, old_count, _, _, body in hunks(diff):
        old_side = "".join(text for tag, text in body if tag in (" ", "-"))
        new_side = "".join(text for tag, text in body if tag in (" ", "+"))
        creation = old_start == 0 and old_count == 0
        out.append(_diff(path, None if creation else old_side, new_side))
    return out
