"""``spawn_agent`` on its own (tools/subagent.py), with a stand-in for the engine's side: argument checks, the
description listing the subagents, the details shown before the call runs, and the request handed to the engine."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.tools.base import ToolContext, ToolResult
from eca_notebook.tools.subagent import SpawnAgentTool, SpawnRequest, SubagentInfo, describe, normalize_activity

EXPLORER = SubagentInfo("explorer", "Searches the code.", max_steps=5)


class Access:
    def __init__(self) -> None:
        self.spawned: list[SpawnRequest] = []

    def available(self, chat_id: str | None) -> list[SubagentInfo]:
        return [] if self.nested(chat_id) else [EXPLORER]

    def nested(self, chat_id: str | None) -> bool:
        return bool(chat_id and chat_id.startswith("subagent-"))

    def model_for(self, chat_id: str | None, info: SubagentInfo, requested: str | None) -> str:
        if requested not in (None, "p/m2"):
            raise ValueError(f"model '{requested}' is not available")
        return requested or "p/m1"

    async def spawn(self, request: SpawnRequest) -> ToolResult:
        self.spawned.append(request)
        return ToolResult(output="## Agent 'explorer' Result\n\nfound it")


def test_activity_and_description() -> None:
    assert normalize_activity("  exploring \n the   code ") == "exploring the code"
    assert normalize_activity("   ") is None
    assert normalize_activity("x" * 50) == "x" * 40 + "..."
    assert describe([EXPLORER]).endswith("Available agents:\n- explorer: Searches the code.")
    assert "Available agents" not in describe([])


async def test_prepare_and_run(tmp_path: Path) -> None:
    access = Access()
    tool = SpawnAgentTool(access).for_agents([EXPLORER])
    assert "- explorer: Searches the code." in tool.description
    ctx = ToolContext(workspace_folders=[tmp_path], chat_id="chat-1", tool_call_id="call_1")
    prepared = tool.prepare({"agent": "explorer", "task": "find main", "activity": "finding main"}, ctx)
    assert prepared.error is None and prepared.summary == "explorer: finding main"
    child = prepared.details["subagentChatId"] if prepared.details else ""
    assert prepared.details == {"type": "subagent", "subagentChatId": child, "model": "p/m1",
                                "agentName": "explorer", "maxSteps": 5, "step": 0}
    result = await tool.run(prepared, ctx)
    assert result.output.endswith("found it")
    [request] = access.spawned
    assert (request.parent_chat_id, request.tool_call_id, request.child_chat_id) == ("chat-1", "call_1", child)
    assert (request.agent, request.task, request.activity, request.model) == ("explorer", "find main",
                                                                              "finding main", None)


def test_refusals(tmp_path: Path) -> None:
    tool = SpawnAgentTool(Access())
    ctx = ToolContext(workspace_folders=[tmp_path], chat_id="chat-1", tool_call_id="call_1")
    assert "missing required argument 'task'" in (tool.prepare({"agent": "explorer"}, ctx).error or "")
    assert "Available agents: explorer" in (tool.prepare({"agent": "x", "task": "t"}, ctx).error or "")
    assert "not available" in (tool.prepare({"agent": "explorer", "task": "t", "model": "p/zz"}, ctx).error or "")
    ctx.chat_id = "subagent-1"
    assert "nesting" in (tool.prepare({"agent": "explorer", "task": "t"}, ctx).error or "")
