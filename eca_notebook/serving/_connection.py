"""One client connection speaking ECA: lifecycle and the method handlers, mapped onto the engine.

Every door that carries ECA JSON-RPC (stdio, WebSocket, in-memory) wraps its message stream in a
:class:`ServerConnection`. The connection

* refuses everything but ``initialize`` (and ``exit``) before the handshake with ``-32002``;
* creates or attaches to an :class:`~eca_notebook.engine.engine.Engine` on ``initialize``;
* after ``initialized`` sends ``config/updated`` then ``tool/serverUpdated`` (and any config problems as
  ``$/showMessage``);
* hands the engine's notifications to its endpoint's one outgoing queue, where responses queue too: a burst of
  text chunks never interleaves with or overtakes a response, so ``chat/prompt`` and ``chat/open`` answer after
  the contents they streamed without waiting for anything;
* accepts a numeric ``chatId`` (a Neovim client sends its tab number) and answers with the same number; see
  :mod:`._aliases`;
* bounds that queue per client: once a client falls ``MERGE_BACKLOG`` messages behind, consecutive text (and
  reasoning) chunks of the same chat and role merge into one queued notification (:mod:`._chunks`; what the client
  shows is the same), and a client whose queue still grows past ``MAX_QUEUED_NOTIFICATIONS`` is disconnected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from .._redact import redact_json
from .._tasks import BackgroundTasks
from ..engine import Engine, EngineOptions
from ..protocol import (
    METHODS,
    ChatClearParams,
    ChatClearResult,
    ChatDeleteParams,
    ChatForkParams,
    ChatForkResult,
    ChatHistoryParams,
    ChatListParams,
    ChatOpenParams,
    ChatPromptParams,
    ChatPromptSteerParams,
    ChatPromptSteerRemoveParams,
    ChatPromptStopParams,
    ChatQueryCommandsParams,
    ChatQueryContextParams,
    ChatQueryFilesParams,
    ChatRollbackParams,
    ChatRollbackResult,
    ChatSelectedAgentChangedParams,
    ChatSelectedBehaviorChangedParams,
    ChatSelectedModelChangedParams,
    ChatToolCallApproveParams,
    ChatToolCallRejectParams,
    ChatToolCallUndoParams,
    ChatUpdateParams,
    CompletionInlineParams,
    DidChangeWorkspaceFoldersParams,
    InitializeParams,
    InitializeResult,
    JobsKillParams,
    JobsListResult,
    JobsReadOutputParams,
    JsonObject,
    JsonValue,
    McpAddServerParams,
    McpDisableServerParams,
    McpEnableServerParams,
    McpRemoveServerParams,
    McpStartServerParams,
    McpStopServerParams,
    McpUpdateServerParams,
    RewritePromptParams,
    RewriteStopParams,
    invalid_params,
    parse_params,
)
from ..protocol.errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED, RpcError
from ..rpc import Endpoint
from ._aliases import ChatAliases
from ._chunks import MERGE_BACKLOG, encode_text_chunk, merge_chunks

__all__ = ["MAX_QUEUED_NOTIFICATIONS", "MERGE_BACKLOG", "EngineFactory", "ServerConnection", "default_engine_factory",
           "serve_stdio", "workspace_paths"]

log = logging.getLogger(__name__)

EngineFactory = Callable[[InitializeParams], Engine]
PARENT_POLL_SECONDS = 2.0
MAX_QUEUED_NOTIFICATIONS = 20_000  # after merging; a client this far behind is not reading at all


def workspace_paths(params: InitializeParams) -> list[Path]:
    """Workspace folders as local paths (``file://`` URIs decoded; bare paths accepted from lenient clients)."""
    uris = [folder.uri for folder in params.workspace_folders]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    return [_folder_path(uri) for uri in uris]


def _folder_path(uri: str) -> Path:
    """A workspace folder's local path: a ``file://`` URI decoded, a bare path as it is."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path) if parsed.scheme == "file" else uri)


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
        self.dropped_reason: str | None = None
        self.aliases = ChatAliases()
        self._tasks = BackgroundTasks("eca-server", logger=log)
        # every notification and response is redacted on its way out, whichever part of the engine produced it (a
        # text chunk written to a pipe from a template, redacted the same: see _chunks)
        self.endpoint = Endpoint(stream, name="eca-server", guard=self._guard, params_parser=self._parse_params,
                                 outgoing=redact_json, merge=merge_chunks, merge_backlog=MERGE_BACKLOG,
                                 max_queued=MAX_QUEUED_NOTIFICATIONS, on_overflow=self._not_reading,
                                 encode_notification=encode_text_chunk)
        self._register()

    def _parse_params(self, method: str, params: Any) -> Any:
        """Numeric chat ids become this connection's aliases (:mod:`._aliases`), then the method table validates."""
        params = self.aliases.incoming(method, params, self._chat_ids)
        return _parse(method, params)

    def _chat_ids(self) -> list[str]:
        return [c.id for c in self.engine.list_chats()] if self.engine is not None else []

    # -- Listener protocol: called by the engine ----------------------------------------------------------------

    def send(self, method: str, params: Any) -> None:
        """Queue one of the engine's notifications; never waits for the client."""
        self.endpoint.notify_nowait(method, self.aliases.outgoing(params))

    def _not_reading(self) -> None:
        self.dropped_reason = f"client is not reading: more than {MAX_QUEUED_NOTIFICATIONS} notifications queued"
        log.warning("disconnecting: %s", self.dropped_reason)
        self._exit.set()

    def _spawn(self, coro: Any, name: str = "eca-server-task") -> None:
        self._tasks.spawn(coro, name)

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
        reader = asyncio.create_task(self.endpoint.run(), name="eca-reader")
        exit_wait = asyncio.create_task(self._exit.wait())
        try:
            await asyncio.wait({reader, exit_wait}, return_when=asyncio.FIRST_COMPLETED)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.endpoint.drain(), timeout=5)  # what is queued, briefly
        finally:
            for task in (reader, exit_wait):
                task.cancel()
            await asyncio.gather(reader, exit_wait, return_exceptions=True)
            await self._tasks.aclose()
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
        r("workspace/didChangeWorkspaceFolders", self.workspace_folders_changed)
        r("chat/prompt", self.chat_prompt)
        r("chat/promptStop", self.chat_prompt_stop)
        r("chat/promptSteer", self.chat_prompt_steer)
        r("chat/promptSteerRemove", self.chat_prompt_steer_remove)
        r("jobs/list", self.jobs_list)
        r("jobs/kill", self.jobs_kill)
        r("jobs/readOutput", self.jobs_read_output)
        r("chat/delete", self.chat_delete)
        r("chat/update", self.chat_update)
        r("chat/list", self.chat_list)
        r("chat/open", self.chat_open)
        r("chat/history", self.chat_history)
        r("chat/rollback", self.chat_rollback)
        r("chat/clear", self.chat_clear)
        r("chat/fork", self.chat_fork)
        r("chat/selectedBehaviorChanged", self.selected_behavior_changed)
        r("chat/selectedAgentChanged", self.selected_agent_changed)
        r("chat/selectedModelChanged", self.selected_model_changed)
        r("chat/queryContext", self.query_context)
        r("chat/queryCommands", self.query_commands)
        r("chat/queryFiles", self.query_files)
        r("chat/toolCallApprove", self.tool_call_approve)
        r("chat/toolCallReject", self.tool_call_reject)
        r("chat/toolCallUndo", self.tool_call_undo)
        r("mcp/startServer", self.mcp_start_server)
        r("mcp/stopServer", self.mcp_stop_server)
        r("mcp/addServer", self.mcp_add_server)
        r("mcp/removeServer", self.mcp_remove_server)
        r("mcp/updateServer", self.mcp_update_server)
        r("mcp/enableServer", self.mcp_enable_server)
        r("mcp/disableServer", self.mcp_disable_server)
        r("completion/inline", self.completion_inline)
        r("rewrite/prompt", self.rewrite_prompt)
        r("rewrite/stop", self.rewrite_stop)

    async def initialize(self, params: InitializeParams) -> InitializeResult:
        if self.engine is not None:
            raise RpcError(INVALID_REQUEST, "'initialize' was already called on this connection")
        self.client_capabilities = params.capabilities
        engine = self._engine_factory(params)
        self.engine = engine
        engine.add_listener(self)
        if params.process_id:
            self._spawn(self._watch_parent(params.process_id), "eca-parent-watch")
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
        self._spawn(self._after_initialized(), "eca-after-initialized")

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
                self.send("tool/serverUpdated", status.dump())
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

    def workspace_folders_changed(self, params: DidChangeWorkspaceFoldersParams) -> None:
        added = [_folder_path(f.uri) for f in params.event.added]
        removed = [_folder_path(f.uri) for f in params.event.removed]
        self._spawn(self._engine().change_workspace_folders(added, removed), "eca-workspace-folders")

    def _engine(self) -> Engine:
        assert self.engine is not None  # the guard refuses calls before initialize
        return self.engine

    async def chat_prompt(self, params: ChatPromptParams) -> JsonObject:
        # (answered after the contents the engine streamed meanwhile: they were queued first)
        result = (await self._engine().prompt(params)).dump()
        answer: JsonObject = self.aliases.outgoing(result)
        return answer

    def chat_prompt_stop(self, params: ChatPromptStopParams) -> None:
        self._spawn(self._engine().stop(params.chat_id), "eca-stop")

    def chat_prompt_steer(self, params: ChatPromptSteerParams) -> None:
        self._engine().steer(params.chat_id, params.message)  # ignored when nothing runs (reference server)

    def chat_prompt_steer_remove(self, params: ChatPromptSteerRemoveParams) -> None:
        self._engine().remove_steer(params.chat_id)

    def jobs_list(self, params: Any) -> JsonObject:
        # (nulls written out: summary and exitCode are sent as null when unknown, as the reference does)
        return JobsListResult(jobs=self._engine().job_summaries()).model_dump(by_alias=True, mode="json")

    async def jobs_kill(self, params: JobsKillParams) -> JsonObject:
        return {"killed": await self._engine().kill_job(params.job_id)}

    def jobs_read_output(self, params: JobsReadOutputParams) -> JsonObject:
        output = self._engine().job_output(params.job_id)
        if output is None:
            raise RpcError(INVALID_REQUEST, f"Unknown job: {params.job_id}")
        return output.model_dump(by_alias=True, mode="json")  # (exitCode null while it runs)

    async def chat_delete(self, params: ChatDeleteParams) -> JsonObject:
        await self._engine().delete(params.chat_id)
        return {}

    def chat_update(self, params: ChatUpdateParams) -> JsonObject:
        if not self._engine().update_chat(params.chat_id, title=params.title, trust=params.trust):
            raise RpcError(INVALID_REQUEST, f"Unknown chat: {params.chat_id}")
        return {}

    def chat_list(self, params: ChatListParams | None) -> JsonObject:
        chats = self._engine().list_chats(params)
        # (the id after the dump: a client's number stays a number, which ChatSummary's id would make text)
        return {"chats": [{**c.dump(), "id": self.aliases.external(c.id)} for c in chats]}

    def chat_open(self, params: ChatOpenParams) -> JsonObject:
        windowed = bool({"limit", "before", "after"} & params.model_fields_set)  # (the reference: any given)
        # the replayed contents were queued before this answer
        result = self._engine().replay(params.chat_id, self, params.limit, params.before, params.after, windowed).dump()
        if "chatId" in result:
            result["chatId"] = self.aliases.external(result["chatId"])
        return result

    def chat_history(self, params: ChatHistoryParams) -> JsonObject:
        answer = self._engine().history(params.chat_id, params.limit, params.before, params.after)
        contents = answer.get("contents")
        if isinstance(contents, list):
            answer["contents"] = [self.aliases.outgoing(item) for item in contents]
        return answer

    async def chat_rollback(self, params: ChatRollbackParams) -> JsonObject:
        # chat/cleared and the replay were queued before this answer; refusals are RpcErrors (the chat is unchanged)
        await self._engine().rollback(params.chat_id, params.content_id, params.include)
        return ChatRollbackResult().dump()

    def chat_clear(self, params: ChatClearParams) -> JsonObject:
        # chat/cleared was queued before this answer; an unknown chat is ignored, as the reference does
        self._engine().clear(params.chat_id, params.messages)
        return ChatClearResult().dump()

    def chat_fork(self, params: ChatForkParams) -> JsonObject:
        new_id = self._engine().fork(params.chat_id, params.content_id)
        return ChatForkResult(chat_id=new_id).dump()

    def selected_behavior_changed(self, params: ChatSelectedBehaviorChangedParams) -> None:
        try:
            self._engine().select_behavior(params.behavior, params.chat_id)
        except ValueError as exc:
            self.send("$/showMessage", {"type": "warning", "message": str(exc)})

    def selected_agent_changed(self, params: ChatSelectedAgentChangedParams) -> None:
        try:
            self._engine().select_behavior(params.agent, params.chat_id)
        except ValueError as exc:
            self.send("$/showMessage", {"type": "warning", "message": str(exc)})

    def selected_model_changed(self, params: ChatSelectedModelChangedParams) -> None:
        engine = self._engine()
        try:
            engine.select_model(params.model, params.chat_id, params.variant)
        except ValueError as exc:
            self.send("$/showMessage", {"type": "warning", "message": str(exc)})
            return
        # the reference answers with the model's variants and the one to select (scoped to the chat when given)
        self.send("config/updated", engine.variants_updated(params.chat_id).dump())

    async def query_context(self, params: ChatQueryContextParams) -> JsonObject:
        found = await self._engine().query_context(params.query, params.contexts)
        contexts: list[JsonValue] = [c.dump() for c in found]
        chat_id = self.aliases.external(params.chat_id)
        return {"chatId": chat_id, "contexts": contexts} if params.chat_id else {"contexts": contexts}

    async def query_files(self, params: ChatQueryFilesParams) -> JsonObject:
        files: list[JsonValue] = [c.dump() for c in await self._engine().query_files(params.query)]
        chat_id = self.aliases.external(params.chat_id)
        return {"chatId": chat_id, "files": files} if params.chat_id else {"files": files}

    def query_commands(self, params: ChatQueryCommandsParams) -> JsonObject:
        commands: list[JsonValue] = [c.dump() for c in self._engine().query_commands(params.query)]
        chat_id = self.aliases.external(params.chat_id)
        return {"chatId": chat_id, "commands": commands} if params.chat_id else {"commands": commands}

    def tool_call_approve(self, params: ChatToolCallApproveParams) -> None:
        self._engine().approve(params.chat_id, params.tool_call_id, params.save, params.hunks)

    def tool_call_reject(self, params: ChatToolCallRejectParams) -> None:
        self._engine().reject(params.chat_id, params.tool_call_id)

    async def tool_call_undo(self, params: ChatToolCallUndoParams) -> JsonObject:
        return (await self._engine().undo_tool_call(params.chat_id, params.tool_call_id)).dump()

    def _mcp(self, name: str) -> Any:
        manager = self._engine().mcp
        if manager is None:
            self.send("$/showMessage", {"type": "warning",
                                        "message": f"Unknown MCP server '{name}': no MCP servers are configured."})
        return manager

    def mcp_start_server(self, params: McpStartServerParams) -> None:
        manager = self._mcp(params.name)
        if manager is not None:  # spawned: a slow start must not hold up other notifications
            self._spawn(manager.start_server(params.name), "eca-mcp-start")

    def mcp_stop_server(self, params: McpStopServerParams) -> None:
        manager = self._mcp(params.name)
        if manager is not None:
            self._spawn(manager.stop_server(params.name), "eca-mcp-stop")

    # mcp/addServer|removeServer|updateServer|enableServer|disableServer: engine/_mcp_admin.py (errors are results)

    async def mcp_add_server(self, params: McpAddServerParams) -> JsonObject:
        return (await self._engine().add_mcp_server(params)).dump()

    async def mcp_remove_server(self, params: McpRemoveServerParams) -> JsonObject:
        return (await self._engine().remove_mcp_server(params.name)).dump()

    async def mcp_update_server(self, params: McpUpdateServerParams) -> JsonObject:
        return (await self._engine().update_mcp_server(params)).dump()

    def mcp_enable_server(self, params: McpEnableServerParams) -> None:
        self._spawn(self._mcp_set_disabled(params.name, False), "eca-mcp-enable")

    def mcp_disable_server(self, params: McpDisableServerParams) -> None:
        self._spawn(self._mcp_set_disabled(params.name, True), "eca-mcp-disable")

    async def _mcp_set_disabled(self, name: str, disabled: bool) -> None:
        warning = await self._engine().set_mcp_server_disabled(name, disabled)
        if warning:
            self.send("$/showMessage", {"type": "warning", "message": warning})

    async def completion_inline(self, params: CompletionInlineParams) -> JsonObject:
        # a newer request of this connection without a path supersedes this one (engine/completion/_inline.py)
        return (await self._engine().complete_inline(params, origin=self)).dump()

    def rewrite_prompt(self, params: RewritePromptParams) -> JsonObject:
        # synchronous: this answer is queued before the rewrite's first rewrite/contentReceived
        return self._engine().rewrite(params, self).dump()

    def rewrite_stop(self, params: RewriteStopParams) -> None:
        self._engine().stop_rewrite(params.id, self)

    # -- server → client requests (used by the engine's tools) ------------------------------------------------

    @property
    def supports_diagnostics(self) -> bool:
        caps = self.client_capabilities
        assistant = getattr(caps, "code_assistant", None)
        editor = getattr(assistant, "editor", None)
        return bool(getattr(editor, "diagnostics", False))

    @property
    def supports_notebooks(self) -> bool:
        caps = self.client_capabilities
        editor = getattr(getattr(caps, "code_assistant", None), "editor", None)
        return bool(getattr(editor, "notebooks", False))

    @property
    def supports_definition(self) -> bool:
        editor = getattr(getattr(self.client_capabilities, "code_assistant", None), "editor", None)
        return bool(getattr(editor, "definition", False))

    @property
    def supports_references(self) -> bool:
        editor = getattr(getattr(self.client_capabilities, "code_assistant", None), "editor", None)
        return bool(getattr(editor, "references", False))

    @property
    def supports_questions(self) -> bool:
        chat = getattr(getattr(self.client_capabilities, "code_assistant", None), "chat_capabilities", None)
        return bool(getattr(chat, "ask_question", False))

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        # queued behind the toolCallRunning that explains it, so the client sees that first; a chat id in the
        # params (chat/askQuestion) is the client's own (its alias for a numbered chat)
        return await self.endpoint.request(method, self.aliases.outgoing(params), timeout=timeout)


async def serve_stdio(*, config_file: Path | None = None, max_frame_size: int | None = None) -> int:
    """``eca-notebook server``: ECA over this process's stdin/stdout."""
    from ..transports.stdio import open_stdio

    if max_frame_size:
        stream = await open_stdio(codec="content-length", max_frame_size=max_frame_size)
    else:
        stream = await open_stdio(codec="content-length")
    connection = ServerConnection(stream, default_engine_factory(config_file))
    try:
        return await connection.run()
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
