"""Lifecycle and bad input through a real ``eca-notebook server`` process over pipes."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from eca_notebook.protocol.errors import RpcError

from .conftest import API_MODELS, server_env, start_server

pytestmark = pytest.mark.e2e


async def test_handshake_order_and_initialize_result(spawn, workspace):
    eca = await spawn()
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await eca.request(
        "initialize",
        {
            "processId": None,
            "clientInfo": {"name": "e2e"},
            "capabilities": {"codeAssistant": {"chat": True, "editor": {"diagnostics": True}}},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": "project"}],
            "initializationOptions": {"chatBehavior": "plan", "chatAgent": None},
        },
    )
    print(f"initialize answered in {(loop.time() - started) * 1000:.0f} ms (including interpreter start)")
    # early-revision fields are filled; Ollama's models are discovered after the handshake (config/updated)
    assert set(API_MODELS.values()) - {API_MODELS["ollama"]} <= set(result["models"])
    assert result["chatDefaultModel"] in result["models"]
    assert result["chatBehaviors"][:2] == ["code", "plan"]
    assert result["chatDefaultBehavior"] == "plan"
    assert result["chatWelcomeMessage"]

    await eca.notify("initialized", None)
    await eca.wait_for(lambda m: m.method == "tool/serverUpdated")
    order = [m.method for m in eca.messages if m.method in ("config/updated", "tool/serverUpdated")]
    assert order == ["config/updated", "tool/serverUpdated"]
    chat = eca.of("config/updated")[0]["chat"]
    assert chat["selectBehavior"] == chat["selectAgent"] == "plan" and chat["selectModel"] in chat["models"]
    assert "ollama/llama3.2:1b" in chat["models"]  # discovered from the (scripted) Ollama daemon
    native = eca.of("tool/serverUpdated")[0]
    assert native["type"] == "native" and native["name"] == "ECA" and native["status"] == "running"
    progress = eca.of("$/progress")
    assert [p["type"] for p in progress] == ["start", "finish"]

    assert await eca.shutdown() == 0


async def test_requests_before_initialize_are_refused(spawn, workspace):
    eca = await spawn()
    with pytest.raises(RpcError) as err:
        await eca.request("chat/list", {})
    assert err.value.code == -32002
    await eca.initialize(workspace)
    assert (await eca.request("chat/list", {})) == {"chats": []}
    with pytest.raises(RpcError) as err:
        await eca.request("initialize", {"processId": None, "capabilities": {}, "workspaceFolders": []})
    assert err.value.code == -32600


async def test_protocol_errors_keep_the_server_serving(spawn, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    with pytest.raises(RpcError) as err:
        await eca.request("chat/nonsense", {})
    assert err.value.code == -32601
    with pytest.raises(RpcError) as err:
        await eca.request("chat/prompt", {"message": 42})
    assert err.value.code == -32602
    assert any(e["loc"] == ["message"] for e in err.value.data["errors"])
    with pytest.raises(RpcError) as err:
        await eca.request("chat/open", {})
    assert err.value.code == -32602

    # raw garbage on the wire: a broken JSON body, then a bad header block
    writer = eca.proc.stdin
    body = b'{"jsonrpc": "2.0", "id": 77, "method": '
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    writer.write(b"Content-Lenght: oops\r\n\r\n")
    await writer.drain()
    assert (await eca.request("chat/list", {})) == {"chats": []}
    assert await eca.shutdown() == 0


async def test_exit_without_shutdown_exits_1(spawn, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    await eca.notify("exit")
    assert await asyncio.wait_for(eca.proc.wait(), 60) == 1


async def test_end_of_input_stops_the_server(spawn, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    eca.proc.stdin.close()
    assert await asyncio.wait_for(eca.proc.wait(), 60) == 1


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["term", "int", "hup"])
async def test_a_stop_signal_ends_the_server_the_orderly_way_and_keeps_the_chat(spawn, llm, workspace, number):
    """A client (or a container's stop) that signals the server: it exits as at end of input, with 128 + the signal
    (killed, it would be minus the signal), and the chat of the turn just done is listed by the next server."""
    from eca_notebook.testing.llm_server import Reply

    llm.enqueue(Reply.text("kept"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "remember me"}))["chatId"]
    await eca.wait_idle(chat_id)
    eca.proc.send_signal(number)
    assert await asyncio.wait_for(eca.proc.wait(), 60) == 128 + number

    again = await spawn()
    await again.initialize(workspace)
    assert [c["id"] for c in (await again.request("chat/list", {}))["chats"]] == [chat_id]


async def test_server_exits_when_parent_process_dies(home, llm, workspace):
    parent = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(60)")
    eca = await start_server(server_env(home, llm))
    try:
        await eca.initialize(workspace, processId=parent.pid)
        parent.kill()
        await parent.wait()
        assert await asyncio.wait_for(eca.proc.wait(), 60) == 1
    finally:
        await eca.kill()


async def test_logs_never_touch_stdout(spawn, llm, workspace):
    """Debug logging on stderr while the protocol runs on stdout: every frame still parses (the client would fail)."""
    from eca_notebook.testing.llm_server import Reply

    llm.enqueue(Reply.text("fine"))
    eca = await spawn("--log-level", "debug", "--unknown-client-flag")
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}))["chatId"]
    await eca.wait_idle(chat_id)
    assert await eca.shutdown() == 0
    assert "DEBUG" in eca.stderr
    assert "ignoring unknown options: --unknown-client-flag" in eca.stderr


async def test_config_problems_are_shown_to_the_user(spawn, workspace, home, llm):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text('{"providers": {"openai": {"url": 12}}}')
    eca = await spawn()
    await eca.initialize(workspace)
    await eca.wait_for(lambda m: m.method == "$/showMessage" and "providers.openai.url" in m.params["message"])
