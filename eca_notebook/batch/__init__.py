"""Batch prompts at scale: many workers (Dask), resumable, rate-limited, with progress and cost — or a DataFrame.

::

    from eca_notebook.batch import batch, dataframe_batch, local_cluster, RateLimit

    results = batch(prompts, config=config, store="results.jsonl")              # threads of this process
    with local_cluster(n_workers=2) as dask_client:                               # or any dask.distributed.Client
        results = batch(prompts, executor=dask_client, config=config, store="results.jsonl",
                        rate_limit=RateLimit(max_concurrent=8, requests_per_minute=500), budget=5.0)
    answers = dataframe_batch(df, "Classify this review: {text}", output_schema=schema, store="labels.jsonl")

Every prompt becomes a :class:`WorkItem` (serialisable: it may run on another machine), every answer an
:class:`ItemResult` written to the results store the moment it completes, so a rerun after a crash sends only what
is missing. Each worker process runs its own engine, built from the ``workspace``/``config``/``env`` given here,
never from the driver's state. The Python client takes these executors too: ``EcaClient.batch(prompts,
executor=dask_client)`` (the client's adapter table wraps it as ``DaskExecutor(dask_client)``), or
``executor=DaskExecutor(dask_client, store="r.jsonl")`` for a results store, retries and limits.

``dask[distributed]``, ``tqdm`` and ``pandas`` are the ``batch`` extra; they are imported only when used.
"""

from __future__ import annotations

from ._cost import CostEstimate, RequestOverhead, estimate_cost
from ._executors import DaskExecutor, Executor, InProcessExecutor, local_cluster
from ._frames import dataframe_batch, render_template, results_frame, template_columns
from ._models import EngineSpec, FileDiff, ItemPrompt, ItemResult, RateLimit, ToolCallSummary, WorkItem, item_id
from ._progress import CallbackProgress, Progress, Totals, TqdmProgress, WidgetProgress
from ._run import BatchResults, abatch, batch, work_items
from ._runtime import WorkspacePolicy
from ._store import ResultStore

__all__ = [
    "BatchResults",
    "CallbackProgress",
    "CostEstimate",
    "DaskExecutor",
    "EngineSpec",
    "Executor",
    "FileDiff",
    "InProcessExecutor",
    "ItemPrompt",
    "ItemResult",
    "Progress",
    "RateLimit",
    "RequestOverhead",
    "ResultStore",
    "ToolCallSummary",
    "Totals",
    "TqdmProgress",
    "WidgetProgress",
    "WorkItem",
    "WorkspacePolicy",
    "abatch",
    "batch",
    "dataframe_batch",
    "estimate_cost",
    "item_id",
    "local_cluster",
    "render_template",
    "results_frame",
    "template_columns",
    "work_items",
]
