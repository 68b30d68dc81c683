"""ECA over the extension's WebSocket: a full agent chat, shared chats, reloads, workspaces, malformed frames."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from eca_notebook.server.ws import peek_id
from eca_notebook.testing.llm_server import Delay, Reply, Text, ToolCall, Usage

from .conftest import MODEL


def edit_call(path: str, old: str, new: str, call_id: str = "call_1") -> ToolCall:
    args = {"path": path, "original_content": old, "new_content": new}
    return ToolCall(call_id, "eca__edit_file", json.dumps(args), chunks=2)


async def prompt(sock, message: str, **params) -> str:
    result = await sock.request("chat/prompt", {"message": message, "model": MODEL, **params})
    assert result["status"] == "prompting", result
    return result["chatId"]


async def test_full_chat_with_an_approved_edit(connect, llm, workspace):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(
        Reply([Text("I will "), Text("edit it."), edit_call("hello.py", "print('hi')", "print('hello')"),
               Usage(20, 5)]),
        Reply([Text("Done: "), Text("it greets properly."), Usage(40, 6)]),
    )
    sock = await connect()
    init = await sock.initialize()
    assert MODEL in init["models"] and init["chatDefaultModel"] == MODEL
    # initialized → config/updated then tool/serverUpdated, in that order
    methods = [m["method"] for m in sock.messages]
    assert methods.index("config/updated") < methods.index("tool/serverUpdated")
    config = sock.of("config/updated")[0]["chat"]
    assert config["selectModel"] == MODEL and config["behaviors"] == config["agents"] == ["code", "plan"]
    tools = {t["name"] for t in sock.of("tool/serverUpdated")[0]["tools"]}
    assert {"read_file", "edit_file", "shell_command"} <= tools

    chat_id = await prompt(sock, "greet properly")
    run = await sock.wait_for("chat/contentReceived", lambda p: p["content"]["type"] == "toolCallRun")
    content = run["content"]
    assert content["manualApproval"] is True and content["name"] == "edit_file"
    assert "-print('hi')" in content["details"]["diff"] and "+print('hello')" in content["details"]["diff"]
    await sock.wait_for("chat/contentReceived", lambda p: p["content"].get("text") == "Waiting for tool call approval")
    assert target.read_text() == "print('hi')\n"  # nothing changes before the approval

    await sock.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    await sock.wait_idle(chat_id)
    assert target.read_text() == "print('hello')\n"

    contents = sock.contents(chat_id)
    texts = [c["text"] for role, c in contents if role == "assistant" and c["type"] == "text"]
    assert texts == ["I will ", "edit it.", "Done: ", "it greets properly."]  # streamed chunk by chunk
    called = [c for _, c in contents if c["type"] == "toolCalled"]
    assert len(called) == 1 and called[0]["error"] is False
    assert contents[-1] == ("system", {"type": "progress", "state": "finished", "text": ""})
    assert len([c for _, c in contents if c["type"] == "usage"]) == 2


async def test_two_sockets_on_one_workspace_see_the_same_chat(connect, llm, workspace):
    llm.enqueue(Reply([Text("shared "), Text("answer")]))
    first, second = await connect(), await connect()
    await first.initialize()
    await second.initialize()
    chat_id = await prompt(first, "hello")
    await first.wait_idle(chat_id)
    await second.wait_idle(chat_id)
    assert second.contents(chat_id) == first.contents(chat_id)
    assert {"role": "assistant"} and ("assistant", {"type": "text", "text": "answer"}) in second.contents(chat_id)
    listed = await second.request("chat/list", {})
    assert [c["id"] for c in listed["chats"]] == [chat_id]


async def test_a_reload_finds_the_chat_and_replays_it(connect, llm, workspace):
    llm.enqueue(Reply([Text("first "), Text("reply")]))
    before = await connect()
    await before.initialize()
    chat_id = await prompt(before, "remember me")
    await before.wait_idle(chat_id)
    await before.close()

    after = await connect()  # the page was reloaded: a new socket, same workspace
    await after.initialize()
    chats = (await after.request("chat/list", {}))["chats"]
    assert [(c["id"], c["title"]) for c in chats] == [(chat_id, "remember me")]
    mark = len(after.messages)
    result = await after.request("chat/open", {"chatId": chat_id})
    assert result["found"] is True and result["title"] == "remember me"
    replayed = after.contents(chat_id, start=mark)
    echo = next(c for role, c in replayed if role == "user")
    assert echo["text"] == "remember me\n" and echo["contentId"]  # (the id chat/rollback and chat/fork take)
    assert ("assistant", {"type": "text", "text": "first reply"}) in replayed  # chunks merged on replay
    assert after.of("chat/opened")[-1]["chatId"] == chat_id


async def test_a_reload_in_the_middle_of_a_reply_loses_nothing(connect, llm, workspace, state):
    llm.enqueue(Reply([Text("before "), Delay(0.5), Text("after")]))
    tab = await connect()
    await tab.initialize()
    chat_id = await prompt(tab, "slow answer")
    await tab.wait_for("chat/contentReceived", lambda p: p["content"].get("text") == "before ")
    await tab.close()  # the page reloads while the model is still answering

    again = await connect()
    await again.initialize()
    if state.manager.default.engine.chats[chat_id].running:
        await again.wait_idle(chat_id)
    await again.request("chat/open", {"chatId": chat_id})
    assert ("assistant", {"type": "text", "text": "before after"}) in again.contents(chat_id)


async def test_workspace_from_the_query_and_from_initialize(connect, llm, workspace, state):
    (workspace / "sub").mkdir()
    llm.enqueue(Reply([Text("in sub")]))
    sub = await connect(workspace="sub")
    await sub.initialize()
    chat_id = await prompt(sub, "where am I")
    await sub.wait_idle(chat_id)

    root = await connect()
    await root.initialize()
    assert (await root.request("chat/list", {}))["chats"] == []  # another workspace, another engine

    named = await connect()  # no query, but initialize names the same folder as a file:// URI
    await named.initialize(workspaceFolders=[{"uri": (workspace / "sub").as_uri(), "name": "sub"}])
    assert [c["id"] for c in (await named.request("chat/list", {}))["chats"]] == [chat_id]
    engines = {w.path: w for w in state.manager.started()}
    assert set(engines) == {"", "sub"} and engines["sub"].connections == 2 and engines[""].connections == 1


async def test_folders_outside_the_root_are_refused(connect, workspace, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    sock = await connect()
    for uri in (outside.as_uri(), (workspace / ".." / "elsewhere").as_uri(), "../elsewhere"):
        response = await sock.call("initialize", {"workspaceFolders": [{"uri": uri, "name": "x"}]})
        assert response["error"]["code"] == -32602, response
        assert "outside the server root" in response["error"]["message"]
    (workspace / "escape").symlink_to(outside)
    response = await sock.call("initialize", {"workspaceFolders": [{"uri": "escape", "name": "x"}]})
    assert response["error"]["code"] == -32602
    # refused, not broken: the same socket can still initialize properly
    assert "models" in await sock.request("initialize", {"workspaceFolders": []})


@pytest.mark.parametrize("query", ["../", "no-such-dir", "README.md"])
async def test_a_bad_workspace_query_is_refused_before_the_upgrade(connect, workspace, query):
    with pytest.raises(HTTPClientError) as info:
        await connect(workspace=query)
    assert info.value.code == 400


async def test_malformed_messages_get_json_rpc_errors_and_the_socket_stays_open(connect, workspace):
    sock = await connect()
    await sock.send_raw("this is not json")
    await sock.send_raw("[]")
    await sock.send_raw('"a string"')
    await sock.send_raw('{"jsonrpc": "2.0", "id": 7}')
    await sock.send_raw('{"jsonrpc": "1.0", "id": 8, "method": "chat/list"}')
    await sock.send_raw(b'\xff\xfe{}')  # a binary frame with invalid UTF-8
    await sock._wait(lambda: len(sock.all_responses) >= 6)
    codes = [(r["id"], r["error"]["code"]) for r in sock.all_responses]
    assert codes == [(None, -32700), (None, -32600), (None, -32600), (7, -32600), (8, -32600), (None, -32700)]
    assert "invalid UTF-8" in sock.all_responses[-1]["error"]["message"]
    # before initialize, ECA methods are refused with -32002; after it they work
    assert (await sock.call("chat/list", {}))["error"]["code"] == -32002
    await sock.initialize()
    assert (await sock.request("chat/list", {})) == {"chats": []}
    bad = await sock.call("chat/prompt", {"message": 42})
    assert bad["error"]["code"] == -32602
    assert (await sock.call("no/such/method", {}))["error"]["code"] == -32601
    assert not sock.closed


async def test_process_id_and_initialization_options_from_a_browser_are_ignored(connect, workspace, state):
    sock = await connect()
    # a dead pid would end a stdio connection (parent watch); a key in initializationOptions would reconfigure
    # the shared engine for everybody
    await sock.initialize(processId=2 ** 22 + 12345, initializationOptions={"defaultModel": "openai/o4-mini"})
    assert sock.of("config/updated")[0]["chat"]["selectModel"] == MODEL
    assert (await sock.request("chat/list", {})) == {"chats": []}


def test_peek_id_reads_the_top_level_id_only():
    assert peek_id(b'{"jsonrpc":"2.0","id":12,"method":"x"}') == 12
    assert peek_id(b' {"method":"x", "id" : "abc", "params":{}}') == "abc"
    assert peek_id(b'{"params":{"id":5},"id":6}') == 6
    assert peek_id(b'{"params":{"id":5}}') is None
    assert peek_id(b'{"params":"\\"id\\":3","id":-4}') == -4
    assert peek_id(b'{"id":1.5}') is None
    assert peek_id(b'{"id":null}') is None
    assert peek_id(b'[{"id":1}]') is None
    assert peek_id(b'{"method":"x","params":"' + b"a" * 5000 + b'","id":9}') is None  # beyond the window
