"""One MCP server: its process (stdio) or HTTP session, its MCP ``ClientSession``, and what it offers.

The SDK's transports and session are anyio context managers that must be entered and left *in the same task*, so
each connection has one runner task that owns them for the connection's whole life: it connects, lists tools,
prompts and resources, then waits until asked to stop or until the server goes away. Calls (tools, prompts,
resources) come from other tasks — chat turns — and only use the session.

How the server going away is noticed:

* stdio: the server's stdout reaches end of file (it exited or crashed). A thin wrapper around the session's read
  stream sees that and wakes the runner, whether or not a call was in flight.
* streamable HTTP: the SDK's HTTP transport fails its task group on a connection error, which cancels the runner's
  wait; the runner reports the error. A server that dies *during* a request breaks that request's response stream
  instead: mcp 2.x answers the request with "connection closed"; mcp 1.x (which Jupyter AI brings) swallows the
  error and never answers, so the call would wait for the whole timeout. With 1.x, :class:`_ResponseWatch` sees the
  broken response body in the HTTP client and wakes the runner, as end-of-file does for stdio.

Either way pending calls end with "connection closed" from the SDK, the status becomes ``failed`` and the runner
leaves the transport, which (stdio) closes stdin, then terminates and kills the server's whole process group — the
SDK starts every server in its own session, so nothing is orphaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, cast

import anyio
import httpx

from .._redact import add_secrets, redact, secret_env_values, secret_header_values, secrets_of_url
from .._tasks import BackgroundTasks
from ..protocol import JsonObject
from ._convert import dump


class McpServerConfig(Protocol):
    """One ``mcpServers`` entry as this package reads it (the engine's config schema satisfies it): a stdio server
    (``command``/``args``/``env``) or a remote one (``url``/``headers``)."""

    command: str | None
    args: list[str]
    env: dict[str, str]
    url: str | None
    headers: dict[str, str]
    disabled: bool



# What a server lists, as the SDK validated and dumped it (by alias, ``None`` fields left out; the keys read here):
class McpToolSpec(TypedDict):
    """An MCP ``Tool``."""

    name: str
    title: NotRequired[str]
    description: NotRequired[str]
    #: The tool's JSON Schema for its arguments (any JSON object: the server's to say).
    inputSchema: JsonObject
    #: Hints (``readOnlyHint``, ``destructiveHint``…).
    annotations: NotRequired[JsonObject]


class McpPromptArgument(TypedDict):
    """An argument of an MCP ``Prompt``."""

    name: str
    description: NotRequired[str]
    required: NotRequired[bool]


class McpPromptSpec(TypedDict):
    """An MCP ``Prompt``."""

    name: str
    title: NotRequired[str]
    description: NotRequired[str]
    arguments: NotRequired[list[McpPromptArgument]]


class McpResourceSpec(TypedDict):
    """An MCP ``Resource``."""

    uri: str
    name: str
    title: NotRequired[str]
    description: NotRequired[str]
    mimeType: NotRequired[str]


log = logging.getLogger(__name__)

MAX_PAGES = 50  # a paginated listing that never ends must not hang start-up
STDERR_LINES = 20
STOP_TIMEOUT = 10.0  # the SDK's stdio shutdown is bounded (~4.5 s: stdin close, SIGTERM, SIGKILL)
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001


class ServerGone(Exception):
    """The server's connection ended (process exited, HTTP connection lost)."""


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, which anyio task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        real = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (real or list(exc.exceptions))[0]
    return exc


def describe_error(exc: BaseException) -> str:
    exc = leaf_error(exc)
    code = error_code(exc)
    message = getattr(getattr(exc, "error", None), "message", None) or str(exc)
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "mcp":
        return "the MCP SDK is not installed (pip install 'eca-notebook[mcp]')"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or message}"
    if isinstance(exc, TimeoutError):
        return message or "timed out"
    if code is not None:
        return message
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an SDK error (``MCPError`` in 2.x, ``McpError`` in 1.x), else None."""
    code = getattr(getattr(exc, "error", None), "code", None)
    return code if isinstance(code, int) else None


class _EofWatch:
    """Passes the transport's read stream through to the session and calls `on_eof` when it ends."""

    def __init__(self, stream: Any, on_eof: Callable[[], None]) -> None:
        self._stream = stream
        self._on_eof = on_eof

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here when present
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_eof()
            raise

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _EofWatch:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


class _WatchedBody(httpx.AsyncByteStream):
    """One response body of a request POSTed to the server, passed through; calls `on_broken` if it breaks (the
    connection failed before the body ended) and the SDK cannot resume it — no SSE event id was seen, the condition
    under which mcp 1.x reconnects with ``Last-Event-ID`` instead of giving up."""

    def __init__(self, stream: httpx.AsyncByteStream, on_broken: Callable[[BaseException], None]) -> None:
        self._stream = stream
        self._on_broken = on_broken
        self._resumable = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        tail = b"\n"  # an "id:" field at the very start counts as at the start of a line
        try:
            async for chunk in self._stream:
                if not self._resumable:
                    seen = tail + chunk
                    self._resumable = b"\nid:" in seen or b"\rid:" in seen
                    tail = seen[-3:]
                yield chunk
        except httpx.TimeoutException:
            raise  # a silent server is not a gone one: the call's own timeout applies
        except httpx.TransportError as exc:
            if not self._resumable:
                self._on_broken(exc)
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()


class _ResponseWatch:
    """An httpx response hook for mcp 1.x's HTTP client: watches the body of every response to a POSTed message.

    Why: a server that dies while answering leaves a half-sent response; mcp 1.x's transport catches the read error
    ("SSE stream ended", logged at debug level) and never answers the request, so the caller would wait for the
    whole MCP timeout. mcp 2.x answers such a request with CONNECTION_CLOSED itself; this gives 1.x the same
    outcome through the connection's usual path (`on_broken` wakes the runner, which fails the connection and
    ends the calls still waiting)."""

    def __init__(self, on_broken: Callable[[BaseException], None]) -> None:
        self._on_broken = on_broken

    async def __call__(self, response: httpx.Response) -> None:
        if response.request.method == "POST" and response.is_success and response.status_code != 202:
            response.stream = _WatchedBody(response.stream, self._on_broken)  # type: ignore[arg-type]


class _StderrTail:
    """The server's stderr: logged at debug level, and its last lines kept to explain a failure."""

    def __init__(self, server: str) -> None:
        self.server = server
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")  # handed to the child; ours is closed once it is spawned
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self._lines: deque[str] = deque(maxlen=STDERR_LINES)
        self._partial = b""
        self._done = asyncio.Event()
        self._transport: asyncio.ReadTransport | None = None

    async def start(self) -> None:
        tail = self

        class _Protocol(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                tail._feed(data)

            def eof_received(self) -> bool | None:
                tail._finish()
                return None

            def connection_lost(self, exc: Exception | None) -> None:
                tail._finish()

        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(_Protocol, self._reader)

    def _feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > 4096:
            lines.append(self._partial)
            self._partial = b""
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").rstrip()
            if line:
                self._lines.append(line)
                log.debug("[%s stderr] %s", self.server, line)

    def _finish(self) -> None:
        if self._partial:
            self._feed(b"\n")
        self._done.set()

    def close_writer(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.close()

    async def settle(self, timeout: float = 1.0) -> None:
        """Give the last lines a moment to arrive after the process ended."""
        self.close_writer()
        if self._transport is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._done.wait(), timeout)

    def tail(self, lines: int = 5, chars: int = 600) -> str:
        text = " | ".join(list(self._lines)[-lines:])
        return text if len(text) <= chars else "…" + text[-chars:]

    def close(self) -> None:
        self.close_writer()
        if self._transport is not None:
            self._transport.close()
        else:
            with contextlib.suppress(OSError):
                self._reader.close()


def _safe_url(url: str) -> str:
    """The URL as shown to clients: without userinfo (``https://user:token@host`` → ``https://host``) and with
    credential-like query values (``?token=``) redacted."""
    return redact(re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url))


class McpConnection:
    """The live side of one configured server. The manager owns the statuses; this class reports to it through
    `on_change` (status or lists changed) and `on_failed` (the reason, once per failure)."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        cwd: Path | None,
        timeout: float,
        on_change: Callable[[McpConnection], None],
        on_failed: Callable[[McpConnection, str], None],
    ) -> None:
        self.name = name
        self.config = config
        self.cwd = cwd
        self.timeout = timeout
        self._on_change = on_change
        self._on_failed = on_failed
        self.status: str = "disabled" if config.disabled else "stopped"
        # process-wide, so logs and every door redact them too (servers added by an ACP client included)
        add_secrets([*secret_env_values(config.env), *secret_header_values(config.headers),
                     *secrets_of_url(config.url)])
        self.error: str | None = None
        self.session: Any = None
        self.tools: list[McpToolSpec] = []
        self.prompts: list[McpPromptSpec] = []
        self.resources: list[McpResourceSpec] = []
        self._capabilities: JsonObject = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._settled = asyncio.Event()
        self._ended = asyncio.Event()  # set when the runner has left the session: calls still waiting are answered
        self._refresh_tasks = BackgroundTasks(f"MCP server {name}", logger=log)
        self._lock = asyncio.Lock()
        self._scope: anyio.CancelScope | None = None
        self._lost: str | None = None  # why a call saw the connection end (HTTP has no end-of-file to watch)
        self._lost_detail: str | None = None  # what the calls still waiting are told (mcp 1.x over HTTP)
        self.closed = False  # set when the manager closes: no more starts

    # -- shape ---------------------------------------------------------------------------------------------------

    @property
    def is_stdio(self) -> bool:
        return self.config.command is not None

    def describe(self) -> JsonObject:
        """The transport part of ``tool/serverUpdated``: command/args or url."""
        if self.is_stdio:
            return {"command": self.config.command, "args": list(self.config.args)}
        return {"url": _safe_url(self.config.url or ""), "args": []}

    def _secrets(self) -> list[str]:
        values = [*self.config.env.values(), *self.config.headers.values()]
        for value in list(values):
            values += value.split()  # "Bearer <token>": the token alone too
        return sorted({v for v in values if len(v) >= 6}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """Never show a configured env value or header (API tokens) in a message — nor any registered secret."""
        return redact(text, self._secrets())

    # -- lifecycle -----------------------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Connect in the background; returns once the server is running or has failed."""
        async with self._lock:
            if self.closed:
                return
            if self.active:
                settled = self._settled
            else:
                self._stopping = False
                self._lost = None
                self._lost_detail = None
                self._wake = asyncio.Event()
                self._ended = asyncio.Event()
                self._settled = settled = asyncio.Event()
                self.error = None
                self._set_status("starting")
                self._task = asyncio.create_task(self._run(), name=f"eca-mcp-{self.name}")
        await settled.wait()

    async def stop(self) -> None:
        """Stop the runner (closing the session, then the process or HTTP session); status ``stopped``."""
        async with self._lock:
            task = self._task
            if task is not None and not task.done():
                self._stopping = True
                self._wake.set()
                if self._scope is not None:
                    self._scope.cancel()
                done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
                if not done:  # should not happen: the SDK bounds its shutdown; cancel as a last resort
                    log.warning("MCP server %s did not stop within %s s; cancelling", self.name, STOP_TIMEOUT)
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            await self._refresh_tasks.aclose()
            self._task = None
            self.session = None
            if task is None and self.status == "disabled":
                return  # never started: it stays disabled
            if self.status != "stopped":
                self.error = None
                self._set_status("stopped")

    def _set_status(self, status: str) -> None:
        self.status = status
        if status != "running":
            self.session = None
        if status in ("running", "failed", "stopped", "disabled"):
            self._settled.set()
        self._on_change(self)

    def _fail(self, reason: str) -> None:
        self.session = None
        self.error = self.redact(reason)
        self._set_status("failed")
        self._on_failed(self, self.error)

    async def _run(self) -> None:
        stderr = _StderrTail(self.name) if self.is_stdio else None
        reason: str | None = None
        eof = False

        def on_eof() -> None:
            nonlocal eof
            eof = True
            self._wake.set()

        try:
            if stderr is not None:
                await stderr.start()
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stderr))
                if stderr is not None:
                    stderr.close_writer()  # the child has its copy; EOF on the pipe now means the child is gone
                session = await stack.enter_async_context(self._session(_EofWatch(read, on_eof), write))
                with anyio.CancelScope() as self._scope:  # stop() cancels it, whatever the runner is waiting for
                    if self._stopping:
                        self._scope.cancel()
                    try:
                        with anyio.fail_after(self.timeout):
                            result = await session.initialize()
                            self._capabilities = dump(getattr(result, "capabilities", None)) or {}
                            await self._load_lists(session)
                    except TimeoutError:
                        raise TimeoutError(f"no answer to initialize within {self.timeout:g} s") from None
                    self.session = session
                    self._set_status("running")
                    log.info("MCP server %s running with %d tool(s)", self.name, len(self.tools))
                    await self._wake.wait()
                if not self._stopping:
                    reason = self._lost or ("the server closed the connection (its process exited)" if eof
                                            else "the connection to the server was lost")
                self.session = None
        except asyncio.CancelledError:
            if not self._stopping:
                reason = "the connection was cancelled"
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of a server is a status, never a crash
            if not self._stopping:
                reason = self._failure_reason(exc)
                log.debug("MCP server %s failed", self.name, exc_info=exc)
        except BaseExceptionGroup as group:  # anyio task groups wrap what they raise
            if not self._stopping:
                reason = self._failure_reason(group)
                log.debug("MCP server %s failed", self.name, exc_info=group)
        finally:
            self.session = None
            self._scope = None
            if stderr is not None:
                await stderr.settle()
                tail = stderr.tail()
                stderr.close()
                if reason is not None and tail:
                    reason = f"{reason} (stderr: {tail})"
            if reason is not None and not self._stopping:
                self._fail(reason)
            self._settled.set()
            self._ended.set()

    def _failure_reason(self, exc: BaseException) -> str:
        leaf = leaf_error(exc)
        if error_code(leaf) != CONNECTION_CLOSED and not isinstance(leaf, asyncio.CancelledError):
            return describe_error(leaf)  # the transport's own error says most (e.g. "ConnectError: …")
        return self._lost or ("the server closed the connection (its process exited)" if self.is_stdio
                              else "the server closed the connection")

    def _transport(self, stderr: _StderrTail | None) -> contextlib.AbstractAsyncContextManager[Any]:
        if self.is_stdio:
            from mcp import StdioServerParameters, stdio_client

            assert stderr is not None and self.config.command is not None
            params = StdioServerParameters(
                command=self.config.command,
                args=list(self.config.args),
                env={**os.environ, **self.config.env},
                cwd=str(self.cwd) if self.cwd is not None else None,
            )
            return stdio_client(params, errlog=stderr.writer)
        assert self.config.url is not None  # a server is stdio or remote (checked when the config is read)
        if (getattr(self.config, "model_extra", None) or {}).get("transport") == "sse":
            return _sse_transport(self.config.url, dict(self.config.headers))
        return _http_transport(self.config.url, dict(self.config.headers), on_broken=self._response_broke)

    def _response_broke(self, exc: BaseException) -> None:
        """mcp 1.x over HTTP: a response stream broke (see :class:`_ResponseWatch`); the server is gone or
        unreachable, and the request it carried will never be answered."""
        if self._stopping or self._task is None or self._task.done():
            return
        detail = self.redact(f"the server disconnected: {describe_error(exc)}")
        log.debug("MCP server %s: a response stream broke: %s", self.name, describe_error(exc))
        self._lost = self._lost or detail
        self._lost_detail = self._lost_detail or detail
        self._wake.set()
        if self.status == "starting" and self._scope is not None:
            self._scope.cancel()  # the handshake itself was cut off: do not wait for its timeout

    def _session(self, read: Any, write: Any) -> Any:
        from mcp import ClientSession, types

        from .._version import __version__

        return ClientSession(read, write, message_handler=self._on_message,
                             client_info=types.Implementation(name="eca-notebook", version=__version__))

    # -- lists ---------------------------------------------------------------------------------------------------

    async def _load_lists(self, session: Any) -> None:
        caps = self._capabilities
        self.tools = cast("list[McpToolSpec]", await self._list(session, "tools")) if "tools" in caps else []
        for kind in ("prompts", "resources"):
            items: list[JsonObject] = []
            if kind in caps:
                try:
                    items = await self._list(session, kind)
                except Exception as exc:  # a broken prompt or resource listing must not cost the tools
                    log.warning("MCP server %s: listing %s failed: %s", self.name, kind, describe_error(exc))
            setattr(self, kind, items)

    async def _list(self, session: Any, kind: str) -> list[JsonObject]:
        """Every page of a listing, as the SDK validated it into its models (so each item is the kind's
        ``Mcp*Spec``), the items without a name (a resource: a ``uri``) left out."""
        from mcp import types

        method = {"tools": session.list_tools, "prompts": session.list_prompts,
                  "resources": session.list_resources}[kind]
        items: list[JsonObject] = []
        cursor = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = dump(await method(params=params))
            key = "uri" if kind == "resources" else "name"
            items += [item for item in page.get(kind) or [] if isinstance(item, dict) and item.get(key)]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return items

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.debug("MCP server %s sent something unreadable: %s", self.name, describe_error(message))
            return
        method = getattr(getattr(message, "root", message), "method", None)
        kind = {"notifications/tools/list_changed": "tools", "notifications/prompts/list_changed": "prompts",
                "notifications/resources/list_changed": "resources"}.get(method or "")
        if kind is not None:
            self._refresh_tasks.spawn(self._refresh(kind), f"eca-mcp-{self.name}-refresh")

    async def _refresh(self, kind: str) -> None:
        session = self.session
        if session is None:
            return
        try:
            items = await asyncio.wait_for(self._list(session, kind), self.timeout)
        except Exception as exc:
            log.warning("MCP server %s: refreshing %s failed: %s", self.name, kind, describe_error(exc))
            return
        if self.session is session:
            setattr(self, kind, items)
            self._on_change(self)

    # -- calls ---------------------------------------------------------------------------------------------------

    def require_session(self) -> Any:
        session = self.session
        if session is None or self.status != "running":
            why = f": {self.error}" if self.status == "failed" and self.error else ""
            raise ServerGone(f"MCP server '{self.name}' is not running (status: {self.status}{why})")
        return session

    async def request(self, what: str, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run one request with the timeout. A lost connection becomes :class:`ServerGone` and a failed status; a
        timeout leaves the server running (a slow call is not a dead server)."""
        session = self.require_session()
        try:
            return await asyncio.wait_for(_unless_ended(call(session), self._ended), self.timeout)
        except TimeoutError:
            raise TimeoutError(self._timed_out(what)) from None
        except _Ended:
            detail = self._lost_detail or "connection closed"
            raise ServerGone(f"MCP server '{self.name}' closed the connection during {what} ({detail})") from None
        except Exception as exc:
            code = error_code(exc)
            if code == REQUEST_TIMEOUT:
                raise TimeoutError(self._timed_out(what)) from None
            if code == CONNECTION_CLOSED:
                detail = getattr(getattr(exc, "error", None), "message", "") or "connection closed"
                message = f"MCP server '{self.name}' closed the connection during {what} ({detail})"
                if self.session is session and not self._stopping:
                    self._lost = self._lost or f"the server closed the connection during {what} ({detail})"
                    self._wake.set()  # the runner reports it (stdio also sees end-of-file; HTTP does not)
                raise ServerGone(message) from None
            raise

    def _timed_out(self, what: str) -> str:
        return f"MCP server '{self.name}' did not answer {what} within {self.timeout:g} s"

    def offers_resource(self, uri: str) -> bool:
        return any(r.get("uri") == uri for r in self.resources)


class _Ended(Exception):
    """The connection ended while a request waited for its answer."""


async def _unless_ended(call: Awaitable[Any], ended: asyncio.Event) -> Any:
    """The call's result, or :class:`_Ended` once the runner has left the session. mcp 2.x answers a request whose
    connection closed with CONNECTION_CLOSED itself; mcp 1.x (which Jupyter AI brings) may not: tearing the session
    down at end-of-file cancels its receive loop before it answers the requests still waiting, which then wait for
    the whole timeout."""
    task = asyncio.ensure_future(call)
    gone = asyncio.ensure_future(ended.wait())
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise _Ended
    return task.result()


@contextlib.asynccontextmanager
async def _sse_transport(url: str, headers: Mapping[str, str]) -> AsyncIterator[tuple[Any, Any]]:
    """The older HTTP+SSE transport (``"transport": "sse"``; ACP's ``type: "sse"`` servers): the SDK's
    ``sse_client``, which the 1.x and 2.x SDKs both have with this signature."""
    from mcp.client.sse import sse_client

    async with sse_client(url, headers=dict(headers)) as streams:
        yield streams[0], streams[1]


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: Mapping[str, str], *,
                          on_broken: Callable[[BaseException], None] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """Streamable HTTP with the configured headers, for the 2.x SDK (``streamable_http_client`` over an httpx2
    client) or the 1.x one (1.25+ has the same function, yielding a third value, the session id getter; older 1.x
    only ``streamablehttp_client(url, headers=…)``). Jupyter AI 3.2 brings mcp 1.x (see pyproject's mcp extra).
    `on_broken` is told when a response stream of the 1.x SDK's httpx client breaks (:class:`_ResponseWatch`)."""
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # mcp 1.x before 1.25
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

        async with streamablehttp_client(url, headers=dict(headers)) as (read, write, _session_id):
            yield read, write
        return
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=dict(headers)) as client:
        if on_broken is not None and isinstance(client, httpx.AsyncClient):  # 1.x; 2.x speaks httpx2 and needs none
            client.event_hooks = {**client.event_hooks,
                                  "response": [*client.event_hooks.get("response", []), _ResponseWatch(on_broken)]}
        async with streamable_http_client(url, http_client=client) as streams:
            yield streams[0], streams[1]
