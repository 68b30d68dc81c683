"""Custom tools through the ACP door, with a real ACP client (strict schema): the user's own tool is offered, asked
with ``session/request_permission`` naming its filled command line, and runs with the model's argument kept literal;
the workspace's own is not offered before the workspace is trusted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer

from .conftest import acp_env, completion_bodies, sent_tool_results, sent_tools
from .test_connection import Client, call, start

pytestmark = pytest.mark.e2e

SHOUT = {"description": "Prints a message in upper case.",
         "command": "printf '%s\\n' {{message}} | tr a-z A-Z",
         "schema": {"properties": {"message": {"type": "string"}}, "required": ["message"]}}
INJECTION = "hi; touch PWNED $(touch PWNED2)"


async def test_a_custom_tool_asks_and_runs_and_a_workspace_one_waits(spawn_agent: Any, llm: ScriptedLLMServer,
                                                                      workspace: Path, home: Path) -> None:
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"customTools": {"ws-tool": SHOUT}}))
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    env["ECA_CONFIG"] = json.dumps({**config, "customTools": {"shout": SHOUT}})
    llm.enqueue(Reply([call("shout", {"message": INJECTION})]), Reply.text("Shouted."))
    client = Client(answer="allow_once")
    async with spawn_agent(client, env=env) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("shout it")])
    assert response.stop_reason == "end_turn"
    first, second = completion_bodies(llm)[-2:]
    assert "eca__shout" in sent_tools(first) and "eca__ws-tool" not in sent_tools(first)
    [asked] = client.permissions
    assert asked["toolCall"]["title"].startswith("shout: $ printf '%s\\n' 'hi; touch PWNED $(touch PWNED2)'")
    assert "medium risk" in asked["toolCall"]["title"]
    assert sent_tool_results(second) == [f"Exit code: 0\n\n{INJECTION.upper()}\n"]
    assert client.of("tool_call_update")[-1]["status"] == "completed"
    assert not (workspace / "PWNED").exists() and not (workspace / "PWNED2").exists()
