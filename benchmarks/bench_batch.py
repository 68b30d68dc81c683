"""Batch prompts at scale: in-process at concurrency 1, 16 and 64, and on a LocalCluster — items/s, speed-up vs.
concurrency 1, overhead per item, CPU per item, peak memory of the driver and the workers.

Every prompt is answered by the scripted LLM server after a fixed model delay (default 200 ms), so the model's own
time is known exactly and everything above it is ours. The server runs in a process of its own, so the CPU
measured in the driver and the workers is ours alone.

  items/s      — items answered per second of wall time (the engines are started before: a warm-up item per
                 worker thread, not counted; the engine start is reported on its own)
  speed-up     — items/s relative to concurrency 1
  overhead     — wall × parallel slots / items − delay: what an item costs us beyond the model, per slot (for the
                 cluster: the Dask scheduler, task (de)serialisation, the limiter round trips, the worker's engine).
                 Once the CPUs are saturated (64 slots on a 2-core machine) this is CPU contention, not latency:
                 read the CPU column there
  CPU/item     — CPU seconds (user + system) of the driver and every worker per item: our total work for an item
  peak RSS     — the driver's (this process, max over the run) and each worker process's max

Concurrency 1 at 200 ms would take 400 s for 2,000 items, so it runs on ``--serial-items`` (default 100) and its
items/s is the baseline; ``--serial-items 0`` runs all of them.

Usage: python benchmarks/bench_batch.py [--items 2000] [--delay 0.2] [--workers 2] [--threads 32]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eca_notebook.batch import RateLimit, batch, local_cluster

#: the scripted server, in a process of its own: prints its URL, serves until stdin closes
SERVER = """
import sys
from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text, Usage
delay = float(sys.argv[1])
with ScriptedLLMServer() as server:
    server.respond_with(lambda body: Reply([Delay(delay), Text("ok"), Usage(20, 2)]))
    print(server.url, flush=True)
    sys.stdin.read()
"""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--serial-items", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=32, help="threads per worker")
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.delay)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    home = Path(tempfile.mkdtemp(prefix="eca-bench-batch-"))
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    config = {"localModel": False, "defaultModel": "fake/m1",
              "providers": {"fake": {"api": "openai-chat", "url": url, "models": {"m1": {}}}}}
    rows: list[tuple[str, int, int, float, float]] = []

    def run(label: str, count: int, slots: int, *, record: bool = True, dask: Any = None, **kwargs: Any) -> float:
        prompts = [f"{label} prompt {i}" for i in range(count)]
        cpu = cpu_seconds() + (sum(dask.run(cpu_seconds).values()) if dask is not None else 0.0)
        started = time.perf_counter()
        results = batch(prompts, workspace=home, config=config, env=env, progress=False, estimate=False,
                        **({"executor": dask} if dask is not None else {}), **kwargs)
        wall = time.perf_counter() - started
        cpu = cpu_seconds() + (sum(dask.run(cpu_seconds).values()) if dask is not None else 0.0) - cpu
        failed = sum(not r.ok for r in results)
        assert failed == 0, f"{label}: {failed} failed: {results.failed[0].error}"
        if record:
            rows.append((label, count, slots, wall, cpu))
        return wall

    serial = args.serial_items or args.items
    engine_start = run("warm-up", 1, 1, record=False, concurrency=1)  # this process's engine: started once
    run("in-process c=1", serial, 1, concurrency=1)
    run("in-process c=16", args.items, 16, concurrency=16)
    run("in-process c=64", args.items, 64, concurrency=64)
    driver_rss = peak_rss_mb()
    slots = args.workers * args.threads
    started = time.perf_counter()
    with local_cluster(n_workers=args.workers, threads_per_worker=args.threads, silence_logs=50) as client:
        cluster_start = time.perf_counter() - started
        # every worker starts its engine on its first item: one item per thread, not counted
        worker_engines = run("cluster warm-up", slots, slots, record=False, dask=client)
        run(f"LocalCluster {args.workers}x{args.threads}", args.items, slots, dask=client)
        run(f"LocalCluster {args.workers}x{args.threads}, limit 64", args.items, 64, dask=client,
            rate_limit=RateLimit(max_concurrent=64))
        workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    server.stdin.close()
    server.wait(timeout=30)

    base = rows[0][1] / rows[0][3]
    print(f"{args.items} prompts, model delay {args.delay * 1000:.0f} ms (concurrency 1 on {serial}); not counted: "
          f"engine start {engine_start:.1f} s, LocalCluster start {cluster_start:.1f} s, workers' engines "
          f"{worker_engines:.1f} s; {os.cpu_count()} CPUs")
    print(f"{'run':<34} {'items':>6} {'wall s':>8} {'items/s':>8} {'speed-up':>9} {'overhead/item':>14} "
          f"{'CPU/item':>9}")
    for label, count, slots_, wall, cpu in rows:
        rate = count / wall
        overhead = wall * slots_ / count - args.delay
        print(f"{label:<34} {count:>6} {wall:>8.2f} {rate:>8.1f} {rate / base:>8.1f}x {overhead * 1000:>11.1f} ms "
              f"{cpu / count * 1000:>6.1f} ms")
    print(f"peak RSS: driver {max(driver_rss, peak_rss_mb()):.0f} MB (in-process runs: {driver_rss:.0f} MB); "
          + ", ".join(f"worker {i + 1} {mb:.0f} MB" for i, mb in enumerate(sorted(workers.values()))))


if __name__ == "__main__":
    main()
