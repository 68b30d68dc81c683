"""A coloured unified diff for ``fileChange`` details — what the user looks at before approving a change.

The HTML is built here (escaped line by line) rather than by a syntax highlighter: it must render the same in
JupyterLab, Notebook 7 and a static export, and follow the theme through the CSS classes of ``_style.py``.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ...protocol import JsonObject

__all__ = ["DiffView", "diff_counts", "render_diff_html"]

MAX_DIFF_LINES = 2000  # beyond this the widget shows a note; the full diff stays in the tool call's details


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed in a unified diff (headers excluded)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+++") or line.startswith("---"):
            continue
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def _line_class(line: str) -> str:
    if line.startswith("+++") or line.startswith("---"):
        return "eca-diff-line eca-diff-file"
    if line.startswith("@@"):
        return "eca-diff-line eca-diff-hunk"
    if line.startswith("+"):
        return "eca-diff-line eca-diff-add"
    if line.startswith("-"):
        return "eca-diff-line eca-diff-del"
    return "eca-diff-line"


def _shown_path(path: str) -> str:
    """Relative to the kernel's working directory (the notebook's folder) when inside it, as the user knows it."""
    if not path:
        return path
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def render_diff_html(details: JsonObject) -> str:
    """``details`` is a ``fileChange`` object: ``{path, diff, linesAdded, linesRemoved}``."""
    diff = str(details.get("diff") or "")
    added = details.get("linesAdded")
    removed = details.get("linesRemoved")
    if added is None or removed is None:
        added, removed = diff_counts(diff)
    path = html.escape(_shown_path(str(details.get("path") or "")))
    if details.get("cellId"):
        path += f" · cell {html.escape(str(details['cellId']))}"
    lines = diff.splitlines()
    shown = lines[:MAX_DIFF_LINES]
    body = "".join(f'<div class="{_line_class(line)}">{html.escape(line) or "&nbsp;"}</div>' for line in shown)
    if len(lines) > len(shown):
        body += f'<div class="eca-diff-line eca-note">… {len(lines) - len(shown)} more diff lines not shown</div>'
    if not diff.strip():
        body = '<div class="eca-diff-line eca-note">(no changes)</div>'
    head = (f'<div class="eca-diff-head">{path} <span class="eca-plus">+{added}</span> '
            f'<span class="eca-minus">−{removed}</span></div>')
    return f'<div class="eca-diff">{head}{body}</div>'


def DiffView(details: JsonObject) -> Any:  # noqa: N802 - a widget factory reads like a class
    """An ``ipywidgets.HTML`` showing the diff."""
    import ipywidgets as widgets

    return widgets.HTML(value=render_diff_html(details))
