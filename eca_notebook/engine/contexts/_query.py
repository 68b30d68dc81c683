"""What the user may attach (``chat/queryContext``, the ``@`` completion): matching contexts, best first.

The repo map when the query looks like it, the git contexts (``@git``, ``@git:diff`` …) when it looks like "git"
(or is blank, inside a repository), then files and directories from the workspace index (or, for a path outside the
workspace, that directory's entries), then code symbols (classes, functions, methods … named like the query) as
``file`` contexts with the definition's ``linesRange``, then other contexts (MCP resources) that fuzzily match.
What is already attached is left out, so the list only offers something new.

Symbols come from the content index (:class:`~eca_notebook.retrieval.CodeIndex`), which is lazy and may take long
to build on a big workspace: a keystroke never waits for it. Until it can answer at once the answer has no symbols
and the index starts opening in the background, so the next keystrokes get them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from ..._fuzzy import is_subsequence
from ...protocol import JsonObject
from ...protocol.context import (
    ChatContext,
    DirectoryContext,
    FileContext,
    GitContext,
    LinesRange,
    McpResourceContext,
    RepoMapContext,
    WebContext,
)
from ..index import WorkspaceIndex, _fold
from ._blocks import CONTEXT
from ._git import git_offers

__all__ = ["context_models", "query_context"]

#: at most this many symbols per answer: they follow the files and must not crowd them out
SYMBOL_LIMIT = 8
#: what a query must look like to be looked up as a symbol (``Circle``, ``area``, ``Circle.area``): 2+ characters
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]+(?:\.[A-Za-z_$][\w$]*)*")


class _SymbolSource(Protocol):
    """What of :class:`~eca_notebook.retrieval.CodeIndex` the query needs (the engine's ``code_index``)."""

    async def symbols_if_open(self, query: str, *, limit: int = ...) -> list[Any] | None: ...

    def absolute(self, display: str) -> Path: ...


async def query_context(
    query: str,
    *,
    index: WorkspaceIndex,
    already: Sequence[ChatContext | JsonObject],
    limit: int = 50,
    extra: Sequence[ChatContext | JsonObject] = (),
    code_index: _SymbolSource | None = None,
    files_only: bool = False,
) -> list[ChatContext]:
    """Contexts the user may attach for `query`, best first, at most `limit` (``.dump()`` is each one's wire form).

    `files_only` (``chat/queryFiles``, the reference's file picker): only the ``file`` contexts of the same search
    — no repo map, git, directories, symbols or `extra`.

    ``{"type": "repoMap"}`` comes first for a blank query or one that looks like "repo"; then the git contexts
    (see :func:`~._context_git.git_offers`, each with a one-line ``description``); then files and directories
    from the index (or, for an absolute / ``~`` / ``../`` path outside the workspace, that directory's entries);
    then, for an identifier-like query, up to :data:`SYMBOL_LIMIT` definitions from `code_index` when it can answer
    without building (see :func:`symbol_offers`); then the `extra` contexts (e.g. MCP resources) whose name,
    uri, path or url fuzzily match. Contexts already attached (``already``) are left out.
    """
    q = (query or "").strip()
    base = index.folders[0] if index.folders else Path.cwd()
    attached = {_key(c, base) for c in context_models(already)}
    attached.discard(None)
    out: list[ChatContext] = []

    def offer(ctx: ChatContext) -> None:
        key = _key(ctx, base)
        if key is None or key not in attached:
            if key is not None:
                attached.add(key)
            out.append(ctx)

    if files_only:
        outside = _outside_path_query(q, index.folders)
        if outside is not None:
            for path, is_dir in _list_matching(*outside, limit):
                if not is_dir:
                    offer(FileContext(path=str(path)))
        else:
            for entry in index.query(q, 4 * limit):  # directories are skipped: ask for more
                if len(out) >= limit:
                    break
                if not entry.is_dir:
                    offer(FileContext(path=str(entry.path)))
        return out[:limit]
    if _wants_repo_map(q):
        offer(RepoMapContext())
    for git in await git_offers(q, index.folders):
        offer(git)
    symbols = await symbol_offers(q, code_index)
    room = max(limit - len(symbols), 0)  # the symbols follow the files: keep room for them
    outside = _outside_path_query(q, index.folders)
    if outside is not None:
        for path, is_dir in _list_matching(*outside, limit):
            offer(DirectoryContext(path=str(path)) if is_dir else FileContext(path=str(path)))
    else:
        for entry in index.query(q, limit + len(attached)):
            if len(out) >= room:
                break
            offer(DirectoryContext(path=str(entry.path)) if entry.is_dir else FileContext(path=str(entry.path)))
    for symbol in symbols:
        offer(symbol)
    for ctx in context_models(extra):
        if _extra_matches(q, ctx):
            offer(ctx)
    return out[:limit]


async def symbol_offers(query: str, code_index: _SymbolSource | None) -> list[FileContext]:
    """The definitions named like `query`, as ``file`` contexts with their ``linesRange`` and a ``description``
    (``"class Circle"``, ``"method Circle.area"``): none unless `query` looks like an identifier of 2+ characters
    and the index answers without building (it then starts opening, see ``CodeIndex.symbols_if_open``).
    Definitions in notebooks are left out: their lines count within a cell, not the file."""
    if code_index is None or not _IDENTIFIER.fullmatch(query):
        return []
    hits = await code_index.symbols_if_open(query, limit=SYMBOL_LIMIT)
    out: list[FileContext] = []
    for hit in hits or ():
        if hit.cell_index is not None:
            continue
        name = f"{hit.container}.{hit.name}" if hit.container else hit.name
        out.append(FileContext(path=str(code_index.absolute(hit.path)),
                               lines_range=LinesRange(start=hit.start_line, end=max(hit.end_line, hit.start_line)),
                               description=f"{hit.kind} {name}"))
    return out


def context_models(contexts: Sequence[ChatContext | JsonObject]) -> list[ChatContext]:
    """The contexts as models: a wire dict is validated (one that is not a context is left out)."""
    out: list[ChatContext] = []
    for c in contexts:
        if isinstance(c, dict):
            try:
                c = CONTEXT.validate_python(c)
            except ValidationError:
                continue
        out.append(c)
    return out


def _norm(path: str, base: Path) -> str:
    text = unquote(urlparse(path).path) if path.startswith("file://") else path
    p = os.path.expanduser(text)
    return os.path.normpath(p if os.path.isabs(p) else os.path.join(base, p))


def _key(ctx: Any, base: Path) -> tuple[str, ...] | None:
    """What makes two contexts "the same attachment" (a file with a line range is not the whole file)."""
    if isinstance(ctx, FileContext):
        if ctx.lines_range:  # a file's lines are not the whole file; the same lines again (a symbol) are the same
            return ("file", _norm(ctx.path, base), str(ctx.lines_range.start), str(ctx.lines_range.end))
        return ("file", _norm(ctx.path, base))
    if isinstance(ctx, DirectoryContext):
        return ("directory", _norm(ctx.path, base))
    if isinstance(ctx, RepoMapContext):
        return ("repoMap",)
    if isinstance(ctx, WebContext):
        return ("web", ctx.url)
    if isinstance(ctx, McpResourceContext):
        return ("mcpResource", ctx.server, ctx.uri)
    if isinstance(ctx, GitContext):
        return ("git", ctx.part or "")  # the description is only a label
    return None


def _wants_repo_map(q: str) -> bool:
    ql = "".join(q.lower().split()).replace("-", "").replace("_", "")
    return not ql or "repo" in ql or (len(ql) >= 3 and "repomap".startswith(ql))


def _outside_path_query(q: str, folders: Sequence[Path]) -> tuple[Path, str] | None:
    """(directory, name prefix) a query spells when it is an absolute, ``~``-based or ``../``-relative path outside
    every workspace folder: ``/etc/`` lists ``/etc``, ``/etc/ho`` the entries of ``/etc`` starting with ``ho``."""
    if not q.startswith(("/", "~", "../")):
        return None
    base = folders[0] if folders else Path.cwd()
    text = os.path.expanduser(q) if not q.startswith("../") else os.path.join(base, q)
    norm = os.path.normpath(text)
    for folder in folders:
        root = os.path.normpath(folder)
        if norm == root or norm.startswith(root.rstrip(os.sep) + os.sep):
            return None
    if q.endswith("/") or norm == os.sep:
        return Path(norm), ""
    return Path(norm).parent, Path(norm).name.lower()


def _list_matching(directory: Path, prefix: str, limit: int) -> list[tuple[Path, bool]]:
    """Entries of `directory` whose names start with `prefix` (case-insensitive; dot-files only when asked for)."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name.lower())
    except OSError:
        return []
    out: list[tuple[Path, bool]] = []
    real = directory.resolve()
    for entry in entries:
        name = entry.name
        if not name.lower().startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        out.append((real / name, is_dir))
        if len(out) >= limit:
            break
    return out


def _extra_matches(q: str, ctx: Any) -> bool:
    if not q:
        return True
    texts = [getattr(ctx, name, "") or "" for name in ("name", "uri", "path", "url", "description")]
    ql = _fold("".join(q.split()))
    return any(is_subsequence(ql, _fold(t)) for t in texts if t)
