"""The blocking client: the asyncio client on a private event loop in a background thread.

Why a thread rather than ``asyncio.run`` per call or ``nest_asyncio``: a blocking call must work the same from plain
Python and from code that already runs inside an event loop (a Jupyter cell, papermill, an ``asyncio.run`` of your
own), and the engine must keep state (chats, the HTTP connection pool, a loaded local model) between calls. One
loop that lives as long as the client gives both; the caller's loop, if any, is never touched.

Rules that follow: callbacks given to :meth:`SyncEcaClient.subscribe` and approval policies run on the client's
thread; calling a blocking method *from* that thread (from such a callback) would deadlock and raises instead.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import ChatContentReceivedParams, ChatToolCallUndoResult, JsonObject
from ._approval import ApprovalPolicy
from ._async import START_TIMEOUT, STOP_WAIT, EcaClient, PromptStream
from ._executor import BatchPrompt
from ._result import PromptResult

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["SyncEcaClient", "SyncPromptStream", "prompt"]

log = logging.getLogger(__name__)

T = TypeVar("T")
_counter = itertools.count(1)


class SyncEcaClient:
    """:class:`EcaClient` with blocking methods. Use it as a context manager (or call :meth:`close`)::

        with SyncEcaClient(workspace=".") as eca:
            print(eca.prompt("What does this project do?").text)

    Same arguments as :meth:`EcaClient.start`; same methods, blocking; :meth:`stream` returns a blocking iterator.
    """

    def __init__(
        self,
        *,
        workspace: str | Path | None = None,
        config: JsonObject | None = None,
        env: Mapping[str, str] | None = None,
        approval: ApprovalPolicy | None = None,
        engine: Engine | None = None,
        client_name: str = "eca-notebook-client",
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=f"eca-client-loop-{next(_counter)}", daemon=True)
        self._thread.start()
        try:
            self._client: EcaClient = self._call(EcaClient.start(
                workspace=workspace, config=config, env=env, approval=approval, engine=engine,
                client_name=client_name, start_timeout=start_timeout))
        except BaseException:
            self._stop_loop()
            self._closed = True
            raise

    @classmethod
    def start(cls, **kwargs: Any) -> SyncEcaClient:
        """The same as ``SyncEcaClient(**kwargs)``, named like :meth:`EcaClient.start`."""
        return cls(**kwargs)

    # -- the loop thread -----------------------------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            asyncio.set_event_loop(None)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the client's loop and wait for it. Interrupting the wait (Ctrl-C, a kernel interrupt)
        cancels it there — for a prompt, that stops the prompt."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("SyncEcaClient: a blocking call from the client's own thread (a subscribe callback "
                               "or approval policy) would deadlock; use the async client there")
        if not self._thread.is_alive() or self._loop.is_closed():
            coro.close()
            raise RuntimeError("SyncEcaClient is closed")
        started, finished = threading.Event(), threading.Event()

        async def run() -> T:
            started.set()
            try:
                return await coro
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                if started.is_set():  # let the cancellation run (a prompt stops its turn) before returning
                    finished.wait(STOP_WAIT + 5)
            raise

    def _stop_loop(self) -> None:
        loop = self._loop
        if loop.is_closed():
            return

        async def drain() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()

        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout=30)
            except Exception:
                log.warning("SyncEcaClient: the client loop did not drain cleanly", exc_info=True)
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=30)
        if not self._thread.is_alive():
            loop.close()

    def close(self) -> None:
        """Close the client and its engine, then stop the thread. Idempotent."""
        if self._closed:
            return
        if threading.current_thread() is self._thread:
            raise RuntimeError("SyncEcaClient.close() from the client's own thread would deadlock")
        self._closed = True
        try:
            if self._thread.is_alive():
                self._call(self._client.aclose())
        finally:
            self._stop_loop()

    def __enter__(self) -> SyncEcaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """The client was closed (its thread and engine are gone)."""
        return self._closed

    # -- state ---------------------------------------------------------------------------------------------------

    @property
    def async_client(self) -> EcaClient:
        """The underlying :class:`EcaClient` (it lives on the client's thread)."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The client's private event loop."""
        return self._loop

    @property
    def engine(self) -> Engine | None:
        """The engine; it runs on the client's thread (use :meth:`add_plugin` to extend it)."""
        return self._client.engine

    @property
    def models(self) -> list[str]:
        """The models the server offers (from ``initialize``)."""
        return self._client.models

    @property
    def default_model(self) -> str | None:
        """The server's default model."""
        return self._client.default_model

    @property
    def behaviors(self) -> list[str]:
        """The behaviors (agent, plan, …) the server offers."""
        return self._client.behaviors

    @property
    def default_behavior(self) -> str | None:
        """The server's default behavior."""
        return self._client.default_behavior

    @property
    def welcome_message(self) -> str | None:
        """The server's welcome text."""
        return self._client.welcome_message

    @property
    def tools(self) -> list[JsonObject]:
        """The tools the server reported (``tool/serverUpdated``), by server."""
        return self._client.tools

    @property
    def messages(self) -> list[JsonObject]:
        """The ``$/showMessage`` notifications received so far."""
        return self._client.messages

    # -- the API, blocking ---------------------------------------------------------------------------------------

    def prompt(self, message: str, **kwargs: Any) -> PromptResult:
        """Blocking :meth:`EcaClient.prompt`."""
        return self._call(self._client.prompt(message, **kwargs))

    def stream(self, message: str, **kwargs: Any) -> SyncPromptStream:
        """Blocking :meth:`EcaClient.stream`: iterate with a plain ``for``; ``close()`` (or ``with``) stops it."""
        return SyncPromptStream(self, self._client.stream(message, **kwargs))

    def batch(self, prompts: Iterable[str | BatchPrompt], *, concurrency: int = 4, executor: Any = None,
              **defaults: Any) -> list[PromptResult]:
        """Blocking :meth:`EcaClient.batch` (``executor``: see there)."""
        return self._call(self._client.batch(list(prompts), concurrency=concurrency, executor=executor,
                                             **defaults))

    def stop(self, chat_id: str) -> None:
        """Blocking :meth:`EcaClient.stop`: stop the chat's running turn."""
        self._call(self._client.stop(chat_id))

    def steer(self, chat_id: str, message: str) -> None:
        """Blocking :meth:`EcaClient.steer`: guidance for the chat's running prompt, taken in at its next round."""
        self._call(self._client.steer(chat_id, message))

    def remove_steer(self, chat_id: str) -> None:
        """Blocking :meth:`EcaClient.remove_steer`: take back the steer not yet taken in."""
        self._call(self._client.remove_steer(chat_id))

    def jobs(self) -> list[JsonObject]:
        """Blocking :meth:`EcaClient.jobs`: the background jobs."""
        return self._call(self._client.jobs())

    def kill_job(self, job_id: str) -> bool:
        """Blocking :meth:`EcaClient.kill_job`: kill a background job."""
        return self._call(self._client.kill_job(job_id))

    def job_output(self, job_id: str) -> JsonObject:
        """Blocking :meth:`EcaClient.job_output`: a job's last output lines."""
        return self._call(self._client.job_output(job_id))

    def delete(self, chat_id: str) -> None:
        """Blocking :meth:`EcaClient.delete`: delete the chat (and its saved history)."""
        self._call(self._client.delete(chat_id))

    def list_chats(self, **kwargs: Any) -> list[JsonObject]:
        """Blocking :meth:`EcaClient.list_chats`: the saved chats, newest first."""
        return self._call(self._client.list_chats(**kwargs))

    def open_chat(self, chat_id: str) -> list[ChatContentReceivedParams]:
        """Blocking :meth:`EcaClient.open_chat`: a saved chat's contents, as the server replays them."""
        return self._call(self._client.open_chat(chat_id))

    def approve(self, chat_id: str, tool_call_id: str, *, save: str | None = None,
                hunks: list[str] | None = None) -> None:
        """Blocking :meth:`EcaClient.approve`: run a tool call waiting for approval (``hunks``: only those)."""
        self._call(self._client.approve(chat_id, tool_call_id, save=save, hunks=hunks))

    def reject(self, chat_id: str, tool_call_id: str) -> None:
        """Blocking :meth:`EcaClient.reject`: refuse a tool call waiting for approval."""
        self._call(self._client.reject(chat_id, tool_call_id))

    def undo_tool_call(self, chat_id: str, tool_call_id: str) -> ChatToolCallUndoResult:
        """Blocking :meth:`EcaClient.undo_tool_call`: revert what a finished tool call changed."""
        result: ChatToolCallUndoResult = self._call(self._client.undo_tool_call(chat_id, tool_call_id))
        return result

    def rollback(self, chat_id: str, content_id: str, *, revert_files: bool = True) -> None:
        """Blocking :meth:`EcaClient.rollback`: remove a user message and everything after it (files reverted)."""
        self._call(self._client.rollback(chat_id, content_id, revert_files=revert_files))

    def fork(self, chat_id: str, content_id: str) -> str:
        """Blocking :meth:`EcaClient.fork`: copy the chat up to a message into a new chat; returns its id."""
        new_id: str = self._call(self._client.fork(chat_id, content_id))
        return new_id

    def select_model(self, model: str, chat_id: str | None = None) -> None:
        """Blocking :meth:`EcaClient.select_model`."""
        self._call(self._client.select_model(model, chat_id))

    def select_behavior(self, behavior: str, chat_id: str | None = None) -> None:
        """Blocking :meth:`EcaClient.select_behavior`."""
        self._call(self._client.select_behavior(behavior, chat_id))

    def query_commands(self, query: str = "") -> list[JsonObject]:
        """Blocking :meth:`EcaClient.query_commands`: the chat commands matching ``query``."""
        return self._call(self._client.query_commands(query))

    def query_context(self, query: str) -> list[JsonObject]:
        """Blocking :meth:`EcaClient.query_context`: the contexts matching ``query`` for ``@`` completion."""
        return self._call(self._client.query_context(query))

    def request(self, method: str, params: Any = None) -> Any:
        """Blocking :meth:`EcaClient.request`: any ECA request, its result."""
        return self._call(self._client.request(method, params))

    def notify(self, method: str, params: Any = None) -> None:
        """Blocking :meth:`EcaClient.notify`: any ECA notification."""
        self._call(self._client.notify(method, params))

    def subscribe(self, callback: Callable[[str, Any], None]) -> Callable[[], None]:
        """Call ``callback(method, params)`` for every notification — on the client's thread. The returned function
        unsubscribes (from any thread)."""
        unsubscribe = self._client.subscribe(callback)

        def threadsafe_unsubscribe() -> None:
            if threading.current_thread() is self._thread or self._loop.is_closed():
                unsubscribe()
            else:
                self._loop.call_soon_threadsafe(unsubscribe)

        return threadsafe_unsubscribe

    def add_plugin(self, plugin: Any) -> None:
        """Add an engine plug-in, on the client's thread (plug-in tools then run there too)."""

        async def add() -> None:
            self._client.add_plugin(plugin)

        self._call(add())


class SyncPromptStream:
    """A prompt's contents as a blocking iterator; ``chat_id`` is known at once, ``result`` after the last item."""

    def __init__(self, owner: SyncEcaClient, stream: PromptStream) -> None:
        self._owner = owner
        self._stream = stream
        self.chat_id = stream.chat_id

    @property
    def result(self) -> PromptResult | None:
        """The prompt's result once the stream has ended (None before)."""
        return self._stream.result

    def __iter__(self) -> Iterator[ChatContentReceivedParams]:
        return self

    def __next__(self) -> ChatContentReceivedParams:
        try:
            return self._owner._call(self._stream.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        """Stop the prompt if it is still running; ``result`` is then set."""
        if not self._owner.closed:
            self._owner._call(self._stream.aclose())

    def __enter__(self) -> SyncPromptStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_START_KEYS = ("workspace", "config", "env", "approval", "engine", "client_name", "start_timeout")


def prompt(message: str, **kwargs: Any) -> PromptResult:
    """One prompt in a fresh client, then close it: ``prompt("Summarize README.md", workspace=".")``.

    Takes :class:`SyncEcaClient`'s arguments (``workspace``, ``config``, ``env``, ``approval``, …) and
    :meth:`EcaClient.prompt`'s (``model``, ``behavior``, ``contexts``, ``timeout``, …). Works inside a running event
    loop too.
    """
    start = {key: kwargs.pop(key) for key in _START_KEYS if key in kwargs}
    with SyncEcaClient(**start) as client:
        return client.prompt(message, **kwargs)
