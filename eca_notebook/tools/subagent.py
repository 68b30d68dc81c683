"""``spawn_agent``: the model hands a self-contained task to a subagent, which works in a chat of its own and
answers with a summary — the call's result.

Why a subagent: a multi-step search or a side task fills the parent's context with tool calls it no longer needs
once it has the answer; the subagent's own chat keeps them out, and its own context window is fresh. The subagent
runs with its agent's tools (never ``spawn_agent``: no nesting) and approval rules, its calls ask the user in its
own chat, and it stops with the parent.

The tool knows nothing of the engine: what it needs — the subagents a chat may spawn and the running of one — is
injected as a :class:`SubagentAccess` (the engine's ``_subagents.py``), which keeps the layering one-way.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from pydantic import Field

from ..protocol import JsonObject
from ._args import ToolArgs, json_schema, parse_args
from .base import Approval, Prepared, ToolContext, ToolResult

__all__ = ["ACTIVITY_MAX", "SPAWN_AGENT", "SpawnAgentArgs", "SpawnAgentTool", "SpawnRequest", "SubagentAccess",
           "SubagentInfo", "describe", "normalize_activity"]

SPAWN_AGENT = "spawn_agent"
ACTIVITY_MAX = 40  # characters of the UI label, as the reference

DESCRIPTION = """Spawn an isolated sub-agent to handle complex, multi-step tasks without polluting your current context.

Use for: Codebase exploration, codebase editing and refactoring, focused research, or delegating specialized tasks.
Proactive use: If the specific agent's description suggests proactive use, use it whenever the task complexity justifies delegation.
Restrictions: Avoid sub-agents for simple tasks, file reading, or basic lookups. Delegate ONLY if the task is complex, requires multi-step processing, or benefits from summarization and token saving.
Agent Limits: Sub-agents cannot spawn other agents (no nesting) and have access only to their configured tools.

Strict rules for arguments:
- 'task': Provide a highly detailed prompt. Explicitly state whether it should write/edit code or just research, how to verify its work, and exactly what specific information it must return to you.
- 'activity': Must be a concise 3-4 word label for the UI (e.g., "exploring codebase", "refactoring module").
- 'model': NEVER include this argument if the user hasn't explicitly requested a specific model."""  # noqa: E501 — the reference's text


@dataclass(frozen=True)
class SubagentInfo:
    """A subagent as the parent's model and the user see it."""

    name: str
    description: str
    model: str | None = None  # the agent's own model (None: the parent's)
    max_steps: int | None = None


@dataclass(frozen=True)
class SpawnRequest:
    """One ``spawn_agent`` call, for :meth:`SubagentAccess.spawn`."""

    parent_chat_id: str
    tool_call_id: str
    child_chat_id: str
    agent: str
    task: str
    activity: str | None
    model: str | None
    arguments: JsonObject


class SubagentAccess(Protocol):
    """What ``spawn_agent`` needs from the engine."""

    def available(self, chat_id: str | None) -> list[SubagentInfo]:
        """The subagents this chat's agent may spawn (empty inside a subagent's own chat: no nesting)."""
        ...

    def nested(self, chat_id: str | None) -> bool:
        """Whether this chat is itself a subagent's."""
        ...

    def model_for(self, chat_id: str | None, info: SubagentInfo, requested: str | None) -> str:
        """The model the subagent will use (shown on the call before it runs)."""
        ...

    async def spawn(self, request: SpawnRequest) -> ToolResult:
        """Run the subagent to its end; its final answer (or why there is none) is the result."""
        ...


class SpawnAgentArgs(ToolArgs):
    agent: str = Field(min_length=1, description="Name of the agent to spawn.")
    task: str = Field(min_length=1, description="Clear description of what the agent should accomplish.")
    activity: str | None = Field(
        None, description="Concise label (max 3-4 words) shown in the UI while the agent runs, e.g. "
                          "\"exploring codebase\".")
    model: str | None = Field(
        None, description="Optional full model name (provider/model) for this agent. Only when the user asked for "
                          "a specific model.")


def normalize_activity(activity: str | None) -> str | None:
    """The UI label on one line, at most :data:`ACTIVITY_MAX` characters (``…`` beyond), None when blank."""
    text = " ".join((activity or "").split())
    if not text:
        return None
    return text if len(text) <= ACTIVITY_MAX else text[:ACTIVITY_MAX] + "..."


def describe(agents: list[SubagentInfo]) -> str:
    """The tool's description with the subagents the model may pick (``name: description``)."""
    listing = "\n".join(f"- {a.name}: {a.description}" for a in agents)
    return f"{DESCRIPTION}\n\nAvailable agents:\n{listing}" if listing else DESCRIPTION


class SpawnAgentTool:
    """The ``spawn_agent`` native tool. :meth:`for_agents` gives the copy a turn offers, whose description lists
    the subagents that chat's agent may spawn."""

    name = SPAWN_AGENT
    mutates = False  # the subagent's own tools decide (and ask) for themselves
    default_approval: Approval = "allow"

    def __init__(self, access: SubagentAccess, agents: list[SubagentInfo] | None = None) -> None:
        self.access = access
        self.description = describe(agents or [])
        self.parameters: JsonObject = json_schema(SpawnAgentArgs)

    def __repr__(self) -> str:
        return f"<SpawnAgentTool {self.name}>"

    def for_agents(self, agents: list[SubagentInfo]) -> SpawnAgentTool:
        return SpawnAgentTool(self.access, agents)

    def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared:
        parsed, error = parse_args(self.name, SpawnAgentArgs, args)
        if parsed is None:
            return Prepared(args=dict(args) if isinstance(args, dict) else {}, summary="Spawning agent", error=error)
        shown = parsed.model_dump(exclude_none=True)
        activity = normalize_activity(parsed.activity)
        if activity is not None:
            shown["activity"] = activity
        else:
            shown.pop("activity", None)
        summary = f"{parsed.agent}: {activity}" if activity else parsed.agent
        if self.access.nested(ctx.chat_id):
            return Prepared(args=shown, summary=summary,
                            error=f"{self.name}: agents cannot spawn other agents (nesting is not allowed)")
        agents = self.access.available(ctx.chat_id)
        info = next((a for a in agents if a.name == parsed.agent), None)
        if info is None:
            names = ", ".join(a.name for a in agents) or "none"
            return Prepared(args=shown, summary=summary,
                            error=f"{self.name}: agent '{parsed.agent}' not found or not available. Available "
                                  f"agents: {names}")
        try:
            model = self.access.model_for(ctx.chat_id, info, parsed.model)
        except ValueError as exc:
            return Prepared(args=shown, summary=summary, error=f"{self.name}: {exc}")
        child = f"subagent-{uuid.uuid4()}"
        details: JsonObject = {"type": "subagent", "subagentChatId": child, "model": model, "agentName": info.name,
                   "maxSteps": info.max_steps, "step": 0}
        if info.max_steps is None:
            del details["maxSteps"]
        return Prepared(args=shown, summary=summary, details=details, state=child)

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        if prepared.error:
            return ToolResult(output=prepared.error, error=True)
        args = prepared.args
        request = SpawnRequest(parent_chat_id=ctx.chat_id or "", tool_call_id=ctx.tool_call_id or "",
                               child_chat_id=str(prepared.state), agent=str(args["agent"]), task=str(args["task"]),
                               activity=args.get("activity"), model=args.get("model"), arguments=dict(args))
        return await self.access.spawn(request)
