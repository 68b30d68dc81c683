"""The WebSocket door's cost: round-trip latency and streaming throughput vs. the in-process engine, same run.

A real ``jupyter server`` (subprocess, the eca_notebook extension enabled, token auth) and the scripted LLM server
(subprocess too, so its threads do not compete with the clients for this process's GIL), both on 127.0.0.1; this
process is the client. Measured:

  round trip  — N sequential ``chat/list`` requests: (a) an ECA connection over an in-memory pair in this process,
                (b) the same over the extension's WebSocket. Median and p95, ratio b/a.
  streaming   — one reply of C text chunks until ``chat/statusChanged`` idle: (a) the in-process engine with a
                listener, (b) an ECA connection over an in-memory pair, (c) a WebSocket client of the Jupyter server.
                chunks/s for each, ratios c/a and c/b.

Usage: python benchmarks/bench_websocket.py [--chunks 5000] [--requests 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing.llm_server import Reply, Text
from eca_notebook.transports import memory_pair

MODEL = "bench/m"
TOKEN = "bench-token"


def reply(chunks: int) -> Reply:
    return Reply([Text(f"t{i} ") for i in range(chunks)])


def eca_config(url: str) -> dict:
    return {"providers": {"bench": {"api": "openai-chat", "url": url, "models": {"m": {}}}}, "defaultModel": MODEL,
            "localModel": False}


def env_for(home: Path, llm_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_API_URL")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"),
               OLLAMA_API_URL="http://127.0.0.1:9", ECA_CONFIG=json.dumps(eca_config(llm_url)),
               JUPYTER_CONFIG_DIR=str(home / "jupyter-config"), JUPYTER_DATA_DIR=str(home / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"))
    return env


class ExternalLLM:
    """``python -m eca_notebook.testing.llm_server`` in a subprocess, scripted over HTTP."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    async def __aenter__(self) -> ExternalLLM:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "eca_notebook.testing.llm_server", stdout=asyncio.subprocess.PIPE)
        assert self.proc.stdout is not None
        line = (await asyncio.wait_for(self.proc.stdout.readline(), 30)).decode().strip()
        assert line.startswith("URL "), line
        self.url = line[4:]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            await self.proc.wait()

    def enqueue(self, reply: Reply) -> None:
        httpx.post(f"{self.url}/_scripted/enqueue", json=reply.to_json(), timeout=30).raise_for_status()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Counter:
    """Counts the reply's chunks by their text (``t<i> `` each): a connection that falls behind merges consecutive
    chunks into one notification (ServerConnection's backlog rule), which shows the same text."""

    def __init__(self) -> None:
        self.text_chunks = 0
        self.notifications = 0
        self.idle = asyncio.Event()

    def send(self, method: str, params: dict) -> None:
        if method == "chat/contentReceived" and params["role"] == "assistant" and params["content"]["type"] == "text":
            self.text_chunks += params["content"]["text"].count(" ")
            self.notifications += 1
        elif method == "chat/statusChanged" and params["status"] == "idle":
            self.idle.set()


# -- in this process ---------------------------------------------------------------------------------------------


async def engine_stream(llm: ExternalLLM, workspace: Path, chunks: int) -> float:
    engine = Engine(EngineOptions(workspace_folders=[workspace], env=env_for(workspace.parent, llm.url)))
    counter = Counter()
    engine.add_listener(counter)
    await engine.start()
    llm.enqueue(reply(chunks))
    wall = time.perf_counter()
    await engine.prompt(ChatPromptParams(message="go"))
    await counter.idle.wait()
    wall = time.perf_counter() - wall
    await engine.aclose()
    assert counter.text_chunks == chunks, (counter.text_chunks, chunks)
    return wall


class MemoryClient:
    """An ECA client on a ServerConnection over an in-memory pair: the WebSocket path minus the socket."""

    def __init__(self, llm: ExternalLLM, workspace: Path) -> None:
        env = env_for(workspace.parent, llm.url)
        server_side, client_side = memory_pair()
        self.connection = ServerConnection(
            server_side, lambda params: Engine(EngineOptions(workspace_folders=[workspace], env=env)))
        self.endpoint = Endpoint(client_side, name="bench-client")
        self.counter = Counter()
        for method in ("chat/contentReceived", "chat/statusChanged"):
            self.endpoint.register(method, lambda p, m=method: self.counter.send(m, p))
        self.tasks = [asyncio.create_task(self.connection.run()), asyncio.create_task(self.endpoint.run())]

    async def start(self) -> None:
        await self.endpoint.request("initialize", {"capabilities": {}, "workspaceFolders": []})
        await self.endpoint.notify("initialized", {})

    async def close(self) -> None:
        await self.endpoint.request("shutdown")
        await self.endpoint.notify("exit")
        await asyncio.wait_for(self.tasks[0], 10)
        await self.endpoint.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def memory_round_trips(llm: ExternalLLM, workspace: Path, n: int) -> list[float]:
    client = MemoryClient(llm, workspace)
    await client.start()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await client.endpoint.request("chat/list", {})
        times.append(time.perf_counter() - started)
    await client.close()
    return times


async def memory_stream(llm: ExternalLLM, workspace: Path, chunks: int) -> float:
    client = MemoryClient(llm, workspace)
    await client.start()
    llm.enqueue(reply(chunks))
    wall = time.perf_counter()
    await client.endpoint.request("chat/prompt", {"message": "go"})
    await client.counter.idle.wait()
    wall = time.perf_counter() - wall
    await client.close()
    assert client.counter.text_chunks == chunks, (client.counter.text_chunks, chunks)
    return wall


# -- over the Jupyter server's WebSocket ---------------------------------------------------------------------------


class WsClient:
    def __init__(self, conn) -> None:
        self.conn = conn
        self.next_id = 0

    @classmethod
    async def connect(cls, port: int) -> WsClient:
        request = HTTPRequest(f"ws://127.0.0.1:{port}/api/eca/v1/ws", headers={"Authorization": f"token {TOKEN}"})
        client = cls(await websocket_connect(request))
        await client.request("initialize", {"capabilities": {}, "workspaceFolders": []})
        await client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return client

    async def send(self, message: dict) -> None:
        await self.conn.write_message(json.dumps(message))

    async def request(self, method: str, params: dict, on_notification=None) -> dict:
        self.next_id += 1
        rid = self.next_id
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            text = await self.conn.read_message()
            assert text is not None, "socket closed"
            message = json.loads(text)
            if message.get("id") == rid and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if on_notification is not None and "method" in message:
                on_notification(message["method"], message.get("params"))

    async def stream_until_idle(self, counter: Counter) -> None:
        while not counter.idle.is_set():
            text = await self.conn.read_message()
            assert text is not None, "socket closed"
            message = json.loads(text)
            if "method" in message:
                counter.send(message["method"], message.get("params"))


async def ws_round_trips(port: int, n: int) -> list[float]:
    client = await WsClient.connect(port)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await client.request("chat/list", {})
        times.append(time.perf_counter() - started)
    client.conn.close()
    return times


async def ws_stream(port: int, llm: ExternalLLM, chunks: int) -> float:
    client = await WsClient.connect(port)
    counter = Counter()
    llm.enqueue(reply(chunks))
    wall = time.perf_counter()
    await client.request("chat/prompt", {"message": "go"}, on_notification=counter.send)
    await client.stream_until_idle(counter)
    wall = time.perf_counter() - wall
    client.conn.close()
    assert counter.text_chunks == chunks, (counter.text_chunks, chunks)
    return wall


async def start_jupyter(home: Path, root: Path, llm: ExternalLLM) -> tuple[asyncio.subprocess.Process, int]:
    port = free_port()
    env = env_for(home, llm.url)
    config_dir = Path(env["JUPYTER_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"eca_notebook": True}}}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "jupyter_server", f"--port={port}", "--ServerApp.port_retries=0", "--no-browser",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}", "--ServerApp.log_level=WARN",
        *(["--allow-root"] if os.geteuid() == 0 else []),
        env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    async with httpx.AsyncClient() as http:
        for _ in range(300):
            try:
                response = await http.get(f"http://127.0.0.1:{port}/api/eca/v1/health",
                                          headers={"Authorization": f"token {TOKEN}"})
                if response.status_code == 200:
                    return proc, port
            except httpx.HTTPError:
                pass
            if proc.returncode is not None:
                raise RuntimeError("jupyter server exited")
            await asyncio.sleep(0.1)
    raise RuntimeError("jupyter server did not start")


def describe(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95) - 1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=5_000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3, help="best of N for each streaming measurement")
    args = parser.parse_args()
    n, c = args.requests, args.chunks
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        workspace = home / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# bench\n")
        async with ExternalLLM() as llm:
            proc, port = await start_jupyter(home, workspace, llm)
            try:
                rt_memory = describe(await memory_round_trips(llm, workspace, n))
                rt_ws = describe(await ws_round_trips(port, n))
                engine = min([await engine_stream(llm, workspace, c) for _ in range(args.repeat)])
                memory = min([await memory_stream(llm, workspace, c) for _ in range(args.repeat)])
                ws = min([await ws_stream(port, llm, c) for _ in range(args.repeat)])
            finally:
                proc.terminate()
                await proc.wait()
    print(f"round trip (chat/list, {n} sequential requests): median / p95")
    print(f"(a) ECA over an in-memory pair : {rt_memory[0] * 1e6:>8.0f} / {rt_memory[1] * 1e6:.0f} µs")
    print(f"(b) ECA over the WebSocket     : {rt_ws[0] * 1e6:>8.0f} / {rt_ws[1] * 1e6:.0f} µs"
          f"   b/a = {rt_ws[0] / rt_memory[0]:.1f}×")
    rate = lambda wall: c / wall  # noqa: E731
    print(f"streaming ({c} text chunks, best of {args.repeat})")
    print(f"(a) in-process engine          : {rate(engine):>10,.0f} chunks/s")
    print(f"(b) ECA over an in-memory pair : {rate(memory):>10,.0f} chunks/s   b/a = {rate(memory) / rate(engine):.2f}")
    print(f"(c) WebSocket client           : {rate(ws):>10,.0f} chunks/s   c/a = {rate(ws) / rate(engine):.2f}"
          f"   c/b = {rate(ws) / rate(memory):.2f}")


if __name__ == "__main__":
    asyncio.run(main())
