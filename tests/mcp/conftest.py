"""MCP test harness: real MCP servers (``servers/``, written with the SDK's server side) behind a real engine.

The engine is built by the test (``pureConfig``, an isolated HOME/XDG tree, the scripted LLM server as its only
provider) and the :class:`McpManager` is added as a plug-in; a :class:`ServerConnection` over in-memory streams
carries ECA to a client endpoint that records every notification and validates it against the protocol models.
The servers are *not* put in the engine's config, so these tests hold whether or not the engine creates its own
manager from ``mcpServers``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.config import McpServerConfig
from eca_notebook.mcp import McpManager
from eca_notebook.protocol import METHODS, parse_params
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing.llm_server import ScriptedLLMServer
from eca_notebook.transports.memory import memory_pair

SERVERS = Path(__file__).parent / "servers"
DEMO = SERVERS / "demo_server.py"
MALFORMED = SERVERS / "malformed_server.py"
MODEL = "fake/m1"
SETTLED = ("running", "failed", "stopped", "disabled")


def stdio(*args: str, script: Path = DEMO, **fields: Any) -> McpServerConfig:
    """A stdio server config running one of the test servers with this interpreter."""
    return McpServerConfig(command=sys.executable, args=[str(script), *args], **fields)


async def wait_gone(pid: int, within: float = 10.0) -> bool:
    """True once process `pid` no longer exists (or is a zombie nobody reaped yet)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            pass
        await asyncio.sleep(0.05)
    return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def llm():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\n")
    return ws


class Eca:
    """One engine + connection + client; everything the client received is in `log`."""

    def __init__(self, engine: Engine, manager: McpManager | None, client: Endpoint) -> None:
        self.engine = engine
        self.manager = manager
        self.client = client
        self.log: list[tuple[str, Any]] = []
        self.invalid: list[str] = []
        self._approved: set[str] = set()
        self._changed = asyncio.Event()

    def record(self, method: str, params: Any) -> None:
        if method in METHODS:
            try:
                parse_params(method, params)
            except Exception as exc:  # noqa: BLE001 - collected and asserted at teardown
                self.invalid.append(f"{method}: {exc}")
        self.log.append((method, params))
        self._changed.set()

    async def until(self, predicate: Callable[[str, Any], bool], timeout: float = 60) -> tuple[str, Any]:
        async def wait() -> tuple[str, Any]:
            while True:
                for method, params in self.log:
                    if predicate(method, params):
                        return method, params
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(wait(), timeout)

    def statuses(self, name: str) -> list[dict[str, Any]]:
        return [p for m, p in self.log if m == "tool/serverUpdated" and p.get("type") == "mcp" and p["name"] == name]

    async def settled(self, name: str, after: int = 0) -> dict[str, Any]:
        """The first settled status of server `name` among the statuses after the `after` first ones."""
        await self.until(lambda m, p: any(s["status"] in SETTLED for s in self.statuses(name)[after:]))
        return next(s for s in self.statuses(name)[after:] if s["status"] in SETTLED)

    def messages(self, kind: str) -> list[dict[str, Any]]:
        return [p for m, p in self.log if m == "$/showMessage" and p["type"] == kind]

    def contents(self, chat_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        out = [p["content"] for m, p in self.log if m == "chat/contentReceived" and p["chatId"] == chat_id]
        return [c for c in out if kind is None or c["type"] == kind]

    async def prompt(self, message: str, **params: Any) -> str:
        result = await self.client.request("chat/prompt", {"message": message, "model": MODEL, **params})
        return result["chatId"]

    async def idle(self, chat_id: str, timeout: float = 60) -> None:
        await self.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"},
                         timeout)

    async def approve_next(self, chat_id: str, name: str) -> dict[str, Any]:
        """Wait for the toolCallRun asking approval for `name`, approve it; returns that content."""
        _, params = await self.until(lambda m, p: m == "chat/contentReceived" and p["chatId"] == chat_id
                                     and p["content"]["type"] == "toolCallRun" and p["content"]["name"] == name
                                     and p["content"]["id"] not in self._approved)
        content = params["content"]
        self._approved.add(content["id"])
        await self.client.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": content["id"]})
        return content


@pytest.fixture
async def eca(tmp_path: Path, workspace: Path, llm: ScriptedLLMServer):
    """``await eca(servers, timeout=…, approval=…)`` → a connected, initialized :class:`Eca`."""
    opened: list[tuple[Eca, asyncio.Task, asyncio.Task]] = []

    async def make(servers: dict[str, McpServerConfig] | None, *, timeout: float = 20,
                   approval: dict[str, Any] | None = None, mcp_config: dict[str, Any] | None = None,
                   **options_extra: Any) -> Eca:
        """`servers` go to a manager the test adds as a plug-in; `mcp_config` goes to the engine's own config
        (``mcpServers``), for the engine to manage; other keywords are config keys (``trustedWorkspaces``…)."""
        env = {
            "HOME": str(tmp_path / "home"),
            "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
            "XDG_CACHE_HOME": str(tmp_path / "home" / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9",
        }
        options: dict[str, Any] = {
            "pureConfig": True,
            "localModel": False,
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}},
            "defaultModel": MODEL,
        }
        if approval is not None:
            options["toolCall"] = {"approval": approval}
        if mcp_config is not None:
            options["mcpServers"] = mcp_config
        options.update(options_extra)
        engine = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=options, env=env))
        if servers is not None:
            manager = McpManager(servers, workspace_folders=[workspace], timeout=timeout)
            engine.add_plugin(manager)
        else:
            manager = next((p for p in engine.plugins if isinstance(p, McpManager)), None)
            if manager is None:
                await engine.aclose()
                pytest.skip("the engine does not create an McpManager from mcpServers yet (issue 7 wiring)")
        server_side, client_side = memory_pair()
        connection = ServerConnection(server_side, lambda params: engine)
        client = Endpoint(client_side, name="test-client")
        harness = Eca(engine, manager, client)
        for method in ("chat/contentReceived", "config/updated", "tool/serverUpdated", "$/progress", "$/showMessage",
                       "chat/opened", "chat/deleted", "chat/statusChanged"):
            client.register(method, lambda params, _m=method: harness.record(_m, params))
        server_task = asyncio.create_task(connection.run())
        client_task = asyncio.create_task(client.run())
        opened.append((harness, server_task, client_task))
        await client.request("initialize", {"processId": None, "capabilities": {},
                                            "workspaceFolders": [{"uri": workspace.as_uri(), "name": "ws"}]})
        await client.notify("initialized")
        for name in servers if servers is not None else mcp_config or {}:
            await harness.settled(name)
        return harness

    yield make
    for harness, server_task, client_task in opened:
        await harness.client.close()
        await asyncio.wait_for(server_task, 30)
        client_task.cancel()
        await asyncio.gather(client_task, return_exceptions=True)
        assert not harness.invalid, harness.invalid


@pytest.fixture
def http_demo():
    """The demo server over streamable HTTP on 127.0.0.1 (a subprocess); yields its MCP URL. ``.kill()`` on the
    yielded object's ``proc`` simulates a crash."""
    proc = subprocess.Popen([sys.executable, str(DEMO), "--http"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the HTTP demo server did not start: {line!r}")
        yield HttpServer(f"http://127.0.0.1:{int(line.split()[1])}/mcp", proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()


class HttpServer:
    def __init__(self, url: str, proc: subprocess.Popen) -> None:
        self.url = url
        self.proc = proc


def tool_names(request_body: dict[str, Any]) -> list[str]:
    """The tool names an OpenAI Chat Completions request offered the model."""
    return [t["function"]["name"] for t in request_body.get("tools") or []]


def tool_results(request_body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request_body["messages"] if m["role"] == "tool"]


def user_texts(request_body: dict[str, Any]) -> list[str]:
    out = []
    for m in request_body["messages"]:
        if m["role"] == "user":
            content = m["content"]
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out
