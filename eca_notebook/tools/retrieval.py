"""Code-search tools over the workspace's content index: ``search_symbols``, ``search_text``, ``vector_search``.

Read-only and allowed by default, like ``grep``. They reach the index through ``ToolContext.code_index`` (the
engine's :class:`~eca_notebook.retrieval.CodeIndex`), so this module needs nothing of the retrieval package but the
methods it calls; the engine hides the tools when there is no index (no workspace folder, ``index.content`` off) and
``vector_search`` when the ``vectors`` extra is missing.

Results are compact, one line per hit, so the model can scan many: ``path:line  kind Container.name — signature``
for symbols, ``path:start-end`` and the lines that matched for text. Each finished call carries a
``RetrievalDetails`` (stage, query, count, message) that the doors show — the session stream sends it as
``agent.retrieve.status``. While the first call builds the index, ``ToolContext.progress`` shows how far it is.
A search answered from an index not yet checked against the disk in this process (a big workspace after a restart,
checked in the background) ends with a ``(note: …)`` line saying so, so the model knows to verify before it edits.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field

from ..protocol import RetrievalDetails
from ._args import ToolArgs
from ._tool import NativeTool, ToolError
from .base import Prepared, ToolContext, ToolResult

__all__ = [
    "SearchSymbolsArgs",
    "SearchSymbolsTool",
    "SearchTextArgs",
    "SearchTextTool",
    "VectorSearchArgs",
    "VectorSearchTool",
    "retrieval_tools",
]

Stage = Literal["symbol_search", "text_search", "vector_search", "reranking"]
SymbolKind = Literal["function", "method", "class", "interface", "type", "enum", "namespace"]
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
_PROGRESS_EVERY = 0.5  # seconds between progress lines shown while the index builds


class SearchSymbolsArgs(ToolArgs):
    query: str = Field(min_length=1, description="Name or part of a name, e.g. \"parseConfig\", \"config\", "
                                                 "\"UserService.save\" (Class.method).")
    kind: SymbolKind | None = Field(None, description="Only definitions of this kind.")
    path: str | None = Field(None, description='Only files matching this glob, e.g. "*.py" or "src/**/*.ts".')
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description=f"Maximum results (default {DEFAULT_LIMIT}).")


class SearchTextArgs(ToolArgs):
    query: str = Field(min_length=1, description="Words to find (all must appear; identifiers also match their "
                                                 "parts: parse_config finds parseConfig), or \"an exact phrase\" "
                                                 "in double quotes.")
    path: str | None = Field(None, description='Only files matching this glob, e.g. "*.py" or "src/**/*.ts".')
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description=f"Maximum results (default {DEFAULT_LIMIT}).")


class VectorSearchArgs(ToolArgs):
    query: str = Field(min_length=1, description="What you are looking for, in plain words "
                                                 "(\"where are passwords hashed\").")
    limit: int | None = Field(None, ge=1, le=50, description="Maximum results (default 10).")


class _SearchTool(NativeTool[Any]):
    stage: Stage

    def _prepare(self, args: Any, ctx: ToolContext) -> Prepared:
        if ctx.code_index is None:
            raise self.fail("code search is not available here (no workspace folder, or index.content is off); "
                            "use grep instead")
        details = RetrievalDetails(stage=self.stage, query=args.query, message=self._searching(args))
        return Prepared(args=args.model_dump(exclude_none=True), summary=self._searching(args),
                        details=details.dump())

    def _searching(self, args: Any) -> str:
        raise NotImplementedError

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        index = ctx.code_index
        if index is None:
            raise self.fail("code search is not available here")
        args = self.Args.model_validate(prepared.args)
        return await self._search(index, args, _Progress(ctx))

    async def _search(self, index: Any, args: Any, progress: _Progress) -> ToolResult:
        raise NotImplementedError

    def _result(self, query: str, lines: list[str], count: int, message: str, *,
                stage: Stage | None = None) -> ToolResult:
        details = RetrievalDetails(stage=stage or self.stage, query=query, results_count=count, message=message)
        body = "\n".join([message + (":" if lines else "."), *lines])
        return ToolResult(output=body, details=details.dump())


class _Progress:
    """``IndexProgress`` reports as progress lines of the call, at most two a second (and the last one)."""

    def __init__(self, ctx: ToolContext) -> None:
        self.show = ctx.progress
        self.last = 0.0

    def __call__(self, event: Any) -> None:
        if self.show is None:
            return
        now = time.monotonic()
        if now - self.last >= _PROGRESS_EVERY or (event.total and event.done >= event.total):
            self.last = now
            self.show(event.message)


def _where(hit: Any) -> str:
    """``path:line``, with the cell for a notebook (lines count within the cell)."""
    cell = ""
    if hit.cell_index is not None:
        cell = f" [cell {hit.cell_index}" + (f" id={hit.cell_id}" if hit.cell_id else "") + "]"
    return f"{hit.path}:{hit.start_line}{cell}"


class SearchSymbolsTool(_SearchTool):
    name = "search_symbols"
    description = (
        "Find where functions, classes, methods, interfaces, types and enums are defined (Python, TypeScript, "
        "JavaScript, notebooks' code cells), from a parsed index of the workspace. Faster and more precise than "
        "grep for \"where is X defined\".\n\n"
        "- `query`: a name or part of one; exact names rank first, then prefixes, then word parts (\"user\" finds "
        "getUserName); \"Class.method\" narrows by class.\n"
        "- `kind`: function, method, class, interface, type, enum or namespace.\n"
        "- `path`: a glob to restrict the files (\"*.py\", \"src/**/*.ts\").\n"
        "- Results: `path:line  kind Container.name — signature`; then read_file around that line."
    )
    Args = SearchSymbolsArgs
    generic_summary = "Searching symbols"
    stage: Stage = "symbol_search"

    def _searching(self, args: SearchSymbolsArgs) -> str:
        return f'Searching symbols "{args.query}"'

    async def _search(self, index: Any, args: SearchSymbolsArgs, progress: _Progress) -> ToolResult:
        hits = await index.search_symbols(args.query, kind=args.kind, path=args.path,
                                          limit=args.limit or DEFAULT_LIMIT, progress=progress)
        lines = []
        for hit in hits:
            qualified = f"{hit.container}.{hit.name}" if hit.container else hit.name
            lines.append(f"{_where(hit)}  {hit.kind} {qualified} — {hit.signature}")
        noun = "symbol" if len(hits) == 1 else "symbols"
        message = f'Found {len(hits)} {noun} for "{args.query}"' if hits else f'No symbol matches "{args.query}"'
        return self._result(args.query, _with_note(lines, hits), len(hits), message)


class SearchTextTool(_SearchTool):
    name = "search_text"
    description = (
        "Ranked full-text search of the workspace's files (BM25 over an index; files that define a name rank above "
        "files that merely use it). Better than grep for finding the most relevant places; use grep for regular "
        "expressions or every single occurrence.\n\n"
        "- `query`: words that must all appear (the last may be a prefix); identifiers match their parts "
        "(parse_config finds parseConfig); \"an exact phrase\" in double quotes.\n"
        "- `path`: a glob to restrict the files.\n"
        "- Results: `path:start-end` and the matching lines as `line: text`."
    )
    Args = SearchTextArgs
    generic_summary = "Searching text"
    stage: Stage = "text_search"

    def _searching(self, args: SearchTextArgs) -> str:
        return f'Searching text "{args.query}"'

    async def _search(self, index: Any, args: SearchTextArgs, progress: _Progress) -> ToolResult:
        hits = await index.search_text(args.query, path=args.path, limit=args.limit or DEFAULT_LIMIT,
                                       progress=progress)
        lines = _text_lines(hits)
        noun = "place" if len(hits) == 1 else "places"
        message = f'Found {len(hits)} {noun} for "{args.query}"' if hits else f'No text matches "{args.query}"'
        return self._result(args.query, _with_note(lines, hits), len(hits), message)


class VectorSearchTool(_SearchTool):
    name = "vector_search"
    description = (
        "Semantic search: the workspace's code and text nearest in meaning to a description, even when it uses "
        "other words (\"where are passwords hashed\" finds bcrypt calls). Results are fused with the text search's "
        "ranking. Use it to explore unfamiliar code; use search_symbols / search_text for known names.\n\n"
        "- `query`: a description in plain words.\n"
        "- Results: `path:start-end  (similarity)` and a few lines of each place."
    )
    Args = VectorSearchArgs
    generic_summary = "Searching by meaning"
    stage: Stage = "vector_search"

    def _searching(self, args: VectorSearchArgs) -> str:
        return f'Searching by meaning "{args.query}"'

    async def _search(self, index: Any, args: VectorSearchArgs, progress: _Progress) -> ToolResult:
        try:
            result = await index.vector_search(args.query, limit=args.limit or 10, progress=progress)
        except RuntimeError as exc:  # the vectors extra is missing
            raise ToolError(f"{self.name}: {exc}") from exc
        hits = result.hits
        lines = _text_lines(hits, scores=True)
        if result.message:
            lines.append(f"(note: {result.message})")
        lines = _with_note(lines, result)
        stage: Stage = "reranking" if result.reranked else "vector_search"
        if hits:
            how = " (vector + text ranking)" if result.reranked else ""
            message = f'Found {len(hits)} related {"place" if len(hits) == 1 else "places"}{how} for "{args.query}"'
        else:
            message = f'Nothing related to "{args.query}" (the workspace has no indexed text?)'
        return self._result(args.query, lines, len(hits), message, stage=stage)


def _with_note(lines: list[str], result: Any) -> list[str]:
    """`lines` and, when the index said its answer may be stale (``SearchHits.note``), a line saying why."""
    note = getattr(result, "note", None)
    return [*lines, f"(note: {note})"] if note else lines


def _text_lines(hits: list[Any], *, scores: bool = False) -> list[str]:
    out: list[str] = []
    for hit in hits:
        cell = ""
        if hit.cell_index is not None:
            cell = f" [cell {hit.cell_index}" + (f" id={hit.cell_id}" if hit.cell_id else "") + "]"
        score = f"  ({hit.score:.2f})" if scores else ""
        out.append(f"{hit.path}:{hit.start_line}-{hit.end_line}{cell}{score}")
        out.extend(f"  {line}: {text}" for line, text in hit.snippet)
    return out


def retrieval_tools() -> list[Any]:
    """A fresh instance of each code-search tool."""
    return [SearchSymbolsTool(), SearchTextTool(), VectorSearchTool()]
