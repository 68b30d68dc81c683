"""One client connection speaking ECA: lifecycle, the method handlers, and ordered delivery of notifications.

Every door that carries ECA JSON-RPC (stdio, WebSocket, in-memory) wraps its message stream in a
:class:`ServerConnection`. The connection

* refuses everything but ``initialize`` (and ``exit``) before the handshake with ``-32002``;
* creates or attaches to an :class:`~eca_notebook.engine.engine.Engine` on ``initialize``;
* after ``initialized`` sends ``config/updated`` then ``tool/serverUpdated`` (and any config problems as
  ``$/showMessage``);
* queues engine notifications and writes them from one task, so a burst of text chunks never interleaves with or
  overtakes a response: handlers that must answer *after* their notifications (``chat/prompt``, ``chat/open``)
  wait for the queue to drain first;
* accepts a numeric ``chatId`` (a Neovim client sends its tab number) and answers with the same number; see
  :class:`_ChatAliases`;
* bounds that queue per client: once a client falls ``MERGE_BACKLOG`` notifications behind, consecutive text (and
  reasoning) chunks of the same chat and role merge into one queued notification (what the client shows is the
  same), and a client whose queue still grows past ``MAX_QUEUED_NOTIFICATIONS`` is disconnected.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from .._redact import redact_json
from ..protocol import (
    METHODS,
    ChatDeleteParams,
    ChatListParams,
    ChatOpenParams,
    ChatPromptParams,
    ChatPromptStopParams,
    ChatQueryCommandsParams,
    ChatQueryContextParams,
    ChatSelectedBehaviorChangedParams,
    ChatSelectedModelChangedParams,
    ChatToolCallApproveParams,
    ChatToolCallRejectParams,
    InitializeParams,
    InitializeResult,
    McpStartServerParams,
    McpStopServerParams,
    invalid_params,
    parse_params,
)
from ..protocol.errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED, RpcError
from ..rpc import Endpoint
from ..engine import Engine, EngineOptions

log = logging.getLogger(__name__)

EngineFactory = Callable[[InitializeParams], Engine]
PARENT_POLL_SECONDS = 2.0
MAX_QUEUED_NOTIFICATIONS = 20_000  # after merging; a client this far behind is not reading at all
# Chunks merge only once this many notifications wait: a client that keeps up sees the chunks as the model sent
# them (as the reference server does); one that falls behind gets fewer, larger ones.
MERGE_BACKLOG = 256


def _merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any] | None:
    """One ``chat/contentReceived`` for two consecutive ones when a client would show the same: text chunks of the
    same chat and (non-user) role, or reasoning chunks of the same reasoning id. Never mutates its inputs (the
    engine hands the same dict to every listener)."""
    if first.get("chatId") != second.get("chatId") or first.get("role") != second.get("role"):
        return None
    a, b = first.get("content"), second.get("content")
    if not isinstance(a, dict) or not isinstance(b, dict) or first.get("role") == "user":
        return None
    kind = a.get("type")
    if kind != b.get("type") or not isinstance(a.get("text"), str) or not isinstance(b.get("text"), str):
        return None
    if kind == "text" and a.keys() == b.keys() == {"type", "text"}:
        pass
    elif kind == "reasonText" and a.keys() == b.keys() == {"type", "id", "text"} and a["id"] == b["id"]:
        pass
    else:
        return None
    return {**first, "content": {**a, "text": a["text"] + b["text"]}}


def _numeric(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _ChatAliases:
    """Numeric chat ids, scoped to one connection.

    A client that numbers its chats (tab ``1``, ``2``…) reuses those numbers in every session, while saved chats
    persist per workspace: mapping ``1`` to a saved chat ``"1"`` would make a new session's first tab continue
    whatever an old session said there. So a number is this connection's alias of an engine chat with a fresh id
    (``n1-<uuid>``): ``chat/prompt`` with a number it has not seen starts a new chat, and only ``chat/open`` with a
    number binds it to the most recent chat created under that number before (an explicit resume). Everything sent
    back to this client carries the number again, so it keeps the JSON type it sent; other clients of the same
    engine see the string id.
    """

    def __init__(self) -> None:
        self._by_number: dict[int, str] = {}
        self._by_id: dict[str, int] = {}

    @staticmethod
    def prefix(number: int) -> str:
        return f"n{number}-"

    def bind(self, number: int, chat_id: str) -> str:
        old = self._by_number.get(number)
        if old is not None:
            self._by_id.pop(old, None)
        self._by_number[number] = chat_id
        self._by_id[chat_id] = number
        return chat_id

    def internal(self, number: int) -> str:
        """The engine chat id of *number* (a new one when the number is new to this connection)."""
        chat_id = self._by_number.get(number)
        return chat_id if chat_id is not None else self.bind(number, f"{self.prefix(number)}{uuid.uuid4()}")

    def known(self, number: int) -> bool:
        return number in self._by_number

    def external(self, chat_id: Any) -> Any:
        return self._by_id.get(chat_id, chat_id) if isinstance(chat_id, str) else chat_id

    def outgoing(self, params: Any) -> Any:
        """*params* with this client's numbers in place of aliased chat ids (a copy; the engine's dict is shared)."""
        if not self._by_id or not isinstance(params, dict):
            return params
        changed = {k: self._by_id[v] for k in ("chatId", "parentChatId")
                   if isinstance(v := params.get(k), str) and v in self._by_id}
        return {**params, **changed} if changed else params


class _Outbox:
    """The notifications waiting for the writer task, in order; merges streaming chunks while they wait."""

    def __init__(self) -> None:
        self._items: collections.deque[tuple[str, Any]] = collections.deque()
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._unfinished = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, method: str, params: Any) -> None:
        if len(self._items) >= MERGE_BACKLOG and method == "chat/contentReceived" and isinstance(params, dict):
            last_method, last_params = self._items[-1]
            if last_method == method and isinstance(last_params, dict):
                merged = _merged(last_params, params)
                if merged is not None:  # the writer has not taken the last one yet: it goes out as one
                    self._items[-1] = (method, merged)
                    return
        self._items.append((method, params))
        self._unfinished += 1
        self._idle.clear()
        self._ready.set()

    async def get(self) -> tuple[str, Any]:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    def task_done(self) -> None:
        self._unfinished -= 1
        if self._unfinished <= 0:
            self._unfinished = 0
            self._idle.set()

    async def join(self) -> None:
        await self._idle.wait()


def workspace_paths(params: InitializeParams) -> list[Path]:
    """Workspace folders as local paths (``file://`` URIs decoded; bare paths accepted from lenient clients)."""
    uris = [folder.uri for folder in params.workspace_folders]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    paths = []
    for uri in uris:
        parsed = urlparse(uri)
        path = unquote(parsed.path) if parsed.scheme == "file" else uri
        paths.append(Path(path))
    return paths


def default_engine_factory(config_file: Path | None = None) -> EngineFactory:
    def create(params: InitializeParams) -> Engine:
        return Engine(
            EngineOptions(
                workspace_folders=workspace_paths(params),
                initialization_options=params.initialization_options,
                config_file=config_file,
            )
        )

    return create


def _parse(method: str, params: Any) -> Any:
    """Validate params against the method table; -32602 names the bad field but never echoes the input back."""
    if method not in METHODS:
        return params
    try:
        return parse_params(method, params)
    except ValidationError as exc:
        raise invalid_params(exc, method) from None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


class ServerConnection:
    def __init__(self, stream: Any, engine_factory: EngineFactory, *, owns_engine: bool = True) -> None:
        self._engine_factory = engine_factory
        self._owns_engine = owns_engine
        self.engine: Engine | None = None
        self.client_capabilities: Any = None
        self.initialized = False
        self.shutdown_requested = False
        self._exit = asyncio.Event()
        self._outbox = _Outbox()
        self.dropped_reason: str | None = None
        self.aliases = _ChatAliases()
        self._tasks: set[asyncio.Task[Any]] = set()
        # every notification and response is redacted on its way out, whichever part of the engine produced it
        self.endpoint = Endpoint(stream, name="eca-server", guard=self._guard, params_parser=self._parse_params,
                                 outgoing=redact_json)
        self._register()

    # -- Listener protocol: called by the engine ----------------------------------------------------------------

    def _parse_params(self, method: str, params: Any) -> Any:
        """Numeric chat ids become this connection's aliases (see :class:`_ChatAliases`), then the method table
        validates. ``chat/open`` with a number new to this connection resumes the latest chat made under it."""
        if isinstance(params, dict) and method.startswith("chat/"):
            number = params.get("chatId")
            if _numeric(number):
                if method == "chat/open" and not self.aliases.known(number) and self.engine is not None:
                    prefix = self.aliases.prefix(number)
                    earlier = next((c["id"] for c in self.engine.list_chats() if c["id"].startswith(prefix)), None)
                    if earlier is not None:
                        self.aliases.bind(number, earlier)
                params = {**params, "chatId": self.aliases.internal(number)}
        return _parse(method, params)

    def send(self, method: str, params: Any) -> None:
        if self.dropped_reason is not None:
            return
        params = self.aliases.outgoing(params)
        self._outbox.put(method, params)
        if len(self._outbox) > MAX_QUEUED_NOTIFICATIONS:
            self.dropped_reason = f"client is not reading: more than {MAX_QUEUED_NOTIFICATIONS} notifications queued"
            log.warning("disconnecting: %s", self.dropped_reason)
            self._exit.set()

    async def flush(self) -> None:
        """Wait until every queued notification has been written."""
        await self._outbox.join()

    async def _write_loop(self) -> None:
        while True:
            method, params = await self._outbox.get()
            try:
                await self.endpoint.notify(method, params)
            except Exception:
                log.exception("could not send %s", method)
            finally:
                self._outbox.task_done()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def _guard(self, method: str) -> None:
        if method in ("initialize", "exit") or method.startswith("$/"):
            return
        if self.engine is None:
            raise RpcError(SERVER_NOT_INITIALIZED, f"'{method}' before 'initialize'")
        if self.shutdown_requested:
            raise RpcError(INVALID_REQUEST, f"'{method}' after 'shutdown'")

    async def run(self) -> int:
        """Serve until ``exit`` or end of input. Returns the process exit code (0 after a clean shutdown)."""
        writer = asyncio.create_task(self._write_loop(), name="eca-writer")
        reader = asyncio.create_task(self.endpoint.run(), name="eca-reader")
        exit_wait = asyncio.create_task(self._exit.wait())
        try:
            await asyncio.wait({reader, exit_wait}, return_when=asyncio.FIRST_COMPLETED)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.flush(), timeout=5)
        finally:
            for task in (reader, exit_wait, writer, *self._tasks):
                task.cancel()
            await asyncio.gather(reader, exit_wait, writer, *self._tasks, return_exceptions=True)
            await self._release_engine()
            await self.endpoint.close()
        return 0 if self.shutdown_requested else 1

    async def _release_engine(self) -> None:
        engine, self.engine = self.engine, None
        if engine is None:
            return
        engine.remove_listener(self)
        if self._owns_engine:
            await engine.aclose()

    async def _watch_parent(self, pid: int) -> None:
        while _process_alive(pid):
            await asyncio.sleep(PARENT_POLL_SECONDS)
        log.warning("parent process %d is gone; exiting", pid)
        self._exit.set()

    # -- handlers ------------------------------------------------------------------------------------------------

    def _register(self) -> None:
        r = self.endpoint.register
        r("initialize", self.initialize)
        r("initialized", self.on_initialized)
        r("shutdown", self.shutdown)
        r("exit", self.on_exit)
        r("chat/prompt", self.chat_prompt)
        r("chat/promptStop", self.chat_prompt_stop)
        r("chat/delete", self.chat_delete)
        r("chat/list", self.chat_list)
        r("chat/open", self.chat_open)
        r("chat/selectedBehaviorChanged", self.selected_behavior_changed)
        r("chat/selectedModelChanged", self.selected_model_changed)
        r("chat/queryContext", self.query_context)
        r("chat/queryCommands", self.query_commands)
        r("chat/toolCallApprove", self.tool_call_approve)
        r("chat/toolCallReject", self.tool_call_reject)
        r("mcp/startServer", self.mcp_start_server)
        r("mcp/stopServer", self.mcp_stop_server)

    async def initialize(self, params: InitializeParams) -> InitializeResult:
        if self.engine is not None:
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        self.client_capabilities = params.capabilities
        engine = self._engine_factory(params)
        self.engine = engine
        engine.add_listener(self)
        if params.process_id:
            self._spawn(self._watch_parent(params.process_id))
        default_model = engine.registry.default_model()
        return InitializeResult(
            models=engine.registry.models(),
            chat_default_model=default_model,
            chat_behaviors=engine.behaviors(),
            chat_default_behavior=engine.selected_behavior,
            chat_welcome_message=engine.welcome_message(),
        )

    async def on_initialized(self, params: Any) -> None:
        if self.initialized:
            return
        self.initialized = True
        self._spawn(self._after_initialized())

    async def _after_initialized(self) -> None:
        engine = self.engine
        if engine is None:
            return
        self.send("$/progress", {"type": "start", "taskId": "models", "title": "Loading models"})
        try:
            await engine.start()
        except Exception:
            log.exception("model discovery failed")
        self.send("$/progress", {"type": "finish", "taskId": "models", "title": "Loading models"})
        self.send("config/updated", engine.config_updated().dump())
        self.send("tool/serverUpdated", engine.native_tools().dump())
        if engine.mcp is not None:  # one per MCP server; they may still be starting (their updates follow)
            for status in engine.mcp.statuses():
                self.send("tool/serverUpdated", status)
        for problem in engine.problems:
            self.send("$/showMessage", {"type": "warning", "message": f"Config problem: {problem}"})
        if not engine.registry.models():
            self.send("$/showMessage", {"type": "warning", "message": engine.registry.missing_key_hint()})

    async def shutdown(self, params: Any) -> None:
        self.shutdown_requested = True
        engine = self.engine
        if engine is not None and self._owns_engine:
            await engine.aclose()
        return None

    def on_exit(self, params: Any) -> None:
        self._exit.set()

    def _engine(self) -> Engine:
        assert self.engine is not None  # the guard refuses calls before initialize
        return self.engine

    async def chat_prompt(self, params: ChatPromptParams) -> dict[str, Any]:
        result = (await self._engine().prompt(params)).dump()
        await self.flush()
        return self.aliases.outgoing(result)

    def chat_prompt_stop(self, params: ChatPromptStopParams) -> None:
        self._spawn(self._engine().stop(params.chat_id))

    async def chat_delete(self, params: ChatDeleteParams) -> dict[str, Any]:
        await self._engine().delete(params.chat_id)
        return {}

    def chat_list(self, params: ChatListParams | None) -> dict[str, Any]:
        chats = self._engine().list_chats(params)
        return {"chats": [{**c, "id": self.aliases.external(c["id"])} for c in chats]}

    async def chat_open(self, params: ChatOpenParams) -> dict[str, Any]:
        result = self._engine().replay(params.chat_id, self)
        await self.flush()
        return result

    def selected_behavior_changed(self, params: ChatSelectedBehaviorChangedParams) -> None:
        try:
            self._engine().select_behavior(params.behavior, params.chat_id)
        except ValueError as exc:
            self.send("$/showMessage", {"type": "warning", "message": str(exc)})

    def selected_model_changed(self, params: ChatSelectedModelChangedParams) -> None:
        try:
            self._engine().select_model(params.model, params.chat_id)
        except ValueError as exc:
            self.send("$/showMessage", {"type": "warning", "message": str(exc)})

    async def query_context(self, params: ChatQueryContextParams) -> dict[str, Any]:
        contexts = await self._engine().query_context(params.query, list(params.contexts))
        chat_id = self.aliases.external(params.chat_id)
        return {"chatId": chat_id, "contexts": contexts} if params.chat_id else {"contexts": contexts}

    def query_commands(self, params: ChatQueryCommandsParams) -> dict[str, Any]:
        commands = self._engine().query_commands(params.query)
        chat_id = self.aliases.external(params.chat_id)
        return {"chatId": chat_id, "commands": commands} if params.chat_id else {"commands": commands}

    def tool_call_approve(self, params: ChatToolCallApproveParams) -> None:
        self._engine().approve(params.chat_id, params.tool_call_id, params.save)

    def tool_call_reject(self, params: ChatToolCallRejectParams) -> None:
        self._engine().reject(params.chat_id, params.tool_call_id)

    def _mcp(self, name: str) -> Any:
        manager = self._engine().mcp
        if manager is None:
            self.send("$/showMessage", {"type": "warning",
                                        "message": f"Unknown MCP server '{name}': no MCP servers are configured."})
        return manager

    def mcp_start_server(self, params: McpStartServerParams) -> None:
        manager = self._mcp(params.name)
        if manager is not None:  # spawned: a slow start must not hold up other notifications
            self._spawn(manager.start_server(params.name))

    def mcp_stop_server(self, params: McpStopServerParams) -> None:
        manager = self._mcp(params.name)
        if manager is not None:
            self._spawn(manager.stop_server(params.name))

    # -- server → client requests (used by the engine's tools) ------------------------------------------------

    @property
    def supports_diagnostics(self) -> bool:
        caps = self.client_capabilities
        assistant = getattr(caps, "code_assistant", None)
        editor = getattr(assistant, "editor", None)
        return bool(getattr(editor, "diagnostics", False))

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        await self.flush()  # the client sees the toolCallRunning that explains this request first
        return await self.endpoint.request(method, params, timeout=timeout)


async def serve_stdio(*, config_file: Path | None = None, max_frame_size: int | None = None) -> int:
    """``eca-notebook server``: ECA over this process's stdin/stdout."""
    from ..transports.stdio import open_stdio

    kwargs = {"max_frame_size": max_frame_size} if max_frame_size else {}
    stream = await open_stdio(codec="content-length", **kwargs)
    connection = ServerConnection(stream, default_engine_factory(config_file))
    try:
        return await connection.run()
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
