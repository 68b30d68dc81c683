"""Steering latency: the time from ``chat/promptSteer`` to the steer's text in the model's next request.

A steer joins at the next round boundary, so its latency is (the rest of the round it arrived in) + (our own work at
the boundary: the round's tool result, the steer's user message, the next request built and sent). This measures
both, through the real client, engine and providers against the scripted LLM server (a separate process, so its
clock reads the request's arrival without our CPU in the way):

  steer→request   — from the client's ``steer()`` to the second request's arrival at the server, the steer sent
                    while the round's tool call (``shell_command "sleep S"``) runs
  boundary→request — from the end of that tool call (its process exited: the toolCalled content) to the arrival:
                    what the engine adds at the boundary

Usage: python benchmarks/bench_steer.py [--runs 20] [--tool-seconds 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eca_notebook.client import EcaClient

SERVER = """
import json, sys, time
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage
sleep = sys.argv[1]
arrivals = []
def respond(body):
    messages = body.get("messages") or []
    arrivals.append((time.time(), json.dumps(messages[-1:])))
    if messages and messages[-1].get("role") == "user" and "STEER-" not in json.dumps(messages[-1]):
        return Reply([ToolCall("c1", "eca__shell_command", json.dumps({"command": "sleep " + sleep})), Usage(10, 5)])
    return Reply([Text("ok"), Usage(10, 2)])
with ScriptedLLMServer() as server:
    server.respond_with(respond)
    print(server.url, flush=True)
    for line in sys.stdin:
        print(json.dumps(arrivals), flush=True)
        arrivals.clear()
"""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def main(runs: int, tool_seconds: float) -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(tool_seconds)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    total: list[float] = []
    boundary: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = Path(tmp) / "home", Path(tmp) / "ws"
        (home / ".config").mkdir(parents=True)
        (home / ".cache").mkdir(parents=True)
        workspace.mkdir()
        env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
               "OLLAMA_API_URL": "http://127.0.0.1:9"}
        config = {"localModel": False, "defaultModel": "fake/m1",
                  "providers": {"fake": {"api": "openai-chat", "url": url, "models": {"m1": {}}}}}
        async with await EcaClient.start(workspace=workspace, env=env, config=config) as eca:
            for run in range(runs + 1):  # the first is a warm-up
                marker = f"STEER-{run}"
                sent_at: float | None = None
                tool_done: float | None = None
                stream = eca.stream("work", approval=lambda content: True)
                async for item in stream:
                    kind = item.content.type
                    if kind == "toolCallRunning" and sent_at is None:
                        sent_at = time.time()
                        await eca.steer(stream.chat_id, marker)
                    elif kind == "toolCalled" and tool_done is None:
                        tool_done = time.time()
                server.stdin.write("next\n")
                server.stdin.flush()
                arrivals = json.loads(server.stdout.readline())
                arrived = next(at for at, last in arrivals if marker in last)
                if run and sent_at is not None and tool_done is not None:
                    total.append((arrived - sent_at) * 1000)
                    boundary.append((arrived - tool_done) * 1000)
    server.stdin.close()
    server.wait(timeout=10)
    print(f"steering latency over {len(total)} turns (tool call: sleep {tool_seconds} s)")
    for name, values in (("steer→request", total), ("boundary→request", boundary)):
        print(f"  {name:17} p50 {statistics.median(values):7.1f} ms   p95 {pct(values, 0.95):7.1f} ms   "
              f"max {max(values):7.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tool-seconds", type=float, default=0.3)
    args: Any = parser.parse_args()
    asyncio.run(main(args.runs, args.tool_seconds))
