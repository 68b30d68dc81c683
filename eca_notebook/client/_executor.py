"""``EcaClient.batch(executor=...)``: a client's prompts run elsewhere, by an object that knows how.

Why a protocol rather than an import: what runs prompts at scale (:mod:`eca_notebook.batch`: Dask clusters, results
stores, rate limits) sits above the client — it starts clients of its own in every worker — so the client cannot
import it. The client takes any object implementing :class:`BatchExecutor` and hands it the prompts; the executors
of :mod:`eca_notebook.batch` implement it (``DaskExecutor(dask_client)`` wraps a ``dask.distributed.Client``).

Executors of other libraries are taken as they are through :data:`ADAPTERS`, a table from the top-level module of
the object's type to the adapter that wraps it, named as text (``"eca_notebook.batch:DaskExecutor"``) and imported
with :mod:`importlib` on first need: a ``dask.distributed.Client`` becomes ``DaskExecutor(client)``. Why by name, not
by a registration call of the package above: a user who imported only ``eca_notebook`` and ``distributed`` never
imported :mod:`eca_notebook.batch`, so nothing would have registered; and why not an import: the client must not
depend on the batch package (nor make ``import eca_notebook.client`` pull in Dask's machinery). The table is the one
place the client names a layer above it, and ``tests/test_layers.py`` checks that every entry points up to a part
allowed to import the client. A ``concurrent.futures`` pool is refused with the exact thing to pass instead, rather
than a bare "wrong type".
"""

from __future__ import annotations

import concurrent.futures
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, Required, TypedDict, runtime_checkable

from ..protocol import ChatContext, JsonObject
from ._approval import ApprovalPolicy
from ._result import PromptResult

if TYPE_CHECKING:
    from ._async import EcaClient

__all__ = ["ADAPTERS", "BatchExecutor", "BatchPrompt", "Job", "PromptOptions", "StartOptions", "batch_executor"]

#: Executors of other libraries, by the top-level module of their type: ``"module:callable"`` that wraps one into a
#: :class:`BatchExecutor` (imported by name when first needed; see the module docstring).
ADAPTERS: dict[str, str] = {
    "distributed": "eca_notebook.batch:DaskExecutor",  # a dask.distributed.Client: its cluster runs the prompts
}



class PromptOptions(TypedDict, total=False):
    """The keywords of :meth:`EcaClient.prompt` a batch prompt sets (a ``chat_id`` only from an executor)."""

    chat_id: str | None
    model: str | None
    behavior: str | None
    contexts: Sequence[ChatContext | JsonObject] | None
    approval: ApprovalPolicy | None
    timeout: float | None


class BatchPrompt(PromptOptions, total=False):
    """One prompt of :meth:`EcaClient.batch` given as a dict: its message and the keywords it overrides."""

    message: Required[str]


class StartOptions(TypedDict):
    """What :meth:`EcaClient.start` built its engine from, for a batch executor to build its workers' engines alike."""

    workspace: str | None
    #: The config layer (``initializationOptions``).
    config: JsonObject | None
    env: dict[str, str] | None


#: One prompt of a batch: its message and the keywords of :meth:`EcaClient.prompt` it sets, defaults applied.
Job = tuple[str, PromptOptions]


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
    adapter = ADAPTERS.get(kind.__module__.split(".")[0])
    if adapter is not None and hasattr(executor, "submit"):
        module, _, name = adapter.partition(":")
        try:
            wrap = getattr(importlib.import_module(module), name)
        except ImportError as exc:  # e.g. the batch extra's pieces are missing
            raise TypeError(f"EcaClient.batch(executor={kind.__name__}) needs {module} ({exc}); install "
                            "eca-notebook[batch]") from exc
        wrapped = wrap(executor)
        if isinstance(wrapped, BatchExecutor):
            return wrapped
    if isinstance(executor, concurrent.futures.Executor):
        raise TypeError(
            f"EcaClient.batch(executor=...) takes a batch executor, not a {kind.__name__}: for prompts in this "
            "process pass concurrency=N (or executor=eca_notebook.batch.InProcessExecutor(N, store=...) for a "
            "resumable store, retries and rate limits)")
    raise TypeError(
        f"EcaClient.batch(executor=...) takes a batch executor (an object with an async run_client_batch(client, "
        f"jobs) method, e.g. eca_notebook.batch.DaskExecutor or InProcessExecutor), not {kind.__name__}")
