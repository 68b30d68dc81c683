"""The agent's plan through ``eca-notebook acp``: each ``update_plan`` is one ACP ``plan`` update, live and when a
saved session is loaded again (the replay of the ``plan`` contents)."""

from __future__ import annotations

import json

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from .test_connection import Client, start

pytestmark = pytest.mark.e2e


def plan_call(call_id: str, statuses: list[str]) -> ToolCall:
    entries = [{"content": "Read notes", "status": statuses[0], "files": ["notes.txt"]},
               {"content": "Answer", "status": statuses[1], "priority": "low"}]
    return ToolCall(call_id, "eca__update_plan", json.dumps({"entries": entries}))


async def test_each_plan_is_one_update_and_a_loaded_session_replays_them(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([Text("Planning."), plan_call("p1", ["in_progress", "pending"])]),
                Reply([plan_call("p2", ["completed", "completed"])]),
                Reply.text("Done."))
    first = Client()
    async with spawn_agent(first) as (conn, _):
        session_id = await start(conn, first, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Read my notes")])
    assert response.stop_reason == "end_turn"
    live = first.of("plan")
    assert [[(e["content"], e["status"], e["priority"]) for e in p["entries"]] for p in live] == [
        [("Read notes (notes.txt)", "in_progress", "medium"), ("Answer", "pending", "low")],
        [("Read notes (notes.txt)", "completed", "medium"), ("Answer", "completed", "low")],
    ]
    # the plan calls are ordinary tool calls too ("think"), which finish before their plan is sent
    updates = [u["sessionUpdate"] for u in first.updates]
    assert updates.index("plan") > updates.index("tool_call_update")
    assert not first.permissions

    second = Client()
    async with spawn_agent(second) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=second.capabilities())
        await conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
    assert second.of("plan") == live
