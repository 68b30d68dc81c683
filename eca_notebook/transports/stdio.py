"""Messages over a pair of byte pipes: this process's stdin/stdout (the server) or a child's (clients and tests).

:class:`PipeStream` owns no file descriptors of its own: it reads from an ``asyncio.StreamReader`` and writes to
anything with ``write(bytes)`` and ``drain()`` (``asyncio.StreamWriter``, a subprocess's ``stdin``), so the same
class serves both ends of a subprocess connection. :func:`open_stdio` does the process-level wiring.
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
from typing import Any, Awaitable, Callable, Literal, Protocol

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
_CLOSE_WAIT = 2.0  # seconds to let a closing writer flush; close must not hang on a peer that stopped reading


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
        self._reader = reader
        self._writer = writer
        self._on_close = on_close
        self._pending: collections.deque[bytes | FramingError] = collections.deque()
        self._write_lock = asyncio.Lock()
        self._read_task: asyncio.Future[bytes] | None = None
        self._closed = False
        self._eof = False
        self._broken: BaseException | None = None
        self._throttle = Throttle()

    @property
    def closed(self) -> bool:
        return self._closed

    async def read(self) -> Any | RpcError | None:
        while not self._pending:
            if self._closed or self._eof:
                return None
            data = await self._read_chunk()
            if data is None:
                return None
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

    async def _read_chunk(self) -> bytes | None:
        """One chunk from the reader; None when :meth:`close` interrupted the read.

        The read runs in its own task so that ``close`` can interrupt it without feeding EOF into a reader that
        belongs to somebody else's transport.
        """
        task = asyncio.ensure_future(self._reader.read(READ_CHUNK))
        self._read_task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._closed and (current is None or not current.cancelling()):
                return None
            if task.done() and not task.cancelled() and task.exception() is None:
                self._pending.extend(self._decoder.feed(task.result()))  # we were cancelled, the data was not
            raise
        except (ConnectionError, OSError) as exc:
            log.debug("%s: read failed: %r", self.name, exc)
            return b""
        finally:
            self._read_task = None

    async def write(self, message: Any) -> None:
        frame = self._encode(dumps(message))  # not serializable: raises here, before anything is written
        if self._closed:
            log.debug("%s: write after close dropped", self.name)
            return
        if self._broken is not None:
            raise ConnectionResetError(f"{self.name}: the pipe is broken ({self._broken!r})")
        try:
            # The whole frame in one synchronous write: frames never interleave and keep the order of the calls, and
            # a frame handed over here is flushed by close() even if its writer is cancelled while draining.
            self._writer.write(frame)
            async with self._write_lock:  # one drain at a time (a thread writer must not reorder its chunks)
                await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            self._broken = exc  # the peer is gone: fail fast from now on instead of writing into the void
            raise

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._read_task is not None:
            self._read_task.cancel()
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
    return PipeStream(reader, writer, codec=codec, max_frame_size=max_frame_size, on_close=on_close, name="stdio")


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
