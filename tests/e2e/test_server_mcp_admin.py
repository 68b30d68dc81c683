"""MCP servers managed through a real ``eca-notebook server``: ``mcp/addServer|updateServer|removeServer`` and
``mcp/enableServer|disableServer``, each checked on the wire and in the config file on disk, with a real stdio MCP
server (tests/mcp/servers/demo_server.py) whose tool a scripted turn then calls."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall, Usage

pytestmark = pytest.mark.e2e

DEMO = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"
MODEL = "local-vllm/qwen3"


def read(path: Path) -> dict:
    return json.loads(path.read_text())


async def wait_status(eca, name: str, status: str, start: int, timeout: float = 120) -> dict:
    msg = await eca.wait_for(lambda m: m.method == "tool/serverUpdated" and m.params.get("name") == name
                             and m.params["status"] == status, start=start, timeout=timeout)
    return msg.params


async def test_add_use_disable_enable_update_remove(spawn, llm, home: Path, workspace: Path):
    global_file = home / ".config" / "eca" / "config.json"
    global_file.parent.mkdir(parents=True)
    global_file.write_text(json.dumps({"toolCall": {"approval": {"byDefault": "allow"}}}))
    ws_file = workspace / ".eca" / "config.json"
    ws_file.parent.mkdir()
    ws_file.write_text(json.dumps({"welcomeMessage": "kept", "mcpServers": {}}))

    second = workspace.parent / "second"
    second.mkdir()
    eca = await spawn()
    # two folders: workspaceUri is needed to pick one (with a single folder it may be left out)
    await eca.initialize(workspace, workspaceFolders=[{"uri": workspace.as_uri(), "name": "project"},
                                                      {"uri": second.as_uri(), "name": "second"}])

    # add, workspace scope: written to the workspace file (other keys kept), starting → running with its tools
    mark = len(eca.messages)
    result = await eca.request("mcp/addServer", {
        "name": "demo", "command": sys.executable, "args": [str(DEMO)], "env": {"DEMO_TOKEN": "tok-123456789"},
        "scope": "workspace", "workspaceUri": workspace.as_uri()}, timeout=60)
    assert result["server"]["name"] == "demo" and result["server"]["status"] == "starting", result
    assert "error" not in result
    written = read(ws_file)
    assert written["welcomeMessage"] == "kept"
    assert written["mcpServers"]["demo"] == {"command": sys.executable, "args": [str(DEMO)],
                                             "env": {"DEMO_TOKEN": "tok-123456789"}}
    assert "mcpServers" not in read(global_file)
    running = await wait_status(eca, "demo", "running", mark)
    assert "echo" in {t["name"] for t in running["tools"]}
    assert running["disabled"] is False

    # its tool is usable in a turn
    llm.enqueue(Reply([ToolCall("c1", "demo__echo", json.dumps({"text": "hi"})), Usage(5, 5)]),
                Reply([Text("done"), Usage(5, 5)]))
    prompted = await eca.request("chat/prompt", {"message": "echo hi", "model": MODEL})
    chat_id = prompted["chatId"]
    called = await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["chatId"] == chat_id
                                and m.params["content"]["type"] == "toolCalled", timeout=120)
    assert "echo: hi" in json.dumps(called.params["content"]["outputs"])
    await eca.wait_idle(chat_id, timeout=120)

    # errors are results; the server keeps serving
    dup = await eca.request("mcp/addServer", {"name": "demo", "command": "x", "scope": "workspace",
                                              "workspaceUri": workspace.as_uri()})
    assert dup["error"]["code"] == "duplicate-name"
    missing = await eca.request("mcp/addServer", {"name": "other", "command": "x", "scope": "workspace"})
    assert missing["error"]["code"] == "missing-workspace-uri"
    elsewhere = await eca.request("mcp/addServer", {"name": "other", "command": "x", "scope": "workspace",
                                                    "workspaceUri": (home / "nowhere").as_uri()})
    assert elsewhere["error"]["code"] == "unknown-workspace"
    invalid = await eca.request("mcp/addServer", {"name": "other", "command": "x", "url": "http://h/mcp"})
    assert invalid["error"]["code"] == "invalid-config"
    unknown = await eca.request("mcp/removeServer", {"name": "nope"})
    assert unknown["error"]["code"] == "unknown-server"
    unknown_update = await eca.request("mcp/updateServer", {"name": "nope", "command": "x"})
    assert unknown_update["error"]["code"] == "unknown-server"

    # disable: persisted, stopped, reported disabled
    mark = len(eca.messages)
    await eca.notify("mcp/disableServer", {"name": "demo"})
    disabled = await wait_status(eca, "demo", "disabled", mark)
    assert disabled["disabled"] is True
    assert read(ws_file)["mcpServers"]["demo"]["disabled"] is True

    # enable: the flag is gone and it runs again
    mark = len(eca.messages)
    await eca.notify("mcp/enableServer", {"name": "demo"})
    await wait_status(eca, "demo", "running", mark)
    assert "disabled" not in read(ws_file)["mcpServers"]["demo"]

    # update: new args written; it restarts with them
    mark = len(eca.messages)
    assert await eca.request("mcp/updateServer", {"name": "demo", "args": [str(DEMO), "--extra"]}, timeout=60) == {}
    assert read(ws_file)["mcpServers"]["demo"]["args"] == [str(DEMO), "--extra"]
    assert read(ws_file)["mcpServers"]["demo"]["env"] == {"DEMO_TOKEN": "tok-123456789"}
    again = await wait_status(eca, "demo", "running", mark)
    assert again["args"] == [str(DEMO), "--extra"]

    # remove: stopped, tool/serverRemoved, entry gone (other keys kept)
    mark = len(eca.messages)
    removed = await eca.request("mcp/removeServer", {"name": "demo"}, timeout=60)
    assert removed == {"name": "demo", "removed": True}
    await eca.wait_for(lambda m: m.method == "tool/serverRemoved" and m.params == {"name": "demo"}, start=mark)
    assert read(ws_file) == {"welcomeMessage": "kept", "mcpServers": {}}

    # add, global scope (the default), disabled from the start: no start, written to the global file
    mark = len(eca.messages)
    result = await eca.request("mcp/addServer", {"name": "later", "url": "http://127.0.0.1:9/mcp",
                                                 "disabled": True})
    assert result["server"]["status"] == "disabled", result
    assert read(global_file) == {"toolCall": {"approval": {"byDefault": "allow"}},
                                 "mcpServers": {"later": {"url": "http://127.0.0.1:9/mcp", "disabled": True}}}

    # our own writes did not make the config watcher announce a restart, and the env value was never logged
    await eca.wait_for(lambda m: m.method == "tool/serverUpdated" and m.params.get("name") == "later", start=mark)
    assert not [m for m in eca.of("$/showMessage") if "restart" in m["message"]]
    assert "tok-123456789" not in eca.stderr
    assert await eca.shutdown() == 0
