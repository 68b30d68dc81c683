"""A real Jupyter server (pytest-jupyter) with the eca_notebook extension, talking to the scripted LLM server.

pytest-jupyter runs its server on its own event loop and brings its own coroutine-test hooks; this project runs
async tests with pytest-asyncio. So its fixtures are imported without its hooks, and ``jp_asyncio_loop`` is the
loop pytest-asyncio runs the test in: the server, the HTTP client and the test then share one loop.

Every test gets an isolated HOME/XDG tree (saved chats, global config) and a server root of its own; the engines
read the environment, so provider URLs point at the scripted server and no real key or config leaks in.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - the jp_* fixtures
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from eca_notebook.protocol import CONTENT_TYPES, METHODS, parse_params
from eca_notebook.testing.llm_server import ScriptedLLMServer
from tests._kernels import IPC_KERNELS, ipc_dir

from ._socket import ReadingSocket

# pytest-jupyter's own coroutine runner would run tests outside pytest-asyncio's loop: not here.
del pytest_pyfunc_call, pytest_pycollect_makeitem  # noqa: F821

SECRET = "sk-test-openai-SECRET-1234"
MODEL = "openai/gpt-4.1"
API = ("api", "eca", "v1")


@pytest.fixture
async def jp_asyncio_loop():  # noqa: F811 - replaces pytest-jupyter's: one loop for server, client and test
    return asyncio.get_running_loop()


@pytest.fixture(autouse=True)
def jp_server_cleanup(jp_asyncio_loop):  # noqa: F811 - stops the server (and our engines) after each test
    yield
    from jupyter_server.serverapp import ServerApp

    if ServerApp.initialized():
        app = ServerApp.instance()
        jp_asyncio_loop.run_until_complete(app._cleanup())
        ServerApp.clear_instance()


@pytest.fixture
def llm():
    server = ScriptedLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def eca_env(monkeypatch, tmp_path, jp_environ, llm):
    """The engines' environment: isolated HOME/XDG, providers pointed at the scripted server, no local model."""
    home = Path(os.environ["HOME"])
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.endswith("_API_URL") or name == "ECA_CONFIG":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("OPENAI_API_URL", llm.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ECA_CONFIG", json.dumps({"localModel": False, "defaultModel": MODEL}))
    return home


@pytest.fixture
def eca_limits() -> dict[str, Any]:
    """Override in a test module to configure EcaExtensionApp (e.g. small limits)."""
    return {}


@pytest.fixture
def server_app_config() -> dict[str, Any]:
    """Override (or parametrize) to add ServerApp settings, e.g. an authorizer."""
    return {}


@pytest.fixture
def jp_server_config(eca_env, eca_limits, server_app_config):  # noqa: F811
    from traitlets.config import Config

    return Config({
        "ServerApp": {"jpserver_extensions": {"eca_notebook": True, "jupyter_server_terminals": False},
                      **server_app_config},
        "EcaExtensionApp": dict(eca_limits),
        **IPC_KERNELS,
    })


@pytest.fixture
def jp_runtime_dir():  # noqa: F811 - a short path: the kernels' Unix sockets live here (tests/_kernels.py)
    runtime = ipc_dir()
    yield Path(runtime)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def workspace(jp_root_dir: Path) -> Path:
    (jp_root_dir / "README.md").write_text("# demo project\n")
    return jp_root_dir


@pytest.fixture
def state(jp_serverapp):
    return jp_serverapp.web_app.settings["eca_notebook_state"]


@pytest.fixture
def api(jp_fetch):
    """``await api("GET", "workspaces", body=..., params=...)`` → (status, json body); never raises on 4xx."""

    async def call(method: str, *path: str, body: Any = None, raw: bytes | None = None, params=None,
                   headers=None) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is None and method in ("POST", "PUT"):
            data = b""
        try:
            response = await jp_fetch(*API, *path, method=method, body=data, params=params, headers=headers,
                                      allow_nonstandard_methods=True)
        except HTTPClientError as exc:
            response = exc.response
            assert response is not None, exc
        text = response.body.decode() if response.body else ""
        return response.code, (json.loads(text) if text else None)

    return call


@dataclass
class EcaSocket(ReadingSocket):
    """One ECA client over a WebSocket: requests with ids, notifications recorded (and validated)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    responses: dict[Any, dict[str, Any]] = field(default_factory=dict)
    all_responses: list[dict[str, Any]] = field(default_factory=list)
    requests_from_server: list[dict[str, Any]] = field(default_factory=list)
    _next_id: int = 0

    def accept(self, message: Any) -> None:
        if isinstance(message, list):  # a batch's responses
            for response in message:
                self.responses[response.get("id")] = response
                self.all_responses.append(response)
        elif "method" in message and "id" in message:
            self.requests_from_server.append(message)
        elif "method" in message:
            method, params = message["method"], message.get("params")
            spec = METHODS.get(method)
            if spec is not None and spec.params is not None:
                parse_params(method, params)  # off-spec output fails the test
            if method == "chat/contentReceived":
                assert params["content"]["type"] in CONTENT_TYPES, params
            self.messages.append(message)
        else:
            self.responses[message.get("id")] = message
            self.all_responses.append(message)

    async def send_raw(self, text: str | bytes) -> None:
        await self.conn.write_message(text, binary=isinstance(text, bytes))

    async def call(self, method: str, params: Any = None, timeout: float = 60) -> dict[str, Any]:
        """Send a request; return the whole response (``result`` or ``error``)."""
        self._next_id += 1
        rid = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message))
        return await self._wait(lambda: self.responses.get(rid), timeout)

    async def request(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        response = await self.call(method, params, timeout)
        assert "error" not in response, response
        return response["result"]

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message))

    async def initialize(self, **params: Any) -> Any:
        body = {"clientInfo": {"name": "test", "version": "1"}, "capabilities": {"codeAssistant": {"chat": True}},
                "workspaceFolders": []}
        body.update(params)
        result = await self.request("initialize", body)
        await self.notify("initialized", {})
        await self.wait_for("tool/serverUpdated")
        return result

    async def wait_for(self, method: str, where: Callable[[dict], bool] = lambda p: True, start: int = 0,
                       timeout: float = 20) -> dict[str, Any]:
        def find():
            for message in self.messages[start:]:
                if message["method"] == method and where(message.get("params")):
                    return message["params"]
            return None

        return await self._wait(find, timeout)

    async def wait_idle(self, chat_id: str, start: int = 0) -> None:
        await self.wait_for("chat/statusChanged", lambda p: p["chatId"] == chat_id and p["status"] == "idle",
                            start=start)

    def contents(self, chat_id: str, start: int = 0) -> list[tuple[str, dict[str, Any]]]:
        return [(m["params"]["role"], m["params"]["content"]) for m in self.messages[start:]
                if m["method"] == "chat/contentReceived" and m["params"]["chatId"] == chat_id]

    def of(self, method: str) -> list[Any]:
        return [m.get("params") for m in self.messages if m["method"] == method]


def ws_url(port: int, base_url: str, params: str = "") -> str:
    return f"ws://127.0.0.1:{port}{base_url}api/eca/v1/ws" + (f"?{params}" if params else "")


@pytest.fixture
async def connect(jp_serverapp, http_server_client, jp_http_port, jp_base_url, jp_auth_header):
    """``await connect(workspace="sub")`` → a started :class:`EcaSocket` (token auth); closed at the end."""
    opened: list[EcaSocket] = []

    async def _connect(workspace: str | None = None, headers: dict[str, str] | None = None, **kwargs: Any):
        from urllib.parse import urlencode

        query = urlencode({"workspace": workspace}) if workspace is not None else ""
        request = HTTPRequest(ws_url(jp_http_port, jp_base_url, query),
                              headers={**jp_auth_header, **(headers or {})}, connect_timeout=20)
        conn = await websocket_connect(request, **kwargs)
        sock = EcaSocket(conn).start()
        opened.append(sock)
        return sock

    yield _connect
    for sock in opened:
        await sock.close()
