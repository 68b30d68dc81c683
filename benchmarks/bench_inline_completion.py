"""Inline completion latency: what do the engine and the stdio door add on top of the model's own time?

Against the scripted LLM server (127.0.0.1) with a fixed model delay, in the same run, so the difference is the
overhead and nothing else:

  (a) baseline — a bare httpx client POSTing the same raw completion to ``/v1/completions`` (streamed) and reading
      the answer: the model's delay plus one local HTTP exchange;
  (b) stdio — ``completion/inline`` to ``eca-notebook server`` in a subprocess (OpenAI-compatible fill-in-the-middle,
      the same reply), answered over the pipe: (b) − (a) is the engine + transport overhead (goal: ≤ 30 ms at p95);
  (c) typing — a 200-character line typed at a steady pace, one ``completion/inline`` per keystroke (no client
      debounce: the worst client), every one superseding the last: requests sent, model calls started, answers with
      items, and how fast a superseded request answers;
  (d) the embedded model (``--local``; skipped when it is not installed): cold start, then time to first token of a
      raw completion on the runtime, and ``completion/inline`` through the stdio door, p50/p95 over prompts.

Usage: python benchmarks/bench_inline_completion.py [--requests 200] [--delay 0.1] [--local]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from eca_notebook.rpc import Endpoint
from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text
from eca_notebook.transports.stdio import PipeStream

DOC = "import math\n\n\ndef area(r):\n    return \n\n\nprint(area(2))\n"
AT = {"line": 5, "character": 12}
ANSWER = "math.pi * r ** 2"
LINE = ("result = compute_statistics(dataframe, columns=['alpha', 'beta'], weights=None, normalize=True)  # "
        "the summary table that the report cell below renders, rounded to three decimals for readability!!!!!!")
assert len(LINE) == 200


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def reply(delay: float) -> Reply:
    return Reply([Delay(delay), Text(ANSWER[:8]), Text(ANSWER[8:])]) if delay else Reply([Text(ANSWER)])


async def baseline(server: ScriptedLLMServer, n: int, delay: float) -> list[float]:
    body = {"model": "m", "prompt": DOC[:40], "suffix": DOC[40:], "max_tokens": 160, "stream": True}
    times = []
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(n):
            server.enqueue(reply(delay))
            started = time.perf_counter()
            text = ""
            async with client.stream("POST", f"{server.url}/v1/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line == "data: [DONE]":
                        break  # as the provider does (the body's terminator may come a delayed-ACK later)
                    if line.startswith("data: "):
                        text += json.loads(line[6:])["choices"][0]["text"]
            times.append(time.perf_counter() - started)
            assert text == ANSWER, text
    return times


class Server:
    """``eca-notebook server`` in a subprocess, spoken to over its stdin/stdout."""

    def __init__(self, home: Path, config: dict[str, Any]) -> None:
        self.home, self.config = home, config
        self.proc: Any = None
        self.endpoint: Any = None
        self._runner: Any = None

    async def __aenter__(self) -> Server:
        home = self.home
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_URL"))}
        env.update(XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"), HOME=str(home),
                   OLLAMA_API_URL="http://127.0.0.1:9", ECA_CONFIG=json.dumps(self.config))
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "eca_notebook", "server", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=env)
        self.endpoint = Endpoint(PipeStream(self.proc.stdout, self.proc.stdin, codec="content-length"), name="bench")
        self.endpoint.register("$/progress", lambda p: None)
        self._runner = asyncio.create_task(self.endpoint.run())
        await self.endpoint.request("initialize", {"processId": None, "capabilities": {},
                                                   "workspaceFolders": [{"uri": home.as_uri(), "name": "b"}]})
        await self.endpoint.notify("initialized", {})
        return self

    async def complete(self, doc: str, at: dict[str, int], version: int, timeout: float = 300) -> dict[str, Any]:
        params = {"docText": doc, "docVersion": version, "position": at, "path": "bench.py"}
        result: dict[str, Any] = await self.endpoint.request("completion/inline", params, timeout=timeout)
        return result

    async def __aexit__(self, *exc: object) -> None:
        await self.endpoint.request("shutdown")
        await self.endpoint.notify("exit")
        await self.proc.wait()
        self._runner.cancel()
        await asyncio.gather(self._runner, return_exceptions=True)


def scripted_config(url: str) -> dict[str, Any]:
    return {"providers": {"bench": {"api": "openai-chat", "url": url, "models": {"m": {}}}},
            "defaultModel": "bench/m", "localModel": False, "completion": {"model": "bench/m", "fim": True}}


async def over_stdio(server: ScriptedLLMServer, home: Path, n: int, delay: float) -> list[float]:
    times = []
    async with Server(home, scripted_config(server.url)) as eca:
        for version in range(5):  # warm-up: imports, first connection
            server.enqueue(reply(0))
            await eca.complete(DOC, AT, version)
        for version in range(n):
            server.enqueue(reply(delay))
            started = time.perf_counter()
            result = await eca.complete(DOC, AT, version)
            times.append(time.perf_counter() - started)
            assert result["items"][0]["text"] == ANSWER, result
    return times


async def typing(server: ScriptedLLMServer, home: Path, delay: float, pace: float) -> dict[str, Any]:
    """One request per keystroke, never awaited before the next keystroke: each supersedes the previous."""
    async with Server(home, scripted_config(server.url)) as eca:
        server.enqueue(reply(0))
        await eca.complete(DOC, AT, 0)  # warm-up
        before = len([r for r in server.requests if r.path == "/v1/completions"])
        sent: list[tuple[float, asyncio.Task[Any]]] = []
        for i in range(1, len(LINE) + 1):
            server.enqueue(reply(delay))
            doc = LINE[:i] + "\n"

            async def one(doc: str = doc, version: int = i) -> tuple[dict[str, Any], float]:
                started = time.perf_counter()
                result = await eca.complete(doc, {"line": 1, "character": len(doc)}, version)
                return result, time.perf_counter() - started

            sent.append((time.perf_counter(), asyncio.create_task(one())))
            await asyncio.sleep(pace)
        answers = [await task for _, task in sent]
        started_calls = len([r for r in server.requests if r.path == "/v1/completions"]) - before
    server.clear()
    # how long after the superseding keystroke (sent ``pace`` later) the older request answered
    superseded = [max(0.0, t - pace) for r, t in answers if r.get("error", {}).get("message") == "superseded"]
    return {"keystrokes": len(LINE), "requests": len(answers), "model_calls": started_calls,
            "with_items": sum(1 for r, _ in answers if "items" in r), "superseded": len(superseded),
            "superseded_p50": pct(superseded, 0.5) if superseded else 0.0,
            "superseded_p95": pct(superseded, 0.95) if superseded else 0.0}


LOCAL_DOCS = [
    ("def add(a, b):\n    return ", {"line": 2, "character": 12}),
    ("import numpy as np\n\nx = np.linspace(0, 10, 100)\ny = np.", {"line": 4, "character": 8}),
    ("for i in range(10):\n    ", {"line": 2, "character": 5}),
    ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        ", {"line": 4, "character": 9}),
    ("import pandas as pd\n\ndf = pd.read_csv('data.csv')\ndf.", {"line": 4, "character": 4}),
]


async def local_ttft(prompts: list[str]) -> list[float]:
    """Time to the first streamed token of a raw completion, straight on the embedded model's runtime."""
    from eca_notebook.providers.local import get_local_runtime

    runtime = get_local_runtime()
    url = await runtime.ensure_started()
    times = []
    async with httpx.AsyncClient(timeout=120) as client:
        for prompt in prompts:
            body = {"prompt": prompt, "max_tokens": 16, "temperature": 0, "stream": True}
            started = time.perf_counter()
            async with client.stream("POST", f"{url}/v1/completions", json=body,
                                     headers={"authorization": f"Bearer {runtime.api_key}"}) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and '"text"' in line:
                        times.append(time.perf_counter() - started)
                        break
    await runtime.aclose()
    return times


async def local(home: Path, rounds: int) -> dict[str, Any] | None:
    from eca_notebook.providers.local import local_model_status

    if not local_model_status().available:
        print(f"(d) embedded model: skipped — {local_model_status().message}")
        return None
    async with Server(home, {}) as eca:
        started = time.perf_counter()
        await eca.complete(*LOCAL_DOCS[0], 0)
        cold = time.perf_counter() - started
        times = []
        for r in range(rounds):
            for doc, at in LOCAL_DOCS:
                started = time.perf_counter()
                await eca.complete(doc, at, r)
                times.append(time.perf_counter() - started)
    ttft = await local_ttft([d for d, _ in LOCAL_DOCS] * rounds)
    return {"cold": cold, "answer": times, "ttft": ttft}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.1, help="the model's fixed time, seconds")
    parser.add_argument("--pace", type=float, default=0.06, help="seconds between keystrokes in (c)")
    parser.add_argument("--local", action="store_true", help="also measure the embedded model (d)")
    parser.add_argument("--local-rounds", type=int, default=4)
    args = parser.parse_args()
    n, delay = args.requests, args.delay
    with ScriptedLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        a = await baseline(server, n, delay)
        b = await over_stdio(server, home, n, delay)
        c = await typing(server, home, 0.3, args.pace)
        d = await local(home, args.local_rounds) if args.local else None
    ms = lambda s: s * 1000  # noqa: E731
    print(f"model delay {ms(delay):.0f} ms, {n} requests each")
    print(f"(a) bare httpx /v1/completions : p50 {ms(pct(a, .5)):7.1f} ms   p95 {ms(pct(a, .95)):7.1f} ms")
    print(f"(b) completion/inline (stdio)  : p50 {ms(pct(b, .5)):7.1f} ms   p95 {ms(pct(b, .95)):7.1f} ms   "
          f"b/a p50 = {pct(b, .5) / pct(a, .5):.2f}")
    print(f"    engine + transport overhead: p50 {ms(pct(b, .5) - pct(a, .5)):7.1f} ms   "
          f"p95 {ms(pct(b, .95) - pct(a, .95)):7.1f} ms   (goal ≤ 30 ms p95)")
    print(f"    minus the model's delay    : p50 {ms(pct(b, .5) - delay):7.1f} ms   "
          f"p95 {ms(pct(b, .95) - delay):7.1f} ms   mean {ms(statistics.mean(b) - delay):.1f} ms")
    print(f"(c) typing {c['keystrokes']} chars, one request per keystroke every {ms(args.pace):.0f} ms, model "
          f"300 ms: {c['requests']} requests, {c['model_calls']} model calls started, {c['with_items']} with items, "
          f"{c['superseded']} superseded (answered p50 {ms(c['superseded_p50']):.1f} ms, "
          f"p95 {ms(c['superseded_p95']):.1f} ms after the next keystroke's request)")
    if d is not None:
        print(f"(d) embedded model: first request (model load) {d['cold']:.2f} s; time to first token "
              f"p50 {ms(pct(d['ttft'], .5)):.0f} ms p95 {ms(pct(d['ttft'], .95)):.0f} ms; completion/inline answer "
              f"p50 {ms(pct(d['answer'], .5)):.0f} ms p95 {ms(pct(d['answer'], .95)):.0f} ms "
              f"({len(d['answer'])} requests)")


if __name__ == "__main__":
    asyncio.run(main())
