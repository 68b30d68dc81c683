"""Subagents through ACP (a real third-party client): the subagent's calls are calls of the parent's session — one
that needs approval is asked there and answered in the subagent's chat — its progress is the content of the
parent's ``spawn_agent`` call, and its final answer that call's result."""

from __future__ import annotations

import json

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply

from .test_connection import Client, call, start

pytestmark = pytest.mark.e2e


async def test_subagent_progress_permission_and_answer(spawn_agent, llm, workspace, strict):
    llm.enqueue(
        Reply([call("spawn_agent", {"agent": "general", "task": "Create out.txt with 'x'",
                                    "activity": "writing a file"}, "call_parent")]),
        Reply([call("write_file", {"path": "out.txt", "content": "x\n"}, "call_child")]),
        Reply.text("Wrote out.txt."),
        Reply.text("All done."),
    )
    client = Client(answer="allow_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("make the file")])
    assert response.stop_reason == "end_turn"
    assert (workspace / "out.txt").read_text() == "x\n"
    spawn, write = client.of("tool_call")
    assert spawn["title"] == "general: writing a file" and write["kind"] == "edit"
    assert spawn["toolCallId"] != write["toolCallId"]
    [asked] = client.permissions
    assert asked["toolCall"]["toolCallId"] == write["toolCallId"]
    parent_updates = [u for u in client.of("tool_call_update") if u["toolCallId"] == spawn["toolCallId"]]
    progress = [json.dumps(u.get("content")) for u in parent_updates if u["status"] == "in_progress"]
    assert any("out.txt" in p for p in progress)
    assert any("step 1" in (u.get("title") or "") for u in parent_updates)
    final = parent_updates[-1]
    assert final["status"] == "completed" and "Wrote out.txt." in json.dumps(final["content"])
    written = [u for u in client.of("tool_call_update") if u["toolCallId"] == write["toolCallId"]]
    assert written[-1]["status"] == "completed"
    assert client.text() == "All done."  # the subagent's texts are not the session's answer
