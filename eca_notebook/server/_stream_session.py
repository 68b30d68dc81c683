"""One client of the session stream: the handshake, the client's messages, and the engine's contents of its chat
translated back (:mod:`._stream_events`), over a :class:`~.ws.WebSocketStream`.

The session *is* an engine chat (same id): the panel sees it and its turns like any other. This connection is a
:class:`~eca_notebook.engine.Listener` on the workspace's engine that keeps only its chat's contents, and it hands
the engine a :class:`~eca_notebook.tools.base.ChatDelegate` for that chat alone:

* **patch mode** ``client`` (the client said ``apply_patches``): file writes go through :class:`_ClientPatches`
  — after approval the patch is proposed again with exactly what to apply, and the write succeeds only when the
  client answers ``client.patch_apply_result`` with success (a ``conflict`` fails the tool call with the client's
  message, for the model to see). ``server`` (default): the engine writes the approved hunks itself.
* **command mode** (``commandExecution.modes``, the first the client supports): ``local_terminal`` runs the shell
  tool's commands through ``command.request_approval`` / ``client.command_result``; ``server_runner`` leaves them to
  the engine (approval as ``tool.request_approval`` ``execute_command``); none allowed refuses them
  (``POLICY_VIOLATION``).
* the **automatic context** (:mod:`._stream_context`): rendered into the turn's contexts at each message; updates
  that arrive during a turn reach the following model requests as a note of the system prompt.

Every recoverable problem is a ``server.error`` and the socket stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any, Literal

from .._redact import redact_json
from .._tasks import BackgroundTasks
from .._version import __version__
from .._workspace_paths import is_inside
from ..engine import Engine
from ..protocol import ChatPromptParams, FileChangeDetails, JsonObject
from ..protocol.errors import RpcError
from ..protocol.turn import Content, ContentEvent
from ..tools.base import CURRENT_TOOL_CALL, ChatDelegate, CommandOutcome, CommandRequest
from ..tools.shell import ShellCommandTool
from ._stream_context import (
    EditorContextTexts,
    merge_context,
    render_context,
    render_update,
)
from ._stream_events import Ask, Call, SessionBook, TurnRecord, hunks_in_diff, relative, working_directory
from ._stream_schema import (
    AgentPlan,
    AssistantMessageFinal,
    AssistantThinking,
    AssistantToken,
    ClientApprovalResponse,
    ClientCancel,
    ClientCommandResult,
    ClientContextUpdate,
    ClientFileChanges,
    ClientHello,
    ClientPatchApplyResult,
    ClientUserMessage,
    CommandRequestApproval,
    EditorContext,
    ErrorBody,
    ErrorCode,
    FinalMetadata,
    MessageError,
    ModelInfo,
    PatchProposed,
    ServerError,
    ServerHello,
    ServerInfo,
    ServerMessage,
    SessionState,
    ToolRequestApproval,
    parse_client_message,
    wire,
)
from ._workspaces import Workspace, WorkspaceManager
from .ws import WebSocketStream

__all__ = ["COMMAND_GRACE", "PATCH_TIMEOUT", "StreamSession", "too_large"]

log = logging.getLogger(__name__)

PATCH_TIMEOUT = 120.0  # seconds the client has to apply a patch and say so
COMMAND_GRACE = 60.0  # seconds a client-run command may take beyond the tool's own timeout (approval, start-up)
EMPTY_MESSAGE = "See the attached editor context."
_RETRIEVAL_TOOLS = {"search_symbols": "symbol_search", "search_text": "text_search", "vector_search": "vector_search"}


def too_large(body: bytes, limit: int) -> JsonObject:
    """The answer to a frame over the size limit (the socket stays open)."""
    return wire(ServerError(error=ErrorBody(code="MESSAGE_TOO_LARGE", recoverable=True,
                                            message=f"message of {len(body)} bytes exceeds the limit of {limit} bytes",
                                            details={"size": len(body), "limit": limit})))


class _ClientPatches:
    """File writes of the session's chat, applied by the client (patch mode ``client``)."""

    def __init__(self, session: StreamSession) -> None:
        self.session = session

    async def read_text(self, path: Path) -> str | None:
        return None  # the diff is made from the disk, which the client's patch applies to

    async def write_text(self, path: Path, content: str) -> bool:
        return await self.session.client_write(path, content)


class StreamSession:
    """Serve one session-stream client until it goes away."""

    def __init__(self, stream: WebSocketStream, manager: WorkspaceManager, workspace: Workspace, engine: Engine,
                 chat_id: str, *, patch_timeout: float = PATCH_TIMEOUT, command_grace: float = COMMAND_GRACE) -> None:
        self.stream = stream
        self.manager = manager
        self.workspace = workspace
        self.engine = engine
        self.chat_id = chat_id
        self.patch_timeout = patch_timeout
        self.command_grace = command_grace
        self.folders = list(engine.workspace_folders)
        self.book = SessionBook(self.folders)
        self.hello: ClientHello | None = None
        self.command_mode: Literal["local_terminal", "server_runner"] | None = None
        self.patch_mode: Literal["client", "server"] = "server"
        self.context = EditorContext()
        self._mid_turn: EditorContext | None = None  # updates received while the turn runs
        self._note: str | None = None
        self.asks: dict[str, Ask] = {}  # request id (req_… / cmd_…) → the call waiting for the user
        self._announced: set[str] = set()  # command ids the client was asked to run
        self._early: dict[str, CommandOutcome] = {}  # results that came before the tool asked for them
        self._command_waits: dict[str, asyncio.Future[CommandOutcome]] = {}
        self._patch_waits: dict[str, asyncio.Future[ClientPatchApplyResult]] = {}
        self._delegate: ChatDelegate | None = None
        self._subagents: dict[str, SessionBook] = {}  # a subagent's chat id → its contents' translation
        self._turn_task: asyncio.Task[None] | None = None
        self._tasks = BackgroundTasks("session-stream", logger=log)
        self._closed = False

    # -- the engine's side ---------------------------------------------------------------------------------------

    def send(self, method: str, params: JsonObject) -> None:
        """Listener: only this chat's deletion (its contents come typed, through :meth:`event`)."""
        if params.get("chatId") != self.chat_id:
            return
        if method == "chat/deleted":
            self.error("NOT_FOUND", "the session was deleted", {"session_id": self.chat_id}, recoverable=False)
            self.stream.feed_eof()

    def event(self, event: ContentEvent) -> None:
        """The engine's typed seam (``Engine.subscribe``): a content of this chat, or of a subagent it spawned,
        parsed once by the engine."""
        try:
            if event.chat_id == self.chat_id:
                self._content(event.role, event.content)
            else:
                self._subagent_content(event.chat_id, event.role, event.content)
        except Exception:
            log.exception("could not translate a content of session %s", self.chat_id)

    def _content(self, role: str, content: Content | JsonObject) -> None:
        turn = self.book.turn
        had_error = turn.error if turn is not None else None
        change = self.book.fold.step(role, content)
        messages, ask, changed = self.book.apply(change)
        approved_already = (ask is not None and ask.kind != "command" and self.book.turn is not None
                            and self.book.turn.approve_all)
        for message in messages:
            if approved_already and isinstance(message, PatchProposed):
                message = message.model_copy(update={"requires_approval": False})
            if self.patch_mode == "client" and isinstance(message, PatchProposed) and not message.requires_approval:
                continue  # the one to apply comes from client_write, when the tool writes: one proposal per patch
            self.emit(message)
        if turn is not None and turn.error and not had_error:
            self.error("MODEL_ERROR", turn.error, {"session_id": self.chat_id})
        if ask is not None and approved_already:
            # the user approved "all" earlier in this turn: later changes of the turn need no new answer
            self._later(self.engine.approve, ask.chat_id or self.chat_id, ask.call_id)
            ask = None
        if ask is not None:
            changed = self._ask(ask) or changed
        if change.tool is not None and change.kind in ("toolCallRunning", "toolCalled", "toolCallRejected"):
            # answered elsewhere too (the panel shows the same chat): the call no longer waits for this client
            call_id = change.tool.id
            for request_id in [r for r, a in self.asks.items() if a.call_id == call_id and a.chat_id is None]:
                del self.asks[request_id]
                changed = True
        if changed:
            self.emit_state()

    def _subagent_content(self, child: str, role: str, content: Content | JsonObject) -> None:
        """A content of a subagent this session's chat spawned: its tool calls (``tool.execute``, patches) and their
        approvals are this session's — answered in the subagent's chat — while its texts are not the answer (the
        parent's ``spawn_agent`` result carries it)."""
        change = self.book.fold.step_subagent(child, role, content)  # folded in the subagent's fold of the chat's
        assert change is not None
        book = self._subagents.get(child)
        if book is None:
            # its file changes are the session's: pending and applied patches shared with the session's book
            book = self._subagents[child] = SessionBook(self.book.folders, pending_patches=self.book.pending_patches,
                                                        applied_patches=self.book.applied_patches,
                                                        fold=self.book.fold.subagents[child])
        messages, ask, changed = book.apply(change)
        for message in messages:
            if isinstance(message, (AssistantToken, AgentPlan)) or (
                    isinstance(message, AssistantThinking) and message.phase == "planning"):
                continue
            self.emit(message)
        if ask is not None:
            ask.chat_id = child
            ask.request_id = f"req_{child}_{ask.call_id}"
            changed = self._ask(ask) or changed
        if change.tool is not None and change.kind in ("toolCallRunning", "toolCalled", "toolCallRejected"):
            call_id = change.tool.id
            for request_id in [r for r, a in self.asks.items() if a.call_id == call_id and a.chat_id == child]:
                del self.asks[request_id]
                changed = True
        if changed:
            self.emit_state()

    # -- to the client -------------------------------------------------------------------------------------------

    def emit(self, message: ServerMessage) -> None:
        """Queue one message (redacted: it leaves the server) behind everything queued before it."""
        if self._closed:
            return
        with contextlib.suppress(ConnectionError):
            self.stream.write_nowait(redact_json(wire(message)))

    def error(self, code: ErrorCode, message: str, details: Any = None, *, recoverable: bool = True) -> None:
        self.emit(ServerError(error=ErrorBody(code=code, message=message, details=details, recoverable=recoverable)))

    def emit_state(self) -> None:
        self.emit(SessionState(state=self.book.state(list(self.asks))))

    # -- the connection ------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read the client's messages until it goes away; then let go of everything this session held."""
        self.engine.add_listener(self)
        unsubscribe = self.engine.subscribe(self.chat_id, self.event)
        self.workspace.connections += 1
        try:
            while True:
                data = await self.stream.read()
                if data is None:
                    break
                if isinstance(data, RpcError):  # not JSON, or not an object/array
                    self.error("INVALID_MESSAGE", f"not a JSON object: {data.message}")
                    continue
                try:
                    await self._handle(data)
                except Exception:
                    log.exception("session %s: handling a %r failed", self.chat_id,
                                  data.get("type") if isinstance(data, dict) else None)
                    self.error("INVALID_MESSAGE", "the server failed to handle this message")
        finally:
            unsubscribe()
            await self._close()

    async def _close(self) -> None:
        self._closed = True
        self.engine.remove_listener(self)
        if self._delegate is not None:
            self.engine.clear_chat_delegate(self.chat_id, self._delegate)
        for waits in (self._command_waits, self._patch_waits):
            for future in waits.values():
                if not future.done():
                    future.set_exception(ConnectionError("the editor client disconnected"))
        if self._turn_task is not None and not self._turn_task.done():
            # the turn belonged to this client: nobody is left to approve, apply or run what it asks
            with contextlib.suppress(Exception):
                await self.engine.stop(self.chat_id)
            await asyncio.gather(self._turn_task, return_exceptions=True)
        await self._tasks.aclose()
        self.workspace.connections -= 1
        self.manager.detached(self.workspace)
        await self.stream.close()

    async def _handle(self, data: Any) -> None:
        try:
            message = parse_client_message(data)
        except MessageError as exc:
            self.error(exc.code, exc.message, exc.details)
            return
        if self.hello is None and not isinstance(message, ClientHello):
            self.error("HANDSHAKE_REQUIRED", "send client.hello first", {"received": message.type})
            return
        if isinstance(message, ClientHello):
            self._hello(message)
        elif isinstance(message, ClientUserMessage):
            await self._user_message(message)
        elif isinstance(message, ClientContextUpdate):
            self._context_update(message)
        elif isinstance(message, ClientApprovalResponse):
            self._approval(message)
        elif isinstance(message, ClientPatchApplyResult):
            self._patch_result(message)
        elif isinstance(message, ClientCommandResult):
            self._command_result(message)
        elif isinstance(message, ClientCancel):
            self._cancel(message)
        elif isinstance(message, ClientFileChanges):
            await self._file_changes(message)

    # -- handshake -----------------------------------------------------------------------------------------------

    def _hello(self, message: ClientHello) -> None:
        if self.hello is not None:
            self.error("INVALID_MESSAGE", "the handshake is already done (client.hello was sent before)")
            return
        self.hello = message
        given = set(message.client_info.capabilities)
        supported = {"server_runner", *(["local_terminal"] if "terminal_exec" in given else [])}
        allowed = [mode for mode in self.engine.config.command_execution.modes if mode in supported]
        self.command_mode = allowed[0] if allowed else None
        self.patch_mode = "client" if "apply_patches" in given else "server"
        run_command = (self._run_in_client if self.command_mode == "local_terminal"
                       else self._refuse_command if self.command_mode is None else None)
        self._delegate = ChatDelegate(fs=_ClientPatches(self) if self.patch_mode == "client" else None,
                                      run_command=run_command, system_note=self._system_note)
        self.engine.set_chat_delegate(self.chat_id, self._delegate)
        capabilities = ["hunk_approval", "multi_file_edit", "automatic_context", "slash_commands"]
        tools = {name.split("__", 1)[-1] for name in self.engine.all_tools()}
        stages = [stage for tool, stage in _RETRIEVAL_TOOLS.items() if tool in tools]
        capabilities += (["agentic_rag"] if stages else []) + stages  # the model searches the code itself
        capabilities += ["delete_file"] if "delete_file" in tools else []
        capabilities += list(dict.fromkeys(allowed))
        self.emit(ServerHello(server_info=ServerInfo(version=__version__, model=self._model(),
                                                     capabilities=capabilities),
                              session_id=self.chat_id, workspace_id=self.workspace.id,
                              command_mode=self.command_mode, patch_mode=self.patch_mode, capabilities=capabilities))
        self.emit_state()

    def _model(self) -> ModelInfo | None:
        engine = self.engine
        chat = engine.get_chat(self.chat_id)
        model_id = (chat.model if chat is not None else None) or engine.selected_model \
            or engine.registry.default_model()
        info = engine.registry.model_infos().get(model_id) if model_id else None
        if info is None:
            return None
        # what this server serves with it: chat (with tools), inline code completion (``completion/inline`` of the
        # ECA doors, whenever a completion model resolves) and the built-in /refactor (and /fix, /test, /explain)
        completion = ["code_completion"] if engine.inline.model() is not None else []
        return ModelInfo(provider=info.provider, model_name=info.name,
                         capabilities=["chat", *completion, "refactor", "tools",
                                       *(["reasoning"] if info.reasoning else [])])

    # -- turns ---------------------------------------------------------------------------------------------------

    @property
    def turn_running(self) -> bool:
        return self._turn_task is not None and not self._turn_task.done()

    async def _user_message(self, message: ClientUserMessage) -> None:
        engine = self.engine
        chat = engine.get_chat(self.chat_id)
        if chat is None:
            self.error("NOT_FOUND", "the session no longer exists", {"session_id": self.chat_id}, recoverable=False)
            return
        if self.turn_running or chat.running:
            self.error("SESSION_BUSY", "a turn is running in this session: wait for assistant.message_final or send "
                                       "client.cancel", {"session_id": self.chat_id})
            return
        command = message.context.command if message.context is not None else None
        if message.context is not None:
            self.context = merge_context(self.context, message.context.model_copy(update={"command": None}))
        self._mid_turn, self._note = None, None
        rendered = await render_context(self.context, self.folders, engine.config.editor_context_tokens,
                                        getattr(engine, "code_index", None))
        contexts: list[JsonObject] = list(rendered.contexts)
        texts = self._texts()
        token = texts.put(rendered.text) if rendered.text else None
        if token is not None:
            contexts.append(texts.context(token, "eca-editor://context", "Editor context"))
        for index, image in enumerate(message.images or [], 1):  # checked by the engine like any image coming in
            contexts.append({"type": "image", "mediaType": image.media_type, "base64": image.data,
                             "name": image.name or f"image {index}"})
        text = message.message
        if command and not text.lstrip().startswith("/"):
            text = f"{command} {text}".strip()
        record = self.book.turn = TurnRecord()
        try:
            params = ChatPromptParams.model_validate({"chatId": self.chat_id, "message": text or EMPTY_MESSAGE,
                                                     "contexts": contexts})
            result = await engine.prompt(params)
        except Exception as exc:
            log.exception("session %s: the prompt failed", self.chat_id)
            record.error = record.error or f"internal error: {exc}"
            result = None
        if result is not None and result.status != "prompting":
            record.error = record.error or result.message or f"the prompt could not start ({result.status})"
            self.error("MODEL_ERROR", record.error, {"session_id": self.chat_id, "status": result.status})
        task = chat.task if result is not None and result.status == "prompting" else None
        self._turn_task = asyncio.get_running_loop().create_task(self._finish(task, token),
                                                                  name=f"session-stream-turn-{self.chat_id}")

    async def _finish(self, task: asyncio.Task[None] | None, token: str | None) -> None:
        """When the engine's turn is over: the one ``assistant.message_final``, and the state."""
        try:
            if task is not None:
                await asyncio.wait({task})
        finally:
            if token is not None:
                self._texts().drop([token])
            record = self.book.turn or TurnRecord()
            self.book.turn = None
            self._mid_turn, self._note = None, None
            stop: Literal["completed", "cancelled", "error"] = (
                "cancelled" if record.cancelled else "error" if record.error else "completed")
            text = record.text or record.system_text.strip() or (record.error or "")
            self.emit(AssistantMessageFinal(message=text, metadata=FinalMetadata(
                tokens_used=record.tokens_used, files_modified=len(record.files_modified),
                tools_used=list(record.tools_used), success=stop == "completed", stop_reason=stop)))
            self.asks.clear()  # the turn is over: none of its calls waits any more
            self._announced.clear()
            self._early.clear()
            self.emit_state()

    def _texts(self) -> EditorContextTexts:
        """The engine's editor-context plug-in (one per engine, shared by its sessions)."""
        for plugin in self.engine.plugins:
            if isinstance(plugin, EditorContextTexts):
                return plugin
        texts = EditorContextTexts()
        self.engine.add_plugin(texts)
        return texts

    def _context_update(self, message: ClientContextUpdate) -> None:
        updates = message.updates.model_copy(update={"command": None})
        self.context = merge_context(self.context, updates)
        if self.turn_running:
            self._mid_turn = merge_context(self._mid_turn or EditorContext(), updates)
            self._note = render_update(self._mid_turn, self.folders, self.engine.config.editor_context_tokens)

    def _system_note(self) -> str | None:
        return self._note

    def _cancel(self, message: ClientCancel) -> None:
        if not self.turn_running:
            return
        if self.book.turn is not None:
            self.book.turn.cancelled = True
        self.asks.clear()  # stopping rejects every call still waiting for the user
        self._tasks.spawn(self.engine.stop(self.chat_id), f"session-stream-stop-{self.chat_id}")

    # -- approvals -----------------------------------------------------------------------------------------------

    def _ask(self, ask: Ask) -> bool:
        """Ask the client about a call waiting for the user; False when the call is refused outright instead."""
        call = ask.call
        if ask.kind == "command":
            if self.command_mode is None:
                self._later(self.engine.reject, ask.chat_id or self.chat_id, ask.call_id)
                self.error("POLICY_VIOLATION", "running commands is not allowed for this session "
                                               "(commandExecution.modes)", {"command": call.args.get("command")})
                return False
            if self.command_mode == "local_terminal":
                ask.request_id = f"cmd_{ask.call_id}"
                self._announced.add(ask.request_id)
                self.emit(self._command_request(call, ask.request_id, requires_approval=True, reason=ask.reason))
            else:
                self.emit(ToolRequestApproval(request_id=ask.request_id, tool_name="execute_command",
                                              args={"command": call.args.get("command"),
                                                    "working_directory": working_directory(call, self.folders),
                                                    "reason": ask.reason},
                                              risk_level=ask.risk))
        elif ask.kind == "file":  # (the spec's tool names: a deletion is delete_file, any other change write_file)
            self.emit(ToolRequestApproval(request_id=ask.request_id,
                                          tool_name="delete_file" if call.name == "delete_file" else "write_file",
                                          args={"file_path": call.file_path, "reason": ask.reason,
                                                "patch_id": call.patch_id},
                                          risk_level=ask.risk))
        else:
            self.emit(ToolRequestApproval(request_id=ask.request_id, tool_name=call.name,
                                          args={**call.args, "reason": ask.reason}, risk_level=ask.risk))
        self.asks[ask.request_id] = ask
        return True

    def _command_request(self, call: Call, command_id: str, *, requires_approval: bool,
                         reason: str) -> CommandRequestApproval:
        return CommandRequestApproval(command_id=command_id, command=str(call.args.get("command") or ""),
                                      working_directory=working_directory(call, self.folders),
                                      environment=dict(ShellCommandTool.SET_ENV), requires_approval=requires_approval,
                                      reason=reason)

    @staticmethod
    def _later(function: Any, *args: Any) -> None:
        """After the engine registers the call as waiting (right after it announced it)."""
        asyncio.get_running_loop().call_soon(function, *args)

    def _approval(self, message: ClientApprovalResponse) -> None:
        ask = self.asks.get(message.request_id)
        if ask is None:
            self.error("NOT_FOUND", f"no pending approval {message.request_id!r}",
                       {"request_id": message.request_id, "pending": list(self.asks)})
            return
        if message.scope == "file" and message.file_path and ask.call.file_path \
                and message.file_path != ask.call.file_path:
            self.error("INVALID_MESSAGE", f"{message.request_id} is about {ask.call.file_path}, not "
                                          f"{message.file_path}", {"request_id": message.request_id})
            return
        targets = [ask] + ([a for a in self.asks.values() if a is not ask] if message.scope == "all" else [])
        if message.scope == "all" and message.approved and self.book.turn is not None:
            self.book.turn.approve_all = True  # and every later file change or tool call of this turn
        for target in targets:
            self.asks.pop(target.request_id, None)
            chat_id = target.chat_id or self.chat_id  # (a subagent's call waits in its own chat)
            if not message.approved:
                self.engine.reject(chat_id, target.call_id)
            elif message.scope == "hunk" and target is ask:
                self.engine.approve(chat_id, target.call_id, hunks=list(message.hunks or []))
            else:
                self.engine.approve(chat_id, target.call_id)
        self.emit_state()

    # -- commands in the client's terminal (local_terminal) ------------------------------------------------------

    async def _run_in_client(self, request: CommandRequest) -> CommandOutcome:
        command_id = f"cmd_{request.tool_call_id}"
        early = self._early.pop(command_id, None)
        if early is not None:
            self._announced.discard(command_id)
            return early
        if command_id not in self._announced:  # no approval was needed: the client runs it now
            call = self.book.calls.get(request.tool_call_id or "") or Call(request.tool_call_id or "", "shell_command",
                                                                         {"command": request.command})
            self._announced.add(command_id)
            self.emit(CommandRequestApproval(command_id=command_id, command=request.command,
                                             working_directory=request.cwd, environment=dict(request.env),
                                             requires_approval=False,
                                             reason=request.reason or str(call.args.get("reason") or
                                                                          "The assistant runs this command.")))
        future: asyncio.Future[CommandOutcome] = asyncio.get_running_loop().create_future()
        self._command_waits[command_id] = future
        try:
            return await asyncio.wait_for(future, request.timeout + self.command_grace)
        except ConnectionError as exc:
            raise PermissionError(str(exc)) from None
        finally:
            self._command_waits.pop(command_id, None)
            self._announced.discard(command_id)

    async def _refuse_command(self, request: CommandRequest) -> CommandOutcome:
        self.error("POLICY_VIOLATION", "running commands is not allowed for this session (commandExecution.modes)",
                   {"command": request.command})
        raise PermissionError("running commands is not allowed for this session by the server's policy")

    def _command_result(self, message: ClientCommandResult) -> None:
        command_id = message.command_id
        outcome = CommandOutcome(exit_code=message.exit_code, stdout=message.stdout, stderr=message.stderr,
                                 duration_ms=message.duration_ms)
        ask = self.asks.get(command_id)
        if ask is not None:  # a result for a command still awaiting approval counts as approved
            self.asks.pop(command_id, None)
            self._early[command_id] = outcome
            self.engine.approve(ask.chat_id or self.chat_id, ask.call_id)
            self.emit_state()
            return
        future = self._command_waits.get(command_id)
        if future is not None and not future.done():
            future.set_result(outcome)
        elif command_id in self._announced:
            self._early[command_id] = outcome
        else:
            self.error("NOT_FOUND", f"no command {command_id!r} is waiting for a result", {"command_id": command_id})

    # -- patches applied by the client (patch mode client) -------------------------------------------------------

    async def client_write(self, path: Path, content: str) -> bool:
        """Propose exactly what to write and wait for the client to apply it; raises when it could not."""
        call_id = CURRENT_TOOL_CALL.get()
        if call_id is None or self._closed:
            return False  # not a tool call of this session's turn (an undo): the disk
        call = self.book.calls.get(call_id) or Call(call_id, "write_file", {})
        rel = relative(str(path), self.folders)
        call.patch_id = call.patch_id or f"patch_{call_id}"
        call.file_path = call.file_path or rel
        # the approved call's details (toolCallRunning, in the fold): its diff is exactly what is written, the
        # chosen hunks
        detail = call.state.detail if call.state is not None else None
        change = detail if isinstance(detail, FileChangeDetails) else FileChangeDetails(
            path=rel, diff="", lines_added=0, lines_removed=0)
        chosen = [h.id for h in change.hunks or [] if h.applied is not False]
        hunks = hunks_in_diff(change.diff, chosen)
        self.emit(PatchProposed(patch_id=call.patch_id, file_path=rel, diff=change.diff, rationale=change.rationale,
                                acceptance_criteria=list(change.acceptance_criteria or []),
                                requires_approval=False, hunks=hunks))
        self.book.pending_patches[call.patch_id] = rel
        self.emit_state()
        future: asyncio.Future[ClientPatchApplyResult] = asyncio.get_running_loop().create_future()
        self._patch_waits[call.patch_id] = future
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(future, self.patch_timeout)
        except TimeoutError:
            raise OSError(f"the editor did not confirm the patch within {self.patch_timeout:g} s") from None
        finally:
            self._patch_waits.pop(call.patch_id, None)
        log.debug("patch %s applied by the client in %.1f s", call.patch_id, time.monotonic() - started)
        if not result.success:
            error = result.error
            raise OSError(f"{error.type}: {error.message}" if error is not None else "the editor could not apply it")
        self.book.applied(call.patch_id)
        self.emit_state()
        return True

    def _patch_result(self, message: ClientPatchApplyResult) -> None:
        future = self._patch_waits.get(message.patch_id)
        if future is None or future.done():
            self.error("NOT_FOUND", f"no patch {message.patch_id!r} is waiting to be applied",
                       {"patch_id": message.patch_id})
            return
        future.set_result(message)

    # -- incremental indexing ------------------------------------------------------------------------------------

    async def _file_changes(self, message: ClientFileChanges) -> None:
        engine = self.engine
        inside, outside = [], []
        for change in message.changes:
            path = Path(change.file_path)
            path = path if path.is_absolute() else (self.folders[0] if self.folders else Path.cwd()) / path
            if is_inside(path, self.folders):
                inside.append(change)
            else:
                outside.append(change.file_path)
        if outside:
            self.error("INVALID_MESSAGE", f"{len(outside)} file path(s) outside the workspace were ignored",
                       {"outside": outside[:100]})
        if not inside:
            return
        code_index = getattr(engine, "code_index", None)
        apply_changes = getattr(code_index, "apply_changes", None)
        if apply_changes is not None:
            try:
                from ..retrieval import FileChange  # the content index (issue 17's retrieval)

                await apply_changes([FileChange(type=c.type, path=c.file_path, content_hash=c.content_hash)
                                     for c in inside])
            except Exception as exc:
                log.warning("session %s: incremental indexing failed: %s", self.chat_id, exc)
                self.error("RETRIEVAL_FAILED", f"the content index could not take the changes: {exc}",
                           {"changes": len(inside)})
        index = engine.index
        if index is not None and index.ready and any(c.type != "modified" for c in inside):
            await asyncio.to_thread(index.refresh)  # the file-name index (@-completion, the repo map)
