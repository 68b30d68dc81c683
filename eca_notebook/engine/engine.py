"""The engine: one workspace's chats, config, models and saved history — independent of any door.

Doors (stdio server, WebSocket, the in-process Python client) attach a :class:`Listener` and call the methods here.
Notifications fan out to every listener, so several clients of one workspace (two browser tabs, say) see the same
chats. The engine never knows which door a call came through.

Listeners receive plain JSON-ready dicts shaped exactly as the protocol models in :mod:`eca_notebook.protocol`
(the hot path — thousands of text chunks a second — skips model construction; the e2e tests validate every emitted
message against those models).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

from .._version import __version__
from .._redact import add_secrets, redact, redact_json, secret_env_values, secret_header_values, secrets_of_url
from ..protocol import (
    ChatListParams,
    ChatPromptParams,
    ConfigUpdatedChat,
    ConfigUpdatedParams,
    NativeServerUpdatedParams,
)
from ..providers.base import Message, ToolSpec, UserMessage
from ..tools.base import FileAccess, Tool, ToolContext, llm_name, tool_server
from . import _builtins, _small_model
from ._approval import SessionApprovals, hidden_tools, selector_matches
from ._chat import Chat, invalid_chat_id, now_ms, title_from
from ._index import WorkspaceIndex
from ._models import ModelRegistry, UnknownModel
from ._rules import load_rules, render_rules
from ._toolcall import NATIVE_SERVER, PendingApproval, ToolCallRunner, llm_tool_name
from ._turn import CURRENT_TURN, Turn
from .commands import (
    BUILTINS,
    Command,
    find_command,
    load_custom_commands,
    parse_command,
    query_commands,
    render_template,
    to_wire,
)
from .config import LoadedConfig, ModelInfo, global_config_path, load_config, mask_secret
from .contexts import query_context, render_contexts
from ..plugins import Plugin
from .store import ChatStore, chats_dir_for, snapshot

log = logging.getLogger(__name__)

BUILTIN_BEHAVIORS = ("agent", "plan")
DEFAULT_WELCOME = "Welcome to eca-notebook! Ask anything about your workspace."
BASE_SYSTEM_PROMPT = (
    "You are eca-notebook, an AI code assistant working inside the user's workspace{where}. "
    "Answer concisely; use Markdown, with fenced code blocks for code."
)
PLAN_SYSTEM_PROMPT = (
    " You are in plan mode: analyse and propose a plan, but do not change any file."
)
TOOLS_SYSTEM_PROMPT = (
    " Use the tools to read and change the workspace; paths are relative to the first workspace folder. Every change"
    " you propose is shown to the user as a diff and may be rejected: if so, do not retry it unless asked."
)
COMPACT_PROMPT = (
    "Summarize our conversation so far for your own future reference: the goal, decisions made, files and code "
    "involved, what is done and what remains. Be complete but concise; this summary will replace the history."
)
COMPACT_PREFIX = "Summary of the conversation so far (the earlier messages were compacted):"


_CREDENTIAL_ENV = re.compile(r"(?i)(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")


async def _local_model_progress(event: Any) -> None:
    """Show the embedded model's loading in the chat whose prompt triggered it."""
    turn = CURRENT_TURN.get()
    if turn is not None and getattr(event, "stage", "") == "loading":
        turn.progress("running", event.message)


class Listener(Protocol):
    """A connected client. ``send`` must not block: doors queue the message and write it in order.

    A listener that can answer ``editor/getDiagnostics`` also has ``supports_diagnostics = True`` and
    ``async def request(method, params, timeout)``; the engine asks the first such listener.
    """

    def send(self, method: str, params: dict[str, Any]) -> None: ...


DIAGNOSTICS_TIMEOUT = 30.0


@dataclass
class EngineOptions:
    workspace_folders: list[Path] = field(default_factory=list)
    initialization_options: dict[str, Any] | None = None
    config_file: Path | None = None
    env: Mapping[str, str] | None = None  # defaults to os.environ


class Engine:
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
        from ..providers import make_http_client

        self.http: httpx.AsyncClient = make_http_client()
        self.registry = ModelRegistry(self.config, self.env, self.http, problems=self.loaded.problems)
        self.registry.local_progress = _local_model_progress
        add_secrets(self._config_secrets())
        self.store: ChatStore | None = None
        if not self.config.pure_config:
            self.store = ChatStore(chats_dir_for(self.workspace_folders, self.env), secrets=self.registry.secrets)
        self.chats: dict[str, Chat] = {}
        from ..tools import native_tools

        self.tools: dict[str, Tool] = {llm_name(tool): tool for tool in native_tools()}
        self.plugins: list[Plugin] = []
        self.mcp: Any = None  # the McpManager when mcpServers is configured
        if self.config.mcp_servers:
            from ..mcp import McpManager  # lazy: the MCP SDK is imported only when servers are configured

            self.mcp = McpManager(self.config.mcp_servers, workspace_folders=self.workspace_folders,
                                  timeout=self.config.mcp_timeout_seconds)
        self.file_access: FileAccess | None = None  # a door may route file tools through its client (ACP fs/*)
        self._started = False
        self._background: set[asyncio.Task[Any]] = set()
        self.session_approvals = SessionApprovals()
        self.pending_approvals: dict[tuple[str, str], PendingApproval] = {}
        self.selected_behavior: str = self._initial_behavior()
        self.selected_model: str | None = None
        # the workspace file index behind chat/queryContext, @-completion and the repo map
        self.index: WorkspaceIndex | None = WorkspaceIndex(self.workspace_folders) if self.workspace_folders else None
        self.global_config_dir = global_config_path(self.env).parent
        self._listeners: list[Listener] = []
        self._closed = False
        if self.mcp is not None:
            self.add_plugin(self.mcp)

    def _config_secrets(self) -> list[str]:
        """Every value of this workspace's config that is a secret, for the process-wide redaction registry.

        Provider keys (from config, ``<ID>_API_KEY`` or ``${env:…}``), header values (provider and model), URL
        userinfo and credential-like query values, MCP env values and headers, and every environment variable whose
        name says it holds a credential (a shell tool printing ``env`` must not hand them to the model).
        """
        values: list[str | None] = []
        for provider in self.registry.providers.values():
            values.append(provider.key)
            values += secret_header_values(provider.headers)
            values += secrets_of_url(provider.url)
            for model in provider.models.values():
                values += secret_header_values(model.extra_headers)
        for server in self.config.mcp_servers.values():
            values += secret_env_values(server.env)
            values += secret_header_values(server.headers)
            values += secrets_of_url(server.url)
        values += [v for k, v in self.env.items() if _CREDENTIAL_ENV.search(k) and len(v) >= 8]
        return [v for v in values if v]

    # -- listeners -----------------------------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Send to every listener — redacted: this is the choke point for everything the engine tells clients."""
        self._fan_out(method, redact_json(params))

    def _fan_out(self, method: str, params: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            try:
                listener.send(method, params)
            except Exception:  # one broken client must not stop the others
                log.exception("listener failed on %s", method)

    def _emit_content(self, chat: Chat, role: str, content: dict[str, Any]) -> None:
        content = redact_json(content)  # before it is recorded: what is shown is what is saved and replayed
        chat.record_content(role, content)
        self._fan_out("chat/contentReceived", {"chatId": chat.id, "role": role, "content": content})

    def _set_status(self, chat: Chat, status: str) -> None:
        chat.status = status
        self.broadcast("chat/statusChanged", {"chatId": chat.id, "status": status})

    # -- start-up and config -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Work that may touch the network (model discovery, plug-ins); doors call it after the handshake.

        Idempotent: several connections share one engine (JupyterLab tabs) and each calls it."""
        if self._started:
            return
        self._started = True
        for plugin in self.plugins:
            self._spawn(plugin.start(), f"eca-plugin-{plugin.name}")
        if self.index is not None:
            self._index_task = asyncio.create_task(self._build_index(), name="eca-index")
        await self.registry.discover()
        if self.store is not None and self.config.chat_retention_days:
            removed = await asyncio.to_thread(self.store.prune, self.config.chat_retention_days)
            if removed:
                log.info("pruned %d saved chat(s) older than %s days", removed, self.config.chat_retention_days)
        if self.selected_model is None or self.selected_model not in self.registry.models():
            self.selected_model = self.registry.default_model()

    async def _build_index(self) -> None:
        assert self.index is not None
        try:
            await self.index.build()
            self.index.start_watching()
        except Exception:
            log.exception("could not index the workspace")

    @property
    def problems(self) -> list[str]:
        return list(self.loaded.problems)

    def behaviors(self) -> list[str]:
        custom = [name for name in self.config.behavior if name not in BUILTIN_BEHAVIORS]
        return [*BUILTIN_BEHAVIORS, *custom]

    def _initial_behavior(self) -> str:
        wanted = self.config.default_behavior
        return wanted if wanted in self.behaviors() else "agent"

    def welcome_message(self) -> str:
        return self.config.welcome_message or DEFAULT_WELCOME

    def config_updated(self) -> ConfigUpdatedParams:
        models = self.registry.models()
        return ConfigUpdatedParams(
            chat=ConfigUpdatedChat(
                models=models,
                behaviors=self.behaviors(),
                select_model=self.selected_model or self.registry.default_model(),
                select_behavior=self.selected_behavior,
                welcome_message=self.welcome_message(),
            )
        )

    def native_tools(self) -> NativeServerUpdatedParams:
        offered = self.offered_tools(self.selected_behavior)
        tools = [
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters,
             **({} if key in offered else {"disabled": True})}
            for key, tool in self.all_tools().items() if tool_server(tool) == NATIVE_SERVER
        ]
        return NativeServerUpdatedParams.model_validate({"type": "native", "name": "ECA", "status": "running",
                                                         "tools": tools})

    def all_tools(self) -> dict[str, Tool]:
        """Every tool the engine knows, keyed by the name the model sees (``eca__read_file``, ``github__search``)."""
        tools = dict(self.tools)
        for plugin in self.plugins:
            for tool in plugin.tools():
                tools.setdefault(llm_name(tool), tool)
        return tools

    def offered_tools(self, behavior: str) -> dict[str, Tool]:
        """The tools the model may call in this behavior: minus disabledTools and tools hidden by a bare deny rule."""
        tools = self.all_tools()
        approval = self.config.tool_call_for(behavior).approval
        identities = [(tool_server(t), t.name) for t in tools.values()]
        hidden = set(hidden_tools(approval, identities))
        hidden |= {(server, name) for server, name in identities
                   for selector in self.config.disabled_tools_for(behavior) if selector_matches(selector, server, name)}
        if self._diagnostics() is None:  # no connected client can answer editor/getDiagnostics
            hidden.add((NATIVE_SERVER, "editor_diagnostics"))
        return {key: t for key, t in tools.items() if (tool_server(t), t.name) not in hidden}

    def tool_context(self) -> ToolContext:
        return ToolContext(workspace_folders=list(self.workspace_folders), request_diagnostics=self._diagnostics(),
                           fs=self.file_access)

    # -- plug-ins ------------------------------------------------------------------------------------------------

    def add_plugin(self, plugin: Plugin) -> None:
        """Add tools/commands/contexts from outside the core (MCP servers, the notebook kernel)."""
        plugin.attach(self)
        self.plugins.append(plugin)
        if self._started:
            self._spawn(plugin.start(), f"eca-plugin-{plugin.name}")

    def reserved_command_names(self) -> frozenset[str]:
        """Lower-cased names of the built-in commands: a plug-in's command with one of them is renamed."""
        return frozenset(c.name.lower() for c in BUILTINS)

    def tools_changed(self) -> None:
        """Plug-ins call this when their tool list changes; the next round offers the new set, and clients get the
        native list again (plug-in tools with ``server = "eca"``, e.g. the kernel's, are listed there)."""
        if self._started:
            self.broadcast("tool/serverUpdated", self.native_tools().dump())

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _diagnostics(self):
        listener = next((l for l in self._listeners if getattr(l, "supports_diagnostics", False)), None)
        if listener is None:
            return None

        async def request(uri: str | None) -> list[dict[str, Any]]:
            params = {"uri": uri} if uri else {}
            result = await listener.request("editor/getDiagnostics", params, timeout=DIAGNOSTICS_TIMEOUT)
            return list((result or {}).get("diagnostics") or [])

        return request

    # -- approvals -----------------------------------------------------------------------------------------------

    def approve(self, chat_id: str, call_id: str, save: str | None = None) -> bool:
        return self._answer_approval(chat_id, call_id, (True, save))

    def reject(self, chat_id: str, call_id: str) -> bool:
        return self._answer_approval(chat_id, call_id, (False, None))

    def _answer_approval(self, chat_id: str, call_id: str, answer: tuple[bool, str | None]) -> bool:
        """Resolve a waiting call; an unknown or already answered id is ignored (logged), never an error."""
        pending = self.pending_approvals.get((chat_id, call_id))
        if pending is None or pending.future.done():
            log.info("%s for unknown tool call %s in chat %s ignored", "approval" if answer[0] else "rejection",
                     call_id, chat_id)
            return False
        pending.future.set_result(answer)
        return True

    def system_prompt(self, behavior: str) -> str:
        """Base prompt (or the behavior's own), tool guidance, then the user's rules (AGENTS.md, .eca/rules)."""
        where = ""
        if self.workspace_folders:
            where = " (" + ", ".join(str(p) for p in self.workspace_folders) + ")"
        prompt = BASE_SYSTEM_PROMPT.format(where=where)
        if behavior == "plan":
            prompt += PLAN_SYSTEM_PROMPT
        custom = self.config.behavior.get(behavior)
        if custom is not None and custom.system_prompt:
            prompt = custom.system_prompt
        if self.offered_tools(behavior):
            prompt += TOOLS_SYSTEM_PROMPT
        rules = render_rules(load_rules(self.workspace_folders, self.global_config_dir))
        if rules:
            prompt += "\n\n" + rules
        return prompt

    def compact_system_prompt(self, behavior: str, *, tools: bool, info: ModelInfo | None = None) -> str:
        """The system prompt for a small model (``ModelInfo.compact``): see ``_small_model.py``."""
        custom = self.config.behavior.get(behavior)
        return _small_model.compact_system_prompt(
            plan=behavior == "plan",
            tools=tools,
            rules=render_rules(load_rules(self.workspace_folders, self.global_config_dir)),
            custom=custom.system_prompt if custom is not None and custom.system_prompt else None,
            base=info.system_prompt if info is not None else None,
        )

    def _tools_for_turn(self, behavior: str, info: ModelInfo, request: str | None, has_contexts: bool
                        ) -> dict[str, Tool]:
        """The tools offered this turn: the behavior's; for a small model only those the prompt asks for."""
        offered = self.offered_tools(behavior)
        if not info.compact or not offered:
            return offered
        return _small_model.tools_for_prompt(
            offered, {key: t.name for key, t in offered.items()}, request or "",
            mode=self.config.local_model.tools, has_contexts=has_contexts, folders=self.workspace_folders,
        )

    # -- commands and contexts -----------------------------------------------------------------------------------

    def custom_commands(self) -> dict[str, Command]:
        return {c.name: c for c in load_custom_commands(self.workspace_folders, self.global_config_dir)}

    def commands(self) -> list[Command]:
        builtin_names = {c.name for c in BUILTINS}
        plugin_commands = [c for plugin in self.plugins for c in plugin.commands()]
        return [*BUILTINS, *(c for c in self.custom_commands().values() if c.name not in builtin_names),
                *plugin_commands]

    def _plugin_command(self, name: str) -> tuple[Plugin, Command] | None:
        for plugin in self.plugins:
            command = find_command(name, list(plugin.commands()))
            if command is not None:
                return plugin, command
        return None

    def query_commands(self, query: str) -> list[dict[str, Any]]:
        return [to_wire(c) for c in query_commands(query.lstrip("/"), self.commands())]

    async def query_context(self, query: str, already: list[Any]) -> list[dict[str, Any]]:
        extra: list[dict[str, Any]] = []
        for plugin in self.plugins:
            try:
                extra += await plugin.query_contexts(query)
            except Exception:
                log.exception("context query of %s failed", plugin.name)
        if self.index is None:
            return extra
        return await query_context(query, index=self.index, already=already, extra=extra)

    async def _read_plugin_context(self, context: Any) -> str:
        for plugin in self.plugins:
            text = await plugin.read_context(context)
            if text is not None:
                return text
        raise LookupError("no MCP server provides this resource (is the server running?)")

    # -- chats ---------------------------------------------------------------------------------------------------

    def get_chat(self, chat_id: str) -> Chat | None:
        chat = self.chats.get(chat_id)
        if chat is None and self.store is not None:
            record = self.store.load(chat_id)
            if record is not None:
                chat = Chat.from_record(record)
                self.chats[chat.id] = chat
        return chat

    def _save(self, chat: Chat) -> None:
        """Queue a save: the record is snapshotted here, encoded and written by the store's writer thread, so a
        50 MB chat never stalls the loop (every other chat and client) while it is written."""
        if self.store is None:
            return
        chat.updated_at = now_ms()
        try:
            record = chat.to_record()  # (its messages are converted to fresh dicts: only contents are live)
            record["contents"] = snapshot(record["contents"])
            self.store.save_in_background(record, copy=False)
        except Exception:  # saving must never break a chat; the next save retries
            log.exception("could not save chat %s", chat.id)

    def create_chat(self, chat_id: str | None = None, *, title: str | None = None, model: str | None = None,
                    behavior: str | None = None) -> Chat:
        """An empty chat (REST ``POST /sessions``): saved and announced, ready for its first prompt."""
        chat = Chat(id=chat_id or str(uuid.uuid4()), title=title, model=model,
                    behavior=behavior or self.selected_behavior)
        self.chats[chat.id] = chat
        self._save(chat)
        self.broadcast("chat/opened", {"chatId": chat.id, **({"title": title} if title else {})})
        return chat

    async def prompt(self, params: ChatPromptParams) -> dict[str, Any]:
        """Start a turn; returns as soon as it is under way (the answer streams as notifications)."""
        chat_id = params.chat_id
        if chat_id is not None:
            reason = invalid_chat_id(chat_id)
            if reason is not None:
                return {"chatId": chat_id, "model": params.model or self.selected_model, "status": "error",
                        "message": reason}
        chat = self.get_chat(chat_id) if chat_id else None
        if chat is None:
            chat = Chat(id=chat_id or str(uuid.uuid4()), behavior=self.selected_behavior)
            self.chats[chat.id] = chat
            self.broadcast("chat/opened", {"chatId": chat.id})
        if chat.running:
            self._emit_content(chat, "system", {"type": "text", "text": "A prompt is already running in this chat: "
                                                "stop it before sending another."})
            return {"chatId": chat.id, "model": chat.model, "status": "error"}

        behavior = params.behavior or params.agent or chat.behavior or self.selected_behavior
        if behavior not in self.behaviors():
            behavior = self.selected_behavior
        chat.behavior = behavior

        self._emit_content(chat, "user", {"type": "text", "text": params.message + "\n"})
        if chat.title is None:
            chat.title = title_from(params.message)
            self._emit_content(chat, "system", {"type": "metadata", "title": chat.title})

        message = params.message
        command = parse_command(message)
        if command is not None:
            name, argument = command
            handled = await self._builtin(chat, name.lower(), argument)
            if handled is not None:
                return handled
            custom = find_command(name, list(self.custom_commands().values()))
            from_plugin = self._plugin_command(name) if custom is None else None
            if custom is not None:
                message = render_template(custom.template or "", argument)
            elif from_plugin is not None:
                plugin, plugin_command = from_plugin
                try:
                    message = await plugin.render_command(plugin_command, argument)
                except Exception as exc:  # e.g. a missing prompt argument: the chat says so, the log needs no trace
                    log.info("command /%s of %s failed: %s", name, plugin.name, exc)
                    return self._answer(chat, f"Command '/{name}' failed: {exc}")
            else:
                names = ", ".join("/" + c.name for c in self.commands())
                return self._answer(chat, f"Unknown command '/{name}'. Available commands: {names}.")

        model_id = params.model or chat.model or self.selected_model or self.registry.default_model()
        resolved = self._resolve_model(chat, model_id)
        if isinstance(resolved, dict):
            return resolved
        provider, info = resolved
        chat.model = info.id

        request = message  # what the user asked, before contexts are appended (a small model's tools depend on it)
        if params.contexts:
            budgets = ({"max_bytes": _small_model.CONTEXT_BYTES, "per_context_bytes": _small_model.PER_CONTEXT_BYTES}
                       if info.compact else {})
            rendered = await render_contexts(params.contexts, folders=self.workspace_folders, http=self.http,
                                             index=self.index, mcp_reader=self._read_plugin_context, **budgets)
            for problem in rendered.problems:
                self._emit_content(chat, "system", {"type": "text", "text": f"Context skipped: {problem}"})
            if rendered.text:
                message = f"{message}\n\n{rendered.text}"
        self._start_turn(chat, provider, info, behavior, UserMessage(text=message), request=request,
                         has_contexts=bool(params.contexts))
        return {"chatId": chat.id, "model": info.id, "status": "prompting"}

    def _resolve_model(self, chat: Chat, model_id: str | None):
        try:
            if model_id is None:
                raise UnknownModel("")
            return self.registry.resolve(model_id)
        except UnknownModel:
            hint = self.registry.missing_key_hint() if model_id is None else (
                f"Unknown or unavailable model '{model_id}'. Available: {', '.join(self.registry.models()) or 'none'}."
            )
            self.broadcast("$/showMessage", {"type": "warning", "message": hint})
            answer = self._answer(chat, hint)
            answer.update(model=model_id, status="login" if model_id is None else "error")
            return answer

    def _answer(self, chat: Chat, text: str) -> dict[str, Any]:
        """Finish a prompt that needs no model: a system text, then progress finished."""
        self._emit_content(chat, "system", {"type": "text", "text": text})
        self._emit_content(chat, "system", {"type": "progress", "state": "finished", "text": ""})
        self._save(chat)
        return {"chatId": chat.id, "model": chat.model or self.selected_model, "status": "prompting"}

    def _start_turn(self, chat: Chat, provider, info, behavior: str, user: Message | None,
                    *, system: str | None = None, with_tools: bool = True, on_success=None,
                    request: str | None = None, has_contexts: bool = False) -> None:
        if user is not None:
            chat.messages.append(user)
        self._save(chat)
        offered = self._tools_for_turn(behavior, info, request, has_contexts) if with_tools else {}
        if system is None and info.compact:
            system = self.compact_system_prompt(behavior, tools=bool(offered), info=info)
        tool_call = self.config.tool_call_for(behavior)
        runner = ToolCallRunner(
            chat_id=chat.id,
            tools=offered,
            context=self.tool_context(),
            approval_config=tool_call.approval,
            session=self.session_approvals,
            pending=self.pending_approvals,
            emit=lambda role, content: self._emit_content(chat, role, content),
            progress=lambda state, text: self._emit_content(chat, "system",
                                                            {"type": "progress", "state": state, "text": text}),
            unavailable={t.name: f"{t.name} is not available in the '{behavior}' behavior: do not call it; describe "
                                 "the change instead." for key, t in self.all_tools().items() if key not in offered},
        )
        specs = [ToolSpec(llm_tool_name(t), t.description, t.parameters) for t in offered.values()]
        turn = Turn(chat, provider, info, system or self.system_prompt(behavior), self._emit_content, tools=specs,
                    runner=runner, max_rounds=tool_call.max_rounds, on_success=on_success,
                    tool_rounds=_small_model.tool_rounds([t.name for t in offered.values()]) if info.compact else None,
                    first_round_extra=_small_model.first_round_extra(info.provider, bool(offered)) if info.compact
                    else None, stop_loops=info.compact)
        chat.task = asyncio.create_task(self._run_turn(chat, turn), name=f"eca-turn-{chat.id}")

    async def _builtin(self, chat: Chat, name: str, argument: str) -> dict[str, Any] | None:
        if name == "doctor":
            return self._answer(chat, self.doctor())
        if name == "costs":
            return self._answer(chat, _builtins.costs(self, chat))
        if name == "prompt-show":
            return self._answer(chat, _builtins.prompt_show(self, chat))
        if name == "repo-map-show":
            return self._answer(chat, _builtins.repo_map_show(self))
        if name == "resume":
            return self._answer(chat, _builtins.resume(self, chat, argument))
        if name == "compact":
            return self._compact(chat, argument)
        return None

    def _compact(self, chat: Chat, instruction: str) -> dict[str, Any]:
        """``/compact``: the model summarises the chat; the summary replaces the history (saving context)."""
        if not chat.messages:
            return self._answer(chat, "Nothing to compact yet.")
        resolved = self._resolve_model(chat, chat.model or self.selected_model or self.registry.default_model())
        if isinstance(resolved, dict):
            return resolved
        provider, info = resolved
        request = COMPACT_PROMPT + (f"\nAlso: {instruction.strip()}" if instruction.strip() else "")
        before = len(chat.messages)

        def replace_history() -> None:
            summary = chat.messages[-1] if len(chat.messages) > before + 1 else None
            text = getattr(summary, "text", "") if summary is not None else ""
            if text:
                chat.messages = [UserMessage(text=f"{COMPACT_PREFIX}\n\n{text}")]
                self._emit_content(chat, "system", {"type": "text", "text": "Chat compacted: the summary above "
                                                                             "replaces the earlier history."})

        self._start_turn(chat, provider, info, chat.behavior or self.selected_behavior, UserMessage(text=request),
                         with_tools=False, on_success=replace_history)
        return {"chatId": chat.id, "model": info.id, "status": "prompting"}

    async def _run_turn(self, chat: Chat, turn: Turn) -> None:
        self._set_status(chat, "running")
        try:
            await turn.run()
        except asyncio.CancelledError:
            pass
        finally:
            chat.task = None
            self._save(chat)  # written by the store's thread; aclose() waits for it (clients read "idle" at once)
            self._set_status(chat, "idle")

    async def stop(self, chat_id: str) -> bool:
        chat = self.chats.get(chat_id)
        if chat is None or not chat.running:
            return False
        task = chat.task
        assert task is not None
        self._set_status(chat, "stopping")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def delete(self, chat_id: str | None) -> bool:
        if not chat_id:
            return False
        chat = self.chats.get(chat_id)
        if chat is not None and chat.running:
            await self.stop(chat_id)
        existed = self.chats.pop(chat_id, None) is not None
        if self.store is not None:
            existed = self.store.delete(chat_id) or existed
        if existed:
            self.broadcast("chat/deleted", {"chatId": chat_id})
        return existed

    def list_chats(self, params: ChatListParams | None = None) -> list[dict[str, Any]]:
        summaries: dict[str, dict[str, Any]] = {}
        if self.store is not None:
            for summary in self.store.list():
                summaries[summary["id"]] = {**summary, "status": "idle"}
        for chat in self.chats.values():
            if chat.message_count == 0 and chat.id not in summaries:
                continue
            summaries[chat.id] = {
                "id": chat.id,
                "title": chat.title,
                "status": "running" if chat.running else "idle",
                "createdAt": chat.created_at,
                "updatedAt": chat.updated_at,
                "model": chat.model,
                "messageCount": chat.message_count,
            }
        key = "createdAt"
        if params is None or params.sort_by != "createdAt":
            key = "updatedAt"
        chats = sorted(summaries.values(), key=lambda s: s.get(key) or 0, reverse=True)
        if params is not None and params.limit is not None and params.limit >= 0:
            chats = chats[: params.limit]
        return [{k: v for k, v in s.items() if v is not None} for s in chats]

    def replay(self, chat_id: str, listener: Listener) -> dict[str, Any]:
        """``chat/open``: send one client the chat as it was shown, then answer whether it was found."""
        chat = self.get_chat(chat_id)
        if chat is None:
            return {"found": False}
        opened = {"chatId": chat.id}
        if chat.title:
            opened["title"] = chat.title
        listener.send("chat/opened", opened)
        for item in chat.contents:  # redacted again: a chat saved by an older version may hold a secret
            listener.send("chat/contentReceived", redact_json({"chatId": chat.id, "role": item["role"],
                                                               "content": item["content"]}))
        result: dict[str, Any] = {"found": True}
        if chat.title:
            result["title"] = chat.title
        return result

    def select_behavior(self, behavior: str, chat_id: str | None = None) -> None:
        if behavior not in self.behaviors():
            raise ValueError(f"unknown behavior '{behavior}'; available: {', '.join(self.behaviors())}")
        self.selected_behavior = behavior
        chat = self.chats.get(chat_id) if chat_id else None
        if chat is not None:
            chat.behavior = behavior

    def select_model(self, model: str, chat_id: str | None = None) -> None:
        if model not in self.registry.models():
            raise ValueError(f"unknown model '{model}'")
        self.selected_model = model
        chat = self.chats.get(chat_id) if chat_id else None
        if chat is not None:
            chat.model = model

    # -- diagnostics ---------------------------------------------------------------------------------------------

    def doctor(self) -> str:
        """A plain report for ``/doctor`` and support requests: no secret is ever printed in full."""
        lines = [f"eca-notebook {__version__}", "", "Workspaces:"]
        lines += [f"  {p}" for p in self.workspace_folders] or ["  (none)"]
        lines += ["", "Config sources:"]
        for source in self.loaded.sources:
            state = "applied" if source.applied else "not applied"
            where = f" ({source.path})" if source.path else ""
            problem = f" — {source.problem}" if source.problem else (f" ({source.note})" if source.note else "")
            lines.append(f"  {source.name}{where}: {state}{problem}")
        lines += ["", f"Default model: {self.registry.default_model() or '(none)'}",
                  f"Selected model: {self.selected_model or '(none)'}", "", "Providers:"]
        for provider in self.registry.providers.values():
            auth = "usable" if self.registry.usable(provider) else "not configured"
            key = f", key {mask_secret(provider.key)} from {provider.key_source}" if provider.key else ""
            lines.append(f"  {provider.id} ({provider.api}, {provider.url}): {auth}{key}")
        if self.mcp is not None:
            lines += ["", "MCP servers:"]
            for server in self.mcp.statuses():
                error = self.mcp.error(server["name"])
                lines.append(f"  {server['name']}: {server['status']}" + (f" — {error}" if error else ""))
        status = self.registry.local_status
        lines += ["", "Embedded model:", f"  {status.message if status is not None else 'disabled (localModel: false)'}"]
        if self.store is not None:
            lines += ["", f"Saved chats: {self.store.root}"]
        else:
            lines += ["", "Saved chats: disabled (pureConfig)"]
        return redact("\n".join(lines))

    # -- shutdown ------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for pending in list(self.pending_approvals.values()):
            if not pending.future.done():
                pending.future.cancel()
        for plugin in self.plugins:
            try:
                await plugin.aclose()
            except Exception:
                log.exception("closing plug-in %s failed", plugin.name)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.index is not None:
            await self.index.stop()
        task = getattr(self, "_index_task", None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        running = [chat.task for chat in self.chats.values() if chat.task is not None and not chat.task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        await self.registry.aclose()
        await self.http.aclose()
        if self.store is not None:  # the last saves of every chat are on disk before the engine is gone
            await asyncio.to_thread(self.store.flush)

