"""ACP rate limits per session (acp-messages.md "Rate Limiting"), enforced on the side each one binds.

* ``session/prompt`` (client → agent): a prompt over the limit is refused with :data:`RATE_LIMITED` and a message
  saying in how many seconds to retry (``data.retryAfterSeconds``) — the client is the one sending too fast.
* ``fs/read_text_file`` / ``fs/write_text_file`` (agent → client): the agent paces itself — a request over the
  limit *waits* for the window to let it through instead of being sent and refused.
* ``session/update`` (agent → client): kept under its limit by merging consecutive text / thought chunks while the
  window is full (:class:`UpdateOutbox`); nothing is dropped, every character reaches the client in order.

The limits come from the workspace config's ``acp`` key (``{"acp": {"rateLimits": {"session/prompt": 10, …},
"rateWindowSeconds": 60}}``); a limit of 0 or ``null`` turns that one off. The window is configurable so tests (and
very patient users) need not wait a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ..protocol.errors import RpcError
from ._schema import MessageChunk, SessionUpdate

__all__ = ["DEFAULT_RATE_LIMITS", "DEFAULT_WINDOW", "RATE_LIMITED", "RateWindow", "SessionLimits", "UpdateOutbox",
           "limits_from_config"]

#: acp-messages.md "Rate Limiting": operations per window, per session.
DEFAULT_RATE_LIMITS: dict[str, int] = {
    "session/prompt": 10,
    "fs/read_text_file": 100,
    "fs/write_text_file": 50,
    "session/update": 1000,
}
DEFAULT_WINDOW = 60.0
#: The spec defines no code of its own for "too many requests"; a refused prompt is the session being unavailable
#: to another operation for a while, which is its ``-31902`` (Session locked). ``data.reason`` says
#: ``"rate_limited"`` and ``data.retryAfterSeconds`` when, so a client can tell it from a running prompt.
RATE_LIMITED = -31902
MERGE_LIMIT = 16 * 1024  # characters a merged chunk may grow to (the size of the chunks we split long texts into)
_MERGEABLE = {"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"}


class RateWindow:
    """A sliding window: at most *limit* events in any *window* seconds (*limit* 0: unlimited)."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._events: deque[float] = deque()

    def wait_time(self) -> float:
        """Seconds until one more event fits (0: now)."""
        if self.limit <= 0:
            return 0.0
        now = self._clock()
        while self._events and self._events[0] <= now - self.window:
            self._events.popleft()
        if len(self._events) < self.limit:
            return 0.0
        return max(self._events[0] + self.window - now, 0.001)

    def try_take(self) -> bool:
        if self.wait_time() > 0:
            return False
        if self.limit > 0:
            self._events.append(self._clock())
        return True

    async def take(self) -> None:
        """Wait until an event fits, then count it (the agent pacing itself)."""
        while not self.try_take():
            await asyncio.sleep(self.wait_time())


@dataclass
class SessionLimits:
    limits: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_RATE_LIMITS))
    window: float = DEFAULT_WINDOW
    windows: dict[str, RateWindow] = field(default_factory=dict)
    #: seconds per agent → client method, overriding the spec's (``acp.timeoutSeconds``)
    timeouts: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.windows = {method: RateWindow(limit, self.window) for method, limit in self.limits.items()}

    def of(self, method: str) -> RateWindow:
        return self.windows.setdefault(method, RateWindow(0, self.window))

    def admit(self, method: str, session_id: str) -> None:
        """Count one inbound *method* or refuse it with :data:`RATE_LIMITED`, saying when to retry."""
        window = self.of(method)
        if window.try_take():
            return
        wait = math.ceil(window.wait_time())
        raise RpcError(RATE_LIMITED,
                       f"Rate limit: at most {window.limit} {method} per {window.window:g} s in a session; "
                       f"retry in {wait} s",
                       {"sessionId": session_id, "reason": "rate_limited", "method": method,
                        "limit": window.limit, "windowSeconds": window.window, "retryAfterSeconds": wait})


def limits_from_config(acp: Any) -> SessionLimits:
    """:class:`SessionLimits` from the config's ``acp`` value (unknown or broken entries keep the defaults)."""
    limits = dict(DEFAULT_RATE_LIMITS)
    window = DEFAULT_WINDOW
    if isinstance(acp, Mapping):
        given = acp.get("rateLimits")
        if isinstance(given, Mapping):
            for method, value in given.items():
                if value is None:
                    limits[str(method)] = 0
                elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    limits[str(method)] = value
        seconds = acp.get("rateWindowSeconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
            window = float(seconds)
    timeouts: dict[str, float] = {}
    given_timeouts = acp.get("timeoutSeconds") if isinstance(acp, Mapping) else None
    if isinstance(given_timeouts, Mapping):
        timeouts = {str(k): float(v) for k, v in given_timeouts.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0}
    return SessionLimits(limits, window, timeouts=timeouts)


def _is_chunk(update: SessionUpdate) -> TypeGuard[MessageChunk]:
    return update["sessionUpdate"] in _MERGEABLE


def _merge(into: SessionUpdate, update: SessionUpdate) -> bool:
    """Append *update*'s text to the pending chunk *into* when both are the same kind of text chunk."""
    if not (_is_chunk(into) and _is_chunk(update)) or update["sessionUpdate"] != into["sessionUpdate"]:
        return False
    a, b = into["content"], update["content"]
    if not (a["type"] == "text" and b["type"] == "text"):
        return False
    if {k: v for k, v in a.items() if k != "text"} != {k: v for k, v in b.items() if k != "text"}:
        return False
    if {k: v for k, v in into.items() if k != "content"} != {k: v for k, v in update.items() if k != "content"}:
        return False
    text_a, text_b = a["text"] or "", b["text"] or ""
    if len(text_a) + len(text_b) > MERGE_LIMIT:
        return False
    into["content"] = {**a, "text": text_a + text_b}
    return True


class UpdateOutbox:
    """One session's ``session/update``\\ s under its rate limit: sent at once while the window has room, else
    held in order — consecutive text chunks merged — and sent as the window frees up."""

    def __init__(self, window: RateWindow, send: Callable[[SessionUpdate], None]) -> None:
        self.window = window
        self._send = send
        self._pending: deque[SessionUpdate] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def put(self, update: SessionUpdate) -> None:
        if not self._pending and self.window.try_take():
            self._send(update)
            return
        if self._pending and _merge(self._pending[-1], update):
            return
        self._pending.append(update.copy())
        self._idle.clear()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush(), name="acp-update-outbox")

    async def _flush(self) -> None:
        try:
            while self._pending:
                await asyncio.sleep(self.window.wait_time())
                if self._pending and self.window.try_take():
                    self._send(self._pending.popleft())
        finally:
            if not self._pending:
                self._idle.set()

    async def drain(self) -> None:
        """Until every held update has been sent (a prompt's answer and a permission request follow them)."""
        await self._idle.wait()

    async def aclose(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._flusher
