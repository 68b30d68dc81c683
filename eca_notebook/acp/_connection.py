"""One ACP client connection: the agent side of the Agent Client Protocol, mapped onto the engine.

There is no second agent here: an ACP session *is* an engine chat (same id), and every method turns into the
engine call the ECA door makes for the same thing. What this module adds is the ACP shape of things:

* **Workspaces.** ``session/new`` names a working directory; the connection keeps one
  :class:`~eca_notebook.engine.engine.Engine` per directory, shared by that directory's sessions (saved chats,
  config and the file index are per workspace in the engine too).
* **Ordered delivery.** The engine's notifications are queued and translated (:mod:`._updates`) by one writer
  task, so updates reach the client in the engine's order; ``session/prompt`` and ``session/load`` answer only
  after their updates were written.
* **Approvals.** A tool call that needs the user becomes ``session/request_permission``; the answer goes to
  ``engine.approve`` / ``engine.reject``. ``session/cancel`` stops the turn (the engine rejects the waiting call).
* **Files.** With the client's ``fs`` capabilities, ``engine.file_access`` is :class:`~._files.ClientFiles`.
* **Contexts.** Resource links become the engine's file/web contexts; embedded resources are served to the
  engine's context renderer by a small plug-in, so they reach the model without being echoed as the user's text.
* **MCP servers** given in ``session/new`` / ``session/load`` (stdio and HTTP) join the workspace's engine through
  the MCP plug-in (:mod:`eca_notebook.mcp`); the session is answered once they run (or failed), bounded in time.

We never send ``$/cancelRequest`` (ACP clients do not know it): a request of ours that times out or whose caller
is cancelled is simply left to finish on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from .._version import __version__
from ..engine.config import McpServerConfig
from ..engine.engine import Engine, EngineOptions
from ..plugins import BasePlugin
from ..protocol import ChatPromptParams
from ..protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from .._redact import redact_json
from ..rpc import Endpoint
from ._files import CURRENT_SESSION, ClientFiles
from ._schema import (
    PROTOCOL_VERSION,
    SESSION_LOCKED,
    SESSION_NOT_FOUND,
    BlobResource,
    CancelParams,
    InitializeParams,
    ListSessionsParams,
    LoadSessionParams,
    McpServer,
    MediaBlock,
    NewSessionParams,
    PermissionResponse,
    PromptParams,
    ResourceBlock,
    ResourceLinkBlock,
    SetConfigOptionParams,
    SetModelParams,
    SetModeParams,
    TextBlock,
    parse,
)
from ._updates import PermissionAsk, SessionUpdates

__all__ = ["AcpConnection", "EngineFactory", "PERMISSION_OPTIONS", "default_engine_factory", "serve_acp_stdio"]

log = logging.getLogger(__name__)

EngineFactory = Callable[[Path], Engine]

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow in this session", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject in this session", "kind": "reject_always"},
]
_OPTION_KINDS = {o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS}

MODE_DESCRIPTIONS = {
    "agent": "Reads and changes your files; every change is shown as a diff for your approval.",
    "plan": "Analyses and proposes a plan; never changes a file.",
}
SESSION_PAGE = 100
RESOURCE_SERVER = "acp:embedded"  # the "server" of embedded-resource contexts; not an MCP server name one picks
MCP_SETTLED = ("running", "failed", "stopped", "disabled")
MCP_START_TIMEOUT = 30.0
DEFAULT_MAX_FRAME = 16 * 1024 * 1024  # above the largest fs/* message the spec allows (10 MB)
MAX_QUEUED_UPDATES = 20_000  # engine notifications waiting for a client that does not read: then it is dropped


class _BoundedOutbox(asyncio.Queue):  # type: ignore[type-arg]
    """The connection's queue of engine notifications, bounded: a client so far behind is not reading at all, and is
    disconnected (once) instead of making the agent queue without end."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__()
        self._on_overflow = on_overflow
        self.overflowed = False

    def put_nowait(self, item: Any) -> None:
        if self.overflowed:
            return
        super().put_nowait(item)
        if self.qsize() > MAX_QUEUED_UPDATES:
            self.overflowed = True
            self._on_overflow()


def _mcp_available() -> bool:
    """Whether MCP servers can be connected here: our MCP plug-in and the SDK it runs on are installed."""
    import importlib.util

    try:
        return importlib.util.find_spec("mcp") is not None and importlib.util.find_spec("eca_notebook.mcp") is not None
    except (ImportError, ValueError):
        return False


def default_engine_factory(config_file: Path | None = None) -> EngineFactory:
    def create(cwd: Path) -> Engine:
        return Engine(EngineOptions(workspace_folders=[cwd], config_file=config_file))

    return create


def _mcp_config(server: McpServer) -> McpServerConfig | None:
    """An ACP ``McpServer`` as the engine's ``mcpServers.<name>`` entry; None for a transport we cannot serve."""
    try:
        if server.type in (None, "stdio") and server.command:
            return McpServerConfig(command=server.command, args=list(server.args),
                                   env={e.name: e.value for e in server.env})
        if server.type == "http" and server.url:
            return McpServerConfig(url=server.url, headers={h.name: h.value for h in server.headers})
    except ValueError:
        return None
    return None


def _iso(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


class _EmbeddedResources(BasePlugin):
    """Serves the texts of a prompt's embedded resources to the engine's context renderer (``mcpResource``
    contexts with ``server: "acp:embedded"``), so they are rendered like any attached context."""

    name = "acp-resources"

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._ids = itertools.count(1)

    def put(self, text: str) -> str:
        token = f"r{next(self._ids)}"
        self._texts[token] = text
        return token

    def drop(self, tokens: list[str]) -> None:
        for token in tokens:
            self._texts.pop(token, None)

    async def read_context(self, context: Any) -> str | None:
        if getattr(context, "server", None) != RESOURCE_SERVER:
            return None
        token = (getattr(context, "model_extra", None) or {}).get("acpResource")
        return self._texts.get(token) if isinstance(token, str) else None


class _Workspace:
    """One working directory: its engine, and the listener through which the engine talks to this connection."""

    supports_diagnostics = False  # ACP has no diagnostics request: the engine hides editor_diagnostics

    def __init__(self, connection: "AcpConnection", cwd: Path, engine: Engine) -> None:
        self.connection = connection
        self.cwd = cwd
        self.engine = engine
        self.resources = _EmbeddedResources()
        self.mcp_status: dict[str, str] = {}  # MCP servers the client gave us → their last status
        self._mcp_changed = asyncio.Event()
        self.ready = asyncio.Event()  # set once engine.start() returned (models discovered)

    def send(self, method: str, params: dict[str, Any]) -> None:
        if method == "tool/serverUpdated" and params.get("type") == "mcp" and params.get("name") in self.mcp_status:
            self.mcp_status[params["name"]] = str(params.get("status"))
            self._mcp_changed.set()
        self.connection._outbox.put_nowait(("engine", self, method, params, None))

    async def mcp_settled(self, names: list[str], timeout: float) -> None:
        """Wait (bounded) until the named MCP servers are running or have failed: the session's first prompt
        should see their tools."""
        async def wait() -> None:
            while any(self.mcp_status.get(n) not in MCP_SETTLED for n in names):
                self._mcp_changed.clear()
                await self._mcp_changed.wait()

        try:
            await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            slow = [n for n in names if self.mcp_status.get(n) not in MCP_SETTLED]
            log.warning("MCP servers still starting after %.0f s: %s", timeout, ", ".join(slow))
        for name in names:
            if self.mcp_status.get(name) == "failed":
                log.warning("MCP server %s from the client failed to start", name)


class _ReplayListener:
    """Receives one chat's replay (``engine.replay``) for one session."""

    def __init__(self, workspace: _Workspace, session: "Session") -> None:
        self.workspace = workspace
        self.session = session

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.workspace.connection._outbox.put_nowait(("engine", self.workspace, method, params, self.session))


@dataclass
class _Turn:
    cancelled: bool = False


@dataclass
class Session:
    id: str
    workspace: _Workspace
    updates: SessionUpdates
    mode: str
    model: str | None
    turn: _Turn | None = None
    rejected_always: set[tuple[str, str]] = field(default_factory=set)

    @property
    def engine(self) -> Engine:
        return self.workspace.engine


class AcpConnection:
    """Serve one ACP client over a message stream (NDJSON stdio in production, an in-memory pair in tests)."""

    def __init__(self, stream: Any, engine_factory: EngineFactory | None = None) -> None:
        self._engine_factory = engine_factory or default_engine_factory()
        self.endpoint = Endpoint(stream, name="acp", guard=self._guard, params_parser=parse, outgoing=redact_json)
        self.client_capabilities: Any = None
        self.client_info: Any = None
        self.sessions: dict[str, Session] = {}
        self.workspaces: dict[Path, _Workspace] = {}
        self._workspace_lock = asyncio.Lock()
        self._outbox: asyncio.Queue[tuple[Any, ...]] = _BoundedOutbox(self._not_reading)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._register()

    # -- plumbing ------------------------------------------------------------------------------------------------

    def _not_reading(self) -> None:
        log.warning("disconnecting: the client is not reading (more than %d updates queued)", MAX_QUEUED_UPDATES)
        self._spawn(self.endpoint.close(), "acp-disconnect")

    def _spawn(self, coro: Any, name: str = "acp-task") -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed", task.get_name(), exc_info=task.exception())

    async def flush(self) -> None:
        """Wait until everything queued so far has been translated and written."""
        await self._outbox.join()

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Queue one ``session/update`` behind whatever the engine queued before it."""
        self._outbox.put_nowait(("raw", "session/update", {"sessionId": session_id, "update": update}))

    async def _write_loop(self) -> None:
        while True:
            item = await self._outbox.get()
            try:
                await self._deliver(item)
            except Exception:
                log.exception("could not deliver %s", item[0])
            finally:
                self._outbox.task_done()

    async def _deliver(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == "raw":
            await self.endpoint.notify(item[1], item[2])
        elif kind == "call":
            await item[1]()
        elif kind == "engine":
            await self._on_engine(*item[1:])

    async def _on_engine(self, workspace: _Workspace, method: str, params: dict[str, Any],
                         replay: Session | None) -> None:
        if method == "$/showMessage":
            log.info("engine message: %s", params.get("message"))
            return
        if method != "chat/contentReceived":
            return
        session = replay or self.sessions.get(str(params.get("chatId")))
        if session is None or session.workspace is not workspace:
            return  # a chat of this workspace that is not open as a session here
        updates, ask = session.updates.translate(str(params.get("role")), params.get("content") or {},
                                                 live=replay is None)
        for update in updates:
            await self.endpoint.notify("session/update", {"sessionId": session.id, "update": update})
        if ask is not None:
            self._spawn(self._ask_permission(session, ask), f"acp-permission-{ask.call_id}")

    async def client_request(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """A request to the client that is never cancelled on the wire (ACP has no ``$/cancelRequest``): on
        timeout or cancellation of the caller it keeps running in the background and its answer is dropped."""
        task = asyncio.ensure_future(self.endpoint.request(method, params))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no "never retrieved" noise
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            raise TimeoutError(f"{method}: no answer within {timeout} s")
        return task.result()

    async def _fs_request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        await self.flush()  # the client sees the tool call that explains this request first
        return await self.client_request(method, params, timeout)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def _guard(self, method: str) -> None:
        if method == "initialize" or method.startswith("$/"):
            return
        if self.client_capabilities is None:
            raise RpcError(INVALID_REQUEST, f"'{method}' before 'initialize'")

    async def run(self) -> int:
        """Serve until the client closes the stream; returns the process exit code."""
        writer = asyncio.create_task(self._write_loop(), name="acp-writer")
        try:
            await self.endpoint.run()
        finally:
            writer.cancel()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(writer, *self._tasks, return_exceptions=True)
            await self.aclose()
        return 0

    async def aclose(self) -> None:
        workspaces, self.workspaces = list(self.workspaces.values()), {}
        for workspace in workspaces:
            workspace.engine.remove_listener(workspace)
            try:
                await workspace.engine.aclose()
            except Exception:
                log.exception("closing the engine of %s failed", workspace.cwd)
        await self.endpoint.close()

    def _register(self) -> None:
        r = self.endpoint.register
        r("initialize", self.initialize)
        r("session/new", self.new_session)
        r("session/load", self.load_session)
        r("session/list", self.list_sessions)
        r("session/prompt", self.prompt)
        r("session/cancel", self.cancel)
        r("session/set_mode", self.set_mode)
        r("session/set_model", self.set_model)
        r("session/set_config_option", self.set_config_option)
        r("authenticate", self.authenticate)

    # -- initialize ----------------------------------------------------------------------------------------------

    def initialize(self, params: InitializeParams) -> dict[str, Any]:
        if self.client_capabilities is not None:
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        self.client_capabilities = params.client_capabilities
        self.client_info = params.client_info
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": _mcp_available(), "sse": False},
                "sessionCapabilities": {"list": {}},
            },
            "agentInfo": {"name": "eca-notebook", "title": "eca-notebook", "version": __version__},
            "authMethods": [],
        }

    def authenticate(self, params: Any) -> dict[str, Any]:
        raise RpcError(INVALID_PARAMS, "eca-notebook advertises no authentication methods: configure API keys in "
                                       "its config or environment instead")

    # -- workspaces and sessions ---------------------------------------------------------------------------------

    async def _workspace(self, cwd: str) -> _Workspace:
        """The workspace (engine) of a directory, created and started on first use."""
        path = Path(os.path.normpath(cwd))
        if not path.is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd is not a directory: {path}", {"cwd": str(path)})
        async with self._workspace_lock:  # held only to create: never while an engine starts
            workspace = self.workspaces.get(path)
            created = workspace is None
            if workspace is None:
                workspace = self._create_workspace(path)
                self.workspaces[path] = workspace
        if not created:
            await workspace.ready.wait()  # a concurrent session/new may still be starting it
            return workspace
        try:
            await workspace.engine.start()
        except Exception:
            log.exception("starting the engine for %s failed", path)
        finally:
            workspace.ready.set()
        return workspace

    def _create_workspace(self, path: Path) -> _Workspace:
        engine = self._engine_factory(path)
        workspace = _Workspace(self, path, engine)
        engine.add_listener(workspace)
        engine.add_plugin(workspace.resources)
        fs = getattr(self.client_capabilities, "fs", None)
        can_read = bool(getattr(fs, "read_text_file", False))
        can_write = bool(getattr(fs, "write_text_file", False))
        if can_read or can_write:
            engine.file_access = ClientFiles(self._fs_request, can_read=can_read, can_write=can_write)
        return workspace

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(SESSION_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id})
        return session

    async def _mcp_servers(self, workspace: _Workspace, servers: list[McpServer]) -> None:
        """Connect the session's MCP servers (stdio and HTTP) through the engine's MCP plug-in. Servers are per
        workspace: a name already connected for this directory is not started twice."""
        configs: dict[str, Any] = {}
        for server in servers:
            if server.name in workspace.mcp_status or server.name in configs:
                continue
            config = _mcp_config(server)
            if config is None:
                log.warning("MCP server %s: transport %r is not supported (stdio and http are)", server.name,
                            server.type)
                continue
            configs[server.name] = config
        if not configs:
            return
        try:
            from ..mcp import McpManager
        except ImportError:
            log.warning("MCP servers from the client ignored (%s): the MCP support is not installed "
                        "(pip install 'eca-notebook[mcp]')", ", ".join(configs))
            return
        workspace.mcp_status.update({name: "starting" for name in configs})
        workspace.engine.add_plugin(McpManager(configs, workspace_folders=[workspace.cwd]))
        await workspace.mcp_settled(list(configs), MCP_START_TIMEOUT)

    def _state(self, session: Session) -> dict[str, Any]:
        """The modes / models / configOptions block of a session/new or session/load answer."""
        engine = session.engine
        behaviors = engine.behaviors()
        modes = [{"id": b, "name": b.capitalize(),
                  "description": MODE_DESCRIPTIONS.get(b, "A behavior from your configuration.")} for b in behaviors]
        state: dict[str, Any] = {"modes": {"currentModeId": session.mode, "availableModes": modes}}
        models = engine.registry.models()
        current = self._current_model(session)
        if models and current is not None:
            state["models"] = {"currentModelId": current,
                               "availableModels": [{"modelId": m, "name": m} for m in models]}
        state["configOptions"] = self._config_options(session)
        return state

    def _current_model(self, session: Session) -> str | None:
        engine = session.engine
        model = session.model or engine.selected_model or engine.registry.default_model()
        return model if model in engine.registry.models() else None

    def _config_options(self, session: Session) -> list[dict[str, Any]]:
        engine = session.engine
        options: list[dict[str, Any]] = [{
            "id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": session.mode,
            "options": [{"value": b, "name": b.capitalize(), "description": MODE_DESCRIPTIONS.get(
                b, "A behavior from your configuration.")} for b in engine.behaviors()],
        }]
        current = self._current_model(session)
        if current is not None:
            options.append({"id": "model", "name": "Model", "category": "model", "type": "select",
                            "currentValue": current,
                            "options": [{"value": m, "name": m} for m in engine.registry.models()]})
        return options

    def _announce_commands(self, session: Session) -> None:
        commands = []
        for command in session.engine.query_commands(""):
            entry: dict[str, Any] = {"name": command["name"], "description": command.get("description") or ""}
            arguments = command.get("arguments") or []
            if arguments:
                entry["input"] = {"hint": " ".join(f"<{a['name']}>" if a.get("required") else f"[{a['name']}]"
                                                   for a in arguments)}
            commands.append(entry)

        async def later() -> None:
            await asyncio.sleep(0)  # after the session/new (or load) answer: the client knows the session by then
            self.notify_update(session.id, {"sessionUpdate": "available_commands_update",
                                            "availableCommands": commands})

        self._spawn(later(), "acp-commands")

    async def new_session(self, params: NewSessionParams) -> dict[str, Any]:
        workspace = await self._workspace(params.cwd)
        await self._mcp_servers(workspace, params.mcp_servers)
        engine = workspace.engine
        session = Session(id=str(uuid.uuid4()), workspace=workspace, updates=SessionUpdates(workspace.cwd),
                          mode=engine.selected_behavior, model=None)
        self.sessions[session.id] = session
        self._announce_commands(session)
        return {"sessionId": session.id, **self._state(session)}

    async def load_session(self, params: LoadSessionParams) -> dict[str, Any]:
        workspace = await self._workspace(params.cwd)
        await self._mcp_servers(workspace, params.mcp_servers)
        engine = workspace.engine
        existing = self.sessions.get(params.session_id)
        if existing is not None and existing.turn is not None:
            raise RpcError(SESSION_LOCKED, "Session locked: a prompt is running in this session",
                           {"sessionId": params.session_id})
        chat = engine.get_chat(params.session_id)
        if chat is None:
            raise RpcError(SESSION_NOT_FOUND, f"Session not found: {params.session_id}",
                           {"sessionId": params.session_id, "cwd": str(workspace.cwd)})
        mode = chat.behavior if chat.behavior in engine.behaviors() else engine.selected_behavior
        model = chat.model if chat.model in engine.registry.models() else None
        session = Session(id=chat.id, workspace=workspace, updates=SessionUpdates(workspace.cwd), mode=mode,
                          model=model)
        self.sessions[session.id] = session
        engine.replay(chat.id, _ReplayListener(workspace, session))

        async def close_replay() -> None:
            for update in session.updates.unfinished():
                await self.endpoint.notify("session/update", {"sessionId": session.id, "update": update})

        self._outbox.put_nowait(("call", close_replay))
        await self.flush()
        self._announce_commands(session)
        return self._state(session)

    async def list_sessions(self, params: ListSessionsParams | None) -> dict[str, Any]:
        params = params or ListSessionsParams()
        if params.cwd is not None:
            workspaces = [await self._workspace(params.cwd)] if Path(params.cwd).is_dir() else []
        else:
            workspaces = list(self.workspaces.values())
        infos: list[dict[str, Any]] = []
        for workspace in workspaces:
            for chat in workspace.engine.list_chats():
                info: dict[str, Any] = {"sessionId": chat["id"], "cwd": str(workspace.cwd)}
                if chat.get("title"):
                    info["title"] = chat["title"]
                updated = _iso(chat.get("updatedAt"))
                if updated:
                    info["updatedAt"] = updated
                infos.append(info)
        infos.sort(key=lambda i: i.get("updatedAt") or "", reverse=True)
        try:
            start = int(params.cursor) if params.cursor else 0
        except ValueError:
            raise RpcError(INVALID_PARAMS, "invalid cursor", {"cursor": params.cursor}) from None
        page = infos[start:start + SESSION_PAGE]
        result: dict[str, Any] = {"sessions": page}
        if start + SESSION_PAGE < len(infos):
            result["nextCursor"] = str(start + SESSION_PAGE)
        return result

    # -- modes and models ----------------------------------------------------------------------------------------

    def _apply_mode(self, session: Session, mode: str) -> None:
        if mode not in session.engine.behaviors():
            raise RpcError(INVALID_PARAMS, f"unknown mode '{mode}'; available: {', '.join(session.engine.behaviors())}",
                           {"modeId": mode})
        session.mode = mode

    def _apply_model(self, session: Session, model: str) -> None:
        models = session.engine.registry.models()
        if model not in models:
            raise RpcError(INVALID_PARAMS, f"unknown model '{model}'; available: {', '.join(models) or 'none'}",
                           {"modelId": model})
        session.model = model

    def _options_changed(self, session: Session) -> None:
        self.notify_update(session.id, {"sessionUpdate": "config_option_update",
                                        "configOptions": self._config_options(session)})

    def set_mode(self, params: SetModeParams) -> dict[str, Any]:
        session = self._session(params.session_id)
        self._apply_mode(session, params.mode_id)
        self._options_changed(session)
        return {}

    def set_model(self, params: SetModelParams) -> dict[str, Any]:
        session = self._session(params.session_id)
        self._apply_model(session, params.model_id)
        self._options_changed(session)
        return {}

    def set_config_option(self, params: SetConfigOptionParams) -> dict[str, Any]:
        session = self._session(params.session_id)
        if not isinstance(params.value, str):
            raise RpcError(INVALID_PARAMS, f"'{params.config_id}' takes one of its listed values, not a boolean",
                           {"configId": params.config_id})
        if params.config_id == "mode":
            self._apply_mode(session, params.value)
        elif params.config_id == "model":
            self._apply_model(session, params.value)
        else:
            raise RpcError(INVALID_PARAMS, f"unknown config option '{params.config_id}'; available: mode, model",
                           {"configId": params.config_id})
        return {"configOptions": self._config_options(session)}

    # -- prompts -------------------------------------------------------------------------------------------------

    def _prompt_input(self, session: Session, blocks: list[Any]) -> tuple[str, list[dict[str, Any]], list[str]]:
        """The message text, the engine contexts, and the resource tokens to drop after the turn."""
        pieces: list[str] = []
        contexts: list[dict[str, Any]] = []
        tokens: list[str] = []
        for block in blocks:
            if isinstance(block, TextBlock):
                pieces.append(block.text)
            elif isinstance(block, ResourceLinkBlock):
                name = block.title or block.name or block.uri
                pieces.append(f"[{name}]({block.uri})")
                parsed = urlparse(block.uri)
                if parsed.scheme == "file":
                    contexts.append({"type": "file", "path": unquote(parsed.path)})
                elif parsed.scheme in ("http", "https"):
                    contexts.append({"type": "web", "url": block.uri})
            elif isinstance(block, ResourceBlock):
                resource = block.resource
                if isinstance(resource, BlobResource):
                    text = (f"(binary content, {resource.mime_type or 'unknown type'}, about "
                            f"{len(resource.blob) * 3 // 4} bytes: not shown)")
                else:
                    text = resource.text
                token = session.workspace.resources.put(text)
                tokens.append(token)
                name = Path(unquote(urlparse(resource.uri).path)).name or resource.uri
                contexts.append({"type": "mcpResource", "uri": resource.uri, "name": name,
                                 "server": RESOURCE_SERVER, "acpResource": token})
            elif isinstance(block, MediaBlock):
                session.workspace.resources.drop(tokens)
                raise RpcError(INVALID_PARAMS, f"{block.type} content is not supported (promptCapabilities."
                                               f"{block.type} is false)", {"type": block.type})
        message = ""
        for piece in pieces:
            if message and piece and not message[-1].isspace() and not piece[0].isspace():
                message += " "
            message += piece
        if not message.strip():
            message = "See the attached context."
        return message, contexts, tokens

    async def prompt(self, params: PromptParams) -> dict[str, Any]:
        session = self._session(params.session_id)
        if session.turn is not None:
            raise RpcError(SESSION_LOCKED, "Session locked: a prompt is already running in this session",
                           {"sessionId": session.id})
        turn = session.turn = _Turn()
        engine = session.engine
        session.updates.round_cap_hit = False
        tokens: list[str] = []
        try:
            message, contexts, tokens = self._prompt_input(session, params.prompt)
            request = ChatPromptParams.model_validate({
                "chatId": session.id, "message": message, "behavior": session.mode,
                "model": session.model, "contexts": contexts,
            })
            context_token = CURRENT_SESSION.set(session.id)  # the turn task copies it: fs requests name the session
            try:
                await engine.prompt(request)
            finally:
                CURRENT_SESSION.reset(context_token)
            chat = engine.chats.get(session.id)
            task = chat.task if chat is not None else None
            if task is not None:
                if turn.cancelled:
                    await engine.stop(session.id)
                else:
                    await asyncio.wait({task})  # never cancels the turn itself
            await self.flush()
        except asyncio.CancelledError:
            if not self.endpoint.closed:  # the client withdrew the request: stop the turn it started
                with contextlib.suppress(Exception):
                    await asyncio.shield(engine.stop(session.id))
            raise
        finally:
            session.turn = None
            session.workspace.resources.drop(tokens)
        return {"stopReason": self._stop_reason(session, turn)}

    def _stop_reason(self, session: Session, turn: _Turn) -> str:
        if turn.cancelled:
            return "cancelled"
        if session.updates.round_cap_hit:
            return "max_turn_requests"
        chat = session.engine.chats.get(session.id)
        # The engine does not record the provider's stop reason yet; when it does (``last_stop_reason``), a
        # length-limited answer is reported as such.
        if getattr(chat, "last_stop_reason", None) == "max_tokens":
            return "max_tokens"
        return "end_turn"

    def cancel(self, params: CancelParams) -> None:
        session = self.sessions.get(params.session_id)
        if session is None or session.turn is None:
            return
        session.turn.cancelled = True
        chat = session.engine.chats.get(session.id)
        if chat is not None and chat.running:
            self._spawn(session.engine.stop(session.id), f"acp-stop-{session.id}")

    # -- approvals -----------------------------------------------------------------------------------------------

    async def _ask_permission(self, session: Session, ask: PermissionAsk) -> None:
        engine = session.engine
        if (ask.server, ask.tool) in session.rejected_always:
            engine.reject(session.id, ask.call_id)
            return
        try:
            result = await self.client_request("session/request_permission", {
                "sessionId": session.id, "toolCall": ask.tool_call, "options": PERMISSION_OPTIONS,
            })
            answer = PermissionResponse.model_validate(result)
        except (RpcError, ConnectionError, ValidationError) as exc:
            log.warning("session/request_permission for %s failed (%s): rejecting the call", ask.call_id, exc)
            engine.reject(session.id, ask.call_id)
            return
        kind = _OPTION_KINDS.get(answer.outcome.option_id or "") if answer.outcome.outcome == "selected" else None
        if kind == "allow_once":
            engine.approve(session.id, ask.call_id)
        elif kind == "allow_always":
            engine.approve(session.id, ask.call_id, save="session")
        else:  # reject_once, reject_always, cancelled, or an option we never offered
            if kind == "reject_always":
                session.rejected_always.add((ask.server, ask.tool))
            engine.reject(session.id, ask.call_id)


async def serve_acp_stdio(*, config_file: Path | None = None, max_frame_size: int | None = None) -> int:
    """``eca-notebook acp``: ACP (JSON-RPC over NDJSON) on this process's stdin/stdout."""
    from ..transports.stdio import open_stdio

    stream = await open_stdio(codec="ndjson", max_frame_size=max_frame_size or DEFAULT_MAX_FRAME)
    connection = AcpConnection(stream, default_engine_factory(config_file))
    try:
        return await connection.run()
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
