"""The session stream's automatic context: what an editor sends with each message (``client.user_message.context``)
and between them (``client.context_update``), turned into the turn's contexts within a token budget.

* The selection of the active editor (or, without one, its visible range) and every mentioned file become the
  engine's own ``file`` contexts with line ranges, so they are read and rendered like any attached file.
* The rest — the active editor's place, diagnostics, terminal output, git state, mentioned symbols (their
  definition from ``engine.code_index`` when the retrieval index is there, else the lines around the given line),
  open editors — becomes one "Editor context" text, served to the engine's context renderer by
  :class:`EditorContextTexts` (a plug-in, the mechanism ACP uses for embedded resources).
* Priority when the budget is short: selection and diagnostics first, then mentions, terminal output, git state,
  and open editors last. What does not fit is named in the block ("Left out …").
* Paths must resolve inside the workspace: anything else is dropped with a note and never read.

Lines are 1-based (the spec's ``visible_range`` starts at 1), characters 0-based. Tokens are estimated as four
bytes each, like elsewhere in the engine.
"""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..plugins import TextContexts
from ..protocol import JsonObject
from ._stream_schema import EditorContext, FileMention, SymbolMention

__all__ = ["EDITOR_CONTEXT_SERVER", "EditorContextTexts", "RenderedContext", "merge_context", "render_context",
           "render_update"]

log = logging.getLogger(__name__)

EDITOR_CONTEXT_SERVER = "eca:editor-context"  # the pseudo-server of the editor-context block (not an MCP server)
BYTES_PER_TOKEN = 4
FILE_CONTEXT_CAP = 48 * 1024  # bytes the engine shows of one file context at most (its per-context limit)
SYMBOL_LINES = 12  # lines around a symbol's line when the retrieval index cannot say where its definition ends
TERMINAL_TAIL = 4000  # characters of a terminal's stdout / stderr kept (the end: where the failure is)
MIN_CUT_TOKENS = 100  # a text section is cut to fit only when at least this much budget is left


class EditorContextTexts(TextContexts):
    """Serves the editor-context blocks of the session stream's turns to the engine's context renderer
    (``mcpResource`` contexts of :data:`EDITOR_CONTEXT_SERVER`), for as long as the turn runs."""

    def __init__(self) -> None:
        super().__init__("session-stream-context", EDITOR_CONTEXT_SERVER)


def merge_context(base: EditorContext, updates: EditorContext) -> EditorContext:
    """*base* with every field *updates* sets replaced (``null`` clears one)."""
    return base.model_copy(update={name: getattr(updates, name) for name in updates.model_fields_set})


@dataclass
class RenderedContext:
    """A turn's automatic context: the engine's file contexts, the editor-context text, and what was dropped."""

    contexts: list[JsonObject] = field(default_factory=list)
    text: str = ""
    notes: list[str] = field(default_factory=list)


def _tokens(text: str) -> int:
    return len(text.encode("utf-8")) // BYTES_PER_TOKEN + 1


class _Workspace:
    """Paths from the client, resolved inside the workspace folders (or refused)."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = [Path(os.path.realpath(f)) for f in folders]
        self.root = self.folders[0] if self.folders else Path(os.path.realpath(Path.cwd()))

    def resolve(self, raw: str) -> Path | None:
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            path = self.root / path
        real = Path(os.path.realpath(path))
        if any(real == f or f in real.parents for f in self.folders):
            return real
        return None

    def show(self, path: Path) -> str:
        for folder in self.folders:
            if path == folder or folder in path.parents:
                return path.relative_to(folder).as_posix() or "."
        return str(path)


def _read_lines(path: Path, start: int, end: int) -> list[str] | None:
    """Lines *start*..*end* (1-based, inclusive) of a text file; None when it cannot be read as text."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            out = []
            for number, line in enumerate(f, start=1):
                if number > end:
                    break
                if number >= start:
                    out.append(line.rstrip("\n"))
            return out
    except (OSError, UnicodeDecodeError):
        return None


def _range_bytes(path: Path, start: int, end: int) -> int | None:
    lines = _read_lines(path, start, end)
    return None if lines is None else sum(len(line.encode("utf-8")) + 1 for line in lines)


@dataclass
class _Item:
    """One piece of context, in priority order: a file context the engine renders, or a section of the block."""

    label: str
    tokens: int
    text: str | None = None  # a section of the block
    context: JsonObject | None = None  # a file context
    cuttable: bool = False


async def _symbol_text(mention: SymbolMention, ws: _Workspace, code_index: Any, notes: list[str]) -> str | None:
    """A mentioned symbol's definition: from the retrieval index when it has one, else the lines around the given
    line of the given file."""
    where: tuple[Path, int, int] | None = None
    if code_index is not None:
        where = await _index_definition(code_index, mention.name, ws)
    if where is None and mention.file_path is not None:
        path = ws.resolve(mention.file_path)
        if path is None:
            notes.append(f"symbol {mention.name}: {mention.file_path} is outside the workspace (not read)")
            return None
        line = mention.line or 1
        where = (path, max(1, line - 2), line + SYMBOL_LINES)
    if where is None:
        return f"Symbol `{mention.name}` (no definition found)"
    path, start, end = where
    lines = _read_lines(path, start, end)
    if lines is None:
        return f"Symbol `{mention.name}` in {ws.show(path)} (the file could not be read)"
    body = "\n".join(lines)
    last = start + max(0, len(lines) - 1)
    return f"Symbol `{mention.name}` — {ws.show(path)} lines {start}-{last}:\n```\n{body}\n```"


async def _index_definition(code_index: Any, name: str, ws: _Workspace) -> tuple[Path, int, int] | None:
    """Where the retrieval index says *name* is defined (its API is asked defensively: it may be older or newer)."""
    search = getattr(code_index, "search_symbols", None)
    if search is None:
        return None
    try:
        found = search(name, limit=5)
        if inspect.isawaitable(found):
            found = await found
    except Exception as exc:  # noqa: BLE001 - the index is optional; the fallback is the client's line
        log.info("symbol lookup of %s failed: %s", name, exc)
        return None
    for hit in found or []:
        get = hit.get if isinstance(hit, dict) else (lambda key, h=hit: getattr(h, key, None))
        if get("name") not in (None, name):
            continue
        raw = get("path") or get("file_path")
        line = get("line") or get("start_line")
        if not raw or not isinstance(line, int):
            continue
        path = ws.resolve(str(raw))
        if path is None:
            continue
        end = get("end_line")
        end = end if isinstance(end, int) and end >= line else line + SYMBOL_LINES
        return path, line, min(end, line + 200)
    return None


def _diagnostics_text(context: EditorContext, ws: _Workspace, notes: list[str]) -> str | None:
    if not context.diagnostics:
        return None
    rank = {"error": 0, "warning": 1, "information": 2, "info": 2, "hint": 3}
    lines = []
    for d in sorted(context.diagnostics, key=lambda d: rank[d.severity]):
        path = ws.resolve(d.file_path)
        if path is None:
            notes.append(f"diagnostic for {d.file_path}: outside the workspace (dropped)")
            continue
        where = ws.show(path) + (f":{d.line}" if d.line is not None else "") + (
            f":{d.character}" if d.character is not None and d.line is not None else "")
        source = f" [{d.source}]" if d.source else ""
        lines.append(f"- {where} {d.severity}{source}: {d.message}")
    return "Diagnostics:\n" + "\n".join(lines) if lines else None


def _terminal_text(context: EditorContext) -> str | None:
    out = context.terminal_output
    if out is None:
        return None
    head = "Terminal output"
    if out.command:
        head += f" of `{out.command}`"
    if out.exit_code is not None:
        head += f" (exit code {out.exit_code})"
    parts = [head + ":"]
    for name, text in (("stdout", out.stdout), ("stderr", out.stderr)):
        if text:
            shown = text if len(text) <= TERMINAL_TAIL else "…" + text[-TERMINAL_TAIL:]
            parts.append(f"{name}:\n```\n{shown.rstrip()}\n```")
    return "\n".join(parts)


def _git_text(context: EditorContext) -> str | None:
    git = context.git_context
    if git is None:
        return None
    lines = ["Git:"]
    if git.branch:
        lines.append(f"- branch: {git.branch}")
    if git.staged_files:
        lines.append("- staged: " + ", ".join(git.staged_files[:100]))
    if git.modified_files:
        lines.append("- modified: " + ", ".join(git.modified_files[:100]))
    for commit in git.recent_commits[:10]:
        by = f" ({commit.author})" if commit.author else ""
        lines.append(f"- commit {commit.sha[:12]}{by}: {commit.message.splitlines()[0] if commit.message else ''}")
    return "\n".join(lines) if len(lines) > 1 else None


def _open_editors_text(context: EditorContext, ws: _Workspace, notes: list[str]) -> str | None:
    if not context.open_editors:
        return None
    lines = []
    for editor in context.open_editors:
        path = ws.resolve(editor.file_path)
        if path is None:
            notes.append(f"open editor {editor.file_path}: outside the workspace (dropped)")
            continue
        flags = [word for word, on in (("unsaved changes", editor.is_dirty), ("visible", editor.visible)) if on]
        lines.append(f"- {ws.show(path)}" + (f" ({', '.join(flags)})" if flags else ""))
    return "Open editors:\n" + "\n".join(lines) if lines else None


def _active_items(context: EditorContext, ws: _Workspace, notes: list[str]) -> list[_Item]:
    editor = context.active_editor
    if editor is None:
        return []
    path = ws.resolve(editor.file_path)
    if path is None:
        notes.append(f"active editor {editor.file_path}: outside the workspace (not read)")
        return []
    shown = ws.show(path)
    head = f"Active editor: {shown}" + (f" ({editor.language})" if editor.language else "")
    lines: tuple[int, int] | None = None
    if editor.selection is not None:
        start, end = editor.selection.start.line, editor.selection.end.line
        start, end = max(1, min(start, end)), max(1, max(start, end))
        head += f", selection lines {start}-{end}"
        lines = (start, end)
    if editor.visible_range is not None:
        head += f", visible lines {editor.visible_range.start}-{editor.visible_range.end}"
        if lines is None:
            lines = (max(1, editor.visible_range.start), max(1, editor.visible_range.end))
    items = [_Item("active editor", _tokens(head), text=head)]
    if lines is not None and path.is_file():
        size = _range_bytes(path, *lines)
        if size is not None:
            label = "selection" if editor.selection is not None else "visible range"
            items.append(_Item(f"{label} of {shown}", min(size, FILE_CONTEXT_CAP) // BYTES_PER_TOKEN + 20,
                               context={"type": "file", "path": str(path),
                                        "linesRange": {"start": lines[0], "end": lines[1]}}))
    return items


async def render_context(context: EditorContext, folders: list[Path], budget_tokens: int,
                         code_index: Any = None) -> RenderedContext:
    """The turn's contexts from the session's automatic context, within *budget_tokens*."""
    ws = _Workspace(folders)
    out = RenderedContext()
    items = _active_items(context, ws, out.notes)
    diagnostics = _diagnostics_text(context, ws, out.notes)
    if diagnostics:
        items.append(_Item("diagnostics", _tokens(diagnostics), text=diagnostics, cuttable=True))
    for mention in context.mentions or []:
        if isinstance(mention, FileMention):
            path = ws.resolve(mention.path)
            if path is None:
                out.notes.append(f"mention {mention.path}: outside the workspace (not read)")
            elif not path.exists():
                out.notes.append(f"mention {mention.path}: no such file")
            else:
                size = path.stat().st_size if path.is_file() else FILE_CONTEXT_CAP
                items.append(_Item(f"file {ws.show(path)}", min(size, FILE_CONTEXT_CAP) // BYTES_PER_TOKEN + 20,
                                   context={"type": "directory" if path.is_dir() else "file", "path": str(path)}))
        else:
            text = await _symbol_text(mention, ws, code_index, out.notes)
            if text:
                items.append(_Item(f"symbol {mention.name}", _tokens(text), text=text, cuttable=True))
    for label, text in (("terminal output", _terminal_text(context)), ("git context", _git_text(context)),
                        ("open editors", _open_editors_text(context, ws, out.notes))):
        if text:
            items.append(_Item(label, _tokens(text), text=text, cuttable=True))
    sections: list[str] = []
    left_out: list[str] = []
    used = 0
    for item in items:
        room = budget_tokens - used
        if item.tokens <= room:
            used += item.tokens
            if item.context is not None:
                out.contexts.append(item.context)
            else:
                sections.append(item.text or "")
        elif item.cuttable and item.text and room >= MIN_CUT_TOKENS:
            cut = item.text.encode("utf-8")[: (room - 20) * BYTES_PER_TOKEN].decode("utf-8", "ignore")
            sections.append(cut + f"\n[… {item.label} cut to fit the context budget]")
            used = budget_tokens
        else:
            left_out.append(item.label)
    if left_out:
        sections.append(f"Left out (over the editor-context budget of {budget_tokens} tokens): "
                        + ", ".join(left_out) + ".")
    if out.notes:
        sections.append("Not included: " + "; ".join(out.notes) + ".")
    if sections:
        out.text = "Editor context (sent automatically by the user's editor):\n\n" + "\n\n".join(sections)
    return out


def render_update(updates: EditorContext, folders: list[Path], budget_tokens: int) -> str:
    """What changed in the editor during a turn, as a note for the next model requests (no file is read)."""
    ws = _Workspace(folders)
    notes: list[str] = []
    sections = []
    editor = updates.active_editor
    if editor is not None:
        path = ws.resolve(editor.file_path)
        if path is not None:
            sections.append(f"Active editor: {ws.show(path)}")
    for text in (_diagnostics_text(updates, ws, notes), _terminal_text(updates), _git_text(updates),
                 _open_editors_text(updates, ws, notes)):
        if text:
            sections.append(text)
    if not sections:
        return ""
    text = ("The user's editor context changed during this turn (sent automatically by the editor; newer than "
            "anything said before):\n\n" + "\n\n".join(sections))
    limit = budget_tokens * BYTES_PER_TOKEN
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore") + "\n[… cut to fit the budget]"
