"""The engine: one workspace's chats, config, models and saved history — independent of any door.

Doors (stdio server, WebSocket, the in-process Python client) attach a :class:`Listener` and call the methods here.
Notifications fan out to every listener, so several clients of one workspace (two browser tabs, say) see the same
chats. The engine never knows which door a call came through.

:class:`Engine` is a façade: a prompt's path is the prompt pipeline (``_prompting.py``), the chats are the chat book
(``_chatbook.py``), tools, plug-ins, approvals and system prompts the toolbox (``_toolbox.py``). What the engine
streams is built from the protocol's models (:mod:`eca_notebook.protocol.content`) — the streamed chunks as their
TypedDict wire form, cheaper on the hot path — and :meth:`Engine.emit_content` redacts, records and fans them out.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._redact import add_secrets, redact_json
from .._tasks import BackgroundTasks
from ..plugins import Plugin
from ..protocol import (
    ChatCommand,
    ChatContext,
    ChatListParams,
    ChatOpenResult,
    ChatPromptParams,
    ChatPromptResult,
    ChatSummary,
    ChatToolCallUndoResult,
    CompletionInlineParams,
    CompletionInlineResult,
    ConfigUpdatedChat,
    ConfigUpdatedParams,
    JobsListResult,
    JobsReadOutputResult,
    JobSummary,
    JsonObject,
    McpAddServerParams,
    McpAddServerResult,
    McpRemoveServerResult,
    McpUpdateServerParams,
    McpUpdateServerResult,
    NativeServerUpdatedParams,
    RewritePromptParams,
    RewritePromptResult,
    WireContent,
)
from ..protocol.turn import ContentEvent, parse_content
from ..retrieval import CodeIndex
from ..tools.base import ChatDelegate, FileAccess, Tool, ToolContext, llm_name
from ..tools.jobs import JobRegistry
from ..tools.notebook_kernel import OwnKernelRunner
from . import _mcp_admin
from ._chatbook import ChatBook
from ._config_watch import ConfigWatcher, config_secrets, default_agent, reload_config, use_config, watch_config
from .chats import Chat, clear_chat, fork_chat, rollback
from .chats.store import ChatStore, chats_dir_for
from .completion import InlineCompleter, Rewriter
from .config import LoadedConfig, ModelInfo, global_config_path, load_config
from .index import WorkspaceIndex
from .models import ModelRegistry, VariantSelection, redact_content, variant_selection
from .turn import (
    CURRENT_TURN,
    Answer,
    BuiltinCommands,
    ClientRequests,
    Listener,
    PendingApproval,
    PromptPipeline,
    SessionApprovals,
    Subagents,
    SubagentsPlugin,
    Toolbox,
    UndoLog,
    answer_approval,
    doctor,
    revert_tool_call,
)
from .workspace import (
    Agents,
    Hooks,
    SkillsPlugin,
    WorkspaceTrust,
    build_agents,
    engine_skills,
    files_signature,
    update_chat,
)
from .workspace.commands import BUILTINS, Command

if TYPE_CHECKING:
    from ..tools.notebook import CellRunner, NotebookAccess

__all__ = ["BUILTIN_BEHAVIORS", "DEFAULT_WELCOME", "Engine", "EngineOptions", "Listener"]

log = logging.getLogger(__name__)

BUILTIN_BEHAVIORS = ("code", "plan")  # the built-in primary agents (engine/workspace/_agents.py); ``agent`` is ``code``
DEFAULT_WELCOME = "Welcome to eca-notebook! Ask anything about your workspace."
# How long an `@` typed right after the server started waits for the workspace index's first build: without it the
# first answers are empty; with a folder too large to walk this fast, they answer from what there is (nothing yet).
_FIRST_INDEX_WAIT = 5.0

async def _local_model_progress(event: Any) -> None:
    """Show the embedded model's loading in the chat whose prompt triggered it."""
    turn = CURRENT_TURN.get()
    if turn is not None and getattr(event, "stage", "") == "loading":
        turn.progress("running", event.message)


@dataclass
class EngineOptions:
    """What an engine is made for: the workspace folders, the client's options, a config file, the environment."""

    workspace_folders: list[Path] = field(default_factory=list)
    initialization_options: JsonObject | None = None
    config_file: Path | None = None
    env: Mapping[str, str] | None = None  # defaults to os.environ


class Engine:
    """One workspace's engine: every door calls these methods, and listens through :meth:`add_listener`.

    A façade over three parts, each readable on its own: the prompt pipeline (``_prompting.py``), the chat book
    (``_chatbook.py``) and the toolbox (``_toolbox.py``). The state they share lives here.
    """

    def __init__(self, options: EngineOptions | None = None) -> None:
        import httpx  # lazy: keeps `import eca_notebook.engine` cheap for doors that never prompt

        self.options = options or EngineOptions()
        self.env: Mapping[str, str] = self.options.env if self.options.env is not None else os.environ
        self.workspace_folders = [Path(p) for p in self.options.workspace_folders]
        self.loaded: LoadedConfig = load_config(
            workspace_folders=self.workspace_folders,
            initialization_options=self.options.initialization_options,
            config_file=self.options.config_file,
            env=self.env,
        )
        self.config = self.loaded.config
        # a workspace's own MCP servers, hooks, providers and secrets wait for the user (_trust.py): until then the
        # config without them applies
        self.trust = WorkspaceTrust(self, lambda config: use_config(self, config))
        self.config = self.trust.effective_config()
        from ..providers import make_http_client

        self.http: httpx.AsyncClient = make_http_client()
        self.registry = ModelRegistry(self.config, self.env, self.http, problems=self.loaded.problems)
        self.registry.local_progress = _local_model_progress
        add_secrets(config_secrets(self.registry, self.config, self.env))
        self.store: ChatStore | None = None
        if not self.config.pure_config:
            # (through the engine: a config reload replaces the registry)
            self.store = ChatStore(chats_dir_for(self.workspace_folders, self.env),
                                   secrets=lambda: self.registry.secrets())
        self.chats: dict[str, Chat] = {}
        from ..tools import native_tools

        self.tools: dict[str, Tool] = {llm_name(tool): tool for tool in native_tools()}
        self.plugins: list[Plugin] = []
        self.mcp: Any = None  # the McpManager when mcpServers is configured
        if self.loaded.config.mcp_servers:
            from ..mcp import McpManager  # lazy: the MCP SDK is imported only when servers are configured

            self.mcp = McpManager(self.loaded.config.mcp_servers, workspace_folders=self.workspace_folders,
                                  timeout=self.config.mcp_timeout_seconds)
        if self.mcp is not None:
            self.mcp.held = self.trust.held_servers()
            self.mcp.cwd_for = self.trust.server_cwd  # the user's own servers start outside an untrusted workspace
        self.file_access: FileAccess | None = None  # a door may route file tools through its client (ACP fs/*)
        # per chat: a door whose client applies that chat's file changes or runs its commands (the session stream)
        self.chat_delegates: dict[str, ChatDelegate] = {}
        # The notebook tools' front end, when a door has one of its own (a %eca's comm to its notebook's page);
        # otherwise the first client that advertised `editor.notebooks`. See _notebooks.py.
        self.notebook_access: NotebookAccess | None = None
        self.default_notebook: Path | None = None  # the notebook a %eca session runs in
        # runs cells of a notebook no front end has open (default: a kernel of its own per notebook)
        self.cell_runner: CellRunner | None = OwnKernelRunner()
        self.undo_log = UndoLog()
        self._started = False
        self.background = BackgroundTasks("engine", logger=log)
        # shell_command's background jobs (tools/jobs.py): killed with their chat and with the engine
        self.jobs = JobRegistry(on_change=self._jobs_changed, on_end=self._job_ended)
        self.session_approvals = SessionApprovals()
        self.pending_approvals: dict[tuple[str, str], PendingApproval] = {}
        self.selected_behavior: str = self._initial_behavior()
        self.announced_agents: list[str] | None = None  # the agents the last config/updated listed
        self.selected_model: str | None = None
        self.selected_variant: str | None = None  # of new chats (a session-wide chat/selectedModelChanged variant)
        # the workspace file index behind chat/queryContext, @-completion and the repo map
        self.index: WorkspaceIndex | None = WorkspaceIndex(self.workspace_folders) if self.workspace_folders else None
        # the content index behind search_symbols / search_text / vector_search: built on first use, not here
        self.code_index: CodeIndex | None = self._make_code_index()
        self.global_config_dir = global_config_path(self.env).parent
        self._listeners: list[Listener] = []
        # chat id → the doors' typed subscribers to it (subscribe): each content published once, parsed
        self._subscribers: dict[str, list[Callable[[ContentEvent], None]]] = {}
        self._closed = False
        self._index_task: asyncio.Task[None] | None = None
        self.config_watcher: ConfigWatcher | None = None  # watches the config files once started
        self.subagents = Subagents(self)  # spawn_agent's side in the engine (_subagents.py)
        self.client_requests = ClientRequests(lambda: self._listeners)  # what tools and the trust ask clients
        self.toolbox = Toolbox(self, self.client_requests)
        self.chat_book = ChatBook(self)
        self.pipeline = PromptPipeline(self, BuiltinCommands(self))
        self.inline = InlineCompleter(self)  # completion/inline (_inline.py)
        self.rewriter = Rewriter(self)  # rewrite/prompt (_rewrite.py)
        self.hooks = Hooks(self)  # the user's `hooks` (_hooks.py)
        if self.mcp is not None:
            self.add_plugin(self.mcp)
        self.add_plugin(SkillsPlugin(lambda: engine_skills(self)))  # SKILL.md folders (_skills.py)
        self.add_plugin(SubagentsPlugin(self.subagents))  # the spawn_agent tool (_subagents.py)

    def _make_code_index(self) -> CodeIndex | None:
        """The content index, stored beside the chats (``$XDG_CACHE_HOME/eca-notebook/index/<same digest>/``); None
        without a workspace folder or with ``index.content`` off. Creating it costs nothing: it builds on first use."""
        settings = self.config.index
        if not self.workspace_folders or not settings.content:
            return None
        chats = chats_dir_for(self.workspace_folders, self.env)
        return CodeIndex(self.workspace_folders, chats.parent.parent / "index" / chats.name / "content.sqlite",
                         max_file_bytes=settings.max_file_bytes, max_files=settings.max_files,
                         vectors=settings.vectors)

    # -- listeners and what they are sent ----------------------------------------------------------------------

    @property
    def listeners(self) -> list[Listener]:
        """The connected clients."""
        return list(self._listeners)

    def add_listener(self, listener: Listener) -> None:
        """Send this client every notification from now on."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop sending to this client (unknown listeners are ignored)."""
        if listener in self._listeners:
            self._listeners.remove(listener)
        self.rewriter.forget(listener)  # its rewrites stream to nobody now

    def subscribe(self, chat_id: str, subscriber: Callable[[ContentEvent], None]) -> Callable[[], None]:
        """A door's typed seam to the chat it serves: every content of *chat_id* and of its subagents' chats, as a
        :class:`~eca_notebook.protocol.turn.ContentEvent` — redacted as listeners get it, parsed once here however
        many doors subscribed (chunks stay TypedDicts) — after the listeners got its dict. Returns the
        unsubscribe."""
        self._subscribers.setdefault(chat_id, []).append(subscriber)

        def unsubscribe() -> None:
            subscribers = self._subscribers.get(chat_id, [])
            if subscriber in subscribers:
                subscribers.remove(subscriber)
            if not subscribers:
                self._subscribers.pop(chat_id, None)

        return unsubscribe

    def _publish(self, chat: Chat, role: str, clean: JsonObject) -> None:
        subscribers = self._subscribers.get(chat.id, [])
        if chat.parent_chat_id is not None:
            subscribers = subscribers + self._subscribers.get(chat.parent_chat_id, [])
        if not subscribers:
            return
        event = ContentEvent(chat.id, role, parse_content(clean), chat.parent_chat_id)
        for subscriber in list(subscribers):
            try:
                subscriber(event)
            except Exception:  # one broken door must not stop the others
                log.exception("subscriber of chat %s failed", chat.id)

    def broadcast(self, method: str, params: JsonObject) -> None:
        """Send to every listener — redacted: this is the choke point for everything the engine tells clients."""
        self._fan_out(method, redact_json(params))

    def _fan_out(self, method: str, params: JsonObject) -> None:
        for listener in list(self._listeners):
            try:
                listener.send(method, params)
            except Exception:  # one broken client must not stop the others
                log.exception("listener failed on %s", method)

    def emit_content(self, chat: Chat, role: str, content: WireContent) -> None:
        """One ``chat/contentReceived`` of a chat: redacted, recorded in the chat, sent to every listener."""
        # a streamed chunk is a plain dict (TypedDict): the exact type check spares it the model check
        wire = content if type(content) is dict else content.dump() if isinstance(content, BaseModel) else content
        # redacted before it is recorded: what is shown is what is saved and replayed
        clean: JsonObject = redact_content(wire)
        chat.record_content(role, clean)
        params: JsonObject = {"chatId": chat.id, "role": role, "content": clean}
        if chat.parent_chat_id is not None:  # a subagent's chat: clients nest it under the parent's call
            params["parentChatId"] = chat.parent_chat_id
        self._fan_out("chat/contentReceived", params)
        if self._subscribers:  # (none: the cost of one check per chunk)
            self._publish(chat, role, clean)
        self.hooks.status.content(chat, clean)  # a tool call's state may change the chatStatusChanged snapshot

    # -- start-up and config -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Work that may touch the network (model discovery, plug-ins); doors call it after the handshake.

        Idempotent: several connections share one engine (JupyterLab tabs) and each calls it."""
        if self._started:
            return
        self._started = True
        self.hooks.spawn("sessionStart")
        for plugin in self.plugins:
            self.background.spawn(plugin.start(), f"eca-plugin-{plugin.name}")
        # an edited config file applies without a restart
        self.config_watcher = watch_config(self.loaded, self.workspace_folders, self.global_config_dir,
                                           self.background, self.reload_config)
        if self.index is not None:
            self._index_task = asyncio.create_task(self._build_index(), name="eca-index")
        await self.registry.discover()
        if self.store is not None and self.config.chat_retention_days:
            removed = await asyncio.to_thread(self.store.prune, self.config.chat_retention_days)
            if removed:
                log.info("pruned %d saved chat(s) older than %s days", removed, self.config.chat_retention_days)
        if self.selected_model is None or self.selected_model not in self.registry.models():
            self.selected_model = self.registry.default_model()

    async def change_workspace_folders(self, added: Sequence[Path], removed: Sequence[Path]) -> bool:
        """``workspace/didChangeWorkspaceFolders``: the workspace roots become the current ones minus *removed* plus
        *added*. The config is read again with the new folders' layers — a new folder's own servers, hooks,
        providers and secrets are held until the user trusts it (``_trust.py``; the next prompt asks), its rules and
        commands apply — and the file index is rebuilt over the new roots. The list is changed in place: the parts
        holding it (tools' path checks, the trust, MCP servers' folders) see the new roots. False when nothing
        changed."""
        gone = {Path(p) for p in removed}
        folders = [f for f in self.workspace_folders if f not in gone]
        folders += [p for p in dict.fromkeys(Path(a) for a in added) if p not in folders]
        if folders == self.workspace_folders:
            return False
        self.workspace_folders[:] = folders
        log.info("workspace folders are now: %s", ", ".join(map(str, folders)) or "(none)")
        await self.reload_config()
        if self._index_task is not None:
            self._index_task.cancel()
            await asyncio.gather(self._index_task, return_exceptions=True)
            self._index_task = None
        if self.index is not None:
            await self.index.stop()
        self.index = WorkspaceIndex(self.workspace_folders) if self.workspace_folders else None
        if self.code_index is not None:
            await self.code_index.close()
        self.code_index = self._make_code_index()
        if self.index is not None and self._started:
            self._index_task = asyncio.create_task(self._build_index(), name="eca-index")
        return True

    async def _build_index(self) -> None:
        assert self.index is not None
        try:
            await self.index.build()
            self.index.start_watching()
        except Exception:
            log.exception("could not index the workspace")

    @property
    def started(self) -> bool:
        """Whether :meth:`start` ran (plug-ins added later are started at once)."""
        return self._started

    async def reload_config(self) -> bool:
        """Read the config files again and apply them, telling the clients (``config/updated``); False when nothing
        changed or a file is broken (then the current config stays, and the clients are shown why)."""
        return await reload_config(self)

    @property
    def problems(self) -> list[str]:
        """What is wrong with the configuration, in words for the user."""
        problems = list(self.loaded.problems)
        agents = self.agents
        problems += [p for p in agents.problems if p not in problems]
        problems += [p for p in self.toolbox.custom_tools()[1] if p not in problems]
        wanted = self.config.default_behavior
        if agents.canonical(wanted) not in agents.primary():
            problems.append(f"defaultAgent '{wanted}' is not a primary agent (available: "
                            f"{', '.join(agents.primary())}); using 'code'")
        return problems

    @property
    def agents(self) -> Agents:
        """The resolved agents (workspace/_agents.py): rebuilt when the config is reloaded or an agent file changes."""
        folders = list(getattr(self, "workspace_folders", []))
        config_dir = getattr(self, "global_config_dir", None) or global_config_path(self.env).parent
        trust = getattr(self, "trust", None)  # an untrusted workspace's agent files read no secret (_trust.py)
        held = trust.held_folders() if trust is not None else frozenset()
        key = (id(self.config), files_signature(folders, config_dir), held)
        cached = getattr(self, "_agents_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, build_agents(self.config, folders, config_dir, self.env, held=held))
            self._agents_cache = cached
        cached[1].approval_floor = trust.approval_floor if trust is not None else None
        return cached[1]

    def behaviors(self) -> list[str]:
        """The agents a chat may select (primary ones): the built-in ``code`` and ``plan``, then custom ones."""
        return self.agents.primary()

    def _initial_behavior(self) -> str:
        return default_agent(self.agents, self.config)

    def welcome_message(self) -> str:
        """The text a client shows in an empty chat."""
        return self.config.welcome_message or DEFAULT_WELCOME

    def config_updated(self) -> ConfigUpdatedParams:
        """``config/updated``: the models, behaviors and selections a client shows."""
        models = self.registry.models()
        self.announced_agents = self.behaviors()  # (what the clients were told, for the config watch)
        return ConfigUpdatedParams(
            chat=ConfigUpdatedChat(
                models=models,
                behaviors=self.behaviors(),
                agents=self.behaviors(),
                select_model=self.selected_model or self.registry.default_model(),
                select_behavior=self.selected_behavior,
                **self._variant_selection(self.selected_model or self.registry.default_model(),
                                          self.selected_variant),
                select_agent=self.selected_behavior,
                welcome_message=self.welcome_message(),
            )
        )

    # -- the toolbox (_toolbox.py) -------------------------------------------------------------------------------

    def native_tools(self) -> NativeServerUpdatedParams:
        """``tool/serverUpdated`` for the built-in tools."""
        return self.toolbox.native_tools()

    def all_tools(self) -> dict[str, Tool]:
        """Every tool the engine knows, keyed by the name the model sees."""
        return self.toolbox.all_tools()

    def offered_tools(self, behavior: str) -> dict[str, Tool]:
        """The tools the model may call in this behavior."""
        return self.toolbox.offered_tools(behavior)

    def tool_context(self) -> ToolContext:
        """What a tool may use (workspace folders, the client's diagnostics, the door's file access)."""
        return self.toolbox.tool_context()

    def set_chat_delegate(self, chat_id: str, delegate: ChatDelegate) -> None:
        """From the next turn on, this chat's tool calls write files through ``delegate.fs`` and run commands through
        ``delegate.run_command`` (the parts it sets); the engine's other chats keep the engine's own."""
        self.chat_delegates[chat_id] = delegate

    def clear_chat_delegate(self, chat_id: str, delegate: ChatDelegate | None = None) -> None:
        """Forget the chat's delegate (only *delegate*, when given: a newer door's stays)."""
        if delegate is None or self.chat_delegates.get(chat_id) is delegate:
            self.chat_delegates.pop(chat_id, None)

    async def undo_tool_call(self, chat_id: str, tool_call_id: str) -> ChatToolCallUndoResult:
        """``chat/toolCallUndo``: revert what a finished tool call changed (its details said ``undoable``)."""
        return await revert_tool_call(self.undo_log, chat_id, tool_call_id, self.chats, self.emit_content,
                                      self.chat_book.save)

    def add_plugin(self, plugin: Plugin) -> None:
        """Add tools/commands/contexts from outside the core (MCP servers, the notebook kernel); a plug-in added
        after :meth:`start` is started at once, in the background."""
        plugin.attach(self)
        self.plugins.append(plugin)
        if self._started:
            self.background.spawn(plugin.start(), f"eca-plugin-{plugin.name}")

    def reserved_command_names(self) -> frozenset[str]:
        """Lower-cased names of the built-in commands: a plug-in's command with one of them is renamed."""
        return frozenset(c.name.lower() for c in BUILTINS)

    def tools_changed(self) -> None:
        """Plug-ins call this when their tool list changes; the next round offers the new set, and clients get the
        native list again (plug-in tools with ``server = "eca"``, e.g. the kernel's, are listed there)."""
        if self._started:
            self.broadcast("tool/serverUpdated", self.toolbox.native_tools().dump())

    def approve(self, chat_id: str, call_id: str, save: str | None = None, hunks: list[str] | None = None) -> bool:
        """Approve a waiting tool call (``save="session"``: and the same call for the rest of the session; ``hunks``:
        apply only these hunks of its file change)."""
        return answer_approval(self.pending_approvals, chat_id, call_id, Answer(True, save, hunks))

    def reject(self, chat_id: str, call_id: str) -> bool:
        """Reject a waiting tool call."""
        return answer_approval(self.pending_approvals, chat_id, call_id, Answer(False))

    def system_prompt(self, behavior: str, *, subagent: bool = False) -> str:
        """The system prompt of a behavior, rules included (*subagent*: for a subagent's chat, ``isSubagent`` in
        prompt templates)."""
        return self.toolbox.system_prompt(behavior, subagent=subagent)

    def compact_system_prompt(self, behavior: str, *, tools: bool, info: ModelInfo | None = None) -> str:
        """The system prompt for a small model."""
        return self.toolbox.compact_system_prompt(behavior, tools=tools, info=info)

    # -- MCP servers managed by the user (_mcp_admin.py): written to the config file that owns them ---------------

    async def add_mcp_server(self, params: McpAddServerParams) -> McpAddServerResult:
        """``mcp/addServer``: persist the server (global or workspace file) and start it; errors are results."""
        return await _mcp_admin.add_server(self, params)

    async def remove_mcp_server(self, name: str) -> McpRemoveServerResult:
        """``mcp/removeServer``: stop it, drop its tools and its entry from every config file defining it."""
        return await _mcp_admin.remove_server(self, name)

    async def update_mcp_server(self, params: McpUpdateServerParams) -> McpUpdateServerResult:
        """``mcp/updateServer``: new command/args or URL, persisted, and the server restarted."""
        return await _mcp_admin.update_server(self, params)

    async def set_mcp_server_disabled(self, name: str, disabled: bool) -> str | None:
        """``mcp/disableServer`` / ``mcp/enableServer``: persisted; a warning when it could only be done for now."""
        return await _mcp_admin.set_disabled(self, name, disabled)

    # -- the prompt pipeline (_prompting.py) ---------------------------------------------------------------------

    async def prompt(self, params: ChatPromptParams) -> ChatPromptResult:
        """Start a turn; returns as soon as it is under way (the answer streams as notifications)."""
        return await self.pipeline.prompt(params)

    def custom_commands(self) -> dict[str, Command]:
        """The user's commands, by name."""
        return self.pipeline.custom_commands()

    def commands(self) -> list[Command]:
        """Every command a prompt may start with."""
        return self.pipeline.commands()

    def query_commands(self, query: str) -> list[ChatCommand]:
        """``chat/queryCommands``: the commands matching ``query``."""
        return self.pipeline.query_commands(query)

    async def query_context(self, query: str, already: Sequence[ChatContext]) -> list[ChatContext]:
        """``chat/queryContext``: the contexts matching ``query``, leaving out those *already* attached."""
        await self._first_index_build()
        return await self.pipeline.query_context(query, already)

    async def query_files(self, query: str) -> list[ChatContext]:
        """``chat/queryFiles``: the workspace files matching ``query`` (``file`` contexts)."""
        await self._first_index_build()
        return await self.pipeline.query_files(query)

    async def _first_index_build(self) -> None:
        """Wait (at most ``_FIRST_INDEX_WAIT``) for the workspace index's first build when it is under way: a query
        before it would find no file at all."""
        task = self._index_task
        if task is not None and not task.done() and self.index is not None and not self.index.ready:
            await asyncio.wait({task}, timeout=_FIRST_INDEX_WAIT)

    # -- inline completion and rewrite (_inline.py, _rewrite.py) -------------------------------------------------

    async def complete_inline(self, params: CompletionInlineParams,
                              origin: object | None = None) -> CompletionInlineResult:
        """``completion/inline``: one suggestion at the cursor, or why there is none. A newer request of the same
        ``origin`` (the connection) for the same ``path`` (or without one) supersedes this one."""
        return await self.inline.complete(params, origin)

    def rewrite(self, params: RewritePromptParams, listener: Listener) -> RewritePromptResult:
        """``rewrite/prompt``: start the rewrite; it streams ``rewrite/contentReceived`` to ``listener`` only."""
        return self.rewriter.start(params, listener)

    def stop_rewrite(self, rewrite_id: str, listener: Listener | None = None) -> bool:
        """``rewrite/stop``: stop a running rewrite (it ends with ``finished``); False when none was running."""
        return self.rewriter.stop(rewrite_id, listener)

    async def rewrite_text(self, params: RewritePromptParams) -> tuple[str, str]:
        """A whole rewrite at once: (model id, text). ProviderError when the model fails."""
        return await self.rewriter.rewrite_text(params)

    def propose_tool_call(self, chat_id: str | None, tool: str, arguments: JsonObject, message: str,
                          answer: bool | None = None) -> tuple[str, asyncio.Task[None]]:
        """Propose a tool call the user asked for (``%eca rewrite``'s ``notebook_edit_cell``) in a chat, with the
        same diff and approval as a model's call; see :meth:`Rewriter.propose`."""
        return self.rewriter.propose(chat_id, tool, arguments, message, answer)

    # -- the chat book (_chatbook.py) ----------------------------------------------------------------------------

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat with this id, loaded from the store when it is not in memory."""
        return self.chat_book.get(chat_id)

    def _save(self, chat: Chat) -> None:
        self.chat_book.save(chat)

    def create_chat(self, chat_id: str | None = None, *, title: str | None = None, model: str | None = None,
                    behavior: str | None = None) -> Chat:
        """An empty chat (REST ``POST /sessions``): saved and announced, ready for its first prompt."""
        return self.chat_book.create(chat_id, title=title, model=model, behavior=behavior)

    def update_chat(self, chat_id: str, *, title: str | None = None, trust: bool | None = None) -> bool:
        """``chat/update``: title and trust mode (``_trust.update_chat``)."""
        return update_chat(self, chat_id, title=title, trust=trust)

    async def stop(self, chat_id: str) -> bool:
        """Stop the chat's running prompt; False when nothing was running."""
        return await self.chat_book.stop(chat_id)

    def steer(self, chat_id: str, message: str) -> bool:
        """``chat/promptSteer``: guidance for the chat's running prompt, taken in at its next round boundary (after
        the current response and its tool calls, before the next model request) as a user message. Steers sent
        before that boundary are joined with newlines. False (ignored) when the chat runs nothing or the text is
        blank."""
        chat = self.chats.get(chat_id)
        if chat is None or not chat.running or not message.strip():
            return False
        chat.steer = f"{chat.steer}\n{message}" if chat.steer else message
        return True

    def remove_steer(self, chat_id: str) -> bool:
        """``chat/promptSteerRemove``: drop the chat's pending steer (idempotent); False when none was pending."""
        chat = self.chats.get(chat_id)
        if chat is None or chat.steer is None:
            return False
        chat.steer = None
        return True

    def _job_ended(self, job: Any) -> None:
        chat = self.chats.get(job.chat_id)
        if chat is not None:
            chat.job_notes.append(job.ended_note())

    def _jobs_changed(self) -> None:
        # (nulls written out: summary and exitCode are sent as null when unknown, as the reference does)
        self.broadcast("jobs/updated", JobsListResult(jobs=self.job_summaries()).model_dump(by_alias=True, mode="json"))

    def job_summaries(self) -> list[JobSummary]:
        """``jobs/list``: every background job not yet evicted."""
        def label(chat_id: str) -> str:
            chat = self.chats.get(chat_id)
            return (chat.title if chat is not None and chat.title else chat_id)

        return [JobSummary.model_validate(job.summary_dict(label(job.chat_id))) for job in self.jobs.current()]

    async def kill_job(self, job_id: str) -> bool:
        """``jobs/kill``: kill a running job's process group; False when it is unknown or not running."""
        return await self.jobs.kill(job_id)

    def job_output(self, job_id: str) -> JobsReadOutputResult | None:
        """``jobs/readOutput``: the job's last buffered lines (a snapshot: the model's cursor stays), or None."""
        job = self.jobs.get(job_id)
        if job is None:
            return None
        return JobsReadOutputResult.model_validate({"lines": job.lines(), "status": job.status,
                                                    "exitCode": job.exit_code})

    async def delete(self, chat_id: str | None) -> bool:
        """Stop and forget a chat, saved history included; its background jobs are killed."""
        chat = self.chats.get(chat_id) if chat_id else None
        deleted = await self.chat_book.delete(chat_id)
        if chat_id:  # its jobs, and its subagents' jobs, die with it
            for owner in (chat_id, *self.subagents.children.get(chat_id, ())):
                await self.jobs.kill_chat(owner)
        if chat_id:
            self.subagents.forget(chat_id)  # its subagents' chats go with it
        if deleted and chat_id:
            behavior = chat.behavior if chat is not None else None  # (the chat is gone: nothing is shown in it)
            self.hooks.spawn("chatEnd", {"chat_id": chat_id, "agent": behavior, "behavior": behavior,
                                         "full_model": chat.model if chat is not None else None})
        return deleted

    def list_chats(self, params: ChatListParams | None = None) -> list[ChatSummary]:
        """``chat/list``: the chats, newest first."""
        return self.chat_book.list(params)

    def replay(self, chat_id: str, listener: Listener, limit: int | None = None, before: str | None = None,
               after: str | None = None, windowed: bool = False) -> ChatOpenResult:
        """``chat/open``: send one client the chat as it was shown (only a page of it when *windowed*), then answer
        whether it was found."""
        return self.chat_book.replay(chat_id, listener, limit, before, after, windowed)

    def history(self, chat_id: str, limit: int | None = None, before: str | None = None,
                after: str | None = None) -> JsonObject:
        """``chat/history``: a page of the chat's contents and the cursors around it (``_history.py``), as the wire
        answer (the contents stay the recorded wire dicts)."""
        return self.chat_book.history(chat_id, limit, before, after)

    async def rollback(self, chat_id: str, content_id: str, include: Iterable[str] | None = None) -> None:
        """``chat/rollback``: remove a user message and all after it, reverting their file changes (``_rewind.py``);
        RpcError for an unknown chat or message, or a chat running a prompt."""
        await rollback(self, chat_id, content_id, include)

    def clear(self, chat_id: str, messages: bool) -> bool:
        """``chat/clear``: empty the chat's messages, keeping the chat (``_rewind.py``); False for an unknown chat,
        RpcError for one running a prompt."""
        return clear_chat(self, chat_id, messages)

    def fork(self, chat_id: str, content_id: str) -> str:
        """``chat/fork``: copy the chat up to a message (or tool call) into a new chat; returns its id."""
        return fork_chat(self, chat_id, content_id).id

    def select_behavior(self, behavior: str, chat_id: str | None = None) -> None:
        """Select the agent of new prompts (and of the chat, when given); ValueError for an unknown one (the
        deprecated id ``agent`` is ``code``)."""
        canonical = self.agents.canonical(behavior)
        if canonical is None or canonical not in self.behaviors():
            raise ValueError(f"unknown agent '{behavior}'; available: {', '.join(self.behaviors())}")
        behavior = canonical
        self.selected_behavior = behavior
        chat = self.chats.get(chat_id) if chat_id else None
        if chat is not None:
            chat.behavior = behavior

    def select_model(self, model: str, chat_id: str | None = None, variant: str | None = None) -> None:
        """Select the model of new prompts (and of the chat, when given); ValueError for an unknown one. ``variant``
        (chat/selectedModelChanged's) is kept when the model has it, else cleared."""
        if model not in self.registry.models():
            raise ValueError(f"unknown model '{model}'")
        self.selected_model = model
        kept = self._variant_selection(model, variant)["select_variant"]
        chat = self.chats.get(chat_id) if chat_id else None
        if chat is not None:
            chat.model = model
            chat.variant = kept
        else:
            self.selected_variant = kept

    def _variant_selection(self, model: str | None, variant: str | None) -> VariantSelection:
        """``variants`` of a model and the ``selectVariant`` for it: the given one when the model has it, else None."""
        return variant_selection(self.registry, model, variant)

    def variants_updated(self, chat_id: str | None = None) -> ConfigUpdatedParams:
        """The ``config/updated`` answering a model or variant choice: the model's variants and the one selected
        (scoped to the chat when given, as the reference does)."""
        chat = self.chats.get(chat_id) if chat_id else None
        model = (chat.model if chat is not None else None) or self.selected_model or self.registry.default_model()
        variant = chat.variant if chat is not None else self.selected_variant
        return ConfigUpdatedParams(chat_id=chat_id if chat is not None else None,
                                   chat=ConfigUpdatedChat(**self._variant_selection(model, variant)))

    # -- diagnostics ---------------------------------------------------------------------------------------------

    def doctor(self) -> str:
        """A plain report for ``/doctor`` and support requests: no secret is ever printed in full."""
        return doctor(self)

    # -- shutdown ------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Cancel approvals and turns, close plug-ins, the index and HTTP clients; the last saves reach the disk."""
        if self._closed:
            return
        self._closed = True
        if self._started and self.hooks.has("sessionEnd"):
            try:
                await self.hooks.run("sessionEnd")
            except Exception:
                log.exception("sessionEnd hooks failed")
        for pending in list(self.pending_approvals.values()):
            if not pending.future.done():
                pending.future.cancel()
        for plugin in self.plugins:
            try:
                await plugin.aclose()
            except Exception:
                log.exception("closing plug-in %s failed", plugin.name)
        await self.background.aclose()
        await self.jobs.aclose()  # no background job outlives the engine
        if self.index is not None:
            await self.index.stop()
        if self.code_index is not None:
            await self.code_index.close()
        if self._index_task is not None:
            self._index_task.cancel()
            await asyncio.gather(self._index_task, return_exceptions=True)
        running = [chat.task for chat in self.chats.values() if chat.task is not None and not chat.task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        close_runner = getattr(self.cell_runner, "aclose", None)
        if close_runner is not None:
            try:
                await close_runner()
            except Exception:
                log.exception("closing the notebook kernels failed")
        await self.registry.aclose()
        await self.http.aclose()
        if self.store is not None:  # the last saves of every chat are on disk before the engine is gone
            await asyncio.to_thread(self.store.flush)
