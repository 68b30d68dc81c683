"""EcaClient.batch: concurrency, input order, per-prompt errors that leave the others alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import BatchExecutor, EcaClient, PromptResult
from eca_notebook.testing.llm_server import Delay, Error, Reply, ScriptedLLMServer, Stall, Text, Usage

from .conftest import provider_config


class Running:
    """Counts chats the engine reports running at once (chat/statusChanged), and the peak."""

    def __init__(self) -> None:
        self.now: set[str] = set()
        self.peak = 0

    def __call__(self, method: str, params: Any) -> None:
        if method != "chat/statusChanged":
            return
        if params["status"] == "running":
            self.now.add(params["chatId"])
        elif params["status"] == "idle":
            self.now.discard(params["chatId"])
        self.peak = max(self.peak, len(self.now))


async def test_batch_runs_at_most_concurrency_prompts_at_once(client: EcaClient, llm: ScriptedLLMServer):
    running = Running()
    client.subscribe(running)
    # every reply waits before answering, so prompts started together overlap
    llm.enqueue(*[Reply([Delay(0.3), Text("answer"), Usage(2, 1)]) for _ in range(5)])
    results = await client.batch([f"question {i}" for i in range(5)], concurrency=2)
    assert running.peak == 2
    assert [r.prompt for r in results] == [f"question {i}" for i in range(5)]
    assert all(r.ok and r.text == "answer" for r in results)
    assert len({r.chat_id for r in results}) == 5  # each in its own chat
    assert len(llm.requests) == 5


async def test_batch_with_higher_concurrency_overlaps_all(client: EcaClient, llm: ScriptedLLMServer):
    running = Running()
    client.subscribe(running)
    llm.enqueue(*[Reply([Delay(0.3), Text("x")]) for _ in range(4)])
    results = await client.batch(["a", "b", "c", "d"], concurrency=4)
    assert running.peak == 4 and all(r.ok for r in results)


async def test_batch_results_follow_input_order_and_a_failure_stays_local(workspace: Path, env: dict[str, str]):
    # one scripted server per provider, so each prompt's answer is known whatever the completion order
    servers = {pid: ScriptedLLMServer().start() for pid in ("p0", "p1", "p2", "bad")}
    try:
        servers["p0"].enqueue(Reply([Delay(0.4), Text("from p0")]))
        servers["p1"].enqueue(Reply([Delay(0.2), Text("from p1")]))
        servers["p2"].enqueue(Reply([Text("from p2")]))
        servers["bad"].enqueue(Reply([Error(400, "scripted bad request")]))
        config = provider_config(*servers.items())
        async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
            results = await eca.batch(
                [{"message": "zero", "model": "p0/m1"},
                 {"message": "broken", "model": "bad/m1"},
                 {"message": "one", "model": "p1/m1"},
                 "two"],
                concurrency=4, model="p2/m1",
            )
        assert [r.prompt for r in results] == ["zero", "broken", "one", "two"]
        assert [r.text for r in results] == ["from p0", "", "from p1", "from p2"]
        assert results[1].error is not None and "scripted bad request" in results[1].error
        assert [r.error for r in results[:1] + results[2:]] == [None, None, None]
    finally:
        for server in servers.values():
            server.stop()


async def test_batch_timeout_and_bad_model_are_per_prompt(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Stall(60)]), Reply.text("fine"))
    results = await client.batch(
        [{"message": "slow", "timeout": 0.5}, {"message": "nowhere", "model": "nope/x"}, "quick"],
        concurrency=1,
    )
    assert "Timed out" in (results[0].error or "") and results[0].stopped
    assert "nope/x" in (results[1].error or "")
    assert results[2].ok and results[2].text == "fine"


async def test_batch_validates_its_input_before_starting(client: EcaClient, llm: ScriptedLLMServer):
    with pytest.raises(TypeError):
        await client.batch(["ok", {"no_message": 1}])
    with pytest.raises(TypeError):
        await client.batch(["ok", {"message": "x", "colour": "red"}])
    with pytest.raises(TypeError):
        await client.batch(["ok"], chat_id="same-for-all")
    with pytest.raises(TypeError):
        await client.batch([42])  # type: ignore[list-item]
    assert llm.requests == []
    assert await client.batch([]) == []


class Recorder:
    """A :class:`BatchExecutor` of a test's own: it answers every prompt itself, so what the client hands over is
    visible (and nothing reaches the model)."""

    def __init__(self) -> None:
        self.seen: list[tuple[EcaClient, list[tuple[str, dict[str, Any]]]]] = []

    async def run_client_batch(self, client: EcaClient, jobs: list[tuple[str, dict[str, Any]]]) -> list[PromptResult]:
        self.seen.append((client, jobs))
        return [PromptResult(chat_id=f"x{i}", prompt=message, text=message.upper())
                for i, (message, _) in enumerate(jobs)]


async def test_batch_hands_the_prompts_to_any_batch_executor(client: EcaClient, llm: ScriptedLLMServer):
    recorder = Recorder()
    assert isinstance(recorder, BatchExecutor)
    results = await client.batch(["a", {"message": "b", "model": "x/y"}], executor=recorder, behavior="plan")
    assert [r.text for r in results] == ["A", "B"]
    (handed_to, jobs), = recorder.seen
    assert handed_to is client and jobs == [("a", {"behavior": "plan"}), ("b", {"behavior": "plan", "model": "x/y"})]
    assert llm.requests == []


async def test_batch_refuses_what_is_not_a_batch_executor_and_says_what_to_pass(client: EcaClient,
                                                                                llm: ScriptedLLMServer):
    with ThreadPoolExecutor(1) as pool, pytest.raises(TypeError, match="pass concurrency=N"):
        await client.batch(["a"], executor=pool)
    with pytest.raises(TypeError, match=r"async run_client_batch\(client, jobs\)"):
        await client.batch(["a"], executor=object())
    # (a dask.distributed.Client is refused with the DaskExecutor advice: tests/batch/test_dask.py, on a real one)
    assert llm.requests == []
