"""An incremental Server-Sent Events decoder.

Three of the four wire APIs stream SSE. The format is tiny (``event:``/``data:`` fields, a blank line ends an
event), so a line-fed decoder is a few lines of code and saves a dependency. It never does I/O itself, so it can be
tested with plain lists.

The providers read with :func:`sse_batches`: the decoded text as it arrives, split into lines here and decoded a
whole network read at a time. Why not httpx's ``aiter_lines``: it costs an async-generator step per line (two per
event, on the hot path of every streamed chunk), and it splits like ``str.splitlines`` — also at U+2028, U+2029,
U+0085 and a few control characters, which JSON may carry raw inside a string, so a chunk holding one was cut in two
and lost. SSE lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only (:class:`LineSplitter`).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass

__all__ = ["LineSplitter", "SSEDecoder", "SSEEvent", "aiter_sse", "sse_batches"]


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

    def feed_lines(self, lines: Iterable[str]) -> list[SSEEvent]:
        """:meth:`feed` for many lines: the events they complete, in order."""
        events: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    events.append(SSEEvent(self._event or "message", "\n".join(data), self._id))
                    data = self._data = []
                self._event = ""
            elif line.startswith("data:"):  # the hot case, as feed() would take it
                data.append(line[6:] if line[5:6] == " " else line[5:])
            elif line[0] != ":":
                self.feed(line)
        return events

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


class LineSplitter:
    """Text as it arrives → complete lines, ended by ``\\n``, ``\\r\\n`` or ``\\r`` as the SSE spec says (a
    ``\\r\\n`` cut between two pieces of text is one line end)."""

    __slots__ = ("_parts", "_cr")

    def __init__(self) -> None:
        self._parts: list[str] = []  # the line begun and not ended yet
        self._cr = False  # the last piece ended with "\r": a "\n" starting the next one belongs to it

    def feed(self, text: str) -> list[str]:
        if self._cr:
            self._cr = False
            if text.startswith("\n"):
                text = text[1:]
        if "\r" in text:
            self._cr = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            if text:
                self._parts.append(text)
            return []
        lines = text.split("\n")
        if self._parts:
            self._parts.append(lines[0])
            lines[0] = "".join(self._parts)
            self._parts = []
        rest = lines.pop()
        if rest:
            self._parts.append(rest)
        return lines

    def flush(self) -> list[str]:
        """At end of input: the last line, when it had no line end."""
        line = "".join(self._parts)
        self._parts = []
        self._cr = False
        return [line] if line else []


async def sse_batches(text: AsyncIterable[str]) -> AsyncIterator[list[SSEEvent]]:
    """Decode a stream of text (``response.aiter_text()``) into the events each piece of it completes.

    An event whose blank line never came is not dispatched at the end (as the SSE spec says); a last line without
    its line end still counts.
    """
    lines = LineSplitter()
    decoder = SSEDecoder()
    async for piece in text:
        events = decoder.feed_lines(lines.feed(piece))
        if events:
            yield events
    events = decoder.feed_lines(lines.flush())
    if events:
        yield events
