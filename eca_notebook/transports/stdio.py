"""Messages over a pair of byte pipes: this process's stdin/stdout (the server) or a child's (clients and tests).

:class:`PipeStream` owns no file descriptors of its own: it reads from an ``asyncio.StreamReader`` and writes to
anything with ``write(bytes)`` and ``drain()`` (``asyncio.StreamWriter``, a subprocess's ``stdin``), so the same
class serves both ends of a subprocess connection. :func:`open_stdio` does the process-level wiring.

Bounded per peer, because a peer that writes but does not read must not make us buffer without end:

* **Backpressure**: before handing over the next incoming message, :meth:`PipeStream.read` waits while more than
  ``max_pending_write`` bytes of our output are still unwritten. A client that sends 200,000 requests without
  reading the answers stops being read (its own writes then block) instead of growing our memory by hundreds of MB.
  Answers to a client that does read are never delayed: the wait ends as soon as the pipe takes the bytes.
* **Stalled frames**: when a frame is incomplete and nothing arrives for ``frame_timeout`` seconds (a
  ``Content-Length`` larger than what was sent), the frame is dropped and :meth:`read` returns a parse error (the
  endpoint answers it with ``id: null``), instead of waiting forever for bytes that are not coming.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from .._logging import Throttle
from ..protocol.errors import RpcError
from ._stream import decode_message
from .framing import (
    DEFAULT_MAX_FRAME_SIZE,
    ContentLengthDecoder,
    FramingError,
    NdjsonDecoder,
    dumps,
    encode_content_length,
    encode_ndjson,
)

__all__ = ["READ_CHUNK", "Codec", "PipeStream", "open_stdio"]

log = logging.getLogger(__name__)

Codec = Literal["content-length", "ndjson"]
READ_CHUNK = 256 * 1024
DEFAULT_MAX_PENDING_WRITE = 1024 * 1024  # unwritten output bytes above which we stop reading the peer
DEFAULT_FRAME_TIMEOUT = 30.0  # seconds without a byte in the middle of a frame before it is dropped
_CLOSE_WAIT = 2.0  # seconds to let a closing writer flush; close must not hang on a peer that stopped reading


_STALLED: Any = object()  # from _read_chunk: a frame timeout passed


class _Writer(Protocol):
    def write(self, data: bytes) -> Any: ...

    def drain(self) -> Awaitable[Any]: ...


class PipeStream:
    """A :class:`~eca_notebook.transports.MessageStream` over a byte reader and a byte writer.

    ``writer`` needs ``write(bytes)`` and ``async drain()``; its ``close()``/``wait_closed()`` are used when present.
    ``on_close`` is called once by :meth:`close` (``open_stdio`` uses it to release stdin).
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: _Writer,
        *,
        codec: Codec = "content-length",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        on_close: Callable[[], Any] | None = None,
        name: str = "pipe",
        max_pending_write: int = DEFAULT_MAX_PENDING_WRITE,
        frame_timeout: float | None = DEFAULT_FRAME_TIMEOUT,
    ) -> None:
        if codec == "content-length":
            self._decoder: ContentLengthDecoder | NdjsonDecoder = ContentLengthDecoder(max_frame_size)
            self._encode = encode_content_length
        elif codec == "ndjson":
            self._decoder = NdjsonDecoder(max_frame_size)
            self._encode = encode_ndjson
        else:
            raise ValueError(f"unknown codec {codec!r}: expected 'content-length' or 'ndjson'")
        self.codec = codec
        self.name = name
        self.max_pending_write = max_pending_write
        self.frame_timeout = frame_timeout
        self._reader = reader
        self._writer = writer
        # looked up once: pending_write is asked before every message handed over
        self._write_buffer_size = getattr(getattr(writer, "transport", None), "get_write_buffer_size", None)
        self._on_close = on_close
        self._pending: collections.deque[bytes | FramingError] = collections.deque()
        self._write_lock = asyncio.Lock()
        self._read_task: asyncio.Future[bytes] | None = None
        self._stalled_read: asyncio.Future[bytes] | None = None  # a read that outlived a frame timeout
        self._closed = False
        self._eof = False
        self._broken: BaseException | None = None
        self._throttle = Throttle()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending_write(self) -> int:
        """Bytes handed to the writer that the peer has not taken yet."""
        size = self._write_buffer_size
        if size is not None:
            try:
                return int(size())
            except Exception:
                return 0
        pending = getattr(self._writer, "pending", None)
        return int(pending) if isinstance(pending, int) else 0

    async def _wait_for_room(self) -> None:
        """Backpressure: while our unwritten output is over the bound, read nothing more from the peer."""
        while not self._closed and self._broken is None and self.pending_write > self.max_pending_write:
            try:
                async with self._write_lock:
                    await self._writer.drain()
            except (ConnectionError, OSError) as exc:
                self._broken = exc
                return
            if self.pending_write > self.max_pending_write:
                await asyncio.sleep(0.01)  # drain() returned although the transport holds more: don't spin hot

    async def read(self) -> Any | RpcError | None:
        if self.pending_write > self.max_pending_write:
            await self._wait_for_room()
        while not self._pending:
            if self._closed or self._eof:
                return None
            data = await self._read_chunk(self.frame_timeout if self._decoder_partial() else None)
            if data is None:
                return None
            if data is _STALLED:
                error = self._decoder.abandon() if isinstance(self._decoder, ContentLengthDecoder) else None
                if error is not None:
                    log.warning("%s: %s (no byte for %g s)", self.name, error.message, self.frame_timeout)
                    return RpcError(error.code, f"{error.message} (no byte for {self.frame_timeout:g} s)")
                continue
            if not data:
                self._eof = True
                if self._decoder.buffered:
                    log.warning("%s: input ended inside a frame (%d bytes dropped)", self.name, self._decoder.buffered)
                return None
            self._pending.extend(self._decoder.feed(data))
        item = self._pending.popleft()
        message = RpcError(item.code, item.message) if isinstance(item, FramingError) else decode_message(item)
        if isinstance(message, RpcError):
            # a peer's bad input: one line each, no traceback, rate-limited (a flood must not flood the log)
            self._throttle.warning(log, "undecodable", "%s: undecodable frame: %s", self.name, message.message)
        return message

    def _decoder_partial(self) -> bool:
        return bool(getattr(self._decoder, "partial", False))

    async def _read_chunk(self, timeout: float | None = None) -> bytes | None:
        """One chunk from the reader; None when :meth:`close` interrupted the read; ``_STALLED`` when nothing came
        within *timeout* seconds (the read goes on: its data is kept for the next call).

        The read runs in its own task so that ``close`` can interrupt it without feeding EOF into a reader that
        belongs to somebody else's transport.
        """
        task = self._stalled_read or asyncio.ensure_future(self._reader.read(READ_CHUNK))
        self._stalled_read = None
        self._read_task = task
        try:
            if timeout is not None:
                done, _ = await asyncio.wait({task}, timeout=timeout)
                if not done:
                    self._stalled_read = task
                    return _STALLED  # type: ignore[no-any-return]  # a sentinel compared by identity
            data: bytes = await task
            return data
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._closed and (current is None or not current.cancelling()):
                return None
            if not task.done():
                self._stalled_read = task  # (waited on, not awaited) the next read takes its data over
            elif not task.cancelled() and task.exception() is None:
                self._pending.extend(self._decoder.feed(task.result()))  # we were cancelled, the data was not
            raise
        except (ConnectionError, OSError) as exc:
            log.debug("%s: read failed: %r", self.name, exc)
            return b""
        finally:
            self._read_task = None

    def encode(self, message: Any) -> bytes:
        """One message framed by this stream's codec (see :class:`~eca_notebook.transports.FrameWriter`)."""
        return self._encode(dumps(message))

    def frame(self, body: bytes) -> bytes:
        """A JSON body framed by this stream's codec (see :class:`~eca_notebook.transports.FrameWriter`)."""
        return self._encode(body)

    async def write(self, message: Any) -> None:
        await self.write_frames([self.encode(message)])  # not serializable: raises here, before anything is written

    async def write_frames(self, frames: list[bytes]) -> None:
        """Write frames from :meth:`encode` in one write and one drain (the outbox hands over what queued in one
        tick of the loop: a streamed reply is a few large pipe writes, not one system call per chunk)."""
        if self._closed or not frames:
            if frames:
                log.debug("%s: write after close dropped", self.name)
            return
        if self._broken is not None:
            raise ConnectionResetError(f"{self.name}: the pipe is broken ({self._broken!r})")
        try:
            # The frames in one synchronous write: frames never interleave and keep the order of the calls, and
            # a frame handed over here is flushed by close() even if its writer is cancelled while draining.
            self._writer.write(frames[0] if len(frames) == 1 else b"".join(frames))
            async with self._write_lock:  # one drain at a time (a thread writer must not reorder its chunks)
                await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            self._broken = exc  # the peer is gone: fail fast from now on instead of writing into the void
            raise

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._read_task, self._stalled_read):
            if task is not None:
                task.cancel()
        close = getattr(self._writer, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
            wait_closed = getattr(self._writer, "wait_closed", None)
            if wait_closed is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(wait_closed(), _CLOSE_WAIT)
        if self._on_close is not None:
            with contextlib.suppress(Exception):
                self._on_close()


async def open_stdio(
    codec: Codec = "content-length",
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    *,
    isolate: bool = True,
    frame_timeout: float | None = DEFAULT_FRAME_TIMEOUT,
    max_pending_write: int = DEFAULT_MAX_PENDING_WRITE,
) -> PipeStream:
    """A :class:`PipeStream` over this process's stdin/stdout.

    With ``isolate`` (the default) the protocol moves to private duplicates of fds 0 and 1, and fd 1 is pointed at
    stderr and fd 0 at ``/dev/null``: a stray ``print``, a C library writing to stdout or a child process inheriting
    our stdio can then never corrupt or steal protocol bytes.

    Pipes and sockets use the event loop; a file or a terminal (which the loop cannot poll) is served by a thread.
    """
    loop = asyncio.get_running_loop()
    in_fd, out_fd = os.dup(0), os.dup(1)  # non-inheritable: child processes never see the protocol channel
    if isolate:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(2, 1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)

    if _pollable(in_fd):
        reader = asyncio.StreamReader()
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0)
        )
        on_close: Callable[[], Any] = read_transport.close
    else:
        reader, on_close = _thread_reader(in_fd, loop)

    writer: _Writer
    if _pollable(out_fd):
        # A StreamReaderProtocol (with a reader that is never fed) gives the writer flow control *and* a working
        # wait_closed(), with public classes only.
        idle_reader = asyncio.StreamReader()
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(idle_reader), os.fdopen(out_fd, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(write_transport, protocol, idle_reader, loop)
    else:
        writer = _ThreadWriter(out_fd)
    return PipeStream(reader, writer, codec=codec, max_frame_size=max_frame_size, on_close=on_close, name="stdio",
                      frame_timeout=frame_timeout, max_pending_write=max_pending_write)


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _thread_reader(fd: int, loop: asyncio.AbstractEventLoop) -> tuple[asyncio.StreamReader, Callable[[], None]]:
    """Feed a StreamReader from a blocking fd in a daemon thread (files and terminals)."""
    reader = asyncio.StreamReader()
    stop = threading.Event()

    def pump() -> None:
        try:
            while not stop.is_set():
                try:
                    data = os.read(fd, READ_CHUNK)
                except OSError as exc:
                    log.debug("stdin read failed: %r", exc)
                    data = b""
                if not data:
                    loop.call_soon_threadsafe(reader.feed_eof)
                    return
                loop.call_soon_threadsafe(reader.feed_data, data)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    threading.Thread(target=pump, name="eca-stdin-reader", daemon=True).start()
    return reader, stop.set


class _ThreadWriter:
    """``write``/``drain`` over a blocking fd: the blocking writes run in a worker thread, never on the loop.

    Bytes stay in the buffer until a flush takes them *inside* the I/O lock, so a drain cancelled before its
    thread started loses nothing (``close`` flushes it) and chunks are written in the order they were buffered.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._buffer_lock = threading.Lock()  # short: guards the buffer swap between the loop and the thread
        self._io_lock = threading.Lock()  # long: one flush (blocking os.write) at a time
        self._closed = False

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def write(self, data: bytes) -> None:
        with self._buffer_lock:
            self._buffer += data

    async def drain(self) -> None:
        if self._buffer:
            await asyncio.to_thread(self._flush)

    def _flush(self) -> None:
        with self._io_lock:
            while not self._closed:
                with self._buffer_lock:
                    if not self._buffer:
                        return
                    data = bytes(self._buffer)
                    self._buffer.clear()
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._flush()
        with self._io_lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(OSError):
                    os.close(self._fd)
