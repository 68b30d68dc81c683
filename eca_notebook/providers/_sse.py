"""An incremental Server-Sent Events decoder.

Three of the four wire APIs stream SSE. The format is tiny (``event:``/``data:`` fields, a blank line ends an
event), so a line-fed decoder is a few lines of code and saves a dependency. It is fed decoded lines (httpx's
``aiter_lines`` already splits on ``\\n``, ``\\r\\n`` and ``\\r``) and never does I/O itself, so it can be tested
with plain lists.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass


@dataclass(slots=True)
class SSEEvent:
    event: str  # "message" when the server sent no ``event:`` field (the SSE default)
    data: str
    id: str | None = None


class SSEDecoder:
    """Feed lines one at a time; get an :class:`SSEEvent` back whenever one is complete."""

    __slots__ = ("_event", "_data", "_id")

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":  # comment / keep-alive
            return None
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        # "retry" and unknown fields are ignored, as the SSE spec says.
        return None

    def flush(self) -> SSEEvent | None:
        """At end of stream: an event whose final blank line never came (lenient; some servers omit it)."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event = ""
        self._data = []
        return event


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Decode an async stream of lines into SSE events."""
    decoder = SSEDecoder()
    async for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    event = decoder.flush()
    if event is not None:
        yield event
