"""End-to-end harness: a real ``eca-notebook server`` subprocess over pipes, talking to the scripted LLM server.

Each test gets an isolated HOME/XDG tree and a workspace folder, so no real user config or saved chat leaks in.
The client side is our own transport + endpoint (a separate test drives the server with pygls, a third-party
JSON-RPC client). Every notification the server sends is validated against the protocol models.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.protocol import CONTENT_TYPES, METHODS, parse_params
from eca_notebook.rpc import Endpoint
from eca_notebook.testing.llm_server import ScriptedLLMServer
from eca_notebook.transports.stdio import PipeStream

SECRET_OPENAI = "sk-test-openai-SECRET-1234"
SECRET_ANTHROPIC = "sk-ant-test-SECRET-5678"

# The four provider wire APIs and the model id that reaches each of them.
API_MODELS = {
    "openai-responses": "openai/gpt-4.1",
    "openai-chat": "local-vllm/qwen3",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "ollama": "ollama/llama3.2:1b",
}


def server_env(home: Path, llm: ScriptedLLMServer | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_API_URL")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("ECA_CONFIG", None)
    if llm is not None:
        env.update(
            OPENAI_API_URL=llm.url,
            OPENAI_API_KEY=SECRET_OPENAI,
            ANTHROPIC_API_URL=llm.url,
            ANTHROPIC_API_KEY=SECRET_ANTHROPIC,
            OLLAMA_API_URL=llm.url,
            ECA_CONFIG=json.dumps(
                {
                    "providers": {
                        "local-vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen3": {}}},
                    }
                }
            ),
        )
    env.update(extra)
    return env


async def wait_gone(pid: int, within: float = 5.0) -> bool:
    """True once process `pid` no longer exists (polled: signals and reaping are asynchronous)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


@dataclass
class Received:
    method: str
    params: Any


@dataclass
class EcaProcess:
    """A running server plus everything it sent us."""

    proc: asyncio.subprocess.Process
    endpoint: Endpoint
    messages: list[Received] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runner: asyncio.Task | None = None
    stderr_chunks: list[bytes] = field(default_factory=list)

    # -- sending -------------------------------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        return await self.endpoint.request(method, params, timeout=timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.endpoint.notify(method, params)

    async def initialize(self, workspace: Path, **params: Any) -> Any:
        body = {
            "processId": os.getpid(),
            "clientInfo": {"name": "e2e", "version": "1"},
            "capabilities": {"codeAssistant": {"chat": True}},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}],
        }
        body.update(params)
        result = await self.request("initialize", body)
        await self.notify("initialized", {})
        await self.wait_for(lambda m: m.method == "tool/serverUpdated")
        return result

    # -- receiving -----------------------------------------------------------------------------------------------

    async def _record(self, method: str, params: Any) -> None:
        spec = METHODS.get(method)
        if spec is not None and spec.params is not None:
            parse_params(method, params)  # raises if the server sent something off-spec
        if method == "chat/contentReceived":
            # no fallback to UnknownContent for our own output
            assert params["content"]["type"] in CONTENT_TYPES, params
        async with self._changed:
            self.messages.append(Received(method, params))
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[Received], bool], timeout: float = 30, start: int = 0) -> Received:
        async def find() -> Received:
            async with self._changed:
                index = start
                while True:
                    for message in self.messages[index:]:
                        if predicate(message):
                            return message
                    index = len(self.messages)
                    await self._changed.wait()

        return await asyncio.wait_for(find(), timeout)

    async def wait_idle(self, chat_id: str, start: int = 0, timeout: float = 30) -> None:
        await self.wait_for(
            lambda m: (m.method == "chat/statusChanged" and m.params["chatId"] == chat_id
                       and m.params["status"] == "idle"),
            timeout=timeout,
            start=start,
        )

    def contents(self, chat_id: str, start: int = 0) -> list[tuple[str, dict]]:
        return [
            (m.params["role"], m.params["content"])
            for m in self.messages[start:]
            if m.method == "chat/contentReceived" and m.params["chatId"] == chat_id
        ]

    def of(self, method: str) -> list[Any]:
        return [m.params for m in self.messages if m.method == method]

    # -- lifecycle -----------------------------------------------------------------------------------------------

    async def shutdown(self, timeout: float = 60) -> int:
        await self.request("shutdown")
        await self.notify("exit")
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        await self.endpoint.close()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")


METHODS_FROM_SERVER = [
    "chat/contentReceived", "config/updated", "tool/serverUpdated", "$/showMessage", "$/progress",
    "chat/opened", "chat/deleted", "chat/cleared", "chat/statusChanged", "tool/serverRemoved",
]


async def start_server(env: dict[str, str], *args: str, cwd: Path | None = None) -> EcaProcess:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "server", *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, cwd=str(cwd) if cwd else None,
    )
    assert proc.stdout is not None and proc.stdin is not None
    stream = PipeStream(proc.stdout, proc.stdin, codec="content-length")
    endpoint = Endpoint(stream, name="e2e-client")
    client = EcaProcess(proc=proc, endpoint=endpoint)
    for method in METHODS_FROM_SERVER:
        endpoint.register(method, lambda params, _m=method: client._record(_m, params))

    async def pump_stderr() -> None:
        assert proc.stderr is not None
        while chunk := await proc.stderr.read(65536):
            client.stderr_chunks.append(chunk)

    async def pump() -> None:
        await asyncio.gather(endpoint.run(), pump_stderr())

    client._runner = asyncio.create_task(pump())
    return client


@pytest.fixture
async def spawn(home: Path, llm: ScriptedLLMServer):
    """Start servers (possibly several, e.g. before and after a restart); all are killed at the end."""
    started: list[EcaProcess] = []

    async def _spawn(*args: str, env: dict[str, str] | None = None, **extra_env: str) -> EcaProcess:
        client = await start_server(env or server_env(home, llm, **extra_env), *args)
        started.append(client)
        return client

    yield _spawn
    for client in started:
        await client.kill()
