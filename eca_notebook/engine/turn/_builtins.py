"""Built-in chat commands (``/doctor``, ``/costs``, …): what each one shows, computed from the engine's state.

Commands arrive as ordinary ``chat/prompt`` messages (``/name args``), so every door gets them for free. Each
function here returns the text to show; the prompt pipeline (``_prompting.py``) wraps it in the usual user echo →
system text → progress finished sequence, asking :class:`BuiltinCommands` for the text. ``/compact`` is the
exception — it needs the model — and, with ``/skills`` (listed beside the commands that shadow them), stays in the
pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..._redact import redact
from ..._text import visible
from ..._version import __version__
from ...protocol import ChatListParams, ChatSummary, ConfigUpdatedParams
from ...tools.base import llm_name
from ..chats import Chat, ChatHost, export_chat, fork_command, import_chat, init_prompt, model_command
from ..config import mask_secret
from ..index import WorkspaceIndex
from ..workspace import Hooks
from . import _introspect, _small_model
from ._host import ReportHost
from ._turn import format_cost

if TYPE_CHECKING:
    from ._notebooks import UndoLog
    from ._subagents import Subagents

__all__ = ["BuiltinCommands", "BuiltinHost", "costs", "doctor", "prompt_show", "repo_map_show", "resume"]


def costs(chat: Chat, selected_model: str | None) -> str:
    usage = chat.usage
    lines = [
        f"Chat: {chat.title or chat.id}",
        f"Model: {chat.model or selected_model or '(none)'}",
    ]
    if not usage.session_tokens:  # zeros would read as a measurement
        return "\n".join([*lines, "Tokens: none reported by the provider yet"])
    lines += [
        f"Input tokens: {usage.input_tokens:,}",
        f"Output tokens: {usage.output_tokens:,}",
    ]
    if usage.cache_read_tokens or usage.cache_write_tokens:
        lines.append(f"Cache read / write tokens: {usage.cache_read_tokens:,} / {usage.cache_write_tokens:,}")
    lines.append(f"Total tokens: {usage.session_tokens:,}")
    cost = format_cost(usage.cost)
    lines.append(f"Cost: ${cost}" if cost is not None else "Cost: unknown (no price for this model)")
    return "\n".join(lines)


def prompt_show(engine: ReportHost, chat: Chat) -> str:
    behavior = chat.behavior or engine.selected_behavior
    toolbox = engine.toolbox
    tools = ", ".join(sorted(toolbox.offered_tools(behavior))) or "(none)"
    info = engine.registry.model_infos().get(chat.model or engine.selected_model or "")
    if info is not None and info.compact:
        mode = engine.config.local_model.tools
        when = {
            "auto": f"offered only when a prompt asks to read, change or run something in the workspace (a subset of "
                    f"{tools}), adding to the prompt: {_small_model.COMPACT_TOOLS.strip()}",
            "always": f"always offered: {tools}",
            "never": "never offered",
        }[mode]
        return (f"System prompt (agent {behavior}, small model {info.id}):\n\n"
                f"{toolbox.compact_system_prompt(behavior, tools=False, info=info)}\n\n"
                f"Tools (localModel.tools = {mode}): {when}")
    return f"System prompt (agent {behavior}):\n\n{toolbox.system_prompt(behavior)}\n\nTools offered: {tools}"


def repo_map_show(index: WorkspaceIndex | None) -> str:
    if index is None:
        return "No workspace folder: there is no repository map."
    if not index.ready:
        return "The workspace index is still being built; try again in a moment."
    return index.repo_map()


def resume(chat: Chat, argument: str, saved: Sequence[ChatSummary], load: Callable[[str], Chat | None]) -> str:
    """``/resume`` lists the ``saved`` chats (``chat/list``'s, newest first); ``/resume N`` (or an id) copies that
    chat's history, as ``load`` reads it, into this one."""
    others = [c for c in saved if c.id != chat.id]
    if not others:
        return "There are no saved chats to resume."
    argument = argument.strip()
    if not argument:
        rows = [f"{i}. {c.title or c.id} ({c.message_count} messages)" for i, c in enumerate(others, 1)]
        return "Saved chats — resume one with /resume <number>:\n" + "\n".join(rows)
    chosen = None
    if argument.isdigit() and 1 <= int(argument) <= len(others):
        chosen = others[int(argument) - 1]
    else:
        chosen = next((c for c in others if c.id == argument), None)
    if chosen is None:
        return f"No saved chat '{argument}'. Use /resume to list them."
    source = load(chosen.id)
    if source is None:
        return f"Could not load chat '{argument}'."
    chat.messages = list(source.messages)
    chat.model = chat.model or source.model
    return f"Resumed '{source.title or source.id}': its {len(source.messages)} messages are now this chat's history."


def _custom_tools(engine: ReportHost) -> list[str]:
    """The ``customTools`` section of ``/doctor``: each tool with its command and whether the selected agent is
    offered it, those a workspace declares that wait for its trust, and the entries that are not tools."""
    tools, problems = engine.toolbox.custom_tools()
    held = [(workspace.folder, name, command) for workspace in engine.trust.held()
            for name, command in workspace.tools.items()]
    if not tools and not problems and not held:
        return []
    offered = engine.toolbox.offered_tools(engine.selected_behavior)
    lines = ["", "Custom tools:"]
    for tool in tools:
        state = "" if llm_name(tool) in offered else f" (not offered to agent {engine.selected_behavior})"
        lines.append(f"  {llm_name(tool)}: {visible(tool.spec.command)}{state}")
    lines += [f"  {visible(name)}: held until you trust {folder} (/trust) — {visible(command)}"
              for folder, name, command in held]
    lines += [f"  problem: {problem}" for problem in problems]
    return lines


def doctor(engine: ReportHost) -> str:
    """A plain report for ``/doctor`` and support requests: no secret is ever printed in full."""
    lines = [f"eca-notebook {__version__}", "", "Workspaces:"]
    lines += [f"  {p}" for p in engine.workspace_folders] or ["  (none)"]
    lines += ["", "Config sources:"]
    for source in engine.loaded.sources:
        state = "applied" if source.applied else "not applied"
        where = f" ({source.path})" if source.path else ""
        problem = f" — {source.problem}" if source.problem else (f" ({source.note})" if source.note else "")
        lines.append(f"  {source.name}{where}: {state}{problem}")
    agents = engine.agents
    lines += ["", f"Agents (selected: {engine.selected_behavior}):"]
    lines += [f"  {line}" for line in agents.describe()]
    lines += [f"  problem: {p}" for p in engine.problems if p in agents.problems or p.startswith("defaultAgent")]
    lines += ["", f"Default model: {engine.registry.default_model() or '(none)'}",
              f"Selected model: {engine.selected_model or '(none)'}", "", "Providers:"]
    for provider in engine.registry.providers.values():
        auth = "usable" if engine.registry.usable(provider) else "not configured"
        key = f", key {mask_secret(provider.key)} from {provider.key_source}" if provider.key else ""
        lines.append(f"  {provider.id} ({provider.api}, {provider.url}): {auth}{key}")
    if engine.mcp is not None:
        lines += ["", "MCP servers:"]
        for server in engine.mcp.statuses():
            error = engine.mcp.error(server.name)
            lines.append(f"  {server.name}: {server.status}" + (f" — {error}" if error else ""))
    lines += _custom_tools(engine)
    status = engine.registry.local_status
    embedded = status.message if status is not None else "disabled (localModel: false)"
    lines += ["", "Embedded model:", f"  {embedded}"]
    if engine.store is not None:
        lines += ["", f"Saved chats: {engine.store.root}"]
    else:
        lines += ["", "Saved chats: disabled (pureConfig)"]
    return redact("\n".join(lines))


class BuiltinHost(ReportHost, ChatHost, Protocol):
    """What the built-in commands read and change: the reports' view of the engine, the chats (``/resume``,
    ``/fork``, ``/import``, ``/export``), the file index (``/repo-map-show``), the hooks, subagents and trust they
    list, and the model selection (``/model``)."""

    @property
    def index(self) -> WorkspaceIndex | None: ...

    @property
    def hooks(self) -> Hooks: ...

    @property
    def subagents(self) -> Subagents: ...

    @property
    def undo_log(self) -> UndoLog:
        """A fork copies no undo; a rollback of the chat reverts through these (the chats' RewindHost)."""
        ...

    def list_chats(self, params: ChatListParams | None = None) -> list[ChatSummary]:
        """``chat/list``: the saved chats, newest first."""
        ...

    def select_model(self, model: str, chat_id: str | None = None) -> None: ...

    def config_updated(self) -> ConfigUpdatedParams:
        """``config/updated``, which every client's model picker follows."""
        ...


class BuiltinCommands:
    """The built-in commands that answer from the engine's state, for the prompt pipeline."""

    def __init__(self, engine: BuiltinHost) -> None:
        self.engine = engine

    def init_prompt(self) -> str:
        """``/init``'s prompt: the model writes AGENTS.md (an approved change)."""
        return init_prompt(self.engine)

    async def run(self, chat: Chat, name: str, argument: str) -> str | None:
        """The text ``/name argument`` shows in ``chat``; ``""`` when the command said all it had to (``/fork``
        tells the original itself); None when ``name`` (lower-cased) is not one of these commands."""
        engine = self.engine
        if name == "doctor":
            return doctor(engine)
        if name == "costs":
            return costs(chat, engine.selected_model)
        if name == "prompt-show":
            return prompt_show(engine, chat)
        if name == "repo-map-show":
            return repo_map_show(engine.index)
        if name == "resume":
            return resume(chat, argument, engine.list_chats(), engine.get_chat)
        if name == "rules":
            return _introspect.rules_show(engine.workspace_folders, engine.global_config_dir)
        if name == "config":
            return _introspect.config_show(engine)
        if name == "context":
            return _introspect.context_show(engine, chat)
        if name == "hooks":
            return engine.hooks.listing()
        if name == "subagents":
            return engine.subagents.listing(chat)
        if name == "trust":
            return await engine.trust.command(argument)
        if name == "model":
            return model_command(engine, chat, argument)
        if name == "export":
            return export_chat(engine, chat, argument)
        if name == "import":
            return import_chat(engine, chat, argument)
        if name == "fork":  # (done: the original was already told "Chat forked to: …")
            return fork_command(engine, chat) or ""
        return None
