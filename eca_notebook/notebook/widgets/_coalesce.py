"""Coalescing widget updates: whatever the token rate, the front-end gets at most ~20 state updates a second.

Every widget state change is a comm message through the kernel's IOPub socket and a re-render in the browser. A
local model or a fast provider easily streams hundreds of chunks a second; sending one update per chunk would
flood the browser and cost the kernel more CPU than the model itself. So chunks only mark the view dirty; a timer
on the event loop flushes it at most once per interval, and the first chunk after a quiet period flushes at once
(no added latency for the first token).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["DEFAULT_INTERVAL", "Coalescer"]

DEFAULT_INTERVAL = 0.05  # seconds: 20 updates/s at most


class Coalescer:
    """Calls ``flush`` at most once per ``interval`` while ``mark`` is called, and a last time at ``close``."""

    def __init__(self, flush: Callable[[], None], interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._flush_cb = flush
        self.interval = interval
        self._clock = clock
        self._dirty = False
        self._last = float("-inf")
        self._handle: asyncio.TimerHandle | None = None
        self.flushes = 0

    @property
    def dirty(self) -> bool:
        return self._dirty

    def mark(self) -> None:
        """Something changed; it will be flushed soon (now, if nothing was flushed within the interval)."""
        self._dirty = True
        if self._handle is not None:
            return
        wait = self._last + self.interval - self._clock()
        if wait <= 0:
            self._flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to time a later flush: the next mark after the interval, or close(), flushes
        self._handle = loop.call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._handle = None
        if self._dirty:
            self._flush()

    def _flush(self) -> None:
        self._dirty = False
        self._last = self._clock()
        self.flushes += 1
        self._flush_cb()

    def close(self) -> None:
        """Flush what is pending now and stop the timer (the stream ended)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._dirty:
            self._flush()
