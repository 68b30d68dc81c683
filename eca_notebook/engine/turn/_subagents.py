"""Subagents: the engine's side of the ``spawn_agent`` tool (``tools/subagent.py``), as the reference server has it.

A parent chat's model calls ``spawn_agent(agent, task, activity)``; the subagent then works in a chat of its own
(``subagent-<uuid>``): the task is its user message, the agent's system prompt, tools (never ``spawn_agent``: no
nesting) and ``toolCall`` approval rules apply, its tool calls ask the user with its own chat id, and ``maxSteps``
bounds its rounds (the last round offers no tools, so it must answer). Every ``chat/contentReceived`` of that chat
carries ``parentChatId``; the parent's call carries :class:`~eca_notebook.protocol.SubagentDetails`, sent again on
``toolCallRunning`` at each step. The subagent's final answer is the call's result.

Why its own chat and not the parent's: the parent's context keeps only the answer (not the search that found it),
and the subagent starts with a fresh context window. A subagent chat is never saved as a chat of its own nor listed
by ``chat/list``: what it showed is saved inside the parent's record (``Chat.subagent_contents``) and ``chat/open`` of
the parent replays it with ``parentChatId`` (``_chatbook.py``); deleting the parent forgets it. Stopping the parent
stops it (its waiting approvals end as rejected) and the parent's call ends as stopped. A parent turn spawns at most
``subagents.maxPerTurn`` subagents (default 8); beyond, the tool answers with an error the model can read.

Hooks: ``subagentStart`` before the subagent's first request (``additionalContext`` is added to the task,
``continue: false`` stops it), ``subagentPostRequest`` after it answered (instead of ``postRequest``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..._text import visible
from ...plugins import BasePlugin
from ...protocol import ProgressContent, SubagentDetails, TextContent, ToolCallRunningContent
from ...providers.base import AssistantMessage, Provider, ToolCall, ToolSpec, UserMessage
from ...tools.base import Tool, ToolResult, tool_server
from ...tools.subagent import SPAWN_AGENT, SpawnAgentTool, SpawnRequest, SubagentInfo
from ..chats import SUBAGENT_PREFIX, Chat
from ..config import ModelInfo
from ..models import UnknownModel
from ..workspace import Agents
from ._approval import hidden_tools, selector_matches
from ._host import TurnHost
from ._toolcall import NATIVE_SERVER, ToolCallRunner, llm_tool_name
from ._turn import Turn

__all__ = ["DEFAULT_MAX_PER_TURN", "Subagent", "Subagents", "SubagentsHost", "SubagentsPlugin"]

log = logging.getLogger(__name__)

DEFAULT_MAX_PER_TURN = 8
_SPAWN_KEY = f"{NATIVE_SERVER}__{SPAWN_AGENT}"


@dataclass(frozen=True)
class Subagent:
    """A subagent as this module uses it (from the engine's agents, ``_agents.py``)."""

    id: str
    description: str
    system_prompt: str | None = None
    default_model: str | None = None
    max_steps: int | None = None

    def info(self) -> SubagentInfo:
        return SubagentInfo(name=self.id, description=self.description, model=self.default_model,
                            max_steps=self.max_steps)


class SubagentsHost(TurnHost, Protocol):
    """What the subagents use of the engine: a turn's needs (a subagent's task runs as a turn in a chat of its own)
    and the chats in memory, where a subagent's chat lives beside its parent's."""

    @property
    def chats(self) -> dict[str, Chat]: ...


def subagents_for(agents: Agents, parent: str | None) -> list[Subagent]:
    """The subagents the agent ``parent`` may spawn."""
    return [Subagent(id=s.id, description=s.description or s.id, system_prompt=s.system_prompt,
                     default_model=s.default_model, max_steps=s.max_steps)
            for s in agents.subagents(parent) if s.description or s.system_prompt]


class _SubagentTurn(Turn):
    """A turn that counts its steps (rounds) and tells the parent's call at each one."""

    def __init__(self, *args: Any, on_step: Callable[[int], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.on_step = on_step
        self.step = 0
        self.ok: bool | None = None  # None: stopped (or still running)

    async def _round(self) -> list[ToolCall]:
        self.step += 1
        self.on_step(self.step)
        return await super()._round()

    async def run(self) -> bool:
        self.ok = await super().run()
        return self.ok


class Subagents:
    """The engine's subagents: what ``spawn_agent`` may spawn from a chat, and the running of one."""

    def __init__(self, engine: SubagentsHost) -> None:
        self.engine = engine
        self.tool = SpawnAgentTool(self)
        self.children: dict[str, list[str]] = {}  # parent chat id → its subagent chats (in memory)
        self._spawned: dict[str, tuple[object, int]] = {}  # parent chat id → (its running task, spawned in it)

    # -- what a chat may spawn -----------------------------------------------------------------------------------

    def max_per_turn(self) -> int:
        """``subagents.maxPerTurn`` (default 8): how many subagents one parent turn may spawn."""
        raw = (self.engine.config.model_extra or {}).get("subagents")
        value = raw.get("maxPerTurn") if isinstance(raw, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else DEFAULT_MAX_PER_TURN

    def _agent_of(self, chat_id: str | None) -> str:
        chat = self.engine.chats.get(chat_id) if chat_id else None
        return (chat.behavior if chat is not None and chat.behavior else None) or self.engine.selected_behavior

    def nested(self, chat_id: str | None) -> bool:
        """The chat is itself a subagent's: subagents do not spawn subagents."""
        chat = self.engine.chats.get(chat_id) if chat_id else None
        return bool(chat_id and chat_id.startswith(SUBAGENT_PREFIX)) or (chat is not None
                                                                         and chat.parent_chat_id is not None)

    def available(self, chat_id: str | None) -> list[SubagentInfo]:
        """The subagents the chat's agent may spawn (none inside a subagent)."""
        if self.nested(chat_id):
            return []
        return [s.info() for s in subagents_for(self.engine.agents, self._agent_of(chat_id))]

    def model_for(self, chat_id: str | None, info: SubagentInfo, requested: str | None) -> str:
        """The requested model (ValueError when it is not available), else the agent's ``defaultModel`` (a bare
        name is looked up at the parent's provider), else the parent chat's model."""
        engine = self.engine
        models = engine.registry.models()
        if requested:
            if requested not in models:
                raise ValueError(f"model '{requested}' is not available. Available models: {', '.join(models)}")
            return requested
        chat = engine.chats.get(chat_id) if chat_id else None
        parent_model = (chat.model if chat is not None else None) or engine.selected_model \
            or engine.registry.default_model() or ""
        if info.model:
            if info.model in models:
                return info.model
            provider = parent_model.split("/", 1)[0] if "/" in parent_model else ""
            if provider and f"{provider}/{info.model}" in models:
                return f"{provider}/{info.model}"
        return parent_model

    def offered(self, behavior: str, offered: dict[str, Tool]) -> dict[str, Tool]:
        """A turn's tools with ``spawn_agent`` as this agent may use it: dropped when it may spawn no subagent,
        else described with the ones it may spawn (the Toolbox calls this for every agent)."""
        if _SPAWN_KEY not in offered:
            return offered
        agents = [s.info() for s in subagents_for(self.engine.agents, behavior)]
        spec = self.engine.agents.get(behavior)
        if not agents or (spec is not None and not spec.primary):
            return {k: t for k, t in offered.items() if k != _SPAWN_KEY}
        return {k: (self.tool.for_agents(agents) if k == _SPAWN_KEY else t) for k, t in offered.items()}

    def child_tools(self, agent: str) -> dict[str, Tool]:
        """A subagent's tools: its agent's (disabledTools and bare deny rules applied), never ``spawn_agent``."""
        engine = self.engine
        tools = engine.toolbox.offered_tools(agent)
        agents = engine.agents
        identities = [(tool_server(t), t.name) for t in tools.values()]
        hidden = set(hidden_tools(agents.tool_call_for(agent).approval, identities))
        hidden |= {(server, name) for server, name in identities
                   for selector in agents.disabled_tools_for(agent) if selector_matches(selector, server, name)}
        return {k: t for k, t in tools.items()
                if (tool_server(t), t.name) not in hidden and k != _SPAWN_KEY and t.name != SPAWN_AGENT}

    def system_prompt(self, agent: Subagent) -> str:
        """The engine's prompt for the agent (rules, tool guidance), with the agent's own instructions."""
        prompt = self.engine.toolbox.system_prompt(agent.id, subagent=True)
        spec = self.engine.agents.get(agent.id)
        own_in_prompt = spec is not None and spec.system_prompt == agent.system_prompt  # (rendered as a template)
        if agent.system_prompt and not own_in_prompt and agent.system_prompt not in prompt:
            prompt += "\n\n" + agent.system_prompt
        return prompt

    def listing(self, chat: Chat | None) -> str:
        """``/subagents``: what the chat's agent may spawn, with description, model, max steps and tools."""
        agent = self._agent_of(chat.id if chat is not None else None)
        if chat is not None and chat.parent_chat_id is not None:
            return "A subagent cannot spawn subagents."
        found = subagents_for(self.engine.agents, agent)
        if not found:
            return f"No subagents available to the '{agent}' agent."
        lines = [f"Subagents available to the '{agent}' agent (spawned with the spawn_agent tool, at most "
                 f"{self.max_per_turn()} per prompt):", ""]
        for sub in found:
            model = self.model_for(chat.id if chat is not None else None, sub.info(), None) or "(the chat's)"
            tools = ", ".join(sorted(t.name if tool_server(t) == NATIVE_SERVER else f"{tool_server(t)}__{t.name}"
                                     for t in self.child_tools(sub.id).values())) or "(none)"
            lines += [f"{sub.id} — {sub.description}",
                      f"  - model: {model}",
                      f"  - max steps: {sub.max_steps if sub.max_steps is not None else 'no limit'}",
                      f"  - tools: {tools}", ""]
        return "\n".join(lines).rstrip()

    # -- running one ---------------------------------------------------------------------------------------------

    def forget(self, parent_chat_id: str) -> None:
        """The parent is gone (``chat/delete``): so are its subagents' chats."""
        for child_id in self.children.pop(parent_chat_id, []):
            child = self.engine.chats.pop(child_id, None)
            if child is not None and child.task is not None and not child.task.done():
                child.task.cancel()
        self._spawned.pop(parent_chat_id, None)

    def _count(self, parent: Chat) -> int | None:
        """Count one more subagent of the parent's running turn; None when over the limit."""
        turn = parent.task
        owner, count = self._spawned.get(parent.id, (None, 0))
        if owner is not turn:
            count = 0
        if count >= self.max_per_turn():
            return None
        self._spawned[parent.id] = (turn, count + 1)
        return count + 1

    async def spawn(self, request: SpawnRequest) -> ToolResult:
        """Run a subagent's chat to its end and return its last answer as the ``spawn_agent`` result."""
        engine = self.engine
        parent = engine.chats.get(request.parent_chat_id)
        if parent is None:
            return ToolResult(output=f"{SPAWN_AGENT}: the parent chat is gone", error=True)
        if self.nested(parent.id):
            return ToolResult(output=f"{SPAWN_AGENT}: agents cannot spawn other agents (nesting is not allowed)",
                              error=True)
        found = {s.id: s for s in subagents_for(engine.agents, self._agent_of(parent.id))}
        agent = found.get(request.agent)
        if agent is None:
            return ToolResult(output=f"{SPAWN_AGENT}: agent '{request.agent}' not found or not available. "
                                     f"Available agents: {', '.join(found) or 'none'}", error=True)
        if self._count(parent) is None:
            return ToolResult(output=f"{SPAWN_AGENT}: this prompt already spawned {self.max_per_turn()} subagents, "
                                     "the limit per prompt (subagents.maxPerTurn). Do the rest yourself or answer "
                                     "with what you have.", error=True)
        try:
            model_id = self.model_for(parent.id, agent.info(), request.model)
            provider, info = engine.registry.resolve(model_id)
        except (ValueError, UnknownModel) as exc:
            return ToolResult(output=f"{SPAWN_AGENT}: no model for the subagent ({exc})", error=True)

        child = Chat(id=request.child_chat_id, title=f"{agent.id}: {request.activity or request.task[:40]}",
                     model=info.id, behavior=agent.id, parent_chat_id=parent.id)
        engine.chats[child.id] = child
        self.children.setdefault(parent.id, []).append(child.id)
        details = SubagentDetails(subagent_chat_id=child.id, model=info.id, agent_name=agent.id,
                                  max_steps=agent.max_steps, step=0)

        task = request.task
        if agent.max_steps:
            task += (f"\n\nIMPORTANT: You have a maximum of {agent.max_steps} steps to complete this task. Be "
                     "efficient and provide a clear summary of your findings before reaching the limit.")
        if engine.hooks.has("subagentStart"):
            outcome = await engine.hooks.run("subagentStart", {"parent_chat_id": parent.id}, chat=child)
            if outcome.stopped_by:
                why = f": {outcome.stop_reason}" if outcome.stop_reason else "."
                return ToolResult(output=f"Agent '{agent.id}' was stopped by hook '{outcome.stopped_by}'{why}",
                                  error=True, details=details.dump())
            for context in outcome.additional_context:
                task += f"\n\n<additionalContext>\n{context}\n</additionalContext>"
        engine.emit_content(child, "user", TextContent(text=task + "\n", content_id=str(uuid.uuid4())))

        def on_step(step: int) -> None:
            details.step = step
            engine.emit_content(parent, "assistant", ToolCallRunningContent(
                origin="native", id=request.tool_call_id, name=SPAWN_AGENT, server=NATIVE_SERVER,
                arguments=request.arguments, summary=_summary(request), details=details.model_copy()))

        turn = self._turn(child, parent, provider, info, agent, task, on_step)
        engine.chat_book.start(child, turn)
        running = child.task
        assert running is not None
        try:
            await asyncio.wait({running})  # (not `await running`: a stop of the parent must reach us, see below)
        except asyncio.CancelledError:  # the parent was stopped: so is the subagent (its approvals end rejected)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            raise
        return self._result(child, parent, agent, turn, details)

    def _turn(self, child: Chat, parent: Chat, provider: Provider, info: ModelInfo, agent: Subagent, task: str,
              on_step: Callable[[int], None]) -> _SubagentTurn:
        """The subagent's turn: as a prompt's (``_prompting.py``), with the agent's tools, approvals and steps."""
        engine = self.engine
        child.messages.append(UserMessage(text=task))
        offered = self.child_tools(agent.id)
        tool_call = engine.agents.tool_call_for(agent.id)
        context = engine.toolbox.tool_context()
        delegate = engine.chat_delegates.get(parent.id)  # the parent's door applies the subagent's changes too
        if delegate is not None:
            context = delegate.apply(context)
        runner = ToolCallRunner(
            chat_id=child.id, tools=offered, context=context, approval_config=tool_call.approval,
            session=engine.session_approvals, pending=engine.pending_approvals, undo_log=engine.undo_log,
            hooks=engine.hooks.chat.tool_hooks(child),
            trusted=lambda: parent.trust,  # the parent chat's trust mode covers its subagents (as the reference)
            emit=lambda role, content: engine.emit_content(child, role, content),
            progress=lambda state, text: engine.emit_content(
                child, "system", ProgressContent(state="finished" if state == "finished" else "running", text=text)),
            unavailable={t.name: f"{t.name} is not available to the '{agent.id}' subagent: do not call it."
                         for key, t in engine.toolbox.all_tools().items() if key not in offered},
        )
        specs = [ToolSpec(llm_tool_name(t), t.description, t.parameters) for t in offered.values()]
        steps = agent.max_steps
        return _SubagentTurn(child, provider, info, self.system_prompt(agent), engine.emit_content, tools=specs,
                             runner=runner, max_rounds=steps or tool_call.max_rounds,
                             tool_rounds=max(steps - 1, 0) if steps else None, on_step=on_step)

    def _result(self, child: Chat, parent: Chat, agent: Subagent, turn: _SubagentTurn,
                details: SubagentDetails) -> ToolResult:
        """The parent's call result: the subagent's last answer (or why there is none)."""
        answer = next((m.text for m in reversed(child.messages) if isinstance(m, AssistantMessage) and m.text.strip()),
                      None)
        wire = details.dump()
        if turn.ok is None:
            partial = f"\n\n## Partial result\n\n{answer}" if answer else ""
            return ToolResult(output=f"## Agent '{agent.id}' Stopped\n\nThe subagent was stopped before it finished."
                                     f"{partial}", error=True, details=wire)
        if not turn.ok:
            notes = [text for c in child.contents
                     if c.get("role") == "system" and (c.get("content") or {}).get("type") == "text"
                     and isinstance(text := c["content"].get("text", ""), str)]
            why = notes[-1].strip() if notes else "The subagent's prompt failed."
            partial = f"\n\n## Partial result\n\n{answer}" if answer else ""
            return ToolResult(output=f"## Agent '{agent.id}' Failed\n\n{why}{partial}", error=True, details=wire)
        text = answer or "Agent completed without producing output."
        self.engine.hooks.spawn("subagentPostRequest", {"response": text, "follow_up_active": False,
                                                        "parent_chat_id": parent.id}, chat=child)
        return ToolResult(output=f"## Agent '{agent.id}' Result\n\n{text}", details=wire)


def _summary(request: SpawnRequest) -> str:
    return visible(f"{request.agent}: {request.activity}" if request.activity else request.agent)


class SubagentsPlugin(BasePlugin):
    """Offers ``spawn_agent`` while some agent may spawn a subagent; :meth:`Subagents.offered` then keeps it only
    for the agents that may, described with their subagents."""

    name = "subagents"

    def __init__(self, subagents: Subagents) -> None:
        self.subagents = subagents

    def tools(self) -> Sequence[Tool]:
        """``spawn_agent`` when any agent is a subagent, else nothing."""
        engine = self.subagents.engine
        if any(s.subagent for s in (engine.agents.get(i) for i in engine.agents.ids()) if s is not None):
            return [self.subagents.tool]
        return []

