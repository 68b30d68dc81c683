"""Background tasks owned by one object: started by name, kept until done, failures logged, all cancelled on close.

asyncio keeps only a weak reference to a task, so whoever starts one must hold it until it finishes; and a task whose
exception nobody retrieves is logged by asyncio only at garbage collection ("Task exception was never retrieved"),
long after the fact and without context. Every connection, the engine and the notebook session need the same three
steps — keep, log, cancel-and-wait — so they share this one set.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["BackgroundTasks"]

T = TypeVar("T")


class BackgroundTasks:
    """A set of running tasks.

    ``ignore`` names exception types that are expected outcomes (e.g. an RPC error the peer already saw), logged at
    debug level rather than as errors.
    """

    def __init__(self, owner: str, *, logger: logging.Logger | None = None,
                 ignore: tuple[type[BaseException], ...] = ()) -> None:
        self._owner = owner
        self._log = logger or logging.getLogger(__name__)
        self._ignore = ignore
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T], name: str,
              on_done: Callable[[asyncio.Task[T]], None] | None = None) -> asyncio.Task[T]:
        """Start ``coro`` as a task on the running loop and keep it until it finishes."""
        task = asyncio.create_task(coro, name=name)
        self.add(task, on_done)
        return task

    def add(self, task: asyncio.Task[T], on_done: Callable[[asyncio.Task[T]], None] | None = None) -> None:
        """Keep a task started elsewhere (e.g. with a context copied for it)."""
        self._tasks.add(task)

        def done(task: asyncio.Task[T]) -> None:
            self._tasks.discard(task)
            if not task.cancelled() and (error := task.exception()) is not None:
                if isinstance(error, self._ignore):
                    self._log.debug("%s: task %s ended with %r", self._owner, task.get_name(), error)
                else:
                    self._log.error("%s: task %s failed", self._owner, task.get_name(), exc_info=error)
            if on_done is not None:
                on_done(task)

        task.add_done_callback(done)

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    async def aclose(self, *, except_current: bool = True) -> None:
        """Cancel every task and wait for all of them to finish (the calling task itself is skipped)."""
        current = asyncio.current_task() if except_current else None
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
