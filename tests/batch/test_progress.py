"""Progress of a resumed batch: the totals are the whole batch's (the resumed items' usage and cost read from the
results store) with this run's share beside them, and the budget holds for the whole batch."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.batch import ResultStore, Totals, TqdmProgress, batch
from eca_notebook.testing.llm_server import ScriptedLLMServer

from .conftest import Echo, user_text


def run(prompts: list[Any], workspace: Path, config: dict[str, Any], env: dict[str, str], **kwargs: Any):
    kwargs.setdefault("progress", False)
    return batch(prompts, workspace=workspace, config=config, env=env, **kwargs)


def test_a_resumed_batch_shows_the_whole_batchs_tokens_and_cost(echo: Echo, llm: ScriptedLLMServer,
                                                                 workspace: Path, config: dict[str, Any],
                                                                 env: dict[str, str], tmp_path: Path):
    store = tmp_path / "totals.jsonl"
    prompts = [f"total {i}" for i in range(4)]
    first = run(prompts[:2], workspace, config, env, store=store)  # the run that "crashed" after two items
    assert first.totals.resumed == 0 and first.totals.run_cost == first.totals.cost > 0
    seen: list[Totals] = []
    bar = io.StringIO()
    tqdm_progress = TqdmProgress(file=bar)
    rerun = run(prompts, workspace, config, env, store=store, progress=seen.append)
    run(prompts[:1] + prompts[2:3], workspace, config, env, store=store, progress=tqdm_progress)
    assert len(llm.requests) == 4  # nothing was paid twice
    totals = seen[-1]
    assert (totals.resumed, totals.done, totals.failed) == (2, 2, 0)
    # every item's usage and cost, as the store recorded them: the resumed two count as much as the new two
    stored = ResultStore(store).results()
    assert len(stored) == 4 and all(r.cost for r in stored.values())
    assert totals.tokens == sum(r.tokens or 0 for r in stored.values())
    assert totals.cost == pytest.approx(sum(r.cost or 0.0 for r in stored.values()))
    new = [r for r in rerun if r.prompt in prompts[2:]]
    assert totals.run_tokens == sum(r.tokens or 0 for r in new) and totals.run_tokens < totals.tokens
    assert totals.run_cost == pytest.approx(sum(r.cost or 0.0 for r in new))
    assert totals.resumed_cost == pytest.approx(first.totals.cost)
    assert totals.resumed_tokens == first.totals.tokens
    line = totals.line()
    assert line.startswith("4/4 · 2 resumed · 0 failed · ")
    assert f" · {totals.tokens:,} tokens · ${totals.cost:.4f} (this run ${totals.run_cost:.4f}, est. $" in line
    assert rerun.totals.cost == pytest.approx(totals.cost)
    # all resumed (two of the four asked again): the batch's two items' cost, nothing this run
    shown = bar.getvalue()
    again = tqdm_progress.bar
    assert again is not None and again.n == 2 and again.total == 2
    both = stored[rerun[0].id].cost + stored[rerun[2].id].cost  # type: ignore[operator]
    assert f"${both:.4f} (this run $0.0000)" in shown and "2 resumed" in shown
    assert sorted(user_text(r.body) for r in llm.requests[2:]) == prompts[2:]


def test_the_budget_counts_what_the_resumed_items_cost(echo: Echo, llm: ScriptedLLMServer, workspace: Path,
                                                       config: dict[str, Any], env: dict[str, str],
                                                       tmp_path: Path):
    store = tmp_path / "budget.jsonl"
    prompts = [f"spend {i}" for i in range(10)]  # the same length: the same cost each
    first = run(prompts[:3], workspace, config, env, store=store)
    each = first[0].cost
    assert each and first.totals.cost == pytest.approx(3 * each)
    # $4.5 items' worth for the batch: three are already spent, so this run sends two (a budget of this run only
    # would have sent five)
    rerun = run(prompts, workspace, config, env, store=store, concurrency=1, budget=4.5 * each)
    assert [r.status for r in rerun] == ["done"] * 5 + ["skipped"] * 5
    assert len(llm.requests) == 5 and rerun.totals.stopped == f"budget ${4.5 * each:g} reached"
    assert rerun.totals.cost == pytest.approx(5 * each) and rerun.totals.run_cost == pytest.approx(2 * each)
    # a budget the stored items have already spent: nothing more is sent, the rest come back skipped
    spent = run(prompts, workspace, config, env, store=store, budget=2 * each)
    assert len(llm.requests) == 5
    assert [r.status for r in spent] == ["done"] * 5 + ["skipped"] * 5
    assert "budget" in (spent.skipped[0].error or "") and spent.totals.run_cost == 0
    # without a budget the rerun finishes the batch, each item paid once
    finished = run(prompts, workspace, config, env, store=store, concurrency=2)
    assert all(r.ok for r in finished) and len(llm.requests) == 10
    assert finished.totals.cost == pytest.approx(10 * each)
