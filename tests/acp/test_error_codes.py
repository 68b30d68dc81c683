"""acp-messages.md "ACP-Specific Errors" where their conditions arise, through ``eca-notebook acp`` and the
``agent-client-protocol`` client: a cwd that does not exist is "File not found" (-31700), a prompt too large because
of what it attaches is "File too large" (-31702); a prompt that is merely long text stays "Invalid params"."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import EmbeddedResourceContentBlock, McpServerStdio, ResourceContentBlock, TextResourceContents

from eca_notebook.acp._schema import (
    FILE_NOT_FOUND,
    FILE_TOO_LARGE,
    MCP_SERVER_ERROR,
    MCP_SERVER_UNAVAILABLE,
    SESSION_EXPIRED,
    TOOL_DISABLED,
    TOOL_NOT_FOUND,
)
from eca_notebook.testing.llm_server import Reply, ToolCall

from .conftest import acp_env, completion_bodies
from .test_connection import Client, call, start

pytestmark = pytest.mark.e2e

FLAKY_SERVER = Path(__file__).parent / "servers" / "flaky_server.py"


async def test_cwd_and_attachment_errors_use_the_spec_codes(spawn_agent, workspace, strict):
    client = Client()
    (workspace / "plain.txt").write_text("x")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        with pytest.raises(RequestError) as missing:
            await conn.new_session(cwd=str(workspace / "no" / "such" / "dir"), mcp_servers=[])
        assert missing.value.code == FILE_NOT_FOUND and "does not exist" in str(missing.value)
        with pytest.raises(RequestError) as not_dir:
            await conn.new_session(cwd=str(workspace / "plain.txt"), mcp_servers=[])
        assert not_dir.value.code == -32602
        with pytest.raises(RequestError) as missing_load:
            await conn.load_session(session_id="4b1e5a0e-0000-4000-8000-000000000001",
                                    cwd=str(workspace / "gone"), mcp_servers=[])
        assert missing_load.value.code == FILE_NOT_FOUND

        big = EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
            uri=f"file://{workspace}/big.csv", mime_type="text/csv", text="1,2\n" * 300_000))
        with pytest.raises(RequestError) as too_large:
            await conn.prompt(session_id=session_id, prompt=[text_block("look"), big])
        assert too_large.value.code == FILE_TOO_LARGE and "attachments" in str(too_large.value)
        assert too_large.value.data["limit"] == 1024 * 1024
        with pytest.raises(RequestError) as long_text:
            await conn.prompt(session_id=session_id, prompt=[text_block("x" * (1024 * 1024 + 10))])
        assert long_text.value.code == -32602


async def test_failed_tool_calls_carry_the_spec_tool_codes(spawn_agent, llm, home, workspace, strict):
    """The model calls a tool no one offers (-31800, Tool not found) and one disabled by the config (-31801, Tool
    disabled): each failed tool call's ``rawOutput.error`` says which, with the spec's message."""
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["disabledTools"] = ["shell_command"]
    env["ECA_CONFIG"] = json.dumps(config)
    llm.enqueue(Reply([call("no_such_tool", {}, "call_1"), call("shell_command", {"command": "true"}, "call_2")]),
                Reply.text("Both failed."))
    client = Client()
    async with spawn_agent(client, env=env) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("try them")])
    assert answer.stop_reason == "end_turn"
    failed = [u for u in client.of("tool_call_update") if u.get("status") == "failed"]
    errors = sorted(u["rawOutput"]["error"]["code"] for u in failed)
    assert errors == sorted([TOOL_NOT_FOUND, TOOL_DISABLED])
    assert {u["rawOutput"]["error"]["message"] for u in failed} == {"Tool not found", "Tool disabled"}


async def test_loading_a_chat_past_its_retention_is_session_expired(spawn_agent, llm, home, workspace, strict):
    """-31901 (Session expired): a chat not updated for ``chatRetentionDays`` (which the next start would prune)."""
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["chatRetentionDays"] = 2 / 86_400  # two seconds
    env["ECA_CONFIG"] = json.dumps(config)
    llm.enqueue(Reply.text("Hello."))
    client = Client()
    async with spawn_agent(client, env=env) as (conn, _):
        session_id = await start(conn, client, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("hi")])
        await asyncio.sleep(3)  # the chat ages past its retention
        with pytest.raises(RequestError) as expired:
            await conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
    assert expired.value.code == SESSION_EXPIRED and "chatRetentionDays" in str(expired.value)




async def test_mcp_calls_that_fail_on_the_servers_side_carry_the_mcp_codes(spawn_agent, llm, home, workspace, strict):
    """A session's MCP server that does not answer a call within ``mcpTimeoutSeconds`` is -31601 (MCP server
    unavailable: not responding); one that ends during a call -31600 (MCP server error: the communication failed).
    A tool the server runs and reports failed itself carries neither (see test_mcp_sse.py for working calls)."""
    pytest.importorskip("mcp")
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["mcpTimeoutSeconds"] = 8  # the session's servers keep the config's call timeout
    env["ECA_CONFIG"] = json.dumps(config)
    llm.enqueue(Reply([ToolCall("call_1", "flaky__hang", "{}")]), Reply([ToolCall("call_2", "flaky__crash", "{}")]),
                Reply.text("Both failed."))
    client = Client(answer="allow_once")
    async with spawn_agent(client, env=env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[McpServerStdio(
            name="flaky", command=sys.executable, args=[str(FLAKY_SERVER)], env=[])])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("try them")])
    assert answer.stop_reason == "end_turn"
    failed = {u["toolCallId"]: u["rawOutput"]["error"] for u in client.of("tool_call_update")
              if u.get("status") == "failed"}
    assert sorted(e["code"] for e in failed.values()) == [MCP_SERVER_UNAVAILABLE, MCP_SERVER_ERROR]
    assert {e["message"] for e in failed.values()} == {"MCP server unavailable", "MCP server error"}


async def test_a_prompt_linking_a_file_that_does_not_exist_is_file_not_found(spawn_agent, llm, workspace, strict):
    """-31700 (File not found) for a ``resource_link`` to a file that is neither on disk nor in the editor (it was
    left out silently: the model was asked about a file it never saw); a link to an unsaved editor buffer, or to a
    file on disk, is taken."""
    (workspace / "here.py").write_text("x = 1\n")
    unsaved = str(workspace / "untitled.py")
    llm.enqueue(Reply.text("Seen."), Reply.text("Seen too."))
    client = Client(files={unsaved: "y = 2\n"})
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)

        def link(name: str) -> ResourceContentBlock:
            return ResourceContentBlock(type="resource_link", uri=f"file://{workspace}/{name}", name=name)

        with pytest.raises(RequestError) as missing:
            await conn.prompt(session_id=session_id, prompt=[text_block("look at"), link("gone.py")])
        assert missing.value.code == FILE_NOT_FOUND and "gone.py" in str(missing.value)
        assert missing.value.data["path"] == str(workspace / "gone.py")
        assert (await conn.prompt(session_id=session_id, prompt=[text_block("look at"), link("here.py")])
                ).stop_reason == "end_turn"
        assert (await conn.prompt(session_id=session_id, prompt=[text_block("look at"), link("untitled.py")])
                ).stop_reason == "end_turn"
    assert len(completion_bodies(llm)) == 2  # the refused prompt never reached the model
