"""What the server tests' two WebSocket clients share: a background reader that records messages, a wait on a
condition (woken by each message, not by polling) and a clean close. The ECA client (conftest.EcaSocket) and the
session-stream client (_stream_client.Stream) only say what to do with one parsed message."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tornado.websocket import WebSocketClientConnection

WAIT = 60  # a generous ceiling for one message on a busy machine


@dataclass
class ReadingSocket:
    conn: WebSocketClientConnection
    closed: bool = False
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None

    def start(self) -> Any:
        self._reader = asyncio.get_running_loop().create_task(self._read())
        return self

    def accept(self, message: Any) -> None:
        """Record one parsed message (and check it against the spec: an off-spec message fails the test)."""
        raise NotImplementedError

    async def _read(self) -> None:
        while True:
            text = await self.conn.read_message()
            if text is None:
                self.closed = True
                self._changed.set()
                return
            self.accept(json.loads(text))
            self._changed.set()

    async def _wait(self, predicate: Callable[[], Any], timeout: float = WAIT, what: str = "a message") -> Any:
        async def loop() -> Any:
            while True:
                found = predicate()
                if found:
                    return found
                if self.closed:
                    raise ConnectionError(f"socket closed while waiting for {what}")
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(loop(), timeout)

    async def wait_closed(self, timeout: float = WAIT) -> None:
        if not self.closed:
            await self._wait(lambda: self.closed, timeout, "the close")

    async def close(self) -> None:
        self.conn.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 10)
            except Exception:
                self._reader.cancel()
