"""eca_notebook.batch on a LocalCluster of two worker processes: the same results as in-process, the shared rate
limit, and resuming after a worker or the driver is killed — nothing completed is lost or sent twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.batch import DaskExecutor, EngineSpec, RateLimit, ResultStore, batch
from eca_notebook.batch._runtime import runtime
from eca_notebook.client import BatchExecutor, EcaClient
from eca_notebook.testing.llm_server import ScriptedLLMServer
from tests._waiting import wait_until

from .conftest import Echo, spaced, user_text

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def stored_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.endswith("}")]


def test_same_200_items_in_process_and_on_the_cluster(echo: Echo, llm: ScriptedLLMServer, dask_client: Any,
                                                      workspace: Path, config: dict[str, Any], env: dict[str, str]):
    prompts = [f"item {i}" if i % 10 else {"message": f"item {i}", "model": "fake/m2"} for i in range(200)]
    here = batch(prompts, workspace=workspace, config=config, env=env, concurrency=16, progress=False)
    there = batch(prompts, executor=dask_client, workspace=workspace, config=config, env=env, progress=False)
    assert [r.comparable() for r in here] == [r.comparable() for r in there]
    assert all(r.ok for r in there) and there[0].text == "echo: item 0" and there[10].model == "fake/m2"
    assert {r.worker for r in here} == {"local"}
    assert len({r.worker for r in there}) == 2  # both worker processes answered
    assert len(llm.requests) == 400


def test_the_rate_limit_holds_across_workers(echo: Echo, llm: ScriptedLLMServer, dask_client: Any,
                                             workspace: Path, config: dict[str, Any], env: dict[str, str]):
    echo.delay = 0.2
    results = batch([f"limited {i}" for i in range(24)], executor=dask_client, workspace=workspace, config=config,
                    env=env, progress=False, rate_limit={"fake": RateLimit(max_concurrent=3)}, model="fake/m1")
    assert all(r.ok for r in results)
    assert llm.peak_in_flight == 3  # 8 worker threads, 3 requests at a time
    assert len({r.worker for r in results}) == 2


def test_requests_per_minute_holds_across_workers_as_the_server_sees_it(
        echo: Echo, llm: ScriptedLLMServer, dask_client: Any, workspace: Path, config: dict[str, Any],
        env: dict[str, str]):
    # every worker's engine started first: a cold start would hold leases granted a second apart and send their
    # requests together, which says nothing about the limiter (the first request must come right after its lease)
    spec = EngineSpec(workspace=str(workspace.resolve()), config=config, env=dict(env))

    def warm() -> None:
        rt = runtime()
        rt.call(rt.client(spec, Path(spec.workspace), shared=True))

    dask_client.run(warm)
    # an earlier batch on this cluster with another limit for the provider: the scheduler keeps limiter states
    # between batches, and this batch's own limit must replace that one
    batch(["before"], executor=dask_client, workspace=workspace, config=config, env=env, progress=False,
          rate_limit={"fake": RateLimit(requests_per_minute=6000, max_concurrent=8)})
    llm.clear()
    # 60 a minute from a bucket of 2, kept on the scheduler for the 8 threads of both workers
    results = batch([f"paced {i}" for i in range(8)], executor=dask_client, workspace=workspace, config=config,
                    env=env, progress=False, rate_limit={"fake": RateLimit(requests_per_minute=60, burst=2)})
    assert all(r.ok for r in results)
    arrivals = sorted(r.at for r in llm.requests if user_text(r.body))
    assert len(arrivals) == 8
    assert spaced(arrivals, burst=2, per_second=1.0) == []
    assert arrivals[-1] - arrivals[0] >= 5.0


def test_a_killed_worker_loses_nothing(echo: Echo, llm: ScriptedLLMServer, dask_client: Any, workspace: Path,
                                       config: dict[str, Any], env: dict[str, str], tmp_path: Path):
    echo.delay = 0.2
    store = tmp_path / "kill-worker.jsonl"
    prompts = [f"survive {i}" for i in range(40)]
    outcome: dict[str, Any] = {}

    def drive() -> None:
        outcome["results"] = batch(prompts, executor=dask_client, workspace=workspace, config=config, env=env,
                                   store=store, progress=False, rate_limit=RateLimit(max_concurrent=6))

    driver = threading.Thread(target=drive)
    driver.start()
    wait_until(lambda: len(stored_lines(store)) >= 8, timeout=90)
    pids = dask_client.run(os.getpid)
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    driver.join(timeout=240)
    assert not driver.is_alive()
    results = outcome["results"]
    assert all(r.ok for r in results) and [r.text for r in results] == [f"echo: {p}" for p in prompts]
    ids = Counter(ResultStore(store).results())
    assert len(ids) == 40 and len(stored_lines(store)) == 40  # each item written once
    # (requests without a prompt — a GET such as the restarted worker's engine listing models — carry no item)
    sent = Counter(text for r in llm.requests if (text := user_text(r.body)))
    # the items the dead worker was answering are sent again (at most its share of the 6 leases); no other
    assert set(sent) == set(prompts) and sum(sent.values()) - 40 <= 6
    # the second run's requests carry a header of their own: a request of the killed worker can still be recorded
    # after `sent` was counted (its handler thread parses it late), and it is not one the second run paid for
    again_config = {**config, "providers": {"fake": {**config["providers"]["fake"], "models": {"m1": {}},
                                                     "headers": {"X-Run": "again"}}}}
    again = batch(prompts, executor=dask_client, workspace=workspace, config=again_config, env=env, store=store,
                  progress=False)
    assert again.totals.resumed == 40
    assert not [r for r in llm.requests if r.headers.get("x-run") == "again" and user_text(r.body)]


def test_a_killed_driver_is_resumed_without_paying_twice(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                         config: dict[str, Any], env: dict[str, str],
                                                         tmp_path: Path):
    echo.delay = 0.2
    store = tmp_path / "kill-driver.jsonl"
    count = 40
    proc = subprocess.Popen([sys.executable, "-m", "tests.batch._driver", llm.url, str(store), env["HOME"],
                             str(count)], cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: len(stored_lines(store)) >= 8, timeout=120)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its cluster's processes, like a killed kernel
        proc.wait(timeout=60)
    done_before = set(ResultStore(store).results())
    prompts = [f"driven {i}" for i in range(count)]
    # The resumed run's requests carry a header of their own: a request the killed cluster had already sent can
    # still be recorded after the kill (its handler thread parses it late), and it is not one the resume paid for.
    resumed = {"models": {"m1": {}}, "headers": {"X-Run": "resumed"}}
    config = {**config, "providers": {"fake": {**config["providers"]["fake"], **resumed}}}
    results = batch(prompts, workspace=workspace, config=config, env=env, store=store, concurrency=8,
                    progress=False)
    assert all(r.ok for r in results) and [r.text for r in results] == [f"echo: {p}" for p in prompts]
    resent = [user_text(r.body) for r in llm.requests if r.headers.get("x-run") == "resumed"]
    stored_prompts = {ResultStore(store).get(i).prompt for i in done_before}  # type: ignore[union-attr]
    assert not stored_prompts & set(resent)  # nothing completed was sent again
    assert sorted(resent) == sorted(set(prompts) - stored_prompts)
    assert len(stored_lines(store)) == count


async def test_the_client_runs_a_batch_on_the_cluster(echo: Echo, llm: ScriptedLLMServer, dask_client: Any,
                                                      workspace: Path, config: dict[str, Any], env: dict[str, str]):
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        results = await eca.batch(["d1", "d2", "d3"], executor=DaskExecutor(dask_client))
        assert isinstance(DaskExecutor(dask_client), BatchExecutor)
        # the Dask client itself works too (the client's adapter table names DaskExecutor)
        (d4,) = await eca.batch(["d4"], executor=dask_client)
    assert [r.text for r in results] == ["echo: d1", "echo: d2", "echo: d3"] and d4.text == "echo: d4"
    assert sorted(user_text(r.body) for r in llm.requests) == ["d1", "d2", "d3", "d4"]
    # eca_notebook.batch's own batch() takes the Dask client as it is
    (direct,) = batch(["d5"], executor=dask_client, workspace=workspace, config=config, env=env, progress=False)
    assert direct.text == "echo: d5" and direct.worker != "local"
