"""Prompt contexts: turning what the user attached (``chat/prompt`` ``contexts``) into text for the LLM, and
offering what can be attached (``chat/queryContext``).

Rendering follows the reference server's shape — one XML-ish element per context inside a ``<contexts>`` block
(``<file path="…">…</file>``, ``<directory>``, ``<web url="…">``, ``<repoMap>``, ``<cursor …>``, ``<resource …>``) —
because models are used to it and clients' ``/prompt-show`` output then looks familiar.

A context that cannot be rendered (missing file, binary file, 404, timeout …) never fails the turn: it becomes a
user-facing *problem* and the prompt goes on without it. Every element is capped (per context and overall), with a
note saying so inside the element, because a single attached log file must not blow the model's context window.

Paths are shown as their *real* path (``..`` and symlinks resolved): the user may attach files outside the
workspace on purpose, but the model and the user should both see where the content really came from.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence
from urllib.parse import unquote, urlparse

from pydantic import TypeAdapter, ValidationError

from .._redact import redact
from ..protocol.context import (
    ChatContext,
    CursorContext,
    DirectoryContext,
    FileContext,
    McpResourceContext,
    RepoMapContext,
    UnknownContext,
    WebContext,
)
from ..tools.ignore import IgnoreMatcher
from ._index import WorkspaceIndex, _fold

if TYPE_CHECKING:
    import httpx

__all__ = [
    "RenderedContexts",
    "render_contexts",
    "query_context",
    "html_to_text",
    "PER_CONTEXT_BYTES",
    "WEB_MAX_BYTES",
    "WEB_TIMEOUT",
    "DIRECTORY_MAX_ENTRIES",
    "CURSOR_RADIUS",
]

log = logging.getLogger(__name__)

PER_CONTEXT_BYTES = 100_000  # one context's element body
WEB_MAX_BYTES = 500_000  # read from a page before reducing it to text
WEB_TIMEOUT = 15.0  # seconds, for the whole fetch
DIRECTORY_MAX_ENTRIES = 500
CURSOR_RADIUS = 20  # lines shown above and below the cursor / selection
CURSOR_MAX_FILE_BYTES = 20_000_000  # the cursor's file is read whole
_BINARY_SNIFF = 8192

_CONTEXT = TypeAdapter(ChatContext)
_OPEN = ('<contexts description="User-provided context. This content is current and accurate; treat it as sufficient '
         'context for answering the query.">\n')
_CLOSE = "</contexts>"


@dataclass
class RenderedContexts:
    text: str = ""  # the <contexts> block to append to the user message ("" when nothing could be rendered)
    problems: list[str] = field(default_factory=list)  # user-facing, one per skipped or shortened context


@dataclass
class _Block:
    tag: str
    attrs: dict[str, Any]
    body: str
    more_hint: str = ""  # appended to the truncation note (how to get the rest)
    total: int | None = None  # size in bytes of the whole source when only part of it was read
    notes: list[str] = field(default_factory=list)  # already-known notes (e.g. the page was cut at 500 KB)

    def open(self) -> str:
        attrs = "".join(f' {k}="{_attr(v)}"' for k, v in self.attrs.items() if v is not None and v != "")
        return f"<{self.tag}{attrs}>"


class _Problem(Exception):
    """A context that cannot be rendered; the message is shown to the user."""


def _attr(value: Any) -> str:
    return html.escape(str(value), quote=True)


# -- entry points --------------------------------------------------------------------------------------------------


async def render_contexts(
    contexts: Sequence[ChatContext | dict[str, Any]],
    *,
    folders: Sequence[Path],
    http: "httpx.AsyncClient",
    index: WorkspaceIndex | None,
    max_bytes: int = 200_000,
    mcp_reader: Callable[[McpResourceContext], Awaitable[str]] | None = None,
    per_context_bytes: int = PER_CONTEXT_BYTES,
    web_timeout: float = WEB_TIMEOUT,
) -> RenderedContexts:
    """Render `contexts` in order (fetching concurrently) into one ``<contexts>`` block of at most `max_bytes`
    UTF-8 bytes, each element's body at most `per_context_bytes`. Unknown context types are skipped silently."""
    folders = [Path(f) for f in folders]
    models: list[Any] = []
    problems: list[str] = []
    for raw in contexts:
        try:
            models.append(raw if not isinstance(raw, dict) else _CONTEXT.validate_python(raw))
        except ValidationError:
            problems.append(f"invalid context: {str(raw)[:200]}")
    results = await asyncio.gather(
        *(_render_one(c, folders, http, index, mcp_reader, per_context_bytes, web_timeout) for c in models),
        return_exceptions=True,
    )
    pieces: list[str] = []
    budget = max_bytes - len(_OPEN) - len(_CLOSE)
    for ctx, result in zip(models, results):
        if result is None:
            continue
        if isinstance(result, _Problem):
            problems.append(str(result))
            continue
        if isinstance(result, BaseException):
            if isinstance(result, asyncio.CancelledError):
                raise result
            log.warning("rendering a %s context failed", getattr(ctx, "type", "?"), exc_info=result)
            problems.append(f"could not read {_describe(ctx)}: {type(result).__name__}")
            continue
        piece, why = _fit(result, per_context_bytes, budget)
        if piece is None:
            problems.append(f"context size limit ({max_bytes} bytes) reached: skipped {_describe(ctx)}")
            continue
        if why == "budget":
            problems.append(f"{_describe(ctx)} was shortened to fit the context size limit ({max_bytes} bytes)")
        pieces.append(piece)
        budget -= len(piece.encode("utf-8"))
    text = _OPEN + "".join(pieces) + _CLOSE if pieces else ""
    # read from disk (or the web) like a tool result: redacted before the model sees it
    return RenderedContexts(text=redact(text), problems=problems)


async def query_context(
    query: str,
    *,
    index: WorkspaceIndex,
    already: Sequence[ChatContext | dict[str, Any]],
    limit: int = 50,
    extra: Sequence[ChatContext | dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Contexts the user may attach for `query`, as wire dicts, best first, at most `limit`.

    ``{"type": "repoMap"}`` comes first for a blank query or one that looks like "repo"; then files and directories
    from the index (or, for an absolute / ``~`` / ``../`` path outside the workspace, that directory's entries);
    then the `extra` contexts (e.g. MCP resources) whose name, uri, path or url fuzzily match. Contexts already
    attached (``already``) are left out.
    """
    q = (query or "").strip()
    base = index.folders[0] if index.folders else Path.cwd()
    attached = {_key(c, base) for c in _validated(already)}
    attached.discard(None)
    out: list[dict[str, Any]] = []

    def offer(ctx: Any) -> None:
        key = _key(ctx, base)
        if key is None or key not in attached:
            if key is not None:
                attached.add(key)
            out.append(ctx.dump() if hasattr(ctx, "dump") else dict(ctx))

    if _wants_repo_map(q):
        offer(RepoMapContext())
    outside = _outside_path_query(q, index.folders)
    if outside is not None:
        for path, is_dir in _list_matching(*outside, limit):
            offer(DirectoryContext(path=str(path)) if is_dir else FileContext(path=str(path)))
    else:
        for entry in index.query(q, limit + len(attached)):
            offer(DirectoryContext(path=str(entry.path)) if entry.is_dir else FileContext(path=str(entry.path)))
            if len(out) >= limit:
                break
    for ctx in _validated(extra):
        if _extra_matches(q, ctx):
            offer(ctx)
    return out[:limit]


# -- one context ---------------------------------------------------------------------------------------------------


async def _render_one(ctx: Any, folders: list[Path], http: "httpx.AsyncClient", index: WorkspaceIndex | None,
                      mcp_reader: Callable[[McpResourceContext], Awaitable[str]] | None, cap: int,
                      web_timeout: float) -> _Block | None:
    if isinstance(ctx, FileContext):
        path = _resolve(ctx.path, folders)
        rng = (ctx.lines_range.start, ctx.lines_range.end) if ctx.lines_range else None
        return await asyncio.to_thread(_render_file, ctx.path, path, rng, folders, cap)
    if isinstance(ctx, DirectoryContext):
        path = _resolve(ctx.path, folders)
        return await asyncio.to_thread(_render_directory, ctx.path, path, folders)
    if isinstance(ctx, WebContext):
        return await _render_web(ctx.url, http, web_timeout)
    if isinstance(ctx, RepoMapContext):
        if index is None:
            raise _Problem("repo map: there is no workspace folder")
        if not index.ready:
            raise _Problem("repo map: the workspace index is still being built")
        return _Block("repoMap", {"description": "Workspace structure as a tree; indentation shows nesting"},
                      index.repo_map())
    if isinstance(ctx, CursorContext):
        path = _resolve(ctx.path, folders)
        return await asyncio.to_thread(_render_cursor, ctx, path)
    if isinstance(ctx, McpResourceContext):
        if mcp_reader is None:
            raise _Problem("MCP resources are not available yet")
        try:
            content = await mcp_reader(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of an MCP server is a problem, not a crash
            raise _Problem(f"could not read MCP resource {ctx.uri}: {exc}") from None
        return _Block("resource", {"uri": ctx.uri, "name": ctx.name, "server": ctx.server}, content)
    if isinstance(ctx, UnknownContext):
        log.debug("ignoring context of unknown type %r", ctx.type)
    return None


def _resolve(raw: str, folders: list[Path]) -> Path:
    """An attached path as its real absolute path: ``file://`` URIs and ``~`` accepted, relative paths looked up in
    each workspace folder (the first that has it, else the first folder)."""
    text = raw
    if text.startswith("file://"):
        text = unquote(urlparse(text).path)
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        bases = folders or [Path.cwd()]
        path = next((b / path for b in bases if (b / path).exists()), bases[0] / path)
    return path.resolve()


def _render_file(raw: str, path: Path, rng: tuple[int, int] | None, folders: list[Path], cap: int) -> _Block:
    if path.is_dir():
        return _render_directory(raw, path, folders)
    if path.exists() and not path.is_file():
        raise _Problem(f"not a regular file: {raw}")  # a FIFO or a device would block or never end
    if path.suffix.lower() == ".ipynb" and rng is None:
        notebook = _render_notebook(path)
        if notebook is not None:
            return notebook
    try:
        with open(path, "rb") as f:
            head = f.read(_BINARY_SNIFF)
            if _looks_binary(head):
                raise _Problem(f"binary file skipped: {path}")
            if rng is None:
                size = os.fstat(f.fileno()).st_size
                data = head + f.read(max(0, cap + 4 - len(head)))  # a few bytes more: a cut char is not "more"
                text = data.decode("utf-8", errors="replace")
                return _Block("file", {"path": path}, text, total=size,
                              more_hint="use the read_file tool with line_offset for the rest")
            f.seek(0)
            return _file_lines(f, path, rng, cap)
    except FileNotFoundError:
        raise _Problem(f"file not found: {raw}") from None
    except PermissionError:
        raise _Problem(f"permission denied: {raw}") from None
    except IsADirectoryError:
        return _render_directory(raw, path, folders)


NOTEBOOK_MAX_BYTES = 50_000_000  # larger .ipynb files are attached as plain text (cut), not parsed
NOTEBOOK_OUTPUT_CHARS = 400  # of one output's text kept in a notebook summary


def _render_notebook(path: Path) -> _Block | None:
    """A notebook as its cells — source in full, outputs summarised (text and errors kept short, images and HTML
    described by type and size) — instead of its JSON, where outputs (base64 images!) would fill the budget.
    ``None`` when it isn't a readable notebook (then it is attached as text)."""
    try:
        if path.stat().st_size > NOTEBOOK_MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    language = ((data.get("metadata") or {}).get("kernelspec") or {}).get("language") or "python"
    parts = [f"Notebook with {len(cells)} cells ({language}), numbered from 0; outputs are summarised."]
    for number, cell in enumerate(c for c in cells if isinstance(c, dict)):
        kind = cell.get("cell_type", "code")
        count = cell.get("execution_count")
        head = f"--- cell {number}: {kind}" + (f", In[{count}]" if count else "")
        if cell.get("id"):
            head += f", id {cell['id']}"
        parts.append(head + " ---")
        parts.append(_joined(cell.get("source")).rstrip("\n"))
        for output in cell.get("outputs") or ():
            if isinstance(output, dict):
                parts.append(_output_summary(output))
    body = "\n".join(parts) + "\n"
    return _Block("file", {"path": path, "format": "notebook"}, body,
                  more_hint="use the read_file tool for the raw JSON")


def _joined(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def _output_summary(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "error":
        return f"[error] {output.get('ename', 'Error')}: {_short(str(output.get('evalue', '')))}"
    if kind == "stream":
        return f"[{output.get('name', 'stdout')}] {_short(_joined(output.get('text')))}"
    data = output.get("data") or {}
    pieces = []
    if "text/plain" in data:
        pieces.append(_short(_joined(data["text/plain"])))
    for mime, value in data.items():
        if mime != "text/plain":
            size = len(_joined(value)) if not isinstance(value, dict) else len(json.dumps(value))
            pieces.append(f"({mime}, {size / 1024:.0f} KB)" if size >= 1024 else f"({mime}, {size} bytes)")
    return "[output] " + " ".join(pieces)


def _short(text: str) -> str:
    text = text.rstrip("\n")
    if len(text) <= NOTEBOOK_OUTPUT_CHARS:
        return text
    return text[:NOTEBOOK_OUTPUT_CHARS] + f"… [{len(text) - NOTEBOOK_OUTPUT_CHARS} more characters]"


def _file_lines(f: Any, path: Path, rng: tuple[int, int], cap: int) -> _Block:
    start, end = rng
    start = max(1, start)
    if end < start:
        raise _Problem(f"invalid line range {rng[0]}-{rng[1]} for {path}")
    lines: list[str] = []
    size = 0
    number = 0
    cut = False
    for number, raw_line in enumerate(f, 1):
        if number < start:
            continue
        if number > end:
            break
        if size > cap:
            cut = True
            break
        lines.append(raw_line.decode("utf-8", errors="replace"))
        size += len(raw_line)
    if not lines:
        raise _Problem(f"lines {start}-{end} are past the end of {path} ({number} lines)")
    last = start + len(lines) - 1
    block = _Block("file", {"path": path, "line-start": start, "line-end": last}, "".join(lines),
                   more_hint="use the read_file tool for the rest")
    if cut:
        block.notes.append(f"lines {last + 1}-{end} left out: size limit")
    return block


def _looks_binary(head: bytes) -> bool:
    if b"\0" in head:
        return True
    if not head:
        return False
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return controls / len(head) > 0.1


def _render_directory(raw: str, path: Path, folders: list[Path]) -> _Block:
    if not path.exists():
        raise _Problem(f"directory not found: {raw}")
    if not path.is_dir():
        raise _Problem(f"not a directory: {raw}")
    root = next((f.resolve() for f in folders if path == f.resolve() or f.resolve() in path.parents), None)
    matcher = IgnoreMatcher.for_root(root or path)
    if matcher.ignored(path, True):
        matcher = IgnoreMatcher.only_git(path)  # attached on purpose: list it even though git ignores it
    found, truncated = _list_breadth_first(path, matcher, DIRECTORY_MAX_ENTRIES)
    found.sort(key=lambda e: [_fold(p) for p in e[0].split("/")])
    lines = ["  " * rel.count("/") + rel.rpartition("/")[2] + ("/" if is_dir else "") for rel, is_dir in found]
    block = _Block("directory", {"path": path}, "\n".join(lines) + ("\n" if lines else "(empty)\n"))
    if truncated:
        block.notes.append(f"listing stopped at {DIRECTORY_MAX_ENTRIES} entries (shallowest first)")
    return block


def _list_breadth_first(root: Path, matcher: IgnoreMatcher, cap: int) -> tuple[list[tuple[str, bool]], bool]:
    """Up to `cap` (relative path, is_dir) under `root`, level by level, so a truncated listing keeps the top."""
    found: list[tuple[str, bool]] = []
    level: list[tuple[Path, str]] = [(root, "")]
    while level:
        next_level: list[tuple[Path, str]] = []
        for directory, rel_dir in level:
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if matcher.ignored(Path(entry.path), is_dir):
                    continue
                if len(found) >= cap:
                    return found, True
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                found.append((rel, is_dir))
                if is_dir:
                    next_level.append((Path(entry.path), rel))
        level = next_level
    return found, False


def _render_cursor(ctx: CursorContext, path: Path) -> _Block:
    """The lines around the cursor, numbered, with the selection marked ``<|selection|>…<|/selection|>`` (or a
    ``<|cursor|>`` for an empty one). Lines are 1-based (as ECA clients send them), characters 0-based."""
    if path.exists() and not path.is_file():
        raise _Problem(f"cursor is not in a regular file: {ctx.path}")
    try:
        if path.stat().st_size > CURSOR_MAX_FILE_BYTES:
            raise _Problem(f"file too large for a cursor context: {ctx.path}")
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise _Problem(f"file not found: {ctx.path}") from None
    except PermissionError:
        raise _Problem(f"permission denied: {ctx.path}") from None
    if _looks_binary(data[:_BINARY_SNIFF]):
        raise _Problem(f"binary file skipped: {path}")
    # Split on "\n" only (str.splitlines also splits on form feeds and Unicode separators: editors don't).
    lines = [ln.removesuffix("\r") for ln in data.decode("utf-8", errors="replace").split("\n")]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    start, end = ctx.position.start, ctx.position.end
    if (end.line, end.character) < (start.line, start.character):
        start, end = end, start
    s_line = min(max(start.line, 1), len(lines))
    e_line = min(max(end.line, 1), len(lines))
    s_char = min(max(start.character, 0), len(lines[s_line - 1]))
    e_char = min(max(end.character, 0), len(lines[e_line - 1]))
    marked = list(lines)
    if (s_line, s_char) == (e_line, e_char):
        text = marked[s_line - 1]
        marked[s_line - 1] = text[:s_char] + "<|cursor|>" + text[s_char:]
    else:
        text = marked[e_line - 1]
        marked[e_line - 1] = text[:e_char] + "<|/selection|>" + text[e_char:]
        text = marked[s_line - 1]
        marked[s_line - 1] = text[:s_char] + "<|selection|>" + text[s_char:]
    first = max(1, s_line - CURSOR_RADIUS)
    last = min(len(lines), e_line + CURSOR_RADIUS)
    width = len(str(last))
    body = "".join(f"{n:>{width}}| {marked[n - 1]}\n" for n in range(first, last + 1))
    attrs = {"path": path, "start": f"{start.line}:{start.character}", "end": f"{end.line}:{end.character}",
             "lines": f"{first}-{last}"}
    return _Block("cursor", attrs, body)


# -- web -----------------------------------------------------------------------------------------------------------

_TEXT_TYPES = {"application/xhtml+xml", "application/json", "application/xml", "application/javascript",
               "application/x-yaml", "application/yaml", "application/toml"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)


async def _render_web(url: str, http: "httpx.AsyncClient", timeout: float) -> _Block:
    import httpx  # lazy: importing the engine must stay cheap

    scheme = urlparse(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise _Problem(f"unsupported URL (only http and https can be fetched): {url}")
    chunks: list[bytes] = []
    size = 0
    cut = False
    try:
        async with asyncio.timeout(timeout):
            async with http.stream("GET", url, follow_redirects=True, timeout=timeout,
                                   headers={"Accept": "text/html, text/plain;q=0.9, */*;q=0.5"}) as resp:
                if resp.status_code >= 400:
                    reason = f" {resp.reason_phrase}" if resp.reason_phrase else ""
                    raise _Problem(f"could not fetch {url}: HTTP {resp.status_code}{reason}")
                mime = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                if mime and not (mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+json")
                                 or mime.endswith("+xml")):
                    raise _Problem(f"not a text page ({mime}): {url}")
                async for chunk in resp.aiter_bytes():
                    room = WEB_MAX_BYTES - size
                    if len(chunk) > room:
                        chunks.append(chunk[:room])
                        cut = True
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                charset = resp.charset_encoding
                final_url = str(resp.url)
    except TimeoutError:
        raise _Problem(f"timed out fetching {url} (after {timeout:g} s)") from None
    except httpx.TimeoutException:
        raise _Problem(f"timed out fetching {url}") from None
    except httpx.HTTPError as exc:
        raise _Problem(f"could not fetch {url}: {type(exc).__name__}") from None
    data = b"".join(chunks)
    if not mime and _looks_binary(data[:_BINARY_SNIFF]):
        raise _Problem(f"not a text page: {url}")
    is_html = mime in ("text/html", "application/xhtml+xml") or (not mime and data.lstrip()[:1] == b"<")
    if charset is None and is_html:
        m = _META_CHARSET.search(data[:4096])
        charset = m.group(1).decode("ascii") if m else None
    try:
        text = data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    title = None
    if is_html:
        title, text = html_to_text(text)
    attrs: dict[str, Any] = {"url": url}
    if final_url != url:
        attrs["final-url"] = final_url
    attrs["title"] = title
    block = _Block("web", attrs, text)
    if cut:
        block.notes.append(f"page larger than {WEB_MAX_BYTES // 1000} KB: only the beginning was read")
    return block


class _TextExtractor(HTMLParser):
    """Readable text of an HTML page: headings (as ``#`` lines), paragraphs, list items, link texts, ``<pre>``
    verbatim; scripts, styles, navigation and other non-content elements dropped; whitespace collapsed."""

    SKIP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "canvas", "iframe", "object"})
    BLOCK = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside", "ul", "ol", "table",
                       "tr", "blockquote", "dl", "dt", "dd", "figure", "figcaption", "form", "details", "summary",
                       "hr", "address", "fieldset", "body", "html", "title"})
    VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track",
                      "wbr", "param"})
    _PRE = "\ue000"  # marks lines of <pre> text so the final clean-up keeps their whitespace

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.in_title = False
        self.title_parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            if tag not in self.VOID:
                self.skip += 1
            return
        if self.skip:
            return
        if tag == "title":
            self.in_title = True
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag == "pre":
            self.pre += 1
            self.out.append("\n")
        elif tag == "br":
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" ")
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.SKIP:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag == "title":
            self.in_title = False
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.out.append("\n")
        elif tag in self.BLOCK or tag in ("h1", "h2", "h3", "h4", "h5", "h6", "li"):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.pre:
            self.out.append("\n".join(self._PRE + line for line in data.split("\n")))
        else:
            self.out.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines: list[str] = []
        blank = True
        for line in "".join(self.out).split("\n"):
            if line.startswith(self._PRE):
                lines.append(line.replace(self._PRE, ""))
                blank = False
                continue
            line = " ".join(line.replace(self._PRE, "").split())
            if not line:
                if not blank:
                    lines.append("")
                blank = True
                continue
            lines.append(line)
            blank = False
        return "\n".join(lines).strip("\n") + "\n"


def html_to_text(page: str) -> tuple[str | None, str]:
    """(title, readable text) of an HTML page; see :class:`_TextExtractor`."""
    parser = _TextExtractor()
    try:
        parser.feed(page)
        parser.close()
    except Exception:  # noqa: BLE001 - html.parser is lenient, but a broken page must not fail the turn
        log.debug("HTML parse error", exc_info=True)
    title = " ".join("".join(parser.title_parts).split()) or None
    return title, parser.text()


# -- fitting into the budget ---------------------------------------------------------------------------------------


def _fit(block: _Block, body_cap: int, budget: int) -> tuple[str | None, str | None]:
    """The rendered element: its body cut to `body_cap` bytes and the whole element to `budget` bytes, with a note
    inside when cut. Returns (element or None when not even a useful part fits, "cap" | "budget" | None = why cut)."""
    opening, closing = block.open(), f"</{block.tag}>\n"
    body = block.body if block.body.endswith("\n") or not block.body else block.body + "\n"
    body_bytes = len(body.encode("utf-8"))
    notes = list(block.notes)
    overhead = len(opening.encode()) + len(closing.encode()) + 1 + sum(len(n.encode()) + 3 for n in notes)
    room = min(body_cap, budget - overhead)
    why = None
    if body_bytes > room:
        why = "cap" if body_cap <= budget - overhead else "budget"
        room -= 250  # the truncation note
        if room < min(200, body_bytes):
            return None, why
        body = _truncate(body, room)
        total = max(block.total or 0, body_bytes)
        hint = f"; {block.more_hint}" if block.more_hint else ""
        notes.append(f"truncated: showing the first {len(body.encode('utf-8'))} of {total} bytes{hint}")
    elif block.total and block.total > body_bytes:
        why = "cap"
        hint = f"; {block.more_hint}" if block.more_hint else ""
        notes.append(f"truncated: showing the first {body_bytes} of {block.total} bytes{hint}")
    note_text = "".join(f"[{n}]\n" for n in notes)
    return f"{opening}\n{body}{note_text}{closing}", why


def _truncate(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    if newline >= len(cut) * 0.8:
        cut = cut[: newline + 1]
    return cut if cut.endswith("\n") else cut + "\n"


def _describe(ctx: Any) -> str:
    if isinstance(ctx, (FileContext, DirectoryContext, CursorContext)):
        return f"{ctx.type} {ctx.path}"
    if isinstance(ctx, WebContext):
        return f"web page {ctx.url}"
    if isinstance(ctx, McpResourceContext):
        return f"MCP resource {ctx.uri}"
    return str(getattr(ctx, "type", "context"))


# -- query helpers -------------------------------------------------------------------------------------------------


def _validated(contexts: Sequence[Any]) -> list[Any]:
    out = []
    for c in contexts:
        if isinstance(c, dict):
            try:
                c = _CONTEXT.validate_python(c)
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
        return None if ctx.lines_range else ("file", _norm(ctx.path, base))
    if isinstance(ctx, DirectoryContext):
        return ("directory", _norm(ctx.path, base))
    if isinstance(ctx, RepoMapContext):
        return ("repoMap",)
    if isinstance(ctx, WebContext):
        return ("web", ctx.url)
    if isinstance(ctx, McpResourceContext):
        return ("mcpResource", ctx.server, ctx.uri)
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
    return any(_is_subsequence(ql, _fold(t)) for t in texts if t)


def _is_subsequence(needle: str, hay: str) -> bool:
    pos = 0
    for ch in needle:
        pos = hay.find(ch, pos) + 1
        if pos == 0:
            return False
    return True
