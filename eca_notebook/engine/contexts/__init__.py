"""Prompt contexts: turning what the user attached (``chat/prompt`` ``contexts``) into text for the LLM, and
offering what can be attached (``chat/queryContext``).

Rendering follows the reference server's shape — one XML-ish element per context inside a ``<contexts>`` block
(``<file path="…">…</file>``, ``<directory>``, ``<web url="…">``, ``<repoMap>``, ``<cursor …>``, ``<resource …>``,
``<git …>``) —
because models are used to it and clients' ``/prompt-show`` output then looks familiar.

A context that cannot be rendered (missing file, binary file, 404, timeout …) never fails the turn: it becomes a
user-facing *problem* and the prompt goes on without it. Every element is capped (per context and overall), with a
note saying so inside the element, because a single attached log file must not blow the model's context window.

Where the parts live: this module runs the rendering (each context concurrently, then fitted into the budget in
order); ``_files`` reads files, directories, notebooks and the cursor's lines, ``_web`` fetches pages,
``_git`` summarises the repository (``@git``), ``_blocks`` holds the element shape, the limits and
the fitting, and ``_query`` answers
``chat/queryContext``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..._images import ImagePart
from ..._redact import redact
from ...protocol import JsonObject
from ...protocol.context import (
    ChatContext,
    CursorContext,
    DirectoryContext,
    FileContext,
    GitContext,
    McpResourceContext,
    RepoMapContext,
    TextContext,
    UnknownContext,
    WebContext,
)
from ..index import WorkspaceIndex
from ._blocks import (
    CONTEXT,
    CURSOR_RADIUS,
    DIRECTORY_MAX_ENTRIES,
    PER_CONTEXT_BYTES,
    WEB_MAX_BYTES,
    WEB_TIMEOUT,
    Block,
    ContextProblem,
    describe,
    fit,
)
from ._files import render_cursor, render_directory, render_file, resolve_path
from ._git import render_git
from ._images import is_image_context, load_image_context
from ._notebook_focus import render_notebook_focus
from ._query import context_models, query_context
from ._web import html_to_text, render_web

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CURSOR_RADIUS",
    "DIRECTORY_MAX_ENTRIES",
    "PER_CONTEXT_BYTES",
    "WEB_MAX_BYTES",
    "WEB_TIMEOUT",
    "RenderedContexts",
    "context_models",
    "html_to_text",
    "query_context",
    "render_contexts",
]

log = logging.getLogger(__name__)

_OPEN = ('<contexts description="User-provided context. This content is current and accurate; treat it as sufficient '
         'context for answering the query.">\n')
_CLOSE = "</contexts>"


@dataclass
class RenderedContexts:
    text: str = ""  # the <contexts> block to append to the user message ("" when nothing could be rendered)
    problems: list[str] = field(default_factory=list)  # user-facing, one per skipped or shortened context
    # the attached images (``image`` contexts, image files), in order, for the user message (_context_images.py)
    images: list[ImagePart] = field(default_factory=list)


async def render_contexts(
    contexts: Sequence[ChatContext | JsonObject],
    *,
    folders: Sequence[Path],
    http: httpx.AsyncClient,
    index: WorkspaceIndex | None,
    max_bytes: int = 200_000,
    mcp_reader: Callable[[McpResourceContext], Awaitable[str]] | None = None,
    per_context_bytes: int = PER_CONTEXT_BYTES,
    later_context_bytes: int | None = None,
    web_timeout: float = WEB_TIMEOUT,
    notebook_focus: str | None = None,
) -> RenderedContexts:
    """Render `contexts` in order (fetching concurrently) into one ``<contexts>`` block of at most `max_bytes`
    UTF-8 bytes, each element's body at most `per_context_bytes` — every one after the first at most
    `later_context_bytes` when given (a small model's: the first is what the user picked, the panel's automatic
    active-notebook context comes last). `notebook_focus` (a small model's request): a whole notebook is shown as
    the cells that request is about (``_notebook_focus``). Unknown context types are skipped silently."""
    folders = [Path(f) for f in folders]
    models: list[Any] = []
    problems: list[str] = []
    for raw in contexts:
        try:
            models.append(raw if not isinstance(raw, dict) else CONTEXT.validate_python(raw))
        except ValidationError:
            problems.append(f"invalid context: {str(raw)[:200]}")
    images = await _images(models, folders, problems)
    models = [m for m in models if not is_image_context(m)]
    results = await asyncio.gather(
        *(_render_one(c, folders, http, index, mcp_reader, per_context_bytes, web_timeout, notebook_focus)
          for c in models),
        return_exceptions=True,
    )
    pieces: list[str] = []
    budget = max_bytes - len(_OPEN) - len(_CLOSE)
    for ctx, result in zip(models, results, strict=True):
        if result is None:
            continue
        if isinstance(result, ContextProblem):
            problems.append(str(result))
            continue
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
                raise result
            log.warning("rendering a %s context failed", getattr(ctx, "type", "?"), exc_info=result)
            problems.append(f"could not read {describe(ctx)}: {type(result).__name__}")
            continue
        cap = per_context_bytes if not pieces or later_context_bytes is None else min(per_context_bytes,
                                                                                       later_context_bytes)
        piece, why = fit(result, cap, budget)
        if piece is None:
            problems.append(f"context size limit ({max_bytes} bytes) reached: skipped {describe(ctx)}")
            continue
        if why == "budget":
            problems.append(f"{describe(ctx)} was shortened to fit the context size limit ({max_bytes} bytes)")
        pieces.append(piece)
        budget -= len(piece.encode("utf-8"))
    text = _OPEN + "".join(pieces) + _CLOSE if pieces else ""
    # read from disk (or the web) like a tool result: redacted before the model sees it
    return RenderedContexts(text=redact(text), problems=problems, images=images)


async def _images(models: list[Any], folders: list[Path], problems: list[str]) -> list[ImagePart]:
    """The image contexts among *models*, loaded in order; each one refused adds its problem."""
    images: list[ImagePart] = []
    for ctx in (m for m in models if is_image_context(m)):
        try:
            images.append(await asyncio.to_thread(load_image_context, ctx, folders, len(images) + 1))
        except ContextProblem as exc:
            problems.append(str(exc))
    return images


async def _render_one(ctx: Any, folders: list[Path], http: httpx.AsyncClient, index: WorkspaceIndex | None,
                      mcp_reader: Callable[[McpResourceContext], Awaitable[str]] | None, cap: int,
                      web_timeout: float, notebook_focus: str | None = None) -> Block | None:
    if isinstance(ctx, FileContext):
        path = resolve_path(ctx.path, folders)
        rng = (ctx.lines_range.start, ctx.lines_range.end) if ctx.lines_range else None
        if notebook_focus is not None and rng is None and path.suffix.lower() == ".ipynb" and path.is_file():
            focused = await asyncio.to_thread(render_notebook_focus, ctx.path, path, notebook_focus)
            if focused is not None:
                return focused
        return await asyncio.to_thread(render_file, ctx.path, path, rng, folders, cap)
    if isinstance(ctx, DirectoryContext):
        path = resolve_path(ctx.path, folders)
        return await asyncio.to_thread(render_directory, ctx.path, path, folders)
    if isinstance(ctx, WebContext):
        return await render_web(ctx.url, http, web_timeout)
    if isinstance(ctx, RepoMapContext):
        if index is None:
            raise ContextProblem("repo map: there is no workspace folder")
        if not index.ready:
            raise ContextProblem("repo map: the workspace index is still being built")
        return Block("repoMap", {"description": "Workspace structure as a tree; indentation shows nesting"},
                     index.repo_map())
    if isinstance(ctx, CursorContext):
        path = resolve_path(ctx.path, folders)
        return await asyncio.to_thread(render_cursor, ctx, path)
    if isinstance(ctx, McpResourceContext):
        if mcp_reader is None:
            raise ContextProblem("MCP resources are not available yet")
        try:
            content = await mcp_reader(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of an MCP server is a problem, not a crash
            raise ContextProblem(f"could not read MCP resource {ctx.uri}: {exc}") from None
        return Block("resource", {"uri": ctx.uri, "name": ctx.name, "server": ctx.server}, content)
    if isinstance(ctx, GitContext):
        return await render_git(ctx.part, folders[0] if folders else None, cap)
    if isinstance(ctx, TextContext):  # the reference's ``<text label="…">``; capped and redacted like the rest
        return Block("text", {"label": ctx.label}, ctx.content)
    if isinstance(ctx, UnknownContext):
        log.debug("ignoring context of unknown type %r", ctx.type)
    return None
