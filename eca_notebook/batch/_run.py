"""The driver: turn prompts into work units, skip what the store has, run the rest, write each result as it comes.

The driver owns the store and the progress; executors only run items. It never holds more than a window of items
in flight, checks the budget before sending each new one, and — stopped by the budget, an interrupt or a killed
kernel — leaves behind a store from which a rerun of the same call finishes exactly the missing items.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..protocol import JsonObject
from ._cost import CostEstimate, estimate_cost
from ._executors import Job, as_executor
from ._models import EngineSpec, ItemPrompt, ItemResult, RateLimit, WorkItem, item_id
from ._progress import Totals, make_progress
from ._runtime import default_model
from ._store import ResultStore

__all__ = ["BatchResults", "abatch", "batch", "work_items"]

log = logging.getLogger(__name__)

#: what a prompt dict (or ``**defaults``) may set besides ``message``
ITEM_KEYS = frozenset(WorkItem.model_fields) - {"message"}


class BatchResults(list[ItemResult]):
    """The results in input order (a list of :class:`ItemResult`), with the batch's ``totals`` and ``estimate``."""

    totals: Totals
    estimate: CostEstimate | None = None

    @property
    def failed(self) -> list[ItemResult]:
        return [r for r in self if r.status == "failed"]

    @property
    def skipped(self) -> list[ItemResult]:
        return [r for r in self if r.status == "skipped"]

    def to_dataframe(self) -> Any:
        """A pandas DataFrame: one row per item (id, prompt, status, answer, error, model, tokens, cost, …)."""
        from ._frames import results_frame

        return results_frame(self)


def work_items(prompts: Iterable[str | ItemPrompt | WorkItem], **defaults: Any) -> list[WorkItem]:
    """Work units for ``prompts`` (messages, dicts with ``message`` and any :class:`WorkItem` field, or work
    units), ``defaults`` filling what a prompt does not set. An item without an ``id`` gets a stable one from what
    it asks (see :func:`item_id`); a prompt repeated in the same batch gets ``<id>-2``, ``<id>-3``, …"""
    unknown = set(defaults) - ITEM_KEYS
    if "id" in defaults or unknown:
        raise TypeError(f"unexpected batch default(s): {', '.join(sorted(unknown | ({'id'} & set(defaults))))}")
    items: list[WorkItem] = []
    seen: dict[str, int] = {}
    for index, prompt in enumerate(prompts):
        fields: dict[str, object]  # WorkItem fields, validated into one below
        if isinstance(prompt, WorkItem):
            fields = prompt.model_dump(exclude_unset=True)
        elif isinstance(prompt, str):
            fields = {"message": prompt}
        elif isinstance(prompt, dict):
            fields = dict(prompt)
            if not isinstance(fields.get("message"), str):
                raise TypeError(f"batch prompt #{index} needs a 'message' string")
            extra = set(fields) - ITEM_KEYS - {"message"}
            if extra:
                raise TypeError(f"batch prompt #{index} has unexpected key(s): {', '.join(sorted(extra))}")
        else:
            raise TypeError(f"batch prompt #{index} must be a string, a dict or a WorkItem, not "
                            f"{type(prompt).__name__}")
        merged: dict[str, object] = {**defaults, **fields}
        workspace = merged.get("workspace")
        if isinstance(workspace, (str, os.PathLike)):
            merged["workspace"] = str(Path(workspace).expanduser().resolve())
        if not merged.get("id"):
            parts = {k: v for k, v in merged.items() if k not in ("message", "timeout")}
            base = item_id(str(merged["message"]), **parts)
            count = seen[base] = seen.get(base, 0) + 1
            merged["id"] = base if count == 1 else f"{base}-{count}"
        items.append(WorkItem.model_validate(merged))
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("batch item ids must be unique")
    return items


def _limits(rate_limit: RateLimit | dict[str, RateLimit] | None) -> dict[str, RateLimit]:
    if rate_limit is None:
        return {}
    if isinstance(rate_limit, RateLimit):
        return {"*": rate_limit}
    return {name: RateLimit.model_validate(limit) for name, limit in rate_limit.items()}


def batch(
    prompts: Iterable[str | ItemPrompt | WorkItem],
    *,
    executor: Any = None,
    concurrency: int = 4,
    workspace: str | os.PathLike[str] | None = None,
    config: JsonObject | None = None,
    env: dict[str, str] | None = None,
    store: str | os.PathLike[str] | ResultStore | None = None,
    retries: int = 0,
    retry_delay: float = 1.0,
    rate_limit: RateLimit | dict[str, RateLimit] | None = None,
    budget: float | None = None,
    progress: Any = "auto",
    retry_failed: bool = False,
    keep_chats: bool = False,
    estimate: bool = True,
    **defaults: Any,
) -> BatchResults:
    """Run prompts at any scale; the results (:class:`ItemResult`) in input order.

    ``executor``: None (threads of this process, ``concurrency`` at a time), a ``dask.distributed.Client`` (a
    ``LocalCluster`` or any cluster; see :func:`local_cluster`) or an executor object — the same call gives the
    same results on each. ``workspace``/``config``/``env``: the engine every worker builds (as
    :meth:`EcaClient.start <eca_notebook.client.EcaClient.start>` takes them; passed to workers explicitly). A
    prompt is a message, or a dict with ``message`` and any of ``id``, ``model``, ``behavior``, ``contexts``,
    ``workspace`` (its own folder or file: file changes inside it are approved), ``approval``, ``timeout``,
    ``output_schema``; ``**defaults`` sets those for every prompt.

    ``store``: a JSON Lines file (or :class:`ResultStore`) each result is written to as it completes; items found
    there are not sent again (``retry_failed`` resends the failed ones). ``retries``: more attempts for a failed
    item, with backoff. ``rate_limit``: a :class:`RateLimit` for all, or ``{provider: RateLimit}``, held across all
    workers. ``budget``: USD for the whole batch — what the items resumed from the store cost counts too; no new
    item is sent once it is spent (the rest come back ``skipped``).
    ``progress``: ``"auto"`` (a widget in Jupyter, tqdm in a terminal), False, or a callable of :class:`Totals`.
    """
    items = work_items(prompts, **defaults)
    spec = EngineSpec(workspace=str(Path(workspace if workspace is not None else Path.cwd()).expanduser().resolve()),
                      config=config, env=dict(env) if env is not None else None, keep_chats=keep_chats)
    results_store = store if isinstance(store, ResultStore) or store is None else ResultStore(store)
    by_id: dict[str, ItemResult] = {}
    totals = Totals(total=len(items))
    if results_store is not None:
        for item in items:
            stored = results_store.get(item.id)
            if stored is not None and (stored.status == "done" or not retry_failed):
                by_id[item.id] = stored
                totals.resume(stored)  # its tokens and cost are the batch's too (and count against the budget)
    todo = [item for item in items if item.id not in by_id]
    limits = _limits(rate_limit)
    if todo and any(name != "*" for name in limits) and any(item.model is None for item in todo):
        # a limit per provider holds items that name no model too: they run on the engine's default model
        try:
            spec = spec.model_copy(update={"default_model": default_model(spec)})
        except Exception:
            log.warning("eca batch: the default model is unknown; items that name no model run under the '*' "
                        "limit only", exc_info=True)
    cost_estimate: CostEstimate | None = None
    if estimate and todo:
        try:
            cost_estimate = estimate_cost(todo, spec)
            totals.estimated_cost = cost_estimate.cost
        except Exception:
            log.warning("eca batch: no cost estimate", exc_info=True)
    reporter = make_progress(progress)
    run = as_executor(executor, concurrency)

    def on_result(result: ItemResult) -> None:
        by_id[result.id] = result
        if results_store is not None:
            results_store.append(result)
        totals.add(result)
        if reporter is not None:
            reporter.update(totals, result)

    def keep_going() -> bool:
        if budget is not None and totals.cost >= budget:
            totals.stopped = totals.stopped or f"budget ${budget:g} reached"
            return False
        return True

    if reporter is not None:
        reporter.start(totals)
    try:
        run.run(todo, Job(spec, limits, max(0, int(retries)), retry_delay), on_result, keep_going)
    finally:
        if reporter is not None:
            reporter.close(totals)
    results = BatchResults()
    for item in items:
        result = by_id.get(item.id)
        if result is None:
            reason = totals.stopped or "not run"
            result = ItemResult(id=item.id, prompt=item.message, status="skipped", error=f"skipped: {reason}",
                                workspace=item.workspace)
            totals.skipped += 1
        results.append(result)
    results.totals = totals
    results.estimate = cost_estimate
    return results


async def abatch(prompts: Iterable[str | ItemPrompt | WorkItem], **kwargs: Any) -> BatchResults:
    """:func:`batch` for asyncio code: the driver runs on a thread, so the caller's event loop stays free."""
    items = list(prompts)
    return await asyncio.to_thread(lambda: batch(items, **kwargs))
