"""``EcaClient.batch(executor=...)``: a client's prompts run elsewhere, by an object that knows how.

Why a protocol rather than an import: what runs prompts at scale (:mod:`eca_notebook.batch`: Dask clusters, results
stores, rate limits) sits above the client — it starts clients of its own in every worker — so the client cannot
import it. The client takes any object implementing :class:`BatchExecutor` and hands it the prompts; the executors
of :mod:`eca_notebook.batch` implement it (``DaskExecutor(dask_client)`` wraps a ``dask.distributed.Client``).
Objects that look like executors of another kind (a Dask client itself, a ``concurrent.futures`` pool) are refused
with the exact thing to pass instead, rather than a bare "wrong type".
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._result import PromptResult

if TYPE_CHECKING:
    from ._async import EcaClient

__all__ = ["BatchExecutor", "Job", "batch_executor"]

#: One prompt of a batch: its message and the keywords of :meth:`EcaClient.prompt` it sets (``model``,
#: ``behavior``, ``contexts``, ``approval``, ``timeout``), defaults applied.
Job = tuple[str, dict[str, Any]]


@runtime_checkable
class BatchExecutor(Protocol):
    """Runs a client's batch: :meth:`run_client_batch` gets the client (whose ``start_options`` — workspace,
    config, env — say how to build engines like its own) and the prompts, and returns one
    :class:`~eca_notebook.client.PromptResult` per prompt, in order. A prompt that fails is a result with
    ``error`` set, never an exception."""

    async def run_client_batch(self, client: EcaClient, jobs: list[Job]) -> list[PromptResult]:
        """Run *jobs* (one per prompt, in order) for *client*; one result per job, failures as results."""
        ...


def batch_executor(executor: Any) -> BatchExecutor:
    """``executor`` as a :class:`BatchExecutor`; a TypeError saying what to pass when it is not one."""
    if isinstance(executor, BatchExecutor):
        return executor
    kind = type(executor)
    if kind.__module__.split(".")[0] == "distributed" and hasattr(executor, "submit"):
        raise TypeError(
            "EcaClient.batch(executor=...) takes a batch executor, not a dask.distributed.Client: pass "
            "executor=eca_notebook.batch.DaskExecutor(dask_client) (its keywords store=, retries=, rate_limit=, "
            "budget=, progress= set the rest), or call eca_notebook.batch.batch(prompts, executor=dask_client, "
            "workspace=..., config=...), which takes the Dask client itself")
    if isinstance(executor, concurrent.futures.Executor):
        raise TypeError(
            f"EcaClient.batch(executor=...) takes a batch executor, not a {kind.__name__}: for prompts in this "
            "process pass concurrency=N (or executor=eca_notebook.batch.InProcessExecutor(N, store=...) for a "
            "resumable store, retries and rate limits)")
    raise TypeError(
        f"EcaClient.batch(executor=...) takes a batch executor (an object with an async run_client_batch(client, "
        f"jobs) method, e.g. eca_notebook.batch.DaskExecutor or InProcessExecutor), not {kind.__name__}")
