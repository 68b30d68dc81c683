"""Rate limits shared by every worker of a batch: concurrent items, requests and tokens per minute, 429 pauses.

The arithmetic (:class:`LimiterState`) is pure and clock-driven, so the same code decides in one process
(:class:`LocalLimiter`, a thread condition around it) and on a Dask scheduler (``_dask.py`` keeps one per provider
there, where it survives workers dying and releases the leases of a worker that died). Workers only ever ask
"may I start an item of ~N tokens?" and report "it used M tokens (and hit a 429)".
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from ._models import RateLimit

__all__ = ["Lease", "Limiter", "LimiterState", "LocalLimiter", "NoLimiter", "estimate_tokens"]

_lease_ids = itertools.count(1)


def estimate_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token) for reserving a rate-limit budget before a request."""
    return max(1, len(text) // 4)


@dataclass
class Lease:
    """Permission to run one item; give it back with :meth:`Limiter.release`."""

    id: int
    name: str
    holder: str
    tokens: float


@dataclass
class _Bucket:
    rate: float  # per second
    capacity: float
    level: float
    stamp: float

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (an amount over the capacity needs a full bucket: it then runs
        into debt rather than never)."""
        need = min(amount, self.capacity)
        if self.level >= need:
            return 0.0
        return (need - self.level) / self.rate


@dataclass
class LimiterState:
    """One provider's limits: concurrent leases, a request bucket and a token bucket, and a pause after a 429."""

    limit: RateLimit
    now: float
    leases: dict[int, Lease] = field(default_factory=dict)
    paused_until: float = 0.0
    requests: _Bucket | None = None
    tokens: _Bucket | None = None

    def __post_init__(self) -> None:
        limit = self.limit
        if limit.requests_per_minute:
            rate = limit.requests_per_minute / 60.0
            capacity = limit.burst or max(1.0, rate)
            self.requests = _Bucket(rate, capacity, capacity, self.now)
        if limit.tokens_per_minute:
            rate = limit.tokens_per_minute / 60.0
            capacity = max(1.0, rate * 10)  # ten seconds' worth
            self.tokens = _Bucket(rate, capacity, capacity, self.now)

    def try_acquire(self, name: str, holder: str, tokens: float, now: float) -> tuple[Lease | None, float | None]:
        """``(lease, None)`` when granted; else ``(None, seconds)`` to wait, or ``(None, None)``: wait for a
        release (every concurrent lease is taken)."""
        if now < self.paused_until:
            return None, self.paused_until - now
        if self.limit.max_concurrent is not None and len(self.leases) >= self.limit.max_concurrent:
            return None, None
        wait = 0.0
        for bucket, amount in ((self.requests, 1.0), (self.tokens, tokens)):
            if bucket is not None:
                bucket.refill(now)
                wait = max(wait, bucket.wait_for(amount))
        if wait > 0:
            return None, wait
        if self.requests is not None:
            self.requests.level -= 1.0
        if self.tokens is not None:
            self.tokens.level -= tokens
        lease = Lease(next(_lease_ids), name, holder, tokens)
        self.leases[lease.id] = lease
        return lease, None

    def release(self, lease_id: int, used_tokens: float | None, penalty: float, now: float) -> None:
        lease = self.leases.pop(lease_id, None)
        if lease is not None and self.tokens is not None and used_tokens is not None:
            self.tokens.refill(now)
            self.tokens.level -= used_tokens - lease.tokens  # correct the reservation by what was really used
        if penalty > 0:
            self.paused_until = max(self.paused_until, now + penalty)

    def drop_holder(self, holder: str) -> int:
        """Release every lease of a holder that is gone (a dead worker); how many."""
        gone = [i for i, lease in self.leases.items() if lease.holder == holder]
        for lease_id in gone:
            del self.leases[lease_id]
        return len(gone)


class Limiter(Protocol):
    """What a worker needs of the limits: blocking, so it works from any worker thread."""

    def acquire(self, name: str, limit: RateLimit, tokens: float) -> Lease | None: ...

    def release(self, lease: Lease | None, used_tokens: float | None, penalty: float) -> None: ...


class NoLimiter:
    """No limits at all (the in-process executor's concurrency is then the only bound)."""

    def acquire(self, name: str, limit: RateLimit, tokens: float) -> Lease | None:
        return None

    def release(self, lease: Lease | None, used_tokens: float | None, penalty: float) -> None:
        return None


class LocalLimiter:
    """The limits for the threads of one process."""

    def __init__(self, holder: str = "local") -> None:
        self.holder = holder
        self._states: dict[str, LimiterState] = {}
        self._cond = threading.Condition()

    def acquire(self, name: str, limit: RateLimit, tokens: float) -> Lease | None:
        with self._cond:
            state = self._states.get(name)
            if state is None:
                state = self._states[name] = LimiterState(limit, time.monotonic())
            while True:
                lease, wait = state.try_acquire(name, self.holder, tokens, time.monotonic())
                if lease is not None:
                    return lease
                self._cond.wait(timeout=wait)

    def release(self, lease: Lease | None, used_tokens: float | None, penalty: float) -> None:
        if lease is None:
            return
        with self._cond:
            state = self._states.get(lease.name)
            if state is not None:
                state.release(lease.id, used_tokens, penalty, time.monotonic())
            self._cond.notify_all()
