"""Small bookkeeping shared by the providers that have to invent reasoning-block boundaries themselves.

Chat Completions and Ollama stream reasoning as a field on each chunk with no start/stop markers, so the provider
opens a block at the first reasoning delta and closes it when anything else arrives.
"""

from __future__ import annotations

import uuid

from .base import ReasoningDelta, ReasoningFinished, ReasoningStarted, StreamEvent


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class ReasoningBlocks:
    """Turns a flat sequence of reasoning deltas into started → delta* → finished blocks."""

    def __init__(self) -> None:
        self.current: str | None = None

    def delta(self, text: str) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self.current is None:
            self.current = new_id("rs")
            events.append(ReasoningStarted(self.current))
        events.append(ReasoningDelta(self.current, text))
        return events

    def close(self) -> list[StreamEvent]:
        if self.current is None:
            return []
        block, self.current = self.current, None
        return [ReasoningFinished(block)]
