"""One client connection speaking ECA: lifecycle, the method handlers, and ordered delivery of notifications.

Every door that carries ECA JSON-RPC (stdio, WebSocket, in-memory) wraps its message stream in a
:class:`ServerConnection`. The connection

* refuses everything but ``initialize`` (and ``exit``) before the handshake with ``-32002``;
* creates or attaches to an :class:`~eca_notebook.engine.engine.Engine` on ``initialize``;
* after ``initialized`` sends ``config/updated`` then ``tool/serverUpdated`` (and any config problems as
  ``$/showMessage``);
* queues engine notifications and writes them from one task, so a burst of text chunks never interleaves with or
  overtakes a response: handlers that must answer *after* their notifications (``chat/prompt``, ``chat/open``)
  wait for the queue to drain first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
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
from .engine import Engine, EngineOptions

log = logging.getLogger(__name__)

EngineFactory = Callable[[InitializeParams], Engine]
PARENT_POLL_SECONDS = 2.0


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
        self._outbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        # every notification and response is redacted on its way out, whichever part of the engine produced it
        self.endpoint = Endpoint(stream, name="eca-server", guard=self._guard, params_parser=_parse,
                                 outgoing=redact_json)
        self._register()

    # -- Listener protocol: called by the engine ----------------------------------------------------------------

    def send(self, method: str, params: Any) -> None:
        self._outbox.put_nowait((method, params))

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
        result = await self._engine().prompt(params)
        await self.flush()
        return result

    def chat_prompt_stop(self, params: ChatPromptStopParams) -> None:
        self._spawn(self._engine().stop(params.chat_id))

    async def chat_delete(self, params: ChatDeleteParams) -> dict[str, Any]:
        await self._engine().delete(params.chat_id)
        return {}

    def chat_list(self, params: ChatListParams | None) -> dict[str, Any]:
        return {"chats": self._engine().list_chats(params)}

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
        return {"chatId": params.chat_id, "contexts": contexts} if params.chat_id else {"contexts": contexts}

    def query_commands(self, params: ChatQueryCommandsParams) -> dict[str, Any]:
        commands = self._engine().query_commands(params.query)
        return {"chatId": params.chat_id, "commands": commands} if params.chat_id else {"commands": commands}

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
