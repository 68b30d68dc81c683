"""Waiting on a condition, the one way the suite does it.

A test that waits for something the code does in the background (a hook, a job, a server's reply) polls a condition
under a generous ceiling rather than sleeping a fixed time: on the two-core machine with the whole suite running, a
short sleep is sometimes too short, and a long one wastes every run. Each module used to carry its own copy of this
loop, with different ceilings and messages; these two are it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

__all__ = ["until", "wait_until"]


async def until(condition: Callable[[], Any], timeout: float = 60.0, what: str = "condition",
                interval: float = 0.02) -> Any:
    """Poll *condition* (yielding to the loop between polls) until it is truthy, and return its value.

    *condition* may be a coroutine function (an HTTP check, say): its result is awaited. Fails the test with *what*
    once *timeout* seconds pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not reached in {timeout:.0f} s")
        await asyncio.sleep(interval)


def wait_until(condition: Callable[[], Any], timeout: float = 60.0, what: str = "condition",
               interval: float = 0.05) -> Any:
    """:func:`until` for code with no event loop of its own (a test driving threads or processes): blocks."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached in {timeout:.0f} s")
        time.sleep(interval)
