"""eca_notebook.batch in this process: results, resume from the store, retries, rate limits, budget, per-item
workspaces, DataFrames with structured output, progress, and the client's executor= path."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.batch import (
    InProcessExecutor,
    RateLimit,
    ResultStore,
    Totals,
    WorkspacePolicy,
    batch,
    dataframe_batch,
    work_items,
)
from eca_notebook.client import EcaClient
from eca_notebook.testing.llm_server import Error, Reply, ScriptedLLMServer

from .conftest import MODEL, Echo, spaced, user_text


def run(prompts: list[Any], workspace: Path, config: dict[str, Any], env: dict[str, str], **kwargs: Any):
    kwargs.setdefault("progress", False)
    return batch(prompts, workspace=workspace, config=config, env=env, **kwargs)


def test_results_in_input_order_with_usage_and_cost(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                    config: dict[str, Any], env: dict[str, str]):
    results = run([f"question {i}" for i in range(12)], workspace, config, env, concurrency=4)
    assert [r.text for r in results] == [f"echo: question {i}" for i in range(12)]
    first = results[0]
    assert first.ok and first.model == MODEL and first.tokens == 10 + len("question 0") + 5
    assert first.input_tokens == 20 and first.output_tokens == 5
    assert first.cost == pytest.approx((20 * 100 + 5 * 1000) / 1e6)
    assert results.totals.done == 12 and results.totals.cost == pytest.approx(sum(r.cost for r in results))
    assert results.estimate is not None and results.estimate.cost is not None
    assert len(llm.requests) == 12


def test_ids_are_stable_and_repeated_prompts_are_distinct_items():
    items = work_items(["a", "b", "a"], model="x/y")
    again = work_items(["a", "b", "a"], model="x/y")
    assert [i.id for i in items] == [i.id for i in again]
    assert items[2].id == f"{items[0].id}-2"
    assert work_items(["a"])[0].id != items[0].id  # the model is part of what is asked
    with pytest.raises(TypeError):
        work_items([{"message": "x", "colour": "red"}])
    with pytest.raises(TypeError):
        work_items([42])  # type: ignore[list-item]


def test_rerun_with_a_store_sends_only_what_is_missing(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                      config: dict[str, Any], env: dict[str, str], tmp_path: Path):
    store = tmp_path / "results.jsonl"
    prompts = [f"item {i}" for i in range(10)]
    first = run(prompts[:6], workspace, config, env, store=store)
    assert len(llm.requests) == 6 and all(r.ok for r in first)
    everything = run(prompts, workspace, config, env, store=store)
    assert len(llm.requests) == 10  # only the four new ones were sent
    assert sorted(user_text(r.body) for r in llm.requests[6:]) == [f"item {i}" for i in range(6, 10)]
    assert [r.text for r in everything] == [f"echo: item {i}" for i in range(10)]
    assert everything.totals.resumed == 6 and everything.totals.done == 4
    assert len(ResultStore(store)) == 10


def test_a_failed_item_is_retried_then_reported(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                config: dict[str, Any], env: dict[str, str]):
    llm.enqueue(Reply([Error(400, "scripted bad request")]))  # the first request fails, the retry is answered
    (result,) = run(["flaky"], workspace, config, env, retries=2, retry_delay=0.01)
    assert result.ok and result.attempts == 2 and result.text == "echo: flaky"
    llm.enqueue(*[Reply([Error(400, "always bad")]) for _ in range(3)])
    (failed,) = run(["doomed"], workspace, config, env, retries=2, retry_delay=0.01)
    assert failed.status == "failed" and failed.attempts == 3 and "always bad" in (failed.error or "")


def test_a_429_with_retry_after_is_waited_out(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                              config: dict[str, Any], env: dict[str, str]):
    llm.enqueue(Reply([Error(429, "slow down", retry_after=0.2)]))
    (result,) = run(["patient"], workspace, config, env)
    assert result.ok and len(llm.requests) == 2  # the provider honoured retry-after and asked again


def test_concurrency_limit_holds_in_process(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                            config: dict[str, Any], env: dict[str, str]):
    echo.delay = 0.2
    results = run([f"c{i}" for i in range(12)], workspace, config, env, concurrency=8,
                  rate_limit=RateLimit(max_concurrent=3))
    assert all(r.ok for r in results)
    assert llm.peak_in_flight == 3


def test_requests_per_minute_spaces_the_requests_the_server_sees(echo: Echo, llm: ScriptedLLMServer,
                                                                 workspace: Path, config: dict[str, Any],
                                                                 env: dict[str, str]):
    # 60 a minute from a bucket of 2: two at once, then one a second. The limit names the provider and the items
    # name no model: they run on the default model (fake/m1), so the "fake" limit holds them.
    results = run([f"r{i}" for i in range(8)], workspace, config, env, concurrency=8,
                  rate_limit={"fake": RateLimit(requests_per_minute=60, burst=2)})
    assert all(r.ok for r in results)
    arrivals = sorted(r.at for r in llm.requests if user_text(r.body))
    assert len(arrivals) == 8
    assert spaced(arrivals, burst=2, per_second=1.0) == []
    assert arrivals[-1] - arrivals[0] >= 5.0  # 8 starts at most 2 at once then 1/s: ≥ 6 s less a second's slack


def test_limiter_state_buckets_and_penalty():
    from eca_notebook.batch._limits import LimiterState

    state = LimiterState(RateLimit(requests_per_minute=60, tokens_per_minute=600, burst=2), now=0.0)
    a, _ = state.try_acquire("p", "w", 10, 0.0)
    b, _ = state.try_acquire("p", "w", 10, 0.0)
    c, wait = state.try_acquire("p", "w", 10, 0.0)
    assert a and b and c is None and wait == pytest.approx(1.0)  # one request a second once the burst is spent
    later, _ = state.try_acquire("p", "w", 10, 1.0)
    assert later is not None
    state.release(later.id, used_tokens=100, penalty=5.0, now=1.0)
    refused, wait = state.try_acquire("p", "w", 10, 2.0)
    assert refused is None and wait == pytest.approx(4.0)  # a 429 pauses everybody
    assert state.drop_holder("w") == 2  # a dead worker's leases go back


def test_budget_stops_sending_and_a_rerun_continues(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                   config: dict[str, Any], env: dict[str, str], tmp_path: Path):
    store = tmp_path / "budget.jsonl"
    prompts = [f"b{i}" for i in range(10)]
    each = (17 * 100 + 5 * 1000) / 1e6  # ~$0.0067 an item
    stopped = run(prompts, workspace, config, env, concurrency=1, budget=each * 2.5, store=store)
    assert [r.status for r in stopped] == ["done"] * 3 + ["skipped"] * 7
    assert stopped.totals.stopped and "budget" in (stopped.skipped[0].error or "")
    assert len(llm.requests) == 3 and len(ResultStore(store)) == 3
    finished = run(prompts, workspace, config, env, concurrency=2, store=store)
    assert all(r.ok for r in finished) and len(llm.requests) == 10  # nothing paid twice


def test_per_item_workspaces_change_only_their_own_files(echo: Echo, llm: ScriptedLLMServer, tmp_path: Path,
                                                         workspace: Path, config: dict[str, Any],
                                                         env: dict[str, str]):
    folders = []
    for name in ("alice", "bob"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "work.py").write_text(f"print('{name}')\n")
        folders.append(folder)
    prompts = [{"message": f"review {f.name} [write feedback.md]", "workspace": str(f)} for f in folders]
    prompts.append({"message": "shared [write nope.md]"})  # no workspace of its own: unattended, write rejected
    results = run(prompts, workspace, config, env, concurrency=3)
    for folder, result in zip(folders, results[:2], strict=True):
        assert result.ok and result.text == "wrote feedback.md"
        assert (folder / "feedback.md").read_text() == f"feedback for review {folder.name} [write feedback.md]\n"
        assert [(f.path, f.tool) for f in result.files] == [("feedback.md", "write_file")]
        assert "+feedback for review" in result.files[0].diff
        assert sorted(p.name for p in folder.iterdir()) == ["feedback.md", "work.py"]
    assert results[2].files == [] and results[2].tool_calls[0].status == "rejected"
    assert not (workspace / "nope.md").exists()


def test_workspace_policy_approves_changes_inside_only(tmp_path: Path):
    policy = WorkspacePolicy(tmp_path)
    change = {"name": "write_file", "server": "eca", "arguments": {"path": "a.md"},
              "details": {"type": "fileChange", "path": str(tmp_path / "a.md")}}
    assert policy(change) is True
    assert policy({**change, "arguments": {"path": "../a.md"}}) is False
    assert policy({**change, "details": {"type": "fileChange", "path": "/etc/passwd"}}) is False
    assert policy({"name": "shell_command", "server": "eca", "arguments": {"command": "ls"}}) is False
    assert policy({**change, "server": "github", "origin": "mcp"}) is False


def test_dataframe_round_trip_with_structured_output(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                     config: dict[str, Any], env: dict[str, str], tmp_path: Path):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"name": ["ann", "bo", "cy"], "grade": ["7", "9", "x"]})
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "score": {"type": "integer"}},
              "required": ["name", "score"]}
    template = "Grade {name}: [json name={name},score={grade}]"
    out = dataframe_batch(df, template, output_schema=schema, workspace=workspace, config=config, env=env,
                          progress=False, store=tmp_path / "df.jsonl")
    assert list(out.columns) == ["name", "grade", "status", "answer", "error", "model", "tokens", "input_tokens",
                                 "output_tokens", "cost", "answer_name", "score"]
    assert list(out["status"]) == ["done", "done", "failed"]  # "x" is not an integer
    assert list(out["answer_name"][:2]) == ["ann", "bo"] and list(out["score"][:2]) == [7, 9]
    assert "not of type integer" in out["error"][2] and str(out["tokens"].dtype) == "Int64"
    # the schema was asked for in the prompt
    assert "matches this JSON schema" in user_text(llm.requests[0].body)
    with pytest.raises(KeyError):
        dataframe_batch(df, "{missing}", workspace=workspace, config=config, env=env, progress=False)


def test_progress_callback_sees_totals(echo: Echo, workspace: Path, config: dict[str, Any], env: dict[str, str]):
    seen: list[Totals] = []
    run(["p1", "p2", "p3"], workspace, config, env, progress=seen.append)
    assert seen[-1].done == 3 and seen[-1].tokens > 0 and seen[-1].cost > 0
    assert "3/3" in seen[-1].line()


async def test_client_batch_takes_an_executor(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                              config: dict[str, Any], env: dict[str, str], tmp_path: Path):
    store = tmp_path / "client.jsonl"
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as eca:
        plain = await eca.batch(["x1", "x2"])
        elsewhere = await eca.batch(["x1", "x2", "x3"], executor=InProcessExecutor(2, store=store))
        with pytest.raises(TypeError):
            await eca.batch(["x1"], executor=object())
    assert [r.text for r in plain] == ["echo: x1", "echo: x2"]
    assert [r.text for r in elsewhere] == ["echo: x1", "echo: x2", "echo: x3"]
    assert elsewhere[0].usage and elsewhere[0].usage["sessionTokens"] == 17
    assert len(ResultStore(store)) == 3


def test_the_estimate_counts_the_system_prompt_and_tools_the_engine_really_sends(
        echo: Echo, llm: ScriptedLLMServer, workspace: Path, config: dict[str, Any], env: dict[str, str]):
    prompt = "How long is this review?"
    results = run([prompt], workspace, config, env)
    estimate = results.estimate
    assert estimate is not None
    (overhead,) = estimate.overheads
    assert (overhead.model, overhead.behavior) == (MODEL, "code")
    # what the request really carried besides the prompt, counted like the estimate counts (characters ÷ 4)
    body = llm.requests[0].body
    system = "".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")
    tools = [t["function"] for t in body["tools"]]
    sent = (len(system) + sum(len(t["name"] + t["description"] + json.dumps(t["parameters"])) for t in tools)) / 4
    assert overhead.tools == len(tools) > 0
    assert overhead.tokens == pytest.approx(sent + 8 * len(tools), rel=0.05)
    assert overhead.tokens > 2 * 1500  # the old fixed guess was less than half of it
    assert estimate.input_tokens == overhead.tokens + math.ceil(len(prompt) / 4) + 4
    assert estimate.output_tokens == 300
    assert estimate.cost == pytest.approx((estimate.input_tokens * 100 + 300 * 1000) / 1e6)
    said = str(estimate)
    assert f"≈ {overhead.tokens:,} tokens a request ({MODEL}, code; from the engine)" in said
    assert "300 output tokens an answer" in said and "one model request per item" in said
    # a model the engine does not know: the fixed guess, and the estimate says so
    guessed = run([{"message": prompt, "model": "nope/none"}], workspace, config, env).estimate
    assert guessed is not None and guessed.overheads == [] and "a guess" in str(guessed)
    assert guessed.unpriced_models == ["nope/none"] and guessed.cost is None
