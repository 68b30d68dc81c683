"""One prompt's path through the engine, read top to bottom: the user echo and title, a command (built-in, custom or
a plug-in's), the model, the contexts, then a :class:`~eca_notebook.engine.turn._turn.Turn` started in the chat.

Also what a client asks while typing a prompt (``chat/queryCommands``, ``chat/queryContext``), and ``/compact``,
the one built-in command that needs the model. Every answer is a :class:`~eca_notebook.protocol.ChatPromptResult`;
the turn itself streams as notifications.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from ..._text import user_words
from ...plugins import Plugin
from ...protocol import (
    ChatCommand,
    ChatContext,
    ChatPromptParams,
    ChatPromptResult,
    FileContext,
    ImageContent,
    JsonObject,
    MetadataContent,
    ProgressContent,
    TextContent,
)
from ...providers.base import ImagePart, Message, Provider, ToolSpec, UserMessage
from ...tools.skill import Skill
from ..chats import COMPACT_PREFIX, Chat, invalid_chat_id, last_prompt_id, title_from
from ..config import LoadedConfig, ModelInfo
from ..contexts import context_models, query_context, render_contexts
from ..index import WorkspaceIndex
from ..models import UnknownModel
from ..workspace import WorkspaceTrust, engine_skills, list_skills, skill_prompt
from ..workspace.commands import (
    BUILTINS,
    Command,
    chat_command,
    command_prompt,
    find_command,
    load_custom_commands,
    parse_command,
    query_commands,
    render_template,
)
from . import _small_model
from ._builtins import BuiltinCommands
from ._host import TurnHost
from ._notebooks import named_notebooks
from ._toolcall import ToolCallRunner, llm_tool_name
from ._turn import Turn
from ._window import COMPACT_PROMPT as COMPACT_PROMPT

if TYPE_CHECKING:
    import httpx

    from ...retrieval import CodeIndex

__all__ = ["COMPACT_PROMPT", "PromptHost", "PromptPipeline"]

log = logging.getLogger(__name__)

def _then(first: Callable[[], None] | None, then: Callable[[], None]) -> Callable[[], None]:
    """``first`` (when given), then ``then``: a turn's one ``on_success`` doing both."""
    def both() -> None:
        if first is not None:
            first()
        then()

    return both


class PromptHost(TurnHost, Protocol):
    """What a prompt's path uses besides starting its turn: the agents a chat may select and the session's variant,
    the trust (asked once; a new chat's default), the contexts' sources (folders, the HTTP client, the file and
    content indexes, the plug-ins' contexts and commands), the user's commands and skills (the global config dir,
    the config as loaded) and the clients (a warning when there is no model)."""

    def behaviors(self) -> list[str]:
        """The agents a chat may select."""
        ...

    @property
    def selected_variant(self) -> str | None:
        """The session's variant, a new chat's."""
        ...

    @property
    def trust(self) -> WorkspaceTrust: ...

    @property
    def workspace_folders(self) -> Sequence[Path]: ...

    @property
    def global_config_dir(self) -> Path: ...

    @property
    def loaded(self) -> LoadedConfig: ...

    @property
    def http(self) -> httpx.AsyncClient: ...

    @property
    def index(self) -> WorkspaceIndex | None: ...

    @property
    def code_index(self) -> CodeIndex | None: ...

    @property
    def plugins(self) -> Sequence[Plugin]: ...

    def broadcast(self, method: str, params: JsonObject) -> None: ...


class PromptPipeline:
    """Turns a ``chat/prompt`` into a running turn (or an immediate answer); the built-in commands' texts come from
    ``builtins``."""

    def __init__(self, engine: PromptHost, builtins: BuiltinCommands) -> None:
        self.engine = engine
        self.builtins = builtins

    def _note(self, chat: Chat, text: str) -> None:
        self.engine.emit_content(chat, "system", TextContent(text=text))

    # -- the prompt ----------------------------------------------------------------------------------------------

    async def prompt(self, params: ChatPromptParams) -> ChatPromptResult:
        """Start a turn; returns as soon as it is under way (the answer streams as notifications)."""
        engine = self.engine
        chat_id = params.chat_id
        if chat_id is not None:
            reason = invalid_chat_id(chat_id)
            if reason is not None:
                return ChatPromptResult(chat_id=chat_id, model=params.model or engine.selected_model, status="error",
                                        message=reason)
        chat = engine.chat_book.open_for_prompt(chat_id)
        if chat.running and any(key[0] == chat.id for key in engine.pending_approvals):
            # the turn only waits for the user, who wrote something new instead of answering: the unanswered
            # calls are rejected (the model is told) and the new prompt goes on — a forgotten diff never blocks
            await engine.chat_book.stop(chat.id)
            self._note(chat, "The tool call waiting for approval was rejected: you sent a new prompt instead.")
        if chat.running:
            busy = "A prompt is already running in this chat: stop it before sending another."
            self._note(chat, busy)
            return ChatPromptResult(chat_id=chat.id, model=chat.model, status="error", message=busy)

        if params.variant is not None:  # the chat keeps it ("" clears); unknown to the model: ignored (_variants.py)
            chat.variant = params.variant or None
        elif not chat.messages and not chat.contents:  # a new chat starts with the session's choice
            chat.variant = engine.selected_variant
        if params.trust is not None:
            chat.trust = params.trust
        elif not chat.messages and not chat.contents:  # a new chat starts as `chat.defaultTrust` says (reference)
            chat.trust = engine.trust.default_chat_trust()
        behavior = params.behavior or params.agent or chat.behavior or engine.selected_behavior
        behavior = engine.agents.canonical(behavior) or behavior  # (the deprecated ``agent`` is ``code``)
        if behavior not in engine.behaviors():
            behavior = engine.selected_behavior
        chat.behavior = behavior

        content_id = str(uuid.uuid4())  # names this prompt in both records, for chat/rollback and chat/fork
        engine.emit_content(chat, "user", TextContent(text=params.message + "\n", content_id=content_id))
        if chat.title is None:
            chat.title = title_from(params.message)
            engine.emit_content(chat, "system", MetadataContent(title=chat.title))

        message = params.message
        command = parse_command(message)
        if command is not None:
            name, argument = command
            handled = await self._builtin(chat, name.lower(), argument)
            if handled is not None:
                return handled
            custom = find_command(name, list(self.custom_commands().values()))
            skill = self._skill_command(name) if custom is None else None  # a skill is a command too (_skills.py)
            from_plugin = self._plugin_command(name) if custom is None and skill is None else None
            code_prompt = command_prompt(name, argument)  # /fix, /test, /explain, /refactor on the attached code
            if name.lower() == "init":  # the model writes AGENTS.md with write_file: an approved change
                message = self.builtins.init_prompt()
            elif code_prompt is not None:
                message = code_prompt
            elif custom is not None:
                message = render_template(custom.template or "", argument)
            elif skill is not None:
                message = skill_prompt(skill, argument)
            elif from_plugin is not None:
                plugin, plugin_command = from_plugin
                try:
                    message = await plugin.render_command(plugin_command, argument)
                except Exception as exc:  # e.g. a missing prompt argument: the chat says so, the log needs no trace
                    log.info("command /%s of %s failed: %s", name, plugin.name, exc)
                    return self.answer(chat, f"Command '/{name}' failed: {exc}")
            else:
                names = ", ".join("/" + c.name for c in self.commands())
                return self.answer(chat, f"Unknown command '/{name}'. Available commands: {names}.")

        # once per session, before the workspace's hooks could run and before its model is chosen: trusting applies
        # its providers (and agents) to this very prompt (_trust.py)
        await engine.trust.ask_if_needed(chat)
        agent = engine.agents.get(behavior)
        agent_model = agent.default_model if agent is not None and agent.default_model in engine.registry.models() \
            else None  # (an agent's defaultModel the registry does not know is ignored, not an error)
        model_id = (params.model or chat.model or agent_model or engine.selected_model
                    or engine.registry.default_model())
        resolved = self._resolve_model(chat, model_id)
        if isinstance(resolved, ChatPromptResult):
            return resolved
        provider, info = resolved
        chat.model = info.id
        if _small_model.demo_notice_due(info.provider, chat.contents):  # once per chat: what the model is, and where
            self._note(chat, _small_model.DEMO_NOTICE)                   # a real one is connected
        hooked, why = await engine.hooks.chat.before_request(chat, message, new_chat=not chat.messages)
        if hooked is None:  # a chatStart/preRequest hook blocked the prompt (_hooks.py)
            return self.answer(chat, why or "Blocked by a hook.")
        message = hooked

        # what the user asked, before contexts are appended and without a host's guidance before it (a small
        # model's tools depend on it: Jupyter AI's "System note: … use the notebook MCP tools …" offered a
        # 135M model insert_cell for "Say hello in five words", and it called it)
        request = user_words(message)
        if info.compact:
            # and a small model gets only those words: the 135M model read the guidance as the question (it answered
            # "Say hello in five words" with "System note: …" or with the prompt itself). What the guidance asks is
            # kept by the tools instead: as a guest, write_file/edit_file never write notebook JSON (_toolbox.py).
            message = request
        images: list[ImagePart] = []
        if params.contexts:
            # a small model gets less of each context, and of a whole notebook only the cells the request is about
            budgets = ({"max_bytes": _small_model.CONTEXT_BYTES, "per_context_bytes": _small_model.PER_CONTEXT_BYTES,
                        "later_context_bytes": _small_model.LATER_CONTEXT_BYTES} if info.compact else {})
            rendered = await render_contexts(params.contexts, folders=engine.workspace_folders, http=engine.http,
                                             index=engine.index, mcp_reader=self.read_plugin_context,
                                             notebook_focus=request if info.compact else None, **budgets)
            for image in rendered.images:  # shown in the chat as the user's, as the reference replays a prompt's
                engine.emit_content(chat, "user", ImageContent(media_type=image.media_type, base64=image.base64()))
            for problem in rendered.problems:
                self._note(chat, f"Context skipped: {problem}")
            if rendered.text:
                message = f"{message}\n\n{rendered.text}"
            images = rendered.images  # sent as images, or described to a model that cannot see (_vision.py)
        user = UserMessage(text=message, content_id=content_id, images=images)
        self._start_turn(chat, provider, info, behavior, user,
                         request=request, has_contexts=bool(params.contexts),
                         notebook=self._notebook_in_play(params, request))
        return ChatPromptResult(chat_id=chat.id, model=info.id, status="prompting")

    def _notebook_in_play(self, params: ChatPromptParams, request: str) -> Path | None:
        """The notebook tools' default ``path`` for this prompt: the one notebook attached (the panel attaches the
        active one) or, failing that, the one existing notebook the message names; else the session's (``%eca``)."""
        engine = self.engine
        root = engine.workspace_folders[0] if engine.workspace_folders else Path.cwd()
        attached = {Path(c.path) for c in params.contexts if isinstance(c, FileContext) and c.path.endswith(".ipynb")}
        named = {root / m for m in named_notebooks(request) if (root / m).is_file()}
        for found in (attached, named):
            if len(found) == 1:
                path: Path = next(iter(found))
                return path if path.is_absolute() else root / path
        default: Path | None = engine.default_notebook
        return default

    def _resolve_model(self, chat: Chat, model_id: str | None) -> tuple[Provider, ModelInfo] | ChatPromptResult:
        """The provider and model to prompt, or the answer saying why there is none (no key: ``login``)."""
        registry = self.engine.registry
        try:
            if model_id is None:
                raise UnknownModel("")
            return registry.resolve(model_id)
        except UnknownModel:
            hint = registry.missing_key_hint() if model_id is None else (
                f"Unknown or unavailable model '{model_id}'. Available: {', '.join(registry.models()) or 'none'}."
            )
            self.engine.broadcast("$/showMessage", {"type": "warning", "message": hint})
            answer = self.answer(chat, hint)
            return answer.model_copy(update={"model": model_id, "status": "login" if model_id is None else "error",
                                             "message": hint})

    def answer(self, chat: Chat, text: str) -> ChatPromptResult:
        """Finish a prompt that needs no model: a system text, then progress finished."""
        self._note(chat, text)
        return self.finish(chat)

    def finish(self, chat: Chat) -> ChatPromptResult:
        """Finish a prompt that needs no model and has nothing more to say: progress finished."""
        engine = self.engine
        engine.emit_content(chat, "system", ProgressContent(state="finished", text=""))
        engine.chat_book.save(chat)
        return ChatPromptResult(chat_id=chat.id, model=chat.model or engine.selected_model, status="prompting")

    def _start_turn(self, chat: Chat, provider: Provider, info: ModelInfo, behavior: str, user: Message | None,
                    *, system: str | None = None, with_tools: bool = True,
                    on_success: Callable[[], None] | None = None, request: str | None = None,
                    has_contexts: bool = False, notebook: Path | None = None, compacting: bool = False) -> None:
        engine = self.engine
        toolbox = engine.toolbox
        if user is not None:
            chat.messages.append(user)
        engine.chat_book.save(chat)
        offered = toolbox.tools_for_turn(behavior, info, request, has_contexts) if with_tools else {}
        if system is None and info.compact:
            system = toolbox.compact_system_prompt(behavior, tools=bool(offered), info=info)
        tool_call = engine.agents.tool_call_for(behavior)
        context = dataclasses.replace(toolbox.tool_context(), default_notebook=notebook or engine.default_notebook)
        delegate = engine.chat_delegates.get(chat.id)
        if delegate is not None:  # a door that applies this chat's changes / runs its commands itself
            context = delegate.apply(context)
        runner = ToolCallRunner(
            chat_id=chat.id,
            tools=offered,
            context=context,
            approval_config=tool_call.approval,
            session=engine.session_approvals,
            pending=engine.pending_approvals,
            undo_log=engine.undo_log,
            hooks=engine.hooks.chat.tool_hooks(chat),
            trusted=lambda: chat.trust,
            emit=lambda role, content: engine.emit_content(chat, role, content),
            progress=lambda state, text: engine.emit_content(
                chat, "system", ProgressContent(state="finished" if state == "finished" else "running", text=text)),
            unavailable={t.name: f"{t.name} is not available to the '{behavior}' agent: do not call it; describe "
                                 "the change instead." for key, t in toolbox.all_tools().items() if key not in offered},
        )
        specs = [ToolSpec(llm_tool_name(t), t.description,
                          _small_model.workspace_paths(t.parameters, getattr(t, "path_args", ()), request,
                                                       folders=engine.workspace_folders, tool=t.name)
                          if info.compact else t.parameters)
                 for t in offered.values()]
        if not compacting:  # the user's postRequest hooks see the answer once the turn is over
            on_success = _then(on_success, lambda: engine.hooks.chat.after_request(chat))
        turn = Turn(chat, provider, info, system or toolbox.system_prompt(behavior), engine.emit_content, tools=specs,
                    runner=runner, max_rounds=tool_call.max_rounds, on_success=on_success,
                    tool_rounds=_small_model.tool_rounds([t.name for t in offered.values()]) if info.compact else None,
                    first_round_extra=_small_model.first_round_extra(info.provider, bool(offered)) if info.compact
                    else None, stop_loops=info.compact, compacting=compacting,
                    system_note=delegate.system_note if delegate is not None else None,
                    compact_hooks=None if compacting else engine.hooks.chat.auto_compact(chat),
                    auto_compact_percentage=engine.config.auto_compact_percentage,
                    default_variant=agent.variant if (agent := engine.agents.get(behavior)) is not None else None)
        engine.chat_book.start(chat, turn)

    # -- built-in commands ---------------------------------------------------------------------------------------

    async def _builtin(self, chat: Chat, name: str, argument: str) -> ChatPromptResult | None:
        if name == "skills":
            return self.answer(chat, list_skills(engine_skills(self.engine), self._shadowed_skills()))
        if name == "compact":
            return await self._compact(chat, argument)
        text = await self.builtins.run(chat, name, argument)
        if text is None:
            return None
        return self.answer(chat, text) if text else self.finish(chat)  # ("": /fork told the original itself)

    async def _compact(self, chat: Chat, instruction: str) -> ChatPromptResult:
        """``/compact``: the model summarises the chat; the summary replaces the history (saving context)."""
        engine = self.engine
        if not chat.messages:
            return self.answer(chat, "Nothing to compact yet.")
        resolved = self._resolve_model(chat, chat.model or engine.selected_model or engine.registry.default_model())
        if isinstance(resolved, ChatPromptResult):
            return resolved
        provider, info = resolved
        vetoed = await engine.hooks.chat.before_compact(chat, "manual", instruction)
        if vetoed is not None:
            return self.answer(chat, vetoed)
        request = COMPACT_PROMPT + (f"\nAlso: {instruction.strip()}" if instruction.strip() else "")
        before = len(chat.messages)
        content_id = last_prompt_id(chat)  # the "/compact" echo: summary and request belong to that prompt

        def replace_history() -> None:
            summary = chat.messages[-1] if len(chat.messages) > before + 1 else None
            text = getattr(summary, "text", "") if summary is not None else ""
            if text:
                chat.messages = [UserMessage(text=f"{COMPACT_PREFIX}\n\n{text}", content_id=content_id)]
                self._note(chat, "Chat compacted: the summary above replaces the earlier history.")
                engine.hooks.chat.after_compact(chat, "manual", text)

        self._start_turn(chat, provider, info, chat.behavior or engine.selected_behavior,
                         UserMessage(text=request, content_id=content_id), with_tools=False,
                         on_success=replace_history, compacting=True)
        return ChatPromptResult(chat_id=chat.id, model=info.id, status="prompting")

    # -- commands and contexts -----------------------------------------------------------------------------------

    def custom_commands(self) -> dict[str, Command]:
        """The user's commands (``.eca/commands``, the global config's), by name."""
        engine = self.engine
        return {c.name: c for c in load_custom_commands(engine.workspace_folders, engine.global_config_dir)}

    def commands(self) -> list[Command]:
        """Every command a prompt may start with: built-in, custom (unless shadowing a built-in), skills (as the
        reference lists them: type ``skill``, unless a built-in or custom command has the name), plug-ins'."""
        builtin_names = {c.name for c in BUILTINS}
        custom = [c for c in self.custom_commands().values() if c.name not in builtin_names]
        plugin_commands = [c for plugin in self.engine.plugins for c in plugin.commands()]
        shadowed = self._shadowed_skills()
        skills = [Command(s.name, s.description, "skill") for s in engine_skills(self.engine).skills
                  if s.name not in shadowed]
        return [*BUILTINS, *skills, *custom, *plugin_commands]

    def _shadowed_skills(self) -> dict[str, str]:
        """Skills whose name a built-in or custom command has (that command wins): name → which command it is."""
        names = {c.name.lower(): f"the built-in command /{c.name}" for c in BUILTINS}
        for c in self.custom_commands().values():
            names.setdefault(c.name.lower(), f"the custom command /{c.name} ({c.path})")
        return {s.name: names[s.name.lower()] for s in engine_skills(self.engine).skills if s.name.lower() in names}

    def _skill_command(self, name: str) -> Skill | None:
        """The skill ``/name`` runs: none when a built-in has the name (it wins, even one another door handles)."""
        if find_command(name, BUILTINS) is not None:
            return None
        skills = engine_skills(self.engine).skills
        return next((s for s in skills if s.name == name), None) or next(
            (s for s in skills if s.name.lower() == name.lower()), None)

    def _plugin_command(self, name: str) -> tuple[Plugin, Command] | None:
        for plugin in self.engine.plugins:
            command = find_command(name, list(plugin.commands()))
            if command is not None:
                return plugin, command
        return None

    def query_commands(self, query: str) -> list[ChatCommand]:
        """``chat/queryCommands``: the commands matching what follows ``/``; one whose fields are not text (a
        plug-in's or an MCP server's) is left out rather than failing the whole answer."""
        listed = []
        for command in query_commands(query.lstrip("/"), self.commands()):
            try:
                listed.append(chat_command(command))
            except ValidationError:
                log.warning("command %r left out of chat/queryCommands: not a valid command", command.name)
        return listed

    async def query_context(self, query: str, already: Sequence[ChatContext]) -> list[ChatContext]:
        """``chat/queryContext``: plug-ins' contexts, then the workspace index's matches for ``@query`` (files, then
        code symbols from the content index when it is open)."""
        engine = self.engine
        extra: list[JsonObject] = []
        for plugin in engine.plugins:
            try:
                extra += await plugin.query_contexts(query, already)
            except Exception:
                log.exception("context query of %s failed", plugin.name)
        if engine.index is None:
            return context_models(extra)
        return await query_context(query, index=engine.index, already=already, extra=extra,
                                   code_index=engine.code_index)

    async def query_files(self, query: str) -> list[ChatContext]:
        """``chat/queryFiles``: the workspace files matching ``query`` (the file part of ``chat/queryContext``)."""
        engine = self.engine
        if engine.index is None:
            return []
        return await query_context(query, index=engine.index, already=[], files_only=True)

    async def read_plugin_context(self, context: Any) -> str:
        """The text of an MCP resource context, from the plug-in that provides it."""
        for plugin in self.engine.plugins:
            text = await plugin.read_context(context)
            if text is not None:
                return text
        raise LookupError("no MCP server provides this resource (is the server running?)")
