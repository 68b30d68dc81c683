"""The Dask side: the task a worker runs, and the rate limits kept on the scheduler.

Why on the scheduler (a plug-in reached with ``run_on_scheduler``) rather than a Dask Actor: an actor lives on one
worker and dies with it, taking every other worker's limits along; the scheduler outlives workers, sees them leave
(``remove_worker`` releases a dead worker's leases at once, where a ``distributed.Semaphore`` lease would only time
out) and keeps the buckets in one place, so the limits hold however many workers come and go. Imported only when a
Dask executor is used: ``distributed`` is an optional dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from distributed import get_client, get_worker
from distributed.diagnostics.plugin import SchedulerPlugin

from ..protocol import JsonObject
from ._limits import Lease, LimiterState
from ._models import EngineSpec, ItemResult, RateLimit, WorkItem
from ._runtime import run_item

__all__ = ["DaskLimiter", "run_task"]

PLUGIN_NAME = "eca-batch-limits"


class _LimitsPlugin(SchedulerPlugin):
    """The limiter states, by name, on the scheduler's event loop."""

    name = PLUGIN_NAME

    def __init__(self) -> None:
        self.states: dict[str, LimiterState] = {}
        self.cond = asyncio.Condition()

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        if any(state.drop_holder(worker) for state in self.states.values()):
            asyncio.get_running_loop().create_task(self.wake())

    async def wake(self) -> None:
        async with self.cond:
            self.cond.notify_all()


def _plugin(scheduler: Any) -> _LimitsPlugin:
    plugin = scheduler.plugins.get(PLUGIN_NAME)
    if plugin is None:
        plugin = _LimitsPlugin()
        scheduler.add_plugin(plugin, name=PLUGIN_NAME)
    return plugin  # type: ignore[no-any-return]


async def _acquire(name: str, limit: JsonObject, holder: str, tokens: float, dask_scheduler: Any = None) -> int:
    plugin = _plugin(dask_scheduler)
    loop = asyncio.get_running_loop()
    async with plugin.cond:
        wanted = RateLimit.model_validate(limit)
        state = plugin.states.get(name)
        if state is None or state.limit != wanted:
            # the scheduler outlives a batch: a later batch with other limits for this provider gets fresh buckets
            # of its own limits (the leases still out and a 429 pause carry over: they are the provider's)
            fresh = LimiterState(wanted, loop.time())
            if state is not None:
                fresh.leases, fresh.paused_until = state.leases, state.paused_until
            state = plugin.states[name] = fresh
        while True:
            if holder not in dask_scheduler.workers:
                raise RuntimeError(f"worker {holder} left the cluster")
            lease, wait = state.try_acquire(name, holder, tokens, loop.time())
            if lease is not None:
                return lease.id
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(plugin.cond.wait(), wait if wait is not None else 5.0)


async def _release(name: str, lease_id: int, used: float | None, penalty: float, dask_scheduler: Any = None) -> None:
    plugin = _plugin(dask_scheduler)
    async with plugin.cond:
        state = plugin.states.get(name)
        if state is not None:
            state.release(lease_id, used, penalty, asyncio.get_running_loop().time())
        plugin.cond.notify_all()


class DaskLimiter:
    """The limits as a worker thread sees them: blocking calls to the scheduler."""

    def __init__(self, holder: str) -> None:
        self.holder = holder

    def acquire(self, name: str, limit: RateLimit, tokens: float) -> Lease | None:
        client: Any = get_client()
        lease_id = client.run_on_scheduler(_acquire, name, limit.model_dump(), self.holder, tokens)
        return Lease(int(lease_id), name, self.holder, tokens)

    def release(self, lease: Lease | None, used_tokens: float | None, penalty: float) -> None:
        if lease is not None:
            client: Any = get_client()
            client.run_on_scheduler(_release, lease.name, lease.id, used_tokens, penalty)


def run_task(item: WorkItem, spec: EngineSpec, limits: dict[str, RateLimit], retries: int,
             retry_delay: float) -> ItemResult:
    """The Dask task: one work unit on this worker, under the cluster-wide limits."""
    address = get_worker().address
    return run_item(item, spec, limits=limits, limiter=DaskLimiter(address), retries=retries, worker=address,
                    retry_delay=retry_delay)
