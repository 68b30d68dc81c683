"""One connection's outbound channel: every message we send, in one FIFO, written by one task.

Why one queue for everything: a peer must see a handler's notifications before its response. An ECA client learns
a prompt's chat from the contents streamed before the ``chat/prompt`` answer; an ACP client must have every
``session/update`` of a turn before ``session/prompt`` returns; a request of ours to the peer (an ``fs/*`` read, an
approval) must follow the tool call that explains it. With notifications, responses and requests in one queue
written in order, "a response is written after every notification queued before it" holds by construction, and no
handler has to wait for anything before it answers.

Why queued rather than written by the caller: the engine never waits for a client. It hands a notification over
synchronously (:meth:`Outbox.notify_nowait`) and carries on; the writer task hands messages to the stream, whose
``write`` may wait for a slow peer. That bounds nothing by itself, so a slow peer costs memory here; two rules
keep it finite:

* once ``merge_backlog`` messages wait, a notification that the ``merge`` hook can fold into the one queued just
  before it (consecutive text chunks of one chat, say) is folded instead of queued: a peer that keeps up sees
  messages as they were sent, one that falls behind gets fewer, larger ones;
* a queue that still grows past ``max_queued`` means the peer is not reading at all: ``on_overflow`` is called
  once and nothing more is queued (the endpoint then disconnects it).

And one rule bounds what a peer's *requests* cost: while more than ``max_queued_responses`` answers wait here,
the endpoint reads nothing more from that peer (:meth:`Outbox.wait_for_room`), as the byte transports do for their
own buffers. A peer that sends requests without reading the answers stops being read (its own writes then block)
instead of making us queue answers without end. Notifications do not count: a reply streaming to a slow reader
must not stop us from reading that reader's ``chat/promptStop``.

Senders that need to know (``notify``, our requests) await their message being handed to the stream; the engine's
notifications and the responses do not.

A byte stream that can encode messages itself (:class:`~eca_notebook.transports.FrameWriter`, the pipes) gets
whatever is queued when the writer runs — what the loop's last tick produced, up to ``MAX_BATCH`` messages — in
one write: a reply streamed as thousands of chunks costs a few system calls and wake-ups of the peer, not one per
chunk. Each message is still encoded on its own, so one that cannot be serialized fails alone, as it would
unbatched. For such a stream a door may also pass ``encode_notification(method, params)``: the JSON body of a
notification it sends thousands of times (a streamed text chunk), exactly as built, rewritten by ``outgoing`` and
encoded here — without the walks that take most of a small message's cost — or None for everything else.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any

from ..transports import FrameWriter, MessageStream
from ._messages import Request, Response, replace_unserializable, short, to_json

__all__ = ["DEFAULT_MAX_QUEUED", "DEFAULT_MAX_QUEUED_RESPONSES", "DEFAULT_MERGE_BACKLOG", "MAX_BATCH", "Merge",
           "NotificationEncoder", "Outbox"]

log = logging.getLogger(__name__)

#: ``merge(method, queued_params, new_params)``: one params for two consecutive notifications of *method*, or None
#: to queue both. Must not mutate its arguments (the engine shares its dicts between listeners).
Merge = Callable[[str, Any, Any], Any]

#: ``encode_notification(method, params)``: the notification's JSON body, the very bytes ``dumps`` would give for it
#: as the outbox builds and rewrites it (``to_json``, then ``outgoing``), or None to let the outbox do that.
NotificationEncoder = Callable[[str, Any], "bytes | None"]

DEFAULT_MAX_QUEUED = 20_000  # messages; a peer this far behind is not reading at all
DEFAULT_MERGE_BACKLOG = 256  # messages waiting before notifications merge
DEFAULT_MAX_QUEUED_RESPONSES = 256  # answers waiting for the peer before we stop reading its requests
MAX_BATCH = 1024  # messages handed to a FrameWriter in one write

# kinds of queued messages
_NOTE = 0  # a notification from (method, params): built, then rewritten by ``outgoing``, when written
_RESPONSE = 1  # a response or batch of responses: rewritten by ``outgoing``; unserializable results replaced
_RAW = 2  # a message written as is (our requests and their $/cancelRequest: params must reach the peer unchanged)

# (kind, method, payload, done): *done* resolves to whether the message reached the stream
_Item = tuple[int, str | None, Any, "asyncio.Future[bool] | None"]


class Outbox:
    """The FIFO of one endpoint's outgoing messages and the task that writes them to the stream."""

    def __init__(
        self,
        stream: MessageStream,
        *,
        name: str,
        outgoing: Callable[[Any], Any] | None = None,
        merge: Merge | None = None,
        merge_backlog: int = DEFAULT_MERGE_BACKLOG,
        max_queued: int | None = DEFAULT_MAX_QUEUED,
        on_overflow: Callable[[], None] | None = None,
        max_queued_responses: int = DEFAULT_MAX_QUEUED_RESPONSES,
        encode_notification: NotificationEncoder | None = None,
    ) -> None:
        self.name = name
        self._stream = stream
        self._outgoing = outgoing
        self._encode_notification = encode_notification
        self._merge = merge
        self._merge_backlog = merge_backlog
        self.max_queued = max_queued
        self._on_overflow = on_overflow
        self.max_queued_responses = max_queued_responses
        self._responses = 0  # responses queued and not yet taken by the writer
        self._room = asyncio.Event()  # set while _responses <= max_queued_responses
        self._room.set()
        self._items: collections.deque[_Item] = collections.deque()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()  # nothing queued and nothing being written
        self._idle.set()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self.overflowed = False
        self._frames = stream if isinstance(stream, FrameWriter) else None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def writer(self) -> asyncio.Task[None] | None:
        """The task writing the queue (started with the first message)."""
        return self._writer

    # -- queueing --------------------------------------------------------------------------------------------------

    def notify_nowait(self, method: str, params: Any = None) -> None:
        """Queue a notification behind everything queued before it; never waits (dropped once closed)."""
        items = self._items
        if self._merge is not None and len(items) >= self._merge_backlog:
            kind, last_method, last_params, done = items[-1]
            if kind == _NOTE and last_method == method:
                merged = self._merge(method, last_params, params)
                if merged is not None:  # the writer has not taken the last one yet: it goes out as one
                    items[-1] = (_NOTE, method, merged, done)
                    return
        self._put((_NOTE, method, params, None))

    async def notify(self, method: str, params: Any = None) -> bool:
        """Queue a notification and wait until it was handed to the stream. False when it was dropped (closed or
        broken); TypeError/ValueError when it cannot be serialized."""
        return await self._send(_NOTE, method, params)

    def respond(self, response: Response | list[Response]) -> None:
        """Queue a response (or a batch's); never waits. It counts towards :attr:`max_queued_responses`."""
        if self._put((_RESPONSE, None, response, None)):
            self._responses += 1
            if self._responses > self.max_queued_responses:
                self._room.clear()

    async def send_raw(self, message: Request) -> bool:
        """Queue a message to be written exactly as given (no ``outgoing`` rewrite) and wait until it was handed
        to the stream."""
        return await self._send(_RAW, None, message)

    async def _send(self, kind: int, method: str | None, payload: Any) -> bool:
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not self._put((kind, method, payload, done)):
            return False
        return await done

    def _put(self, item: _Item) -> bool:
        if self._closed or self.overflowed:
            log.debug("%s: write after close dropped", self.name)
            return False
        items = self._items
        items.append(item)
        self._idle.clear()
        self._wakeup.set()
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_loop(), name=f"{self.name}-writer")
        if self.max_queued is not None and len(items) > self.max_queued:
            self.overflowed = True
            if self._on_overflow is not None:
                self._on_overflow()
        return True

    @property
    def backed_up(self) -> bool:
        """More answers wait for the peer than :attr:`max_queued_responses`."""
        return not self._room.is_set()

    async def wait_for_room(self) -> None:
        """Wait while more answers wait for the peer than :attr:`max_queued_responses` (or until closed)."""
        await self._room.wait()

    async def drain(self) -> None:
        """Wait until everything queued so far was written (or dropped by :meth:`aclose`)."""
        await self._idle.wait()

    # -- writing ---------------------------------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        items = self._items
        while True:
            if not items:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if self._frames is not None:
                await self._write_batch(self._frames)
                continue
            kind, method, payload, done = items.popleft()
            if kind == _RESPONSE:
                self._responses -= 1
                if self._responses <= self.max_queued_responses:
                    self._room.set()
            try:
                written = await self._deliver(kind, method, payload)
            except asyncio.CancelledError:
                if done is not None and not done.done():
                    done.set_result(False)
                raise
            except Exception as exc:  # serialization: the awaiting sender gets it, a fire-and-forget one is logged
                if done is not None:
                    if not done.done():
                        done.set_exception(exc)
                else:
                    log.error("%s: could not send %s: %s", self.name, method, exc)
                continue
            if done is not None and not done.done():
                done.set_result(written)

    async def _write_batch(self, stream: FrameWriter) -> None:
        """Encode what is queued (up to MAX_BATCH) one by one and write it at once: see the module docstring."""
        items = self._items
        frames: list[bytes] = []
        waiting: list[asyncio.Future[bool]] = []
        while items and len(frames) < MAX_BATCH:
            kind, method, payload, done = items.popleft()
            if kind == _RESPONSE:
                self._responses -= 1
                if self._responses <= self.max_queued_responses:
                    self._room.set()
            try:
                frames.append(self._encode(stream, kind, method, payload))
            except Exception as exc:  # serialization: as in _write_loop
                if done is not None:
                    if not done.done():
                        done.set_exception(exc)
                else:
                    log.error("%s: could not send %s: %s", self.name, method, exc)
                continue
            if done is not None:
                waiting.append(done)
        try:
            written = await self._write_frames(stream, frames) if frames else True
        except asyncio.CancelledError:
            for done in waiting:
                if not done.done():
                    done.set_result(False)
            raise
        for done in waiting:
            if not done.done():
                done.set_result(written)

    def _encode(self, stream: FrameWriter, kind: int, method: str | None, payload: Any) -> bytes:
        if kind == _NOTE:
            if self._encode_notification is not None and method is not None:
                body = self._encode_notification(method, payload)
                if body is not None:
                    return stream.frame(body)
            return stream.encode(self._notification(method, payload))
        if kind == _RESPONSE:
            if self._outgoing is not None:
                payload = self._outgoing(payload)
            try:
                return stream.encode(payload)
            except (TypeError, ValueError) as exc:
                log.error("%s: a response is not JSON-serializable: %s", self.name, short(exc))
                return stream.encode(replace_unserializable(payload))
        return stream.encode(payload)

    async def _write_frames(self, stream: FrameWriter, frames: list[bytes]) -> bool:
        """Write encoded messages; False when the stream is broken."""
        try:
            await stream.write_frames(frames)
        except Exception as exc:
            log.debug("%s: write failed: %r", self.name, exc)
            return False
        return True

    def _notification(self, method: str | None, payload: Any) -> Any:
        message: Any = {"jsonrpc": "2.0", "method": method}
        if payload is not None:
            message["params"] = to_json(payload)
        if self._outgoing is not None:
            message = self._outgoing(message)
        return message

    async def _deliver(self, kind: int, method: str | None, payload: Any) -> bool:
        if kind == _NOTE:
            return await self._write(self._notification(method, payload))
        if kind == _RESPONSE:
            if self._outgoing is not None:
                payload = self._outgoing(payload)
            try:
                return await self._write(payload)
            except (TypeError, ValueError) as exc:
                log.error("%s: a response is not JSON-serializable: %s", self.name, short(exc))
                return await self._write(replace_unserializable(payload))
        return await self._write(payload)

    async def _write(self, message: Any) -> bool:
        """Write one message; False when the stream is broken. Serialization errors propagate."""
        try:
            await self._stream.write(message)
        except (TypeError, ValueError):
            raise
        except Exception as exc:
            log.debug("%s: write failed: %r", self.name, exc)
            return False
        return True

    # -- shutdown --------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop writing: the writer is cancelled, whatever is still queued is dropped (its senders get False)."""
        if self._closed:
            return
        self._closed = True
        writer = self._writer
        if writer is not None and writer is not asyncio.current_task():
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
        while self._items:
            done = self._items.popleft()[3]
            if done is not None and not done.done():
                done.set_result(False)
        self._responses = 0
        self._room.set()
        self._idle.set()
