"""acp-messages.md taken at its word: its own ``session/new`` example, its error codes and its prompt timeout, through
``eca-notebook acp`` driven by the ``agent-client-protocol`` package's client (see ``test_connection.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block

from eca_notebook.acp._schema import TIMEOUT, parse
from eca_notebook.protocol.errors import UNKNOWN_ERROR
from eca_notebook.testing.llm_server import Reply, Stall, Text, ToolCall

from .conftest import acp_env, completion_bodies, sent_tool_results, sent_tools
from .test_connection import SHOUT_SERVER, Client, call, start

pytestmark = pytest.mark.e2e

# acp-messages.md, "2. session/new", the request's params exactly as the spec prints them.
SPEC_SESSION_NEW = json.loads("""
{
  "cwd": "/path/to/project",
  "mcpServers": [
    {
      "name": "weather",
      "type": "local",
      "command": ["bun", "x", "@h1deya/mcp-server-weather"]
    }
  ]
}
""")


def test_the_spec_example_validates_as_a_stdio_server():
    params = parse("session/new", SPEC_SESSION_NEW)
    [server] = params.mcp_servers
    assert (server.name, server.type, server.command, server.args) == (
        "weather", "local", "bun", ["x", "@h1deya/mcp-server-weather"])


def test_acp_timeout_is_the_spec_code_and_differs_from_the_eca_unknown_error():
    assert TIMEOUT == -32001  # acp-messages.md "ACP-Specific Errors"
    assert UNKNOWN_ERROR == -32001  # the ECA reference server's meaning on its own wire


async def test_session_new_from_the_spec_runs_its_local_mcp_server(spawn_agent, llm, home, workspace, tmp_path: Path,
                                                                    strict):
    """The example, with ``cwd`` pointed at a real directory, and a ``bun`` on PATH that records how it was called
    and then runs a small MCP server: the command array is the program and its arguments."""
    pytest.importorskip("mcp")
    pytest.importorskip("eca_notebook.mcp")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_file = tmp_path / "bun-argv.txt"
    bun = bin_dir / "bun"
    bun.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{argv_file}'\nexec '{sys.executable}' '{SHOUT_SERVER}'\n")
    bun.chmod(0o755)
    env = acp_env(home, llm)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    llm.enqueue(Reply([ToolCall("call_1", "weather__shout", json.dumps({"text": "sunny"}))]), Reply.text("Done."))
    client = Client(answer="allow_once")
    async with spawn_agent(client, env=env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        answer = await conn._conn.send_request("session/new", {**SPEC_SESSION_NEW, "cwd": str(workspace)})
        session_id = answer["sessionId"]
        response = await conn.prompt(session_id=session_id, prompt=[text_block("weather?")])
    assert response.stop_reason == "end_turn"
    assert argv_file.read_text().splitlines() == ["x", "@h1deya/mcp-server-weather"]
    bodies = completion_bodies(llm)
    assert "weather__shout" in sent_tools(bodies[0])
    assert sent_tool_results(bodies[1]) == ["SUNNY"]


async def test_a_missing_local_command_fails_its_server_not_the_session(spawn_agent, llm, home, workspace, strict):
    env = acp_env(home, llm)
    env["PATH"] = "/nonexistent-bin"  # no bun here: the server fails to start, the session still opens
    llm.enqueue(Reply.text("Hello."))
    client = Client()
    async with spawn_agent(client, env=env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        answer = await conn._conn.send_request("session/new", {**SPEC_SESSION_NEW, "cwd": str(workspace)})
        response = await conn.prompt(session_id=answer["sessionId"], prompt=[text_block("hi")])
    assert response.stop_reason == "end_turn" and client.text() == "Hello."


async def test_prompt_timeout_answers_the_spec_timeout_and_not_while_waiting_for_permission(spawn_agent, llm,
                                                                                           workspace, strict):
    limit = 5
    waited: list[bool] = []

    async def slow_user(client: Client) -> str:
        await asyncio.sleep(limit * 2)  # the user thinks longer than the whole prompt may work: not counted
        waited.append(True)
        return "allow_once"

    llm.enqueue(Reply([call("write_file", {"path": "a.txt", "content": "a"})]), Reply.text("Written."),
                Reply([Text("thinking"), Stall(120)]), Reply.text("After the timeout."))
    client = Client(answer=slow_user)
    async with spawn_agent(client, args=("--prompt-timeout", str(limit))) as (conn, _):
        session_id = await start(conn, client, workspace)
        first = await conn.prompt(session_id=session_id, prompt=[text_block("write a")])
        assert first.stop_reason == "end_turn" and waited and (workspace / "a.txt").read_text() == "a"

        with pytest.raises(RequestError) as timed_out:
            await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("take forever")]), 120)
        assert timed_out.value.code == TIMEOUT
        assert timed_out.value.data == {"sessionId": session_id, "timeoutSeconds": limit}
        # the turn was stopped: the session takes the next prompt
        again = await conn.prompt(session_id=session_id, prompt=[text_block("next")])
        assert again.stop_reason == "end_turn"
    assert client.text().endswith("After the timeout.")
