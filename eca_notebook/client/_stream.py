"""Streaming one prompt (:class:`PromptStream`) and reading batch items — the parts of the API built on top of a
tracked turn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..protocol import ChatContentReceivedParams, ChatContext, JsonObject
from ._executor import Job, PromptOptions
from ._result import PromptResult, TurnCollector

if TYPE_CHECKING:
    from ._connection import ClientConnection

__all__ = ["PROMPT_KEYS", "PromptStream", "batch_job"]

#: The keywords a prompt takes besides its message (batch items may set them too).
PROMPT_KEYS = frozenset({"chat_id", "model", "behavior", "contexts", "approval", "timeout"})


class PromptStream:
    """The contents of one prompt as an async iterator; see :meth:`EcaClient.stream`."""

    def __init__(self, client: ClientConnection, message: str, *, chat_id: str, model: str | None, behavior: str | None,
                 contexts: Sequence[ChatContext | JsonObject] | None, approval: Any, timeout: float | None) -> None:
        self.client = client
        self.message = message
        self.chat_id = chat_id
        self.result: PromptResult | None = None
        self._params = client._prompt_params(chat_id, message, model, behavior, contexts)
        self._approval = approval
        self._timeout = timeout
        self._turn: TurnCollector | None = None
        self._task: asyncio.Task[PromptResult] | None = None
        self._finished = False

    def _begin(self) -> TurnCollector:
        if self._turn is None:
            self._turn = self.client._open_turn(self.message, self.chat_id, self._approval, streaming=True)
            self._task = asyncio.create_task(self.client._run_turn(self._turn, self._params, self._timeout),
                                             name=f"eca-stream-{self.chat_id}")
            self.client._tasks.add(self._task, self._task_done)
        return self._turn

    def _task_done(self, task: asyncio.Task[PromptResult]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here; __anext__/aclose re-raise or report it

    def __aiter__(self) -> PromptStream:
        return self

    async def __anext__(self) -> ChatContentReceivedParams:
        if self._finished:
            raise StopAsyncIteration
        turn = self._begin()
        assert turn.queue is not None and self._task is not None
        item = await turn.queue.get()
        if item is not None:
            return item
        self._finished = True
        self.result = await self._task  # raises what the prompt raised (e.g. the connection was lost)
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop the prompt if it is still running and wait for its result (in ``self.result``)."""
        if self._task is None:
            return
        if not self._task.done() and self._turn is not None:
            await self.client._stop_turn(self._turn)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            self.result = await self._task

    async def __aenter__(self) -> PromptStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def batch_job(item: Any, defaults: PromptOptions, index: int) -> Job:
    """A batch prompt (a message, or a :class:`BatchPrompt` dict) as its message and keywords, over *defaults*."""
    kwargs = defaults.copy()
    if isinstance(item, str):
        return item, kwargs
    if not isinstance(item, dict):
        raise TypeError(f"batch prompt #{index} must be a string or a dict, not {type(item).__name__}")
    item = dict(item)
    message = item.pop("message", None)
    if not isinstance(message, str):
        raise TypeError(f"batch prompt #{index} needs a 'message' string")
    unknown = set(item) - PROMPT_KEYS
    if unknown:
        raise TypeError(f"batch prompt #{index} has unexpected key(s): {', '.join(sorted(unknown))}")
    kwargs.update(cast("PromptOptions", item))  # (its keys are checked above; prompt() checks the values)
    return message, kwargs
