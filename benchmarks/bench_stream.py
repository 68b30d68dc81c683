"""Streaming throughput: how much does the engine cost on top of just reading the provider's stream?

All three measurements stream the same scripted reply (N text chunks, Chat Completions SSE) from the scripted LLM
server on 127.0.0.1, in the same run, so the ratios compare like with like:

  (a) baseline — a bare httpx loop reading the SSE stream and json-decoding every chunk;
  (b) in-process — the Engine streaming the reply as ``chat/contentReceived`` dicts to a listener;
  (c) stdio — ``eca-notebook server`` in a subprocess, the same notifications framed over a pipe to this process.

Prints chunks/s for each, the ratios b/a and c/a, and the engine's CPU microseconds per chunk (the event-loop
thread's CPU time in (b), and that minus the baseline's, i.e. what the engine adds per chunk).

Usage: python benchmarks/bench_stream.py [--chunks 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.rpc import Endpoint
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Stall, Text
from eca_notebook.transports.stdio import PipeStream

MODEL = "bench/m"


def reply(chunks: int) -> Reply:
    return Reply([Text(f"t{i} ") for i in range(chunks)])


def config(url: str) -> dict:
    return {"providers": {"bench": {"api": "openai-chat", "url": url, "models": {"m": {}}}}, "defaultModel": MODEL}


async def baseline(server: ScriptedLLMServer, chunks: int) -> tuple[float, float]:
    server.enqueue(reply(chunks))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    got = 0
    async with httpx.AsyncClient(timeout=60) as client:
        wall, cpu = time.perf_counter(), time.thread_time()
        async with client.stream("POST", f"{server.url}/v1/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    event = json.loads(line[6:])
                    for choice in event.get("choices") or []:
                        if (choice.get("delta") or {}).get("content"):
                            got += 1
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert got == chunks, (got, chunks)
    return wall, cpu


def reply_chars(chunks: int) -> int:
    return sum(len(f"t{i} ") for i in range(chunks))


class Counter:
    """Counts the assistant's text notifications and characters (a door may merge chunks when its reader lags, so
    the characters are what must all arrive)."""

    def __init__(self) -> None:
        self.text_chunks = 0
        self.text_chars = 0
        self.idle = asyncio.Event()

    def send(self, method: str, params: dict) -> None:
        if method == "chat/contentReceived" and params["role"] == "assistant" and params["content"]["type"] == "text":
            self.text_chunks += 1
            self.text_chars += len(params["content"]["text"])
        elif method == "chat/statusChanged" and params["status"] == "idle":
            self.idle.set()


async def in_process(server: ScriptedLLMServer, chunks: int, home: Path) -> tuple[float, float]:
    env = {"XDG_CACHE_HOME": str(home / "cache"), "XDG_CONFIG_HOME": str(home / "config"), "HOME": str(home),
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    engine = Engine(EngineOptions(workspace_folders=[home], initialization_options=config(server.url), env=env))
    counter = Counter()
    engine.add_listener(counter)
    await engine.start()
    server.enqueue(reply(chunks))
    wall, cpu = time.perf_counter(), time.thread_time()
    await engine.prompt(ChatPromptParams(message="go"))
    await counter.idle.wait()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    await engine.aclose()
    assert counter.text_chars == reply_chars(chunks), (counter.text_chars, reply_chars(chunks))
    return wall, cpu


async def over_stdio(server: ScriptedLLMServer, chunks: int, home: Path, stops: int = 0) -> tuple[float, list[float]]:
    """Stream N chunks over stdio; then, ``stops`` times, measure chat/promptStop → status idle on a stalled stream."""
    env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"), HOME=str(home),
               OLLAMA_API_URL="http://127.0.0.1:9", ECA_CONFIG=json.dumps(config(server.url)))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "server", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    endpoint = Endpoint(PipeStream(proc.stdout, proc.stdin, codec="content-length"), name="bench")
    counter = Counter()
    endpoint.register("chat/contentReceived", lambda p: counter.send("chat/contentReceived", p))
    endpoint.register("chat/statusChanged", lambda p: counter.send("chat/statusChanged", p))
    runner = asyncio.create_task(endpoint.run())
    await endpoint.request("initialize", {"processId": None, "capabilities": {},
                                          "workspaceFolders": [{"uri": home.as_uri(), "name": "b"}]})
    await endpoint.notify("initialized", {})
    server.enqueue(reply(chunks))
    wall = time.perf_counter()
    await endpoint.request("chat/prompt", {"message": "go"})
    await counter.idle.wait()
    wall = time.perf_counter() - wall
    stop_latencies = []
    for _ in range(stops):
        counter.idle.clear()
        server.enqueue(Reply([Text("x"), Stall(30)]))
        chat_id = (await endpoint.request("chat/prompt", {"message": "stall"}))["chatId"]
        await asyncio.sleep(0.2)  # let the stream start
        started = time.perf_counter()
        await endpoint.notify("chat/promptStop", {"chatId": chat_id})
        await counter.idle.wait()
        stop_latencies.append(time.perf_counter() - started)
    await endpoint.request("shutdown")
    await endpoint.notify("exit")
    await proc.wait()
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)
    assert counter.text_chars >= reply_chars(chunks), (counter.text_chars, reply_chars(chunks))
    return wall, stop_latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N for each measurement")
    args = parser.parse_args()
    n = args.chunks
    with ScriptedLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        a = min([await baseline(server, n) for _ in range(args.repeat)], key=lambda r: r[0])
        b = min([await in_process(server, n, home) for _ in range(args.repeat)], key=lambda r: r[0])
        runs = [await over_stdio(server, n, home, stops=5) for _ in range(args.repeat)]
        c = min(run[0] for run in runs)
        stops = sorted(latency for run in runs for latency in run[1])
    rate = lambda wall: n / wall  # noqa: E731
    print(f"chunks per run: {n} (best of {args.repeat})")
    print(f"(a) bare httpx SSE loop      : {rate(a[0]):>10,.0f} chunks/s")
    print(f"(b) in-process engine        : {rate(b[0]):>10,.0f} chunks/s   b/a = {rate(b[0]) / rate(a[0]):.2f}")
    print(f"(c) stdio server → client    : {rate(c):>10,.0f} chunks/s   c/a = {rate(c) / rate(a[0]):.2f}")
    print(f"engine loop-thread CPU       : {b[1] / n * 1e6:>10.1f} µs/chunk"
          f" (baseline loop {a[1] / n * 1e6:.1f} µs/chunk,"
          f" engine adds {(b[1] - a[1]) / n * 1e6:.1f} µs/chunk)")
    print(f"chat/promptStop → idle (stdio): median {stops[len(stops) // 2] * 1000:.1f} ms,"
          f" max {stops[-1] * 1000:.1f} ms over {len(stops)} stops")


if __name__ == "__main__":
    asyncio.run(main())
