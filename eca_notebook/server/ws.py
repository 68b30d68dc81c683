"""ECA over WebSocket: ``<base_url>api/eca/v1/ws``, one JSON-RPC message per text frame, exactly as over stdio.

The handler is thin on purpose: authentication, authorization and the origin check follow jupyter_server's own
WebSocket handlers (``JupyterHandler`` + ``pre_get`` + ``ws_authenticated``), and everything ECA is the same
:class:`~eca_notebook.serving.ServerConnection` the stdio server uses, over a :class:`WebSocketStream`.

Robustness, per socket:

* **Malformed frames** (not JSON, not an object/array) are answered with a JSON-RPC error by the endpoint; the
  socket stays open.
* **Oversized frames**: up to ``max_message_size`` bytes a frame is handled; above it, up to tornado's hard cap
  (twice that), the frame is read but refused with ``-32600`` naming the limit (and the request's id when it can be
  found in the first bytes); above the hard cap tornado closes the socket with 1009 (message too big).
* **Slow readers**: the engine never waits for a socket; each socket has its own outgoing queue and writer task.
  A client is disconnected (close code 1008) when one frame cannot be handed to its connection for
  ``write_timeout`` seconds (it stopped reading and the kernel buffers are full), or when its queue exceeds
  ``max_pending_bytes`` (a memory cap, far above what a normal burst queues). It cannot stall the engine or the
  other sockets, nor make the server buffer without bound. The panel reconnects and replays with ``chat/open``.
  (Why not a small byte bound alone: the engine emits a provider's burst to every socket at once, before any
  writer runs, so the queue size says nothing about whether a client reads; stalled writes do.)
* **Incoming backpressure**: ``on_message`` waits while the inbox is full, so tornado stops reading the socket
  instead of queueing a flood in memory.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..protocol import InitializeParams, InitializeResult
from ..protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ..serving import ServerConnection, workspace_paths
from ..transports import decode_message, dumps
from ._workspaces import Workspace, WorkspaceError, WorkspaceManager

__all__ = [
    "AUTH_RESOURCE",
    "EcaSocketHandler",
    "EcaWebSocketHandler",
    "Limits",
    "ServerState",
    "WebSocketStream",
    "WorkspaceConnection",
    "peek_id",
]

log = logging.getLogger(__name__)

AUTH_RESOURCE = "eca"
CLOSE_SLOW_CLIENT = 1008  # policy violation: the client does not read what it asked for
CLOSE_GOING_AWAY = 1001
_CLOSE_DRAIN_SECONDS = 2.0
_BATCH_BYTES = 256 * 1024  # frames handed to tornado before waiting for them to reach the socket


@dataclass
class Limits:
    """Per-socket limits (configurable on the extension app)."""

    max_message_size: int = 8 * 1024 * 1024  # larger frames are refused with -32600
    max_pending_bytes: int = 64 * 1024 * 1024  # outgoing bytes queued for one socket before it is dropped
    write_timeout: float = 15.0  # seconds one frame may wait for a client that does not read before it is dropped
    inbox_size: int = 256  # incoming messages queued before tornado stops reading the socket

    @property
    def hard_max_message_size(self) -> int:
        """What tornado reads at most: frames between the two limits get a clear JSON-RPC error, bigger ones a
        1009 close (reading them would cost memory the limit is there to protect)."""
        return max(2 * self.max_message_size, self.max_message_size + 1024 * 1024)


@dataclass(eq=False)
class ServerState:
    """What the extension's handlers share: the workspaces, the limits, the open sockets."""

    manager: WorkspaceManager
    limits: Limits = field(default_factory=Limits)
    sockets: set[EcaSocketHandler] = field(default_factory=set)

    async def aclose(self) -> None:
        """Server stop: close every socket (1001), wait for their connections to end, then close the engines."""
        handlers = list(self.sockets)
        for handler in handlers:
            handler.shutdown()
        tasks = [h.serve_task for h in handlers if h.serve_task is not None]
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=10)
            for task in stuck:
                task.cancel()
        await self.manager.aclose()


def peek_id(body: bytes, window: int = 4096) -> int | str | None:
    """The top-level ``"id"`` of a JSON-RPC request, read from its first *window* bytes without parsing the rest.

    Lets an over-limit request be failed with its own id (so the client's pending call ends at once) without
    decoding a message we refused to decode. None when it is not found there or is not a plain number or string.
    """
    text = body[:window].decode("utf-8", "ignore").lstrip()
    if not text.startswith("{"):
        return None  # a batch (or garbage): no single id to answer
    depth, key_position, i, n = 0, False, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                return None
            if depth == 1 and key_position and text[i + 1 : end] == "id":
                rest = text[end + 1 :].lstrip()
                if rest.startswith(":"):
                    return _scalar(rest[1:].lstrip())
            key_position = False
            i = end + 1
            continue
        if ch in "{[":
            depth += 1
            key_position = ch == "{" and depth == 1
        elif ch in "}]":
            depth -= 1
        elif ch == ",":
            key_position = depth == 1
        i += 1
    return None


def _scalar(text: str) -> int | str | None:
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0 or "\\" in text[1:end]:
            return None
        return text[1:end]
    match = _INT.match(text)
    return int(match.group()) if match else None


_INT = re.compile(r"-?\d+(?![\d.eE])")


def _rpc_refusal(body: bytes, limit: int) -> dict[str, Any]:
    error = RpcError(INVALID_REQUEST, f"message of {len(body)} bytes exceeds the limit of {limit} bytes",
                     {"size": len(body), "limit": limit})
    return {"jsonrpc": "2.0", "id": peek_id(body), "error": error.to_dict()}


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve a write's outcome so a write failed by a drop or a disconnect is not reported as never retrieved."""
    if not future.cancelled():
        future.exception()


class WebSocketStream:
    """A :class:`~eca_notebook.transports.MessageStream` over one tornado WebSocket.

    The handler feeds incoming frames with :meth:`feed` / :meth:`feed_eof`; :meth:`write` never blocks: it queues
    the encoded message for the socket's writer task, and drops the client when its queue would exceed
    ``max_pending_bytes`` or a frame waits ``write_timeout`` seconds.
    """

    def __init__(self, handler: WebSocketHandler, limits: Limits, name: str = "ws",
                 refuse: Callable[[bytes, int], Any] | None = None) -> None:
        """*refuse(body, limit)*: the message answering a frame over the size limit (default: a JSON-RPC error
        with the request's id); the session stream answers with its own ``server.error``."""
        self.name = name
        self._refuse = refuse or _rpc_refusal
        self._handler = handler
        self._limits = limits
        self._inbox: asyncio.Queue[Any] = asyncio.Queue(maxsize=max(1, limits.inbox_size))
        self._eof = False
        self._closed = False
        self._outbox: collections.deque[bytes] = collections.deque()
        self._pending_bytes = 0
        self._wakeup = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._writer: asyncio.Task[None] | None = None
        self._socket_gone = False  # the writer found the socket closed: nothing more can be sent
        self.dropped_reason: str | None = None

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_loop(), name=f"{self.name}-writer")

    # -- incoming --------------------------------------------------------------------------------------------------

    async def feed(self, message: str | bytes) -> None:
        """One frame from the client. Waits while the inbox is full (tornado reads nothing more meanwhile)."""
        if self._eof:
            return
        body = message.encode("utf-8", "surrogatepass") if isinstance(message, str) else bytes(message)
        limit = self._limits.max_message_size
        if len(body) > limit:
            log.warning("%s: refused a message of %d bytes (limit %d)", self.name, len(body), limit)
            with contextlib.suppress(ConnectionError):
                await self.write(self._refuse(body, limit))
            return
        await self._inbox.put(decode_message(body))

    def feed_eof(self) -> None:
        """The client is gone (or was dropped): the endpoint's next read ends the connection."""
        if self._eof:
            return
        self._eof = True
        # Never blocks: a full inbox still gets its end marker (read() checks _eof after draining).
        with contextlib.suppress(asyncio.QueueFull):
            self._inbox.put_nowait(None)

    async def read(self) -> Any:
        if self._closed:
            return None
        if self._eof and self._inbox.empty():
            return None
        return await self._inbox.get()

    # -- outgoing --------------------------------------------------------------------------------------------------

    async def write(self, message: Any) -> None:
        self.write_nowait(message)

    def write_nowait(self, message: Any) -> None:
        """:meth:`write` for callers that cannot await (an engine listener): queues at once, in call order."""
        data = dumps(message)  # TypeError/ValueError propagate before anything is queued (MessageStream contract)
        if self._closed or self._socket_gone or self.dropped_reason is not None:
            raise ConnectionError(f"{self.name}: closed")
        limit = self._limits.max_pending_bytes
        if self._pending_bytes and self._pending_bytes + len(data) > limit:
            self._drop(f"client is not reading: more than {limit} bytes pending")
            raise ConnectionError(f"{self.name}: {self.dropped_reason}")
        self._outbox.append(data)
        self._pending_bytes += len(data)
        self._drained.clear()
        self._wakeup.set()

    async def _write_loop(self) -> None:
        """Hand queued frames to tornado in batches, then wait for them: frames of a batch share socket writes, and
        only frames still in tornado's buffer cost a wait (a 5,000-chunk reply is 5,000 frames)."""
        timeout = self._limits.write_timeout
        while True:
            if not self._outbox:
                self._drained.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch: list[bytes] = []
            size = 0
            for data in self._outbox:
                batch.append(data)
                size += len(data)
                if size >= _BATCH_BYTES:
                    break
            try:
                futures = [self._handler.write_message(data) for data in batch]  # text frames of UTF-8 JSON
                for future in futures:
                    future.add_done_callback(_consume)
                for future in futures:  # each frame that goes out restarts the clock: slow but reading is fine
                    if not future.done():
                        done, _ = await asyncio.wait({future}, timeout=timeout)
                        if not done:
                            self._drop(f"client is not reading: no progress for {timeout:g} s")
                            return
                    future.result()
            except WebSocketClosedError:
                self._socket_gone = True
                self._outbox.clear()
                self._pending_bytes = 0
                self._drained.set()
                self.feed_eof()
                return
            if self.dropped_reason is not None:
                return
            for _ in batch:
                self._outbox.popleft()
            self._pending_bytes -= size

    def _drop(self, reason: str) -> None:
        """Disconnect a client that does not keep up; the engine and the other sockets carry on."""
        if self.dropped_reason is not None:
            return
        self.dropped_reason = reason
        log.warning("%s: dropping the connection: %s", self.name, reason)
        self._outbox.clear()
        self._pending_bytes = 0
        self._drained.set()
        self.feed_eof()
        with contextlib.suppress(Exception):
            self._handler.close(CLOSE_SLOW_CLIENT, reason[:120])

    async def close(self) -> None:
        """Flush what is queued (briefly), then close the socket. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.feed_eof()
        while not self._inbox.empty():  # unblocks a feed() waiting for room, so its frame handler can finish
            self._inbox.get_nowait()
        if self._writer is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._drained.wait(), _CLOSE_DRAIN_SECONDS)
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
        with contextlib.suppress(Exception):
            self._handler.close(1000)


class WorkspaceConnection(ServerConnection):
    """An ECA connection on a workspace's shared engine.

    The workspace comes from the socket's ``?workspace=`` query (default: the server root) unless the client's
    ``initialize`` names folders, which must lie under the root (else ``-32602``). ``initialize`` answers once the
    engine is started, so its model list is complete; ``processId`` is ignored (a browser's pid means nothing here)
    and so are ``initializationOptions`` (the engine is shared: one client must not reconfigure it for others —
    server-side config comes from the config files).
    """

    def __init__(self, stream: WebSocketStream, manager: WorkspaceManager, workspace: Workspace) -> None:
        self.manager = manager
        self.workspace = workspace
        self.attached: Workspace | None = None
        super().__init__(stream, self._workspace_engine, owns_engine=False)

    def _workspace_engine(self, params: InitializeParams) -> Any:
        return self.manager.engine_for(self.workspace)

    async def initialize(self, params: InitializeParams) -> InitializeResult:
        if self.engine is not None:
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        folders = workspace_paths(params)
        if folders:
            try:
                resolved = [self.manager.resolve(str(folder)) for folder in folders]
            except WorkspaceError as exc:
                raise RpcError(INVALID_PARAMS, f"Invalid params: {exc}", {"field": "workspaceFolders"}) from None
            self.workspace = self.manager.register(resolved)
        if params.initialization_options:
            log.info("initializationOptions from a WebSocket client ignored (the workspace engine is shared)")
        params.process_id = None  # no parent-process watch: a browser's pid means nothing on this machine
        await self.manager.ready(self.workspace)
        if self.engine is not None:  # a second initialize raced this one
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        result = await super().initialize(params)
        self.attached = self.workspace
        self.workspace.connections += 1
        return result

    def detach(self) -> None:
        if self.attached is not None:
            self.attached.connections -= 1
            self.manager.detached(self.attached)
            self.attached = None


class EcaSocketHandler(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """What the extension's WebSockets share: Jupyter auth (``ws_authenticated``, then ``execute`` on ``eca`` in
    :meth:`pre_get`: the socket can run tools), the origin check (tornado's, before the upgrade), the size limits,
    and a :class:`WebSocketStream` fed by the frames. Subclasses open their connection in :meth:`open`."""

    auth_resource = AUTH_RESOURCE

    def initialize(self, state: ServerState) -> None:  # tornado's per-request hook, not ECA's initialize
        self.state = state
        self.workspace: Workspace | None = None
        self.eca_stream: WebSocketStream | None = None
        self.serve_task: asyncio.Task[None] | None = None

    def set_default_headers(self) -> None:
        """No JupyterHandler default headers (CSP etc.) on a WebSocket, as in jupyter_server's kernel socket."""

    def get_compression_options(self) -> dict[str, Any] | None:
        return self.settings.get("websocket_compression_options", None)

    @property
    def max_message_size(self) -> int:
        return self.state.limits.hard_max_message_size

    async def authorize(self) -> None:
        """403 unless the user may ``execute`` on ``eca``."""
        user = self.current_user
        authorized = await ensure_async(self.authorizer.is_authorized(self, user, "execute", AUTH_RESOURCE))
        if not authorized:
            raise web.HTTPError(403, "not authorized to use the ECA assistant")

    async def pre_get(self) -> None:
        """Checks before the upgrade (HTTP errors still possible): authorization."""
        await self.authorize()

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        await self.pre_get()
        await super().get(*args, **kwargs)

    def open_stream(self, name: str, refuse: Callable[[bytes, int], Any] | None = None) -> WebSocketStream:
        """Start the socket's stream (call from :meth:`open`) and count the socket among the server's."""
        super().open()  # WebSocketMixin: keep-alive pings
        # Streaming is many small frames: without this, Nagle's algorithm and delayed ACKs stall them by up to
        # 40 ms at a time (the writer batches frames itself).
        self.set_nodelay(True)
        self.eca_stream = WebSocketStream(self, self.state.limits, name=name, refuse=refuse)
        self.eca_stream.start()
        self.state.sockets.add(self)
        return self.eca_stream

    async def on_message(self, message: str | bytes) -> None:
        if self.eca_stream is not None:
            await self.eca_stream.feed(message)

    def on_close(self) -> None:
        if self.eca_stream is not None:
            self.eca_stream.feed_eof()

    def shutdown(self) -> None:
        """Server stop: tell the client we are going away; the connection then ends as on any disconnect."""
        with contextlib.suppress(Exception):
            self.close(CLOSE_GOING_AWAY, "server shutting down")
        if self.eca_stream is not None:
            self.eca_stream.feed_eof()


class EcaWebSocketHandler(EcaSocketHandler):
    """``GET <base_url>api/eca/v1/ws[?workspace=<path under the root>]`` upgraded to a WebSocket."""

    def initialize(self, state: ServerState) -> None:  # tornado's per-request hook, not ECA's initialize
        super().initialize(state)
        self.connection: WorkspaceConnection | None = None

    async def pre_get(self) -> None:
        """Authorize and pick the workspace, before upgrading."""
        await self.authorize()
        try:
            self.workspace = self.state.manager.register_path(self.get_argument("workspace", None))
        except WorkspaceError as exc:
            raise web.HTTPError(400, str(exc)) from None

    def open(self, *args: Any, **kwargs: Any) -> None:
        assert self.workspace is not None
        user = getattr(self.current_user, "username", "?")
        name = f"eca-ws[{user}@{self.workspace.id}]"
        stream = self.open_stream(name)
        self.connection = WorkspaceConnection(stream, self.state.manager, self.workspace)
        self.serve_task = asyncio.get_running_loop().create_task(self._serve(), name=name)

    async def _serve(self) -> None:
        assert self.connection is not None
        try:
            await self.connection.run()
        except Exception:
            log.exception("ECA WebSocket connection failed")
        finally:
            self.connection.detach()
            self.state.sockets.discard(self)
            with contextlib.suppress(Exception):
                self.close()
