"""Which asyncio loop the notebook session's client lives on, and how work gets there from wherever ``%eca`` runs.

The client (and the engine inside it) is bound to one loop. In a kernel that is the kernel's own loop, so a turn
streams on while the user runs other cells; in terminal IPython nothing runs a loop, so the session owns one and
runs each turn to completion on it; a widget callback or another thread hands its work to the loop that is
running. Kept apart from the session so the "never block the kernel" rules read in one place (see ``_session.py``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._tasks import BackgroundTasks

__all__ = ["LoopHost", "running_loop"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running in this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopHost:
    """The session's loop (``loop``), the loop it owns where none runs, and the background tasks started on it."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self.tasks = BackgroundTasks("notebook session", logger=log)

    def kernel_loop(self) -> asyncio.AbstractEventLoop | None:
        """The kernel's asyncio loop (ipykernel's io_loop), ``None`` outside a kernel."""
        io_loop = getattr(getattr(self.shell, "kernel", None), "io_loop", None)
        return getattr(io_loop, "asyncio_loop", None)

    def own(self) -> asyncio.AbstractEventLoop:
        """The loop the session owns (created on first use, and again after it was closed)."""
        if self._own_loop is None or self._own_loop.is_closed():
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop

    def threaded_target(self) -> asyncio.AbstractEventLoop | None:
        """The loop a call from a thread other than the main one must hand its work to (``None``: run it here)."""
        target = self.loop if self.loop is not None and self.loop.is_running() else self.kernel_loop()
        if target is not None and target.is_running() and threading.current_thread() is not threading.main_thread():
            return target
        return None

    def spawn(self, coro: Coroutine[Any, Any, T], name: str = "eca-notebook") -> asyncio.Task[T]:
        """Start ``coro`` as a background task on the running loop (kept until done, failures logged)."""
        return self.tasks.spawn(coro, name)

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` on the session's loop from wherever we are (a widget callback, a thread, sync code)."""
        loop = self.loop
        if loop is not None and running_loop() is loop:
            self.spawn(coro)
        elif loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(coro, loop)
        elif loop is not None and not loop.is_closed():
            loop.run_until_complete(coro)
        else:
            coro.close()

    @staticmethod
    def finish_on(loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` to its end on a loop that is idle (a loop left behind); dropped if that cannot be done."""
        if loop is None or loop.is_closed() or loop.is_running():
            coro.close()
            return
        try:
            loop.run_until_complete(coro)
        except Exception:
            log.debug("finishing work on the previous loop failed", exc_info=True)

    async def aclose(self) -> None:
        """Cancel the background tasks (the calling task excepted) and wait for them."""
        await self.tasks.aclose()

    def close_own_loop(self) -> None:
        if self._own_loop is not None and not self._own_loop.is_closed() and not self._own_loop.is_running():
            self._own_loop.close()
