"""Two connected in-process message streams: the notebook's in-kernel door and most tests use this.

Every message is encoded to JSON on write and decoded on read, so values a real wire cannot carry (pydantic models,
sets, NaN) fail loudly here too instead of only in production, and the two sides never share mutable objects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..protocol.errors import RpcError
from ._stream import decode_message
from .framing import dumps

__all__ = ["MemoryStream", "memory_pair"]

log = logging.getLogger(__name__)


class MemoryStream:
    """One end of a :func:`memory_pair`. Unbounded: a write never waits for the reader."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._peer: MemoryStream | None = None
        self._closed = False
        self._eof = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def read(self) -> Any | RpcError | None:
        if self._eof or self._closed:
            return None
        body = await self._inbox.get()
        if body is None:
            self._eof = True
            return None
        return decode_message(body)

    async def write(self, message: Any) -> None:
        self.write_raw(dumps(message))

    def write_raw(self, body: bytes) -> None:
        """Deliver one raw body to the peer, as if it had arrived in a frame (lets tests send invalid JSON)."""
        peer = self._peer
        if self._closed or peer is None or peer._closed:
            log.debug("%s: write after close dropped", self.name)
            return
        peer._inbox.put_nowait(bytes(body))

    async def close(self) -> None:
        """Close both directions: our pending read and, after what is already queued, the peer's read end."""
        if self._closed:
            return
        self._closed = True
        self._inbox.put_nowait(None)
        peer = self._peer
        if peer is not None and not peer._closed:
            peer._inbox.put_nowait(None)


def memory_pair() -> tuple[MemoryStream, MemoryStream]:
    """Two connected streams: what one writes, the other reads."""
    a, b = MemoryStream("memory-a"), MemoryStream("memory-b")
    a._peer, b._peer = b, a
    return a, b
