"""Where the work units run: threads of this process, or the workers of a Dask cluster — one interface.

Both executors run the same function per item (:func:`._runtime.run_item`) and hand results back one by one as
they complete, so the driver writes each to the store at once; both keep only a window of items in flight, so a
budget stop or an interrupt leaves the rest unsent (and unpaid), and memory stays flat for 10,000 items.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from ..client import PromptOptions, PromptResult, ToolCallRecord
from ..protocol import JsonObject
from ._limits import LocalLimiter
from ._models import EngineSpec, ItemPrompt, ItemResult, RateLimit, WorkItem
from ._runtime import run_item

__all__ = ["DaskExecutor", "Executor", "InProcessExecutor", "Job", "as_executor", "local_cluster", "prompt_result"]

log = logging.getLogger(__name__)

OnResult = Callable[[ItemResult], None]
KeepGoing = Callable[[], bool]


@dataclass
class Job:
    """What every item of one batch shares."""

    spec: EngineSpec
    limits: dict[str, RateLimit]
    retries: int = 0
    retry_delay: float = 1.0


class Executor:
    """Runs work units; :meth:`run` calls ``on_result`` for each as it completes (in the caller's thread) and
    submits new ones only while ``keep_going()``.

    ``options``: keywords of :func:`~eca_notebook.batch.batch` (``store``, ``retries``, ``rate_limit``, ``budget``,
    ``progress``, …) used when the executor is handed to :meth:`EcaClient.batch
    <eca_notebook.client.EcaClient.batch>` (``executor=``), which has no such keywords of its own.
    """

    name = "executor"

    def __init__(self, **options: Any) -> None:
        self.options = options

    def run(self, items: Iterable[WorkItem], job: Job, on_result: OnResult, keep_going: KeepGoing) -> None:
        raise NotImplementedError

    async def run_client_batch(self, client: Any, jobs: list[tuple[str, PromptOptions]]) -> list[PromptResult]:
        """``EcaClient.batch(..., executor=self)``: the prompts on this executor, with engines built like the
        client's (its workspace, config and env); the results as the client's :class:`PromptResult`."""
        from ._run import abatch

        start = getattr(client, "start_options", None)
        if not start:
            raise TypeError("batch(executor=...) needs a client made by EcaClient.start (its workspace, config and "
                            "env are what the workers' engines are built from)")
        prompts: list[ItemPrompt] = []
        for message, kwargs in jobs:
            approval = kwargs.pop("approval", None)
            if approval is not None and not isinstance(approval, str):
                raise TypeError("with executor=, approval must be 'unattended' or 'workspace' (a policy function "
                                "cannot travel to other processes)")
            # (WorkItem validates what the client's keywords hold: the approval mode, the contexts…)
            prompt = {"message": message, **kwargs, **({"approval": approval} if approval else {})}
            prompts.append(cast("ItemPrompt", prompt))
        options = {"progress": False, **self.options}
        results = await abatch(prompts, executor=self, workspace=start.get("workspace"), config=start.get("config"),
                               env=start.get("env"), **options)
        return [prompt_result(r) for r in results]


def _failed(item: WorkItem, exc: BaseException, worker: str) -> ItemResult:
    return ItemResult(id=item.id, prompt=item.message, status="failed", error=f"{type(exc).__name__}: {exc}",
                      worker=worker, workspace=item.workspace)


class InProcessExecutor(Executor):
    """Items on ``concurrency`` threads of this process, sharing one engine (per workspace)."""

    name = "in-process"

    def __init__(self, concurrency: int = 4, **options: Any) -> None:
        super().__init__(**options)
        self.concurrency = max(1, int(concurrency))

    def run(self, items: Iterable[WorkItem], job: Job, on_result: OnResult, keep_going: KeepGoing) -> None:
        limiter = LocalLimiter()
        source: Iterator[WorkItem] = iter(items)
        pending: dict[concurrent.futures.Future[ItemResult], WorkItem] = {}
        pool = concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="eca-batch")

        def fill() -> None:
            while len(pending) < self.concurrency and keep_going():
                item = next(source, None)
                if item is None:
                    return
                future = pool.submit(run_item, item, job.spec, limits=job.limits, limiter=limiter,
                                     retries=job.retries, retry_delay=job.retry_delay)
                pending[future] = item

        try:
            fill()
            while pending:
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    item = pending.pop(future)
                    try:
                        result = future.result()
                    except Exception as exc:
                        result = _failed(item, exc, "local")
                    on_result(result)
                fill()
        except BaseException:
            # an interrupt: send nothing more, but keep what is already running (it is being paid for)
            for future in pending:
                future.cancel()
            for future in concurrent.futures.as_completed([f for f in pending if not f.cancelled()]):
                if future.exception() is None:
                    on_result(future.result())
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"InProcessExecutor(concurrency={self.concurrency})"


class DaskExecutor(Executor):
    """Items as tasks on a Dask cluster (``client``: a ``distributed.Client``); each worker runs its own engine.

    ``window``: how many items are submitted ahead (default: twice the cluster's threads). A worker runs as many
    items at once as it has threads, so give a local cluster several threads per worker (they only wait on the
    network): :func:`local_cluster` does.
    """

    name = "dask"

    def __init__(self, client: Any, *, window: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.client = client
        self.window = window

    def _window(self) -> int:
        if self.window:
            return max(1, int(self.window))
        try:
            threads = int(sum(self.client.nthreads().values()))
        except Exception:
            threads = 4
        return max(2, 2 * threads)

    def run(self, items: Iterable[WorkItem], job: Job, on_result: OnResult, keep_going: KeepGoing) -> None:
        import distributed

        from ._dask import run_task

        window = self._window()
        source: Iterator[WorkItem] = iter(items)
        pending: dict[str, tuple[Any, WorkItem]] = {}
        run_id = uuid.uuid4().hex[:8]
        # One as_completed for the whole run: it collects results on the client's loop as tasks finish and hands
        # them over in batches, where a wait() over the window and a result() per future would each be a round trip
        # to that loop for every item.
        as_completed: Any = distributed.as_completed
        finished = as_completed(loop=self.client.loop, with_results=True, raise_errors=False)

        def fill() -> None:
            while len(pending) < window and keep_going():
                item = next(source, None)
                if item is None:
                    return
                # (spec and limits are small; passed with each task rather than scattered, so a task never
                # depends on data that lived only on a worker that died)
                future = self.client.submit(run_task, item, job.spec, job.limits, job.retries, job.retry_delay,
                                            pure=False, key=f"eca-item-{run_id}-{item.id}")
                pending[future.key] = (future, item)
                finished.add(future)

        def take(batch: list[tuple[Any, Any]]) -> None:
            for future, value in batch:
                _, item = pending.pop(future.key)
                if future.status == "cancelled":  # not run (the cluster closed?): reported skipped, a rerun sends it
                    continue
                if future.status == "finished" and isinstance(value, ItemResult):
                    result = value
                else:  # e.g. KilledWorker: the item kept killing workers
                    exc = value[1] if isinstance(value, tuple) and len(value) == 3 else value
                    result = _failed(item, exc if isinstance(exc, BaseException) else RuntimeError(str(exc)), "dask")
                on_result(result)
                future.release()

        try:
            fill()
            while pending:
                take(finished.next_batch(block=True))
                fill()
        except BaseException:
            # an interrupt: what already came back is written (it was paid for), nothing more is sent
            with contextlib.suppress(Exception):
                take(finished.next_batch(block=False))
            self.client.cancel([f for f, _ in pending.values() if f.status == "pending"])
            raise

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r})"


def prompt_result(result: ItemResult) -> PromptResult:
    """An :class:`ItemResult` as the client's :class:`PromptResult` (its ``chat_id`` is the item id: batch chats
    are not kept)."""
    usage: JsonObject | None = None
    if result.tokens is not None or result.cost is not None:
        usage = {"sessionTokens": result.tokens or 0}
        if result.cost is not None:
            usage["sessionCost"] = f"{result.cost:.6f}"
    calls = [ToolCallRecord(id=c.id, name=c.name, server=c.server, arguments=c.arguments,
                            status=c.status,  # type: ignore[arg-type]
                            output=c.output, details=c.details, reason=c.reason) for c in result.tool_calls]
    return PromptResult(chat_id=result.id, prompt=result.prompt, model=result.model, text=result.text,
                        tool_calls=calls, usage=usage, error=result.error)


def as_executor(executor: Any, concurrency: int = 4) -> Executor:
    """An :class:`Executor` for what a user passed: None (in-process), a ``distributed.Client``, or an executor."""
    if executor is None:
        return InProcessExecutor(concurrency)
    if isinstance(executor, Executor):
        return executor
    if type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "submit"):
        return DaskExecutor(executor)
    raise TypeError(f"executor must be None, a dask.distributed.Client or an eca_notebook.batch executor, not "
                    f"{type(executor).__name__}")


def local_cluster(n_workers: int = 2, threads_per_worker: int = 8, **kwargs: Any) -> Any:
    """A ``distributed.Client`` on a new ``LocalCluster`` of worker *processes* on this machine (close it, or use
    ``with``). Threads per worker default to 8: a worker thread mostly waits for the model."""
    import distributed

    kwargs.setdefault("dashboard_address", None)
    kwargs.setdefault("processes", True)
    # the client starts the cluster, so closing the client (or leaving ``with``) stops the cluster too
    client: Any = distributed.Client
    return client(n_workers=n_workers, threads_per_worker=threads_per_worker, **kwargs)
