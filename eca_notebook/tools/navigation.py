"""``editor_definition`` and ``editor_references``: where a symbol is defined or used, as the reference ECA server's
tools of the same names.

A client that declared ``codeAssistant.editor.definition`` / ``.references`` is asked with ``editor/getDefinition`` /
``editor/getReferences`` (its language server knows the language best); the position is resolved here from the
line and the symbol the model names, since models count columns badly. A ``starting`` answer is asked again until
the time budget ends. Without such a client — the panel, ``%eca``, ACP — or when the editor cannot answer
(``no-server``, ``error``, no answer in time), the workspace's content index answers instead: definitions by name
from its parsed symbols, references as the whole-word occurrences in the chunks its text search finds. Matched by
name, not by type, so the model is told and can check. The engine offers the tools when either can answer.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..protocol import (
    EditorGetDefinitionParams,
    EditorGetReferencesParams,
    EditorLocation,
    Position,
)
from ..protocol.errors import RpcError
from ._args import ToolArgs
from ._paths import display, is_inside, resolve
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = [
    "EditorDefinitionArgs",
    "EditorDefinitionTool",
    "EditorReferencesArgs",
    "EditorReferencesTool",
    "find_symbol_character",
    "navigation_tools",
]

#: How long a call waits for the editor in all, ``starting`` retries included (the reference's lspTimeoutSeconds).
NAVIGATION_TIMEOUT = 30.0
#: Between two requests while the editor answers ``starting``.
STARTING_POLL = 2.0
MAX_REFERENCES = 100
_SYMBOL_CHARS = re.compile(r"[\w\-*+!?<>=']")

Kind = Literal["definition", "references"]


class EditorDefinitionArgs(ToolArgs):
    path: str = Field(min_length=1, description="Path of the file where the symbol appears (absolute or "
                                                "workspace-relative).")
    line: int = Field(ge=1, description="1-based line number where the symbol appears.")
    symbol: str = Field(min_length=1, description="The symbol name exactly as it appears in that line.")
    character: int | None = Field(None, ge=1, description="Optional 1-based column of the symbol in the line; takes "
                                                          "precedence over locating `symbol` in the line.")


class EditorReferencesArgs(EditorDefinitionArgs):
    include_declaration: bool | None = Field(
        None, description="Whether to include the symbol declaration in the results (default true).")


def find_symbol_character(line_text: str, symbol: str) -> int | None:
    """The 1-based column of the first occurrence of *symbol* in *line_text* that is not part of a bigger name,
    else of its first occurrence at all; None when it is not there. (Columns count UTF-16 code units, as LSP.)"""
    start = line_text.find(symbol)
    first = start
    while start >= 0:
        before = line_text[start - 1] if start > 0 else ""
        after = line_text[start + len(symbol)] if start + len(symbol) < len(line_text) else ""
        if not _SYMBOL_CHARS.fullmatch(before or " ") and not _SYMBOL_CHARS.fullmatch(after or " "):
            return _utf16(line_text[:start]) + 1
        start = line_text.find(symbol, start + 1)
    return None if first < 0 else _utf16(line_text[:first]) + 1


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _word(symbol: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w$])" + re.escape(symbol) + r"(?![\w$])")


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def _uri_path(uri: str) -> Path | None:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


class _NavigationTool(NativeTool[Any]):
    kind: Kind
    path_args = ("path",)

    def __init__(self, *, timeout: float = NAVIGATION_TIMEOUT, poll: float = STARTING_POLL) -> None:
        super().__init__()
        self.timeout = timeout
        self.poll = poll

    def _editor(self, ctx: ToolContext) -> Any:
        return ctx.request_definition if self.kind == "definition" else ctx.request_references

    def _prepare(self, args: Any, ctx: ToolContext) -> Prepared:
        if self._editor(ctx) is None and ctx.code_index is None:
            raise self.fail(f"no {self.kind} provider here (the client has no language server to ask, and there is "
                            "no content index); use grep instead")
        path = resolve(args.path, ctx)
        if not path.is_file():
            raise self.fail(f"Path '{args.path}' needs to be an existing file.")
        label = "LSP definition" if self.kind == "definition" else "LSP references"
        return Prepared(args=args.model_dump(exclude_none=True), summary=f"{label}: {args.symbol}", paths=[path],
                        outside_workspace=not is_inside(path, ctx.workspace_folders), state={"path": path})

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        args = self.Args.model_validate(prepared.args)
        path: Path = prepared.state["path"]
        editor = self._editor(ctx)
        why = "this client has no language server to ask"
        if editor is not None:
            position = self._position(path, args, ctx)
            if isinstance(position, str):
                return ToolResult(output=position, error=True)
            answer, why = await self._ask_editor(editor, path, position, args)
            if answer is not None:
                return ToolResult(output=self._editor_text(answer, args, ctx))
        if ctx.code_index is None:
            raise self.fail(f"the editor could not find the {self.kind} ({why}); use grep as fallback")
        return await self._from_index(ctx.code_index, path, args, why, ctx)

    def _position(self, path: Path, args: Any, ctx: ToolContext) -> Position | str:
        if args.character is not None:
            return Position(line=args.line, character=args.character)
        lines = _read_lines(path)
        shown = display(path, ctx)
        if lines is None:
            return f"Could not read file {shown}."
        if args.line > len(lines):
            return (f"Line {args.line} does not exist in {shown} (file has {len(lines)} lines). Re-read the file and "
                    "retry with the correct line.")
        character = find_symbol_character(lines[args.line - 1], args.symbol)
        if character is None:
            return (f"Symbol '{args.symbol}' not found on line {args.line} of {shown}. The file may have changed; "
                    "re-read it and retry with the correct line and symbol.")
        return Position(line=args.line, character=character)

    async def _ask_editor(self, editor: Any, path: Path, position: Position, args: Any
                          ) -> tuple[list[EditorLocation] | None, str]:
        """The editor's locations, or None and why it gave none (the index answers then)."""
        params: Any
        if self.kind == "definition":
            params = EditorGetDefinitionParams(uri=path.as_uri(), position=position)
        else:
            params = EditorGetReferencesParams(uri=path.as_uri(), position=position,
                                               include_declaration=args.include_declaration)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            try:
                answer = await asyncio.wait_for(editor(params), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return None, f"no answer within {self.timeout:g} s"
            except RpcError as exc:
                return None, f"the editor refused: {exc.describe()}"
            if answer.status == "success":
                return list(answer.locations or ()), ""
            if answer.status != "starting":
                detail = f": {answer.message}" if answer.message else ""
                return None, ("no language server for this file" if answer.status == "no-server"
                              else "the editor failed") + detail
            if loop.time() + self.poll >= deadline:
                return None, "the editor's language server is still starting"
            await asyncio.sleep(self.poll)

    def _editor_text(self, locations: list[EditorLocation], args: Any, ctx: ToolContext) -> str:
        located = [loc for loc in locations if loc.uri.strip()]
        if not located:
            return f"No {self.kind} found for '{args.symbol}' at {args.path}:{args.line}"
        shown = located[:MAX_REFERENCES] if self.kind == "references" else located
        cache: dict[Path, list[str] | None] = {}
        rows = []
        for loc in shown:
            file = _uri_path(loc.uri)
            line, col = loc.range.start.line, loc.range.start.character
            where = f"{display(file, ctx) if file is not None else loc.uri}:{line}:{col}"
            text = ""
            if file is not None:
                if file not in cache:
                    cache[file] = _read_lines(file)
                lines = cache[file]
                if lines is not None and 1 <= line <= len(lines):
                    text = lines[line - 1].strip()
            rows.append(f"{where}: {text}" if text else where)
        if len(located) > len(shown):
            rows.append(f"... and {len(located) - len(shown)} more references omitted ({len(located)} total). "
                        "Narrow your search if needed.")
        return "\n".join(rows)

    async def _from_index(self, index: Any, path: Path, args: Any, why: str, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def _index_note(self, why: str) -> str:
        return (f"(from the workspace's content index, matched by name — {why}; check that each is the symbol you "
                "mean)")


async def _definitions(index: Any, symbol: str) -> list[Any]:
    """The index's definitions named exactly *symbol* (``Class.method`` matches the container too)."""
    hits = await index.search_symbols(symbol, limit=50)
    name = symbol.rsplit(".", 1)[-1]
    container = symbol.rsplit(".", 1)[0] if "." in symbol else None
    return [h for h in hits if h.name == name and (container is None or h.container == container)]


def _where(hit: Any, line: int, col: int) -> str:
    cell = f" [cell {hit.cell_index}]" if hit.cell_index is not None else ""
    return f"{hit.path}:{line}:{col}{cell}"


class EditorDefinitionTool(_NavigationTool):
    name = "editor_definition"
    description = (
        "Find where a symbol is defined, from the editor's language server (LSP go-to-definition) when the client "
        "has one, else from the workspace's parsed index. Give the file and line where the symbol appears and the "
        "symbol as written there.\n\n"
        "- Results: `path:line:character: line text`, one per definition; then read_file around that line."
    )
    Args = EditorDefinitionArgs
    generic_summary = "LSP definition"
    kind: Kind = "definition"

    async def _from_index(self, index: Any, path: Path, args: Any, why: str, ctx: ToolContext) -> ToolResult:
        hits = await _definitions(index, args.symbol)
        here = display(path, ctx)
        hits.sort(key=lambda h: h.path != here)  # a definition in the same file first
        if not hits:
            return ToolResult(output=f"No definition found for '{args.symbol}' at {args.path}:{args.line} "
                                     f"{self._index_note(why)}")
        rows = []
        for hit in hits:  # as the editor would: the name's column and its line's text
            line, col, text = hit.start_line, hit.start_col, hit.signature
            content = _read_lines(index.absolute(hit.path)) if hit.cell_index is None else None
            if content and 1 <= line <= len(content):
                text = content[line - 1].strip()
                col = find_symbol_character(content[line - 1], hit.name) or col
            rows.append(f"{_where(hit, line, col)}: {text}")
        return ToolResult(output="\n".join([*rows, self._index_note(why)]))


class EditorReferencesTool(_NavigationTool):
    name = "editor_references"
    description = (
        "Find every place a symbol is used, from the editor's language server (LSP find-references) when the client "
        "has one, else from the workspace's index (whole-word matches of the name). Give the file and line where "
        "the symbol appears and the symbol as written there.\n\n"
        "- `include_declaration`: false leaves out the definition itself (default true).\n"
        f"- Results: `path:line:character: line text`, at most {MAX_REFERENCES}."
    )
    Args = EditorReferencesArgs
    generic_summary = "LSP references"
    kind: Kind = "references"

    async def _from_index(self, index: Any, path: Path, args: Any, why: str, ctx: ToolContext) -> ToolResult:
        symbol = args.symbol.rsplit(".", 1)[-1]
        word = _word(symbol)
        declared: set[tuple[str, int]] = set()
        if args.include_declaration is False:
            declared = {(h.path, h.start_line) for h in await _definitions(index, args.symbol)}
        hits = await index.search_text(f'"{symbol}"', limit=200)
        found: dict[tuple[str, int | None, int], str] = {}
        for hit in hits:
            if hit.cell_index is not None:  # a notebook: its lines count within the cell, as the snippet's
                lines = dict(hit.snippet)
            else:
                content = _read_lines(index.absolute(hit.path)) or []
                lines = {n: content[n - 1] for n in range(hit.start_line, min(hit.end_line, len(content)) + 1)}
            for number, text in lines.items():
                if (hit.path, number) in declared:
                    continue
                for match in word.finditer(text):
                    key = (hit.path, hit.cell_index, number)
                    if key not in found:
                        col = _utf16(text[:match.start()]) + 1
                        found[key] = f"{_where(hit, number, col)}: {text.strip()}"
                    break
        ordered = [found[k] for k in sorted(found, key=lambda k: (k[0], k[1] or 0, k[2]))]
        if not ordered:
            return ToolResult(output=f"No references found for '{args.symbol}' at {args.path}:{args.line} "
                                     f"{self._index_note(why)}")
        rows = ordered[:MAX_REFERENCES]
        if len(ordered) > len(rows):
            rows.append(f"... and {len(ordered) - len(rows)} more references omitted ({len(ordered)} total). "
                        "Narrow your search if needed.")
        return ToolResult(output="\n".join([*rows, self._index_note(why)]))


def navigation_tools() -> list[NativeTool[Any]]:
    """The two navigation tools (the engine offers each when the client or the content index can answer)."""
    return [EditorDefinitionTool(), EditorReferencesTool()]
