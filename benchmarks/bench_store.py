"""Saving a large chat vs. the event loop: ``chat/list`` latency while a prompt on a 50 MB chat starts, vs. idle.

Before, saving ran on the loop (about 10 ms per MB: 527 ms for ``chat/list`` during a prompt on a 50 MB chat, vs.
0.5 ms idle). Now the engine snapshots the record on the loop (one step per dict/list, not per byte) and the
store's writer thread encodes and writes it. Measured in one run, in-process (an ECA connection over an in-memory
pair, the scripted LLM server on 127.0.0.1):

  idle       — N sequential ``chat/list`` round trips with nothing else going on (median, max)
  saving     — ``chat/list`` round trips sent back to back from the moment a save of the big chat is queued (what
               ``chat/prompt`` does first) until it is on disk (median, max; ratios to idle)
  prompt     — the same from the moment ``chat/prompt`` on the big chat is sent: adds the provider request (the whole
               history encoded as one JSON body by httpx, on the loop) to the save
  on-loop    — what the old code blocked the loop for: the same record saved synchronously (``ChatStore.save``)
  snapshot   — the part still on the loop: ``Engine._save`` (record + snapshot + queue)

Usage: python benchmarks/bench_store.py [--mb 50] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.chats._chat import Chat
from eca_notebook.providers.base import AssistantMessage, UserMessage
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Stall, Text
from eca_notebook.transports import memory_pair


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


def big_chat(chat_id: str, megabytes: int) -> Chat:
    """About *megabytes* of JSON: turns of 100 KB, each in the history and in what the client was shown."""
    chat = Chat(id=chat_id, title="big", model="bench/m", behavior="agent")
    block = "x" * 50_000
    for i in range(megabytes * 5):  # 2 × 50 KB per turn in messages + 2 × 50 KB in contents = 200 KB per turn
        chat.messages += [UserMessage(text=f"q{i} {block}"), AssistantMessage(text=f"a{i} {block}")]
        chat.contents += [{"role": "user", "content": {"type": "text", "text": f"q{i} {block}"}},
                          {"role": "assistant", "content": {"type": "text", "text": f"a{i} {block}"}}]
    return chat


async def run(megabytes: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLMServer() as llm:
        home = Path(tmp)
        env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "XDG_CONFIG_HOME": str(home / "config"),
               "OLLAMA_API_URL": "http://127.0.0.1:9"}
        options = {"providers": {"bench": {"api": "openai-chat", "url": llm.url, "models": {"m": {}}}},
                   "localModel": False}
        engine = Engine(EngineOptions(workspace_folders=[home], initialization_options=options, env=env))
        server_side, client_side = memory_pair()
        connection = ServerConnection(server_side, lambda params: engine)
        client = Endpoint(client_side, name="bench")
        for method in ("chat/contentReceived", "chat/opened", "chat/statusChanged", "config/updated",
                       "tool/serverUpdated", "$/progress", "$/showMessage"):
            client.register(method, lambda params: None)
        tasks = [asyncio.create_task(connection.run()), asyncio.create_task(client.run())]
        await client.request("initialize", {"processId": None, "capabilities": {},
                                            "workspaceFolders": [{"uri": home.as_uri(), "name": "w"}]})
        await client.notify("initialized")
        await engine.start()
        assert engine.store is not None
        chat = big_chat("big", megabytes)
        engine.chats[chat.id] = chat
        record = chat.to_record()

        t0 = time.perf_counter()
        engine.store.save(record)  # what the loop used to do on every save
        on_loop = time.perf_counter() - t0
        size = engine.store.path_for("big").stat().st_size

        async def chat_list() -> float:
            t = time.perf_counter()
            await client.request("chat/list", {})
            return time.perf_counter() - t

        for _ in range(10):
            await chat_list()
        idle = [await chat_list() for _ in range(requests)]

        async def while_saving(start) -> list[float]:
            """chat/list round trips, back to back, from start() until the big chat's save is on disk."""
            latencies: list[float] = []
            started = start()
            await asyncio.sleep(0)
            while True:
                latencies.append(await chat_list())
                if (started is None or started.done()) and not engine.store._waiting and engine.store._writing is None:
                    break
            if started is not None:
                await started
            return latencies

        t0 = time.perf_counter()
        engine._save(chat)
        snapshot = time.perf_counter() - t0
        await asyncio.to_thread(engine.store.flush)
        saving = await while_saving(lambda: engine._save(chat))

        llm.enqueue(Reply([Text("ok"), Stall(5)]))
        during = await while_saving(lambda: asyncio.create_task(client.request(
            "chat/prompt", {"chatId": "big", "message": "one more", "model": "bench/m"})))
        await engine.stop("big")

        print(f"chat of {size / 1e6:.1f} MB on disk; {requests} chat/list round trips idle, "
              f"{len(during)} during the save")
        print(f"  idle      median {ms(statistics.median(idle))}  p95 {ms(p95(idle))}  max {ms(max(idle))}")
        base = statistics.median(idle)
        print(f"  saving    median {ms(statistics.median(saving))}  p95 {ms(p95(saving))}  max {ms(max(saving))}"
              f"   (median / idle: {statistics.median(saving) / base:.1f}x, max / idle: {max(saving) / base:.1f}x)")
        print(f"  prompt    median {ms(statistics.median(during))}  p95 {ms(p95(during))}  max {ms(max(during))}"
              f"   (median / idle: {statistics.median(during) / base:.1f}x, max / idle: {max(during) / base:.1f}x)")
        print(f"  on-loop   synchronous save (the old path) {ms(on_loop)}"
              f"   ({on_loop / statistics.median(idle):.0f}x idle chat/list)")
        print(f"  snapshot  Engine._save on the loop {ms(snapshot)}")
        await client.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        await engine.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(run(args.mb, args.requests))


if __name__ == "__main__":
    main()
