"""A JSON-RPC 2.0 peer over a :class:`~eca_notebook.transports.MessageStream`: dispatch, correlation, cancellation.

Symmetric on purpose: ECA and ACP both have requests in both directions, so the same object serves incoming
requests (handlers registered by method name) and sends its own (``request``/``notify``). It knows nothing about
any method except ``$/cancelRequest``; what a method means is the business of the layer that registers it.

Concurrency model (the engine relies on it):

* Every incoming request runs in its own task, so a slow handler never blocks reading the next message. After
  starting the task the read loop yields once, so the handler's synchronous prefix (up to its first real ``await``)
  runs before the next message is dispatched: ``chat/prompt`` registers its chat before a following
  ``chat/promptStop`` is handled.
* Notifications are handled inline, in arrival order. Their handlers must be quick (or spawn a task): while one
  awaits, nothing else is read.
* Responses to our own requests resolve futures; ids are ints from 1.
* Everything we send goes through one ordered queue (:class:`~._outbox.Outbox`): notifications, responses and our
  own requests, written by one task in the order they were queued. So a response is written after every
  notification queued before it — a handler that streams notifications and then returns needs no flushing — and
  a request of ours follows whatever explains it. :meth:`Endpoint.notify_nowait` (the engine's path) and the
  responses are queued without waiting; :meth:`Endpoint.notify` and :meth:`Endpoint.request` wait until their
  message was handed to the stream. The queue's memory bounds (merging, the cap that disconnects) are described
  in :mod:`._outbox`.
* At most ``max_concurrent_requests`` incoming requests run at once; one more is answered at once with a
  "server busy" error, so a peer cannot make us hold an unbounded number of handler tasks. The read loop never
  pauses for it: a handler may be waiting for a response from the peer that only the read loop can deliver. It
  pauses only while the peer leaves more than ``max_queued_responses`` of our answers unread (then it is not
  reading anything of ours either): together with the transports' backpressure this bounds what one peer costs
  us in memory.

No traceback ever reaches the wire (it goes to the log). Logs name methods and ids, never params, because params
may hold secrets (``initializationOptions`` can carry API keys). The one echo of params is the ``-32602`` data:
pydantic's error list (with each error's ``input``) goes back to the peer that sent those params.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pydantic

from .._logging import Throttle
from .._tasks import BackgroundTasks
from ..protocol import JsonObject
from ..protocol.errors import (
    CONNECTION_LOST,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    RpcError,
)
from ..transports import MessageStream
from ._messages import Id as _Id
from ._messages import Request, Response, to_json
from ._messages import envelope_error as _envelope_error
from ._messages import error_response as _error
from ._messages import invalid_params as _invalid_params
from ._messages import short as _short
from ._outbox import (
    DEFAULT_MAX_QUEUED,
    DEFAULT_MAX_QUEUED_RESPONSES,
    DEFAULT_MERGE_BACKLOG,
    Merge,
    NotificationEncoder,
    Outbox,
)

__all__ = ["CANCEL_METHOD", "Endpoint", "Handler", "to_json"]

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any] | Any]
H = TypeVar("H", bound=Handler)

CANCEL_METHOD = "$/cancelRequest"
_CLOSE_WAIT = 5.0  # seconds close() waits for cancelled handlers to unwind before giving up on them
_CLOSE_DRAIN = 2.0  # seconds close() lets the queue reach the stream (never hanging on a peer that stopped reading)
DEFAULT_MAX_CONCURRENT_REQUESTS = 1000


class Endpoint:
    """One JSON-RPC connection. Register handlers, then ``await run()`` until the stream ends.

    ``guard(method)`` runs before any incoming request or notification is dispatched (built-ins included); an
    :class:`RpcError` it raises answers a request and drops a notification. ``params_parser(method, params)`` turns
    raw params into what the handler receives; a ``pydantic.ValidationError`` from it (or from a handler) becomes
    ``-32602 Invalid params`` with the validation errors as ``data``. ``outgoing(message)`` rewrites every
    notification and response before it is written (the doors pass their secret redaction); the endpoint's own
    requests are left alone, since their params must reach the peer unchanged (a file write's content, say).

    The outgoing queue: ``merge(method, queued_params, new_params)`` folds a notification into the one queued
    before it once ``merge_backlog`` messages wait; past ``max_queued`` messages the peer is taken as not reading
    and ``on_overflow()`` is called once (by default the endpoint closes); while more than
    ``max_queued_responses`` answers wait, nothing more is read from the peer. See :mod:`._outbox`, also for
    ``encode_notification``, a door's shortcut to the bytes of the notification it sends most.

    ``null_id_notifications``: a message with ``"id": null`` is a notification (answered with nothing), as ACP's
    message spec defines it ("Notifications have no ID (null)"); by default it is a request, as JSON-RPC 2.0 has it.
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        name: str = "rpc",
        guard: Callable[[str], None] | None = None,
        params_parser: Callable[[str, Any], Any] | None = None,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        outgoing: Callable[[Any], Any] | None = None,
        merge: Merge | None = None,
        merge_backlog: int = DEFAULT_MERGE_BACKLOG,
        max_queued: int | None = DEFAULT_MAX_QUEUED,
        on_overflow: Callable[[], None] | None = None,
        max_queued_responses: int = DEFAULT_MAX_QUEUED_RESPONSES,
        null_id_notifications: bool = False,
        encode_notification: NotificationEncoder | None = None,
    ) -> None:
        self.name = name
        self.null_id_notifications = null_id_notifications
        self.max_concurrent_requests = max_concurrent_requests
        self._outbox = Outbox(stream, name=name, outgoing=outgoing, merge=merge, merge_backlog=merge_backlog,
                              max_queued=max_queued, on_overflow=on_overflow or self._not_reading,
                              max_queued_responses=max_queued_responses, encode_notification=encode_notification)
        self._closer: asyncio.Task[None] | None = None
        self._throttle = Throttle()  # warnings caused by the peer's bad input
        self._stream = stream
        self._guard = guard
        self._params_parser = params_parser
        self._handlers: dict[str, Handler] = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}  # our outgoing requests, by id
        self._running: dict[int | str, asyncio.Task[Any]] = {}  # incoming requests that can be cancelled, by id
        self._tasks = BackgroundTasks(name, logger=log)  # every task we started, for close()
        self._closed = False
        self._run_started = False

    # -- registry --------------------------------------------------------------------------------------------------

    def register(self, method: str, handler: Handler) -> None:
        """Handle incoming *method* (request or notification) with ``handler(params)``, sync or async.

        The handler receives the params (as turned by ``params_parser``, raw otherwise) and returns the result (a
        pydantic model, JSON-able data or None). As a notification handler it runs inline in the read loop: keep it
        quick and never await a request's response there (spawn a task instead), or the connection stalls.
        """
        if method == CANCEL_METHOD:
            raise ValueError(f"{CANCEL_METHOD} is built in")
        self._handlers[method] = handler

    def method(self, method: str) -> Callable[[H], H]:
        """Decorator form of :meth:`register`."""

        def decorate(handler: H) -> H:
            self.register(method, handler)
            return handler

        return decorate

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def queued(self) -> int:
        """Outgoing messages waiting to be written."""
        return len(self._outbox)

    # -- outgoing --------------------------------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its result.

        Raises :class:`RpcError` for an error response (``CONNECTION_LOST`` when the connection ends first) and
        ``TimeoutError`` after *timeout* seconds, having told the peer ``$/cancelRequest``. Cancelling the caller
        also sends ``$/cancelRequest``.
        """
        if self._closed:
            raise RpcError(CONNECTION_LOST, f"{self.name}: connection closed")
        id = next(self._ids)
        message: Request = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = to_json(params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        try:
            if not await self._send_raw(message):
                raise RpcError(CONNECTION_LOST, f"{self.name}: could not send {method!r}")
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            # (the timeout cancelled the future: "done" here only means a response won the race)
            if self._closed or (future.done() and not future.cancelled()):
                raise
            await self._send_cancel(id)
            raise TimeoutError(f"{self.name}: {method!r} (id {id}) got no response within {timeout} s") from None
        except asyncio.CancelledError:
            if not self._closed and not (future.done() and not future.cancelled()):
                await self._send_cancel(id)
            raise
        finally:
            self._pending.pop(id, None)

    async def _send_cancel(self, id: int) -> None:
        self._pending.pop(id, None)
        try:
            await self._send_raw({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"id": id}})
        except Exception:  # best effort: the caller gets its TimeoutError/CancelledError regardless
            log.debug("%s: could not send %s for %s", self.name, CANCEL_METHOD, id, exc_info=True)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification, queued behind everything queued before it, and wait until it was written; dropped
        silently once the connection is closed. TypeError/ValueError when it cannot be serialized."""
        if self._closed:
            log.debug("%s: write after close dropped", self.name)
            return
        await self._outbox.notify(method, params)

    def notify_nowait(self, method: str, params: Any = None) -> None:
        """Queue a notification behind everything queued before it and return at once (the engine's path: it
        never waits for a peer). Dropped once the connection is closed; a failure to send it is logged."""
        if not self._closed:
            self._outbox.notify_nowait(method, params)

    async def drain(self) -> None:
        """Wait until every message queued so far has been written (or dropped by :meth:`close`)."""
        await self._outbox.drain()

    async def _send_raw(self, message: Request) -> bool:
        """Queue a message of ours as is; False when the connection is closed or broken."""
        if self._closed:
            log.debug("%s: write after close dropped", self.name)
            return False
        return await self._outbox.send_raw(message)

    def _send_response(self, response: Response | list[Response]) -> None:
        if self._closed:
            log.debug("%s: write after close dropped", self.name)
            return
        self._outbox.respond(response)

    def _not_reading(self) -> None:
        if self._closer is None and not self._closed:
            log.warning("%s: disconnecting: the peer is not reading (more than %s messages queued)", self.name,
                        self._outbox.max_queued)
            self._closer = asyncio.get_running_loop().create_task(self.close(), name=f"{self.name}-disconnect")

    # -- read loop -------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read and dispatch messages until the stream ends; then close (handlers cancelled, requests failed)."""
        if self._run_started:
            raise RuntimeError(f"{self.name}: run() was already called")
        self._run_started = True
        try:
            while True:
                if self._outbox.backed_up:  # the peer does not read our answers: read nothing more meanwhile
                    await self._outbox.wait_for_room()
                try:
                    message = await self._stream.read()
                except (ConnectionError, OSError) as exc:
                    log.info("%s: read failed, treating as end of stream: %r", self.name, exc)
                    break
                if message is None:
                    break
                if type(message) is dict and "id" not in message and "method" in message and \
                        _envelope_error(message) is None:
                    # a notification, most of what a client reads (a streamed reply): what _dispatch does with it,
                    # without two coroutines per message
                    pending = self._notification(message["method"], message.get("params"))
                    if pending is not None:
                        await pending
                elif isinstance(message, RpcError):
                    self._send_response(_error(None, message))
                elif isinstance(message, list):
                    await self._dispatch_batch(message)
                else:
                    response = await self._dispatch(message, batch=None)
                    if response is not None:
                        self._send_response(response)
        finally:
            log.debug("%s: end of stream", self.name)
            await self.close()

    async def _dispatch(self, message: Any, batch: list[asyncio.Task[Any]] | None) -> Response | None:
        """Handle one message. Returns a response to send right away (an error, or a built-in's result), or None.

        A request's handler runs in a task that sends its own response — or, inside a batch, is appended to *batch*
        and returns its response to the batch collector.
        """
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
            self._on_response(message)
            return None
        invalid = _envelope_error(message)
        if invalid is not None:
            return invalid
        method, params = message["method"], message.get("params")
        if "id" not in message or (message["id"] is None and self.null_id_notifications):
            await self._on_notification(method, params)
            return None
        response = self._on_request(message["id"], method, params, batch)
        if response is None:
            # The handler task exists: let its synchronous prefix run before the next message is dispatched.
            await asyncio.sleep(0)
        return response

    def _on_request(
        self, id: _Id, method: str, params: Any, batch: list[asyncio.Task[Any]] | None
    ) -> Response | None:
        try:
            if self._guard is not None:
                self._guard(method)
        except RpcError as exc:
            return _error(id, exc)
        except Exception as exc:
            log.exception("%s: guard failed for %s", self.name, method)
            return _error(id, RpcError(INTERNAL_ERROR, _short(exc)))
        if method == CANCEL_METHOD:
            self._cancel(params)
            return {"jsonrpc": "2.0", "id": id, "result": None}
        handler = self._handlers.get(method)
        if handler is None:
            return _error(id, RpcError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method}))
        running = len(self._tasks)  # (finished tasks leave the set in their done callback)
        if running >= self.max_concurrent_requests:
            log.warning("%s: %s (id %r) refused: %d requests already running", self.name, method, id, running)
            return _error(id, RpcError(INTERNAL_ERROR, f"server busy: {running} requests already running; "
                                                       "retry when some have finished"))
        task = self._tasks.spawn(self._execute(id, method, params, handler, reply=batch is None),
                                 f"{self.name}:{method}#{id}")
        if id is not None:
            if id in self._running:
                log.warning("%s: request id %r reused while still running", self.name, id)
            self._running[id] = task
        if batch is not None:
            batch.append(task)
        return None

    async def _execute(self, id: _Id, method: str, params: Any, handler: Handler, *, reply: bool) -> Response:
        """Run a handler in its own task; send its response (*reply*) or return it to a batch collector."""
        response = await self._call(id, method, params, handler)
        if reply:
            self._send_response(response)
        return response

    async def _call(self, id: _Id, method: str, params: Any, handler: Handler) -> Response:
        """Run a handler and build its response; never raises except when the endpoint is closing."""
        try:
            if self._params_parser is not None:
                params = self._params_parser(method, params)
            result = handler(params)
            if inspect.isawaitable(result):
                result = await result
            return {"jsonrpc": "2.0", "id": id, "result": to_json(result)}
        except asyncio.CancelledError:
            if self._closed:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            log.debug("%s: %s (id %r) cancelled", self.name, method, id)
            return _error(id, RpcError(REQUEST_CANCELLED))
        except RpcError as exc:
            log.debug("%s: %s (id %r) failed: %s", self.name, method, id, exc)
            return _error(id, exc)
        except pydantic.ValidationError as exc:
            log.info("%s: %s (id %r): invalid params (%d errors)", self.name, method, id, exc.error_count())
            return _error(id, _invalid_params(exc))
        except Exception as exc:
            log.exception("%s: handler for %s (id %r) failed", self.name, method, id)
            return _error(id, RpcError(INTERNAL_ERROR, _short(exc)))
        finally:
            # Once the response exists, a late $/cancelRequest must not interrupt sending it.
            if id is not None and self._running.get(id) is asyncio.current_task():
                del self._running[id]

    async def _on_notification(self, method: str, params: Any) -> None:
        pending = self._notification(method, params)
        if pending is not None:
            await pending

    def _notification(self, method: str, params: Any) -> Awaitable[None] | None:
        """Handle a notification up to its handler's return; what is left to await when the handler is async."""
        try:
            if self._guard is not None:
                self._guard(method)
        except RpcError as exc:
            log.info("%s: notification %s refused: %s", self.name, method, exc)
            return None
        except Exception:
            log.exception("%s: guard failed for notification %s", self.name, method)
            return None
        if method == CANCEL_METHOD:
            self._cancel(params)
            return None
        handler = self._handlers.get(method)
        if handler is None:
            if not method.startswith("$/"):  # LSP: "$/" notifications may be ignored silently
                log.info("%s: no handler for notification %s", self.name, method)
            return None
        try:
            if self._params_parser is not None:
                params = self._params_parser(method, params)
            result = handler(params)
            if result is not None and inspect.isawaitable(result):
                return self._await_notification(method, result)
        except Exception as exc:
            self._notification_failed(method, exc)
        return None

    async def _await_notification(self, method: str, result: Awaitable[Any]) -> None:
        try:
            await result
        except Exception as exc:
            self._notification_failed(method, exc)

    def _notification_failed(self, method: str, exc: Exception) -> None:
        if isinstance(exc, pydantic.ValidationError):  # the peer's mistake: one line, no traceback, rate-limited
            self._throttle.warning(log, f"params:{method}", "%s: notification %s has invalid params (%d errors)",
                                   self.name, method, exc.error_count())
        elif isinstance(exc, RpcError):  # e.g. -32602 from params_parser: the peer's mistake too
            self._throttle.warning(log, f"params:{method}", "%s: notification %s refused: %s", self.name, method,
                                   exc.message)
        else:
            log.exception("%s: notification handler for %s failed", self.name, method, exc_info=exc)

    def _cancel(self, params: Any) -> None:
        id = params.get("id") if isinstance(params, dict) else None
        task = self._running.get(id) if isinstance(id, (int, str)) and not isinstance(id, bool) else None
        if task is None:
            log.debug("%s: %s for unknown or finished request %r", self.name, CANCEL_METHOD, id)
            return
        task.cancel()

    def _on_response(self, message: JsonObject) -> None:
        id = message.get("id")
        future = self._pending.get(id) if isinstance(id, int) and not isinstance(id, bool) else None
        if future is None:
            if id is None and "error" in message:
                log.warning("%s: peer reported an error: %s", self.name, RpcError.from_dict(message["error"]))
            else:
                log.info("%s: response for unknown request id %r ignored", self.name, id)
            return
        if message.get("jsonrpc") != "2.0":
            log.debug("%s: response %r without jsonrpc 2.0 accepted", self.name, id)
        if future.done():
            return
        if "error" in message:
            future.set_exception(RpcError.from_dict(message["error"]))
        else:
            future.set_result(message.get("result"))

    async def _dispatch_batch(self, messages: list[Any]) -> None:
        if not messages:
            self._send_response(_error(None, RpcError(INVALID_REQUEST, "empty batch")))
            return
        immediate: list[Response] = []
        tasks: list[asyncio.Task[Any]] = []
        for entry in messages:
            if isinstance(entry, list):
                immediate.append(_error(None, RpcError(INVALID_REQUEST, "a batch cannot contain a batch")))
                continue
            response = await self._dispatch(entry, batch=tasks)
            if response is not None:
                immediate.append(response)
        if tasks:
            self._tasks.spawn(self._collect_batch(immediate, tasks), f"{self.name}:batch")
        elif immediate:
            self._send_response(immediate)

    async def _collect_batch(self, immediate: list[Response], tasks: list[asyncio.Task[Response]]) -> None:
        responses = await asyncio.gather(*tasks)
        self._send_response([*immediate, *responses])

    # -- shutdown ----------------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Cancel running handlers, fail pending requests with ``CONNECTION_LOST``, close the stream. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RpcError(CONNECTION_LOST, f"{self.name}: connection closed"))
        self._pending.clear()
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current and not t.done()]
        for task in tasks:
            task.cancel()
        self._running.clear()
        # What is queued was answered before the close (a quick handler's response at end of input): let it out,
        # briefly — unless the peer was found not reading. Then stop writing; the rest is dropped.
        if not self._outbox.overflowed and current is not self._outbox.writer:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_CLOSE_DRAIN):
                    await self._outbox.drain()
        await self._outbox.aclose()
        try:
            await self._stream.close()
        except Exception:
            log.debug("%s: closing the stream failed", self.name, exc_info=True)
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=_CLOSE_WAIT)
            if stuck:
                log.warning("%s: %d handler(s) ignored cancellation", self.name, len(stuck))
