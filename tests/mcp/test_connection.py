"""Transports and process lifetimes: streamable HTTP, servers that never answer, and servers that refuse to stop."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from eca_notebook.engine.config import McpServerConfig
from eca_notebook.mcp import McpManager
from eca_notebook.testing.llm_server import Reply, ToolCall

from .conftest import pid_alive, stdio, tool_results, user_texts, wait_gone


class Recorder:
    """Stands in for the engine where only the manager's broadcasts matter."""

    selected_behavior = "agent"

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []
        self.tool_changes = 0

    def broadcast(self, method: str, params: dict) -> None:
        self.sent.append((method, params))

    def tools_changed(self) -> None:
        self.tool_changes += 1

    def offered_tools(self, behavior: str) -> dict:
        return {}

    def reserved_command_names(self) -> frozenset[str]:
        return frozenset({"doctor", "help"})

    def statuses(self, name: str) -> list[str]:
        return [p["status"] for m, p in self.sent if m == "tool/serverUpdated" and p["name"] == name]


def manager_for(servers: dict[str, McpServerConfig], workspace: Path,
                timeout: float = 20) -> tuple[McpManager, Recorder]:
    manager = McpManager(servers, workspace_folders=[workspace], timeout=timeout)
    recorder = Recorder()
    manager.attach(recorder)  # type: ignore[arg-type]
    return manager, recorder


async def test_streamable_http_server_in_a_chat(eca, llm, http_demo):
    h = await eca({"web": McpServerConfig(url=http_demo.url, headers={"X-Demo-Token": "hdr-secret-42"})})
    running = h.statuses("web")[-1]
    assert running["status"] == "running" and running["url"] == http_demo.url and "command" not in running
    assert "echo" in {t["name"] for t in running["tools"]}

    llm.enqueue(Reply([ToolCall("c1", "web__header", "{}")]), Reply.text("done"))
    chat = await h.prompt("which token?")
    run = await h.approve_next(chat, "header")
    assert run["server"] == "web" and run["origin"] == "mcp"
    await h.idle(chat)
    # the configured headers reach the server
    # the header reached the server, but a configured header value is a secret: the model sees it redacted
    assert tool_results(llm.requests[-1].body) == ["x-demo-token=***"]
    # prompts and resources over HTTP too
    review = next(c for c in h.manager.commands() if c.name == "review")
    assert await h.manager.render_command(review, "'print(1)'") == "Please review this python code:\nprint(1)"
    [resource] = await h.manager.query_contexts("shop")
    llm.enqueue(Reply.text("ok"))
    chat = await h.prompt("buy?", contexts=[resource])
    await h.idle(chat)
    assert "Remember the milk" in user_texts(llm.requests[-1].body)[-1]


async def test_http_server_crash_mid_call(eca, llm, http_demo, workspace):
    h = await eca({"web": McpServerConfig(url=http_demo.url), "local": stdio()},
                  approval={"allow": {"web": {}, "local": {}}})
    llm.enqueue(Reply([ToolCall("c1", "web__crash", "{}")]), Reply.text("it crashed"))
    chat = await h.prompt("crash")
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    # on mcp 1.x too, whose HTTP client never answers a request whose response stream broke (_ResponseWatch)
    assert called["error"] is True and "MCP server 'web' closed the connection" in called["outputs"][0]["text"]
    assert (await h.settled("web", after=2))["status"] == "failed"
    assert h.manager.status("local").status == "running"
    echo = next(t for t in h.manager.tools() if t.name == "echo" and t.server == "local")
    ctx = h.engine.tool_context()
    assert (await echo.run(echo.prepare({"text": "x"}, ctx), ctx)).output == "echo: x"


async def test_unreachable_http_server_fails(workspace):
    manager, recorder = manager_for({"web": McpServerConfig(url="http://127.0.0.1:9/mcp",
                                                            headers={"Authorization": "Bearer very-secret-token"})},
                                    workspace)
    await manager.start()
    assert recorder.statuses("web") == ["starting", "failed"]
    [message] = [p["message"] for m, p in recorder.sent if m == "$/showMessage"]
    assert message.startswith("MCP server 'web' failed: ") and "connect" in message.lower()
    assert "very-secret-token" not in json.dumps(recorder.sent)
    await manager.aclose()


async def test_userinfo_is_not_shown_in_the_url(workspace):
    manager, _ = manager_for({"web": McpServerConfig(url="https://user:pw-123@example.invalid/mcp")}, workspace)
    assert manager.status("web").url == "https://example.invalid/mcp"


async def test_a_server_that_never_answers_initialize(workspace):
    manager, recorder = manager_for({"mute": McpServerConfig(command=sys.executable,
                                                             args=["-c", "import sys; sys.stdin.read()"])},
                                    workspace, timeout=1)
    await manager.start()
    assert recorder.statuses("mute") == ["starting", "failed"]
    assert manager.error("mute") == "no answer to initialize within 1 s"
    assert manager.tools() == []
    await manager.aclose()


async def test_stop_while_starting(workspace):
    manager, recorder = manager_for({"mute": McpServerConfig(command=sys.executable,
                                                             args=["-c", "import sys; sys.stdin.read()"])},
                                    workspace, timeout=60)
    starting = asyncio.create_task(manager.start())
    while recorder.statuses("mute") != ["starting"]:
        await asyncio.sleep(0.01)
    await manager.stop_server("mute")
    await asyncio.wait_for(starting, 60)  # start() returns: the server settled as stopped
    assert recorder.statuses("mute") == ["starting", "stopped"]
    assert not [m for m, p in recorder.sent if m == "$/showMessage"]  # a requested stop is not a failure


async def test_a_server_that_ignores_shutdown_is_killed_with_its_children(workspace, tmp_path):
    pid_file = tmp_path / "pids"
    manager, recorder = manager_for({"stubborn": stdio("--stubborn", env={"DEMO_PID_FILE": str(pid_file)})},
                                    workspace)
    await manager.start()
    assert recorder.statuses("stubborn") == ["starting", "running"]
    server_pid, child_pid = map(int, pid_file.read_text().split())
    assert pid_alive(server_pid) and pid_alive(child_pid)
    await manager.aclose()  # stdin closed and SIGTERM are ignored: the process group is killed
    assert await wait_gone(server_pid) and await wait_gone(child_pid)
    assert recorder.statuses("stubborn")[-1] == "stopped"


async def test_start_after_close_does_nothing(workspace):
    manager, recorder = manager_for({"demo": stdio()}, workspace)
    await manager.aclose()
    assert await manager.start_server("demo") is False
    assert recorder.statuses("demo") == []


async def test_http_server_gone_between_calls(workspace, http_demo):
    manager, recorder = manager_for({"web": McpServerConfig(url=http_demo.url)}, workspace)
    await manager.start()
    echo = next(t for t in manager.tools() if t.name == "echo")
    http_demo.proc.kill()
    http_demo.proc.wait()
    result = await echo.run(echo.prepare({"text": "x"}, None), None)  # type: ignore[arg-type]
    assert result.error is True and "MCP server 'web'" in result.output
    while recorder.statuses("web")[-1] != "failed":
        await asyncio.sleep(0.02)
    assert manager.tools() == []
    await manager.aclose()


async def test_disabled_servers(workspace):
    manager, recorder = manager_for({"off": stdio(disabled=True)}, workspace)
    await manager.start()
    assert recorder.statuses("off") == ["disabled"]
    await manager.stop_server("off")
    assert recorder.statuses("off") == ["disabled"]  # stopping what never ran changes nothing
    assert await manager.start_server("off") is True  # an explicit start runs it anyway
    assert recorder.statuses("off") == ["disabled", "starting", "running"]
    assert recorder.tool_changes == 1
    await manager.aclose()
    assert recorder.statuses("off")[-1] == "stopped"


async def test_close_while_starting_leaves_no_process(workspace, tmp_path):
    pid_file = tmp_path / "pids"
    manager, recorder = manager_for({"demo": stdio(env={"DEMO_PID_FILE": str(pid_file)})}, workspace)
    starting = asyncio.create_task(manager.start())
    while recorder.statuses("demo") != ["starting"]:
        await asyncio.sleep(0)
    await manager.aclose()
    await asyncio.wait_for(starting, 60)
    if pid_file.exists():  # spawned before the close (usually): then it must be gone
        assert await wait_gone(int(pid_file.read_text()))
    assert recorder.statuses("demo") == ["starting", "stopped"]
    assert not [m for m, p in recorder.sent if m == "$/showMessage"]
    assert await manager.start_server("demo") is False  # closed for good
