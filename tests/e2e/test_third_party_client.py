"""Drive ``eca-notebook server`` with a JSON-RPC client we did not write: pygls's ``JsonRPCClient``.

pygls is what many Python LSP tools use; if its framing, id handling or notification dispatch disagreed with ours,
this test would hang or fail — our own client could share our own mistakes.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from pygls.client import JsonRPCClient

from eca_notebook.testing.llm_server import Reply, Text, Usage

from .conftest import server_env

pytestmark = pytest.mark.e2e


def plain(value):
    """pygls hands over JSON objects as namedtuples; turn them back into dicts for comparison."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def test_pygls_client_chats_with_the_server(home, llm, workspace):
    llm.enqueue(Reply([Text("Hello "), Text("from the other side"), Usage(5, 4)]))
    client = JsonRPCClient()
    received: list[tuple[str, dict]] = []
    idle = asyncio.Event()

    @client.feature("chat/contentReceived")
    def on_content(ls, params):
        params = plain(params)
        received.append((params["role"], params["content"]))

    @client.feature("chat/statusChanged")
    def on_status(ls, params):
        if plain(params)["status"] == "idle":
            idle.set()

    for method in ("config/updated", "tool/serverUpdated", "$/progress", "chat/opened", "$/showMessage"):
        client.feature(method)(lambda ls, params: None)

    await client.start_io(sys.executable, "-m", "eca_notebook", "server", env=server_env(home, llm))
    try:
        init = await asyncio.wait_for(
            client.protocol.send_request_async(
                "initialize",
                {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": workspace.as_uri(), "name": "p"}]},
            ),
            30,
        )
        assert "openai/gpt-4.1" in plain(init)["models"]
        client.protocol.notify("initialized", {})
        result = await asyncio.wait_for(
            client.protocol.send_request_async("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}), 30
        )
        assert plain(result)["status"] == "prompting"
        await asyncio.wait_for(idle.wait(), 30)
        text = "".join(c["text"] for role, c in received if role == "assistant" and c["type"] == "text")
        assert text == "Hello from the other side"
        assert received[0][0] == "user" and received[0][1]["text"] == "hi\n" and received[0][1]["contentId"]
        assert received[-1][1] == {"type": "progress", "state": "finished", "text": ""}

        shutdown = await asyncio.wait_for(client.protocol.send_request_async("shutdown", None), 30)
        assert shutdown is None
        client.protocol.notify("exit", None)
        assert await asyncio.wait_for(client._server.wait(), 60) == 0
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
