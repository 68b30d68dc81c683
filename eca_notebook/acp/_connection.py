"""One ACP client connection: the agent side of the Agent Client Protocol, mapped onto the engine.

There is no second agent here: an ACP session *is* an engine chat (same id), and every method turns into the
engine call the ECA door makes for the same thing. This module is the connection itself — its lifecycle and the
method handlers — and routes the engine's notifications to the sessions they belong to. The ACP shape of things
lives beside it:

* **Workspaces** (:mod:`._workspaces`): one engine per ``session/new`` working directory, shared by that
  directory's sessions, with the MCP servers the client gives (answered once they run or failed, bounded in time).
* **Sessions** (:mod:`._sessions`): mode, model and config options of an engine chat as ACP shows them.
* **Prompts** (:mod:`._prompt`): ACP prompt blocks → the engine's message and contexts (resource links become
  file/web contexts, embedded resources are served to the context renderer by a small plug-in).
* **Updates** (:mod:`._updates`): ECA contents → ``session/update``, translated as the engine sends them and queued
  on the endpoint's one ordered outgoing queue, so they reach the client in the engine's order and before the
  ``session/prompt`` / ``session/load`` answer that follows them.
* **Approvals** (:mod:`._permissions`): a tool call that needs the user becomes ``session/request_permission``.
  ``session/cancel`` stops the turn (the engine rejects the waiting call).
* **Files** (:mod:`._files`): with the client's ``fs`` capabilities, ``engine.file_access`` is a
  :class:`~._files.ClientFiles`.

We never send ``$/cancelRequest`` (ACP clients do not know it): a request of ours that times out or whose caller
is cancelled is simply left to finish on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

from .._redact import redact_json
from .._tasks import BackgroundTasks
from .._version import __version__
from ..protocol import ChatPromptParams, JsonObject
from ..protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ..protocol.turn import ContentEvent, ToolCallState
from ..rpc import Endpoint
from ..tools.base import ChatDelegate
from ._files import CURRENT_SESSION, ClientFiles, read_for_client
from ._limits import UpdateOutbox, limits_from_config
from ._permissions import ask_permission
from ._prompt import prompt_input
from ._schema import (
    FILE_NOT_FOUND,
    MCP_SERVER_ERROR,
    MCP_SERVER_UNAVAILABLE,
    PROMPT_TIMEOUT,
    PROTOCOL_VERSION,
    SESSION_EXPIRED,
    SESSION_LOCKED,
    SESSION_NOT_FOUND,
    SPEC_MESSAGES,
    TIMEOUT,
    TOOL_DISABLED,
    TOOL_NOT_FOUND,
    TOOL_TIMEOUT,
    CancelParams,
    ClientRequestParams,
    ConfigOptionsResult,
    InitializeParams,
    ListSessionsParams,
    LoadSessionParams,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    PromptResult,
    ReadTextFileParams,
    ReadTextFileResult,
    SessionPage,
    SessionState,
    SessionUpdate,
    SetConfigOptionParams,
    SetModelParams,
    SetModeParams,
    parse,
)
from ._sessions import Session, Turn, available_commands, session_page
from ._terminal import TerminalRunner
from ._updates import PermissionAsk, SessionUpdates
from ._workspaces import EngineFactory, Workspace, Workspaces, default_engine_factory, mcp_available

__all__ = ["DEFAULT_MAX_FRAME", "MAX_QUEUED_UPDATES", "AcpConnection", "serve_acp_stdio"]

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAME = 16 * 1024 * 1024  # above the largest fs/* message the spec allows (10 MB)
MAX_QUEUED_UPDATES = 20_000  # messages waiting for a client that does not read: then it is disconnected
SAVE_WAIT = 10.0  # seconds a prompt's answer waits for its chat to be written (the writer thread is fast; a bound)
TIMEOUT_SLICE = 1.0  # seconds: how often a running prompt's clock checks whether it only waits for the user


class _Replay:
    """Receives one chat's replay (``engine.replay``) for one session."""

    def __init__(self, connection: AcpConnection, workspace: Workspace, session: Session) -> None:
        self.connection = connection
        self.workspace = workspace
        self.session = session

    def send(self, method: str, params: JsonObject) -> None:
        self.connection._deliver(self.workspace, method, params, self.session)


#: eca_notebook.mcp's CALL_ERROR / CALL_UNAVAILABLE (by value: the door runs without the MCP extra installed)
_MCP_FAILURES = {"error": MCP_SERVER_ERROR, "unavailable": MCP_SERVER_UNAVAILABLE}


def _tool_error_code(session: Session, call: ToolCallState) -> int | None:
    """The spec's code for why a tool call (the session fold's) failed, when the reason is one it names and the
    engine's state shows it (not the tool's output, which a tool or server may word as it likes): a tool no one
    offers, one disabled in this session's mode, a command killed in the client's terminal past its timeout, an MCP
    server that broke off the call or was not there to answer it."""
    if call.status != "failed":
        return None
    if session.terminal is not None and call.id in session.terminal.timed_out:
        return TOOL_TIMEOUT
    server = call.server or "eca"
    full = f"{server}__{call.name}"
    engine = session.engine
    if server != "eca":  # the MCP plug-ins (the config's and the sessions') know why a call of theirs failed
        for plugin in [engine.mcp, *engine.plugins]:
            failure = getattr(plugin, "call_failure", None)
            why = failure(call.id) if callable(failure) else None
            if why in _MCP_FAILURES:
                return _MCP_FAILURES[why]
    if full not in engine.all_tools():
        return TOOL_NOT_FOUND
    if full not in engine.offered_tools(session.mode):
        return TOOL_DISABLED
    return None


class AcpConnection:
    """Serve one ACP client over a message stream (NDJSON stdio in production, an in-memory pair in tests)."""

    def __init__(self, stream: Any, engine_factory: EngineFactory | None = None, *,
                 prompt_timeout: float | None = PROMPT_TIMEOUT) -> None:
        self.prompt_timeout = prompt_timeout  # None or 0: a prompt may run as long as it needs
        # ``"id": null`` is a notification here (acp-messages.md "Message Structure": "null for notifications")
        self.endpoint = Endpoint(stream, name="acp", guard=self._guard, params_parser=parse, outgoing=redact_json,
                                 max_queued=MAX_QUEUED_UPDATES, null_id_notifications=True)
        self.client_capabilities: Any = None
        self.client_info: Any = None
        self.sessions: dict[str, Session] = {}
        self.workspaces = Workspaces(engine_factory or default_engine_factory(), self._deliver, self._client_files)
        self._tasks = BackgroundTasks("acp", logger=log)
        self._register()

    # -- to the client -------------------------------------------------------------------------------------------

    def notify_update(self, session_id: str, update: SessionUpdate) -> None:
        """Queue one ``session/update`` behind whatever was queued before it (through the session's outbox, which
        keeps it under the spec's per-session rate)."""
        session = self.sessions.get(session_id)
        if session is not None and session.outbox is not None:
            session.outbox.put(update)
        else:
            self._send_update(session_id, update)

    def _send_update(self, session_id: str, update: SessionUpdate) -> None:
        self.endpoint.notify_nowait("session/update", {"sessionId": session_id, "update": update})

    def _open(self, session: Session) -> Session:
        """Register *session* with its rate limits (the workspace config's ``acp`` key) and update outbox."""
        session.limits = limits_from_config((session.engine.config.model_extra or {}).get("acp"))
        session.outbox = UpdateOutbox(session.limits.of("session/update"),
                                      lambda update: self._send_update(session.id, update))
        old = self.sessions.get(session.id)
        if old is not None and old.outbox is not None:
            self._tasks.spawn(old.outbox.aclose(), "acp-outbox-close")
        if old is not None and old.unsubscribe is not None:
            old.unsubscribe()
        self.sessions[session.id] = session
        # the session's chat and its subagents', typed (the engine's seam): the live contents of this session
        session.unsubscribe = session.engine.subscribe(session.id, lambda event: self._event(session, event))
        if getattr(self.client_capabilities, "terminal", False):  # shell_command runs in the client's terminal
            runner = TerminalRunner(session.id, self.client_request, lambda call, terminal: self._show_terminal(
                session, call, terminal))
            session.terminal = runner
            session.engine.set_chat_delegate(session.id, ChatDelegate(run_command=runner))
        return session

    def _show_terminal(self, session: Session, call_id: str | None, terminal_id: str) -> None:
        """The tool call shows the client's terminal its command runs in (live, as the client renders it)."""
        acp_id = session.updates.acp_id(call_id) if call_id else None
        if acp_id is not None:
            self.notify_update(session.id, {"sessionUpdate": "tool_call_update", "toolCallId": acp_id,
                                            "status": "in_progress",
                                            "content": [{"type": "terminal", "terminalId": terminal_id}]})

    def _deliver(self, workspace: Workspace, method: str, params: JsonObject, replay: Session | None) -> None:
        """One engine notification: a replay's content for the session *replay* as ``session/update``\\ s (the live
        contents come typed, through :meth:`_event`)."""
        if method == "$/showMessage":
            log.info("engine message: %s", params.get("message"))
            return
        if method != "chat/contentReceived" or replay is None or replay.workspace is not workspace:
            return
        try:
            content = params.get("content")
            updates, ask = replay.updates.translate(str(params.get("role")),
                                                    content if isinstance(content, dict) else {}, live=False)
        except Exception:
            log.exception("could not translate a %s of session %s", method, replay.id)
            return
        self._updates(replay, updates, ask)

    def _event(self, session: Session, event: ContentEvent) -> None:
        """A live content of *session*'s chat, or of a subagent it spawned, parsed once by the engine."""
        if self.sessions.get(session.id) is not session:
            return  # replaced by a session/load since
        subagent = event.chat_id != session.id
        try:
            if subagent:
                updates, ask = session.updates.translate_subagent(event.chat_id, event.role, event.content,
                                                                  live=True)
            else:
                updates, ask = session.updates.translate(event.role, event.content, live=True)
        except Exception:
            log.exception("could not translate a content of session %s", session.id)
            return
        change = session.updates.last  # what the content changed in the session's fold
        if not subagent and change is not None and change.kind == "toolCalled" and change.tool is not None:
            code = _tool_error_code(session, change.tool)
            for update in updates:
                if code is not None and update["sessionUpdate"] == "tool_call_update" and update["status"] == "failed":
                    update["rawOutput"] = {"error": {"code": code, "message": SPEC_MESSAGES[code]}}
        self._updates(session, updates, ask)

    def _updates(self, session: Session, updates: list[SessionUpdate], ask: PermissionAsk | None) -> None:
        for update in updates:
            self.notify_update(session.id, update)
        if ask is not None:  # its request is queued behind the tool call it asks about
            self._tasks.spawn(self._ask_after_updates(session, ask), f"acp-permission-{ask.call_id}")

    async def _ask_after_updates(self, session: Session, ask: PermissionAsk) -> None:
        if session.outbox is not None:
            await session.outbox.drain()  # the tool call it asks about may be held by the rate limit
        await ask_permission(session, ask, self.client_request)

    async def client_request(self, method: str, params: ClientRequestParams, timeout: float | None = None) -> Any:
        """A request to the client that is never cancelled on the wire (ACP has no ``$/cancelRequest``): on
        timeout or cancellation of the caller it keeps running in the background and its answer is dropped."""
        task = asyncio.ensure_future(self.endpoint.request(method, params))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no "never retrieved" noise
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            raise TimeoutError(f"{method}: no answer within {timeout} s")
        return task.result()

    def _client_files(self) -> ClientFiles | None:
        """File access through the client's ``fs`` methods, when it advertised them."""
        fs = getattr(self.client_capabilities, "fs", None)
        can_read = bool(getattr(fs, "read_text_file", False))
        can_write = bool(getattr(fs, "write_text_file", False))
        if not (can_read or can_write):
            return None
        return ClientFiles(self._paced_request, can_read=can_read, can_write=can_write)

    async def _paced_request(self, method: str, params: ClientRequestParams,
                             timeout: float | None = None) -> Any:
        """An ``fs/*`` request under its session's rate limit: the agent waits for the window rather than send
        one the client may refuse (the spec's limits bind the sender of agent → client calls)."""
        session = self.sessions.get(str(params.get("sessionId")))
        if session is not None:
            await session.limits.of(method).take()
            timeout = session.limits.timeouts.get(method, timeout)
        return await self.client_request(method, params, timeout)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def _guard(self, method: str) -> None:
        if method == "initialize" or method.startswith("$/"):
            return
        if self.client_capabilities is None:
            raise RpcError(INVALID_REQUEST, f"'{method}' before 'initialize'")

    async def run(self) -> int:
        """Serve until the client closes the stream; returns the process exit code."""
        try:
            await self.endpoint.run()
        finally:
            await self._tasks.aclose()
            await self.aclose()
        return 0

    async def aclose(self) -> None:
        await self.workspaces.aclose()
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
        r("fs/read_text_file", self.read_text_file)

    # -- initialize ----------------------------------------------------------------------------------------------

    def initialize(self, params: InitializeParams) -> JsonObject:
        if self.client_capabilities is not None:
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        self.client_capabilities = params.client_capabilities
        self.client_info = params.client_info
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": mcp_available(), "sse": mcp_available()},
                "sessionCapabilities": {"list": {}},
            },
            "agentInfo": {"name": "eca-notebook", "title": "eca-notebook", "version": __version__},
            "authMethods": [],
        }

    def authenticate(self, params: object) -> NoReturn:
        raise RpcError(INVALID_PARAMS, "eca-notebook advertises no authentication methods: configure API keys in "
                                       "its config or environment instead")

    # -- sessions ------------------------------------------------------------------------------------------------

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError(SESSION_NOT_FOUND, f"Session not found: {session_id}", {"sessionId": session_id})
        return session

    def _announce_commands(self, session: Session) -> None:
        commands = available_commands(session.engine)

        async def later() -> None:
            await asyncio.sleep(0)  # after the session/new (or load) answer: the client knows the session by then
            self.notify_update(session.id, {"sessionUpdate": "available_commands_update",
                                            "availableCommands": commands})

        self._tasks.spawn(later(), "acp-commands")

    async def new_session(self, params: NewSessionParams) -> NewSessionResult:
        workspace = await self.workspaces.get(params.cwd)
        await workspace.add_mcp_servers(params.mcp_servers)
        engine = workspace.engine
        session = Session(id=str(uuid.uuid4()), workspace=workspace, updates=SessionUpdates(workspace.cwd),
                          mode=engine.selected_behavior, model=None)
        self._open(session)
        self._announce_commands(session)
        return {"sessionId": session.id, **session.state()}

    async def load_session(self, params: LoadSessionParams) -> SessionState:
        workspace = await self.workspaces.get(params.cwd)
        await workspace.add_mcp_servers(params.mcp_servers)
        engine = workspace.engine
        existing = self.sessions.get(params.session_id)
        if existing is not None and existing.turn is not None:
            raise RpcError(SESSION_LOCKED, "Session locked: a prompt is running in this session",
                           {"sessionId": params.session_id})
        chat = engine.get_chat(params.session_id)
        if chat is None:
            raise RpcError(SESSION_NOT_FOUND, f"Session not found: {params.session_id}",
                           {"sessionId": params.session_id, "cwd": str(workspace.cwd)})
        days = engine.config.chat_retention_days
        if days and chat.updated_at < time.time() * 1000 - days * 86_400_000:
            raise RpcError(SESSION_EXPIRED, f"Session expired: not updated for more than {days:g} days "
                                            "(chatRetentionDays); start a new session",
                           {"sessionId": params.session_id, "retentionDays": days})
        mode = engine.agents.canonical(chat.behavior)  # (a chat saved with the deprecated ``agent`` is ``code``)
        mode = mode if mode in engine.behaviors() else engine.selected_behavior
        model = chat.model if chat.model in engine.registry.models() else None
        if existing is not None and existing.workspace is workspace:
            # open here already: the mode and model the client set since its last prompt (the chat learns them
            # only when it runs) stay what the client set
            mode = existing.mode if existing.mode in engine.behaviors() else mode
            model = existing.model if existing.model in engine.registry.models() else model
        session = Session(id=chat.id, workspace=workspace, updates=SessionUpdates(workspace.cwd), mode=mode,
                          model=model)
        self._open(session)
        engine.replay(chat.id, _Replay(self, workspace, session))  # its updates are queued before our answer
        for update in session.updates.unfinished():
            self.notify_update(session.id, update)
        self._announce_commands(session)
        if session.outbox is not None:
            await session.outbox.drain()  # the answer follows the replay
        return session.state()

    async def list_sessions(self, params: ListSessionsParams | None) -> SessionPage:
        params = params or ListSessionsParams()
        if params.cwd is not None:
            workspaces = [await self.workspaces.get(params.cwd)] if Path(params.cwd).is_dir() else []
        else:
            workspaces = list(self.workspaces)
        return session_page(workspaces, params.cursor)

    # -- modes and models ----------------------------------------------------------------------------------------

    def _options_changed(self, session: Session) -> None:
        self.notify_update(session.id, {"sessionUpdate": "config_option_update",
                                        "configOptions": session.config_options()})

    def set_mode(self, params: SetModeParams) -> JsonObject:
        session = self._session(params.session_id)
        session.apply_mode(params.mode_id)
        self._options_changed(session)
        return {}

    def set_model(self, params: SetModelParams) -> JsonObject:
        session = self._session(params.session_id)
        session.apply_model(params.model_id)
        self._options_changed(session)
        return {}

    def set_config_option(self, params: SetConfigOptionParams) -> ConfigOptionsResult:
        session = self._session(params.session_id)
        session.apply_option(params.config_id, params.value)
        return {"configOptions": session.config_options()}

    # -- files ---------------------------------------------------------------------------------------------------

    async def read_text_file(self, params: ReadTextFileParams) -> ReadTextFileResult:
        """A client's ``fs/read_text_file`` (acp-messages.md "Error Scenarios"): the file as the agent sees it, for
        the session's folders only (:func:`._files.read_for_client`)."""
        session = self._session(params.session_id)
        roots = list(session.engine.workspace_folders) or [session.workspace.cwd]
        return await asyncio.to_thread(read_for_client, roots, params.path, params.line, params.limit)

    # -- prompts -------------------------------------------------------------------------------------------------

    async def prompt(self, params: PromptParams) -> PromptResult:
        session = self._session(params.session_id)
        if session.turn is not None:
            raise RpcError(SESSION_LOCKED, "Session locked: a prompt is already running in this session",
                           {"sessionId": session.id})
        session.limits.admit("session/prompt", session.id)
        turn = session.turn = Turn()
        engine = session.engine
        session.updates.round_cap_hit = False
        tokens: list[str] = []
        try:
            given = prompt_input(params.prompt, session.workspace.resources)
            tokens = given.tokens
            await self._check_linked_files(session, given.contexts)
            request = ChatPromptParams.model_validate({
                "chatId": session.id, "message": given.message, "behavior": session.mode,
                "model": session.model, "contexts": given.contexts,
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
                    await self._wait_for_turn(session, task)  # never cancels the turn itself (stops it)
        except asyncio.CancelledError:
            if not self.endpoint.closed:  # the client withdrew the request: stop the turn it started
                with contextlib.suppress(Exception):
                    await asyncio.shield(engine.stop(session.id))
            raise
        finally:
            session.turn = None
            session.workspace.resources.drop(tokens)
        if engine.store is not None:
            # the turn is on disk before the client hears it ended: a client that stops the agent right after (ACP
            # clients give it a couple of seconds, then kill it) loses nothing on session/load
            await asyncio.to_thread(engine.store.wait_saved, session.id, SAVE_WAIT)
        if session.outbox is not None:
            await session.outbox.drain()  # the turn's updates (some held by the rate limit) precede this answer
        return {"stopReason": session.stop_reason(turn)}

    async def _check_linked_files(self, session: Session, contexts: list[JsonObject]) -> None:
        """A prompt that links a file (``resource_link`` ``file://``) that does not exist — on disk, nor in the
        editor when it serves files — is refused with the spec's ``-31700`` (File not found): left out silently,
        the model would be asked about a file it never sees, and the user never learn why."""
        files = session.engine.file_access
        for context in contexts:
            if context.get("type") != "file":
                continue
            path = Path(str(context.get("path")))
            if await asyncio.to_thread(os.path.lexists, path):
                continue
            if isinstance(files, ClientFiles) and files.can_read:
                token = CURRENT_SESSION.set(session.id)
                try:
                    if await files.read_text(path) is not None:  # an editor buffer not saved yet
                        continue
                finally:
                    CURRENT_SESSION.reset(token)
            raise RpcError(FILE_NOT_FOUND, f"File not found: {path} (linked in the prompt)",
                           {"path": str(path), "sessionId": session.id})

    async def _wait_for_turn(self, session: Session, task: asyncio.Task[Any]) -> None:
        """Until the turn ends, or its work took longer than :attr:`prompt_timeout`: then it is stopped and the
        prompt answers ACP's ``TIMEOUT``. Time a tool call waits for the user's permission is not counted — the
        user is in control, and the client answering ``session/request_permission`` is the one waiting."""
        limit = self.prompt_timeout
        if not limit:
            await asyncio.wait({task})
            return
        engine, loop, used = session.engine, asyncio.get_running_loop(), 0.0
        while used < limit:
            started = loop.time()
            done, _ = await asyncio.wait({task}, timeout=min(limit - used, TIMEOUT_SLICE))
            if done:
                return
            if not any(key[0] == session.id for key in engine.pending_approvals):
                used += loop.time() - started
        log.warning("session %s: prompt stopped after %g s (the ACP prompt timeout)", session.id, limit)
        await engine.stop(session.id)
        raise RpcError(TIMEOUT, f"Timeout: the prompt ran for more than {limit:g} s and was stopped",
                       {"sessionId": session.id, "timeoutSeconds": limit})

    def cancel(self, params: CancelParams) -> None:
        session = self.sessions.get(params.session_id)
        if session is None or session.turn is None:
            return
        session.turn.cancelled = True
        chat = session.engine.chats.get(session.id)
        if chat is not None and chat.running:
            self._tasks.spawn(session.engine.stop(session.id), f"acp-stop-{session.id}")


async def serve_acp_stdio(*, config_file: Path | None = None, max_frame_size: int | None = None,
                          prompt_timeout: float | None = None) -> int:
    """``eca-notebook acp``: ACP (JSON-RPC over NDJSON) on this process's stdin/stdout (*prompt_timeout*: seconds,
    default :data:`~._schema.PROMPT_TIMEOUT`; 0 for none)."""
    from ..transports.stdio import open_stdio

    stream = await open_stdio(codec="ndjson", max_frame_size=max_frame_size or DEFAULT_MAX_FRAME)
    timeout = PROMPT_TIMEOUT if prompt_timeout is None else prompt_timeout
    connection = AcpConnection(stream, default_engine_factory(config_file), prompt_timeout=timeout)
    try:
        return await connection.run()
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
