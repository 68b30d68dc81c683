"""``mcpCapabilities.sse``: an ACP client's ``type: "sse"`` MCP server (the SDK's own, ``sse_app()`` under uvicorn)
is connected with the SDK's ``sse_client``, and its tools are offered and called in the session."""

from __future__ import annotations

import json

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply, ToolCall

from ..mcp.test_sse import sse_url  # noqa: F401 - the fixture
from .conftest import completion_bodies, sent_tool_results, sent_tools
from .test_connection import Client

pytestmark = pytest.mark.e2e


async def test_an_sse_mcp_server_from_session_new_lists_and_calls_tools(spawn_agent, llm, workspace, strict,
                                                                        sse_url):  # noqa: F811
    pytest.importorskip("eca_notebook.mcp")
    llm.enqueue(Reply([ToolCall("call_1", "old__echo", json.dumps({"text": "via sse"}))]), Reply.text("Done."))
    client = Client(answer="allow_once")
    async with spawn_agent(client) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        assert init.agent_capabilities.mcp_capabilities.sse is True
        answer = await conn._conn.send_request("session/new", {
            "cwd": str(workspace), "mcpServers": [{"type": "sse", "name": "old", "url": sse_url, "headers": []}]})
        response = await conn.prompt(session_id=answer["sessionId"], prompt=[text_block("echo via sse")])
    assert response.stop_reason == "end_turn"
    bodies = completion_bodies(llm)
    assert "old__echo" in sent_tools(bodies[0])
    assert sent_tool_results(bodies[1]) == ["echo: via sse"]
