"""The API-neutral script language of the scripted LLM server: steps, replies, recorded requests.

A script says *what* the model does (text, reasoning, a tool call, an error, a dropped connection); the wire
renderers in :mod:`._wire` decide how that looks in each API. Scripts round-trip through JSON so that a test in
another process can enqueue them over HTTP.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from ..protocol import JsonObject, JsonValue


@dataclass
class Text:
    """One text chunk on the wire."""

    text: str
    type: ClassVar[str] = "text"


@dataclass
class Citation:
    """A web page the answer cites (OpenAI Responses' ``url_citation`` annotation on the text so far)."""

    title: str
    url: str
    type: ClassVar[str] = "citation"


@dataclass
class Reasoning:
    """One reasoning chunk; consecutive ones form one block (Anthropic signature ``sig-<n>``, n counted from 1)."""

    text: str
    type: ClassVar[str] = "reasoning"


@dataclass
class ToolCall:
    """A tool call whose ``arguments`` JSON is streamed in ``chunks`` fragments (Ollama sends it whole)."""

    id: str
    name: str
    arguments: str
    chunks: int = 3
    #: OpenAI Chat only: the first chunk carries the id but not the name, which comes after the first fragment of
    #: the arguments (as some OpenAI-compatible servers stream it).
    name_late: bool = False
    type: ClassVar[str] = "tool_call"


@dataclass
class Usage:
    """Token counts reported for this reply (the last Usage step wins)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0  # Anthropic's cache_creation_input_tokens
    type: ClassVar[str] = "usage"


@dataclass
class Error:
    """Answer with an HTTP error in the API's error format instead of a stream (Delay/Stall before it still run)."""

    status: int
    message: str = "scripted error"
    retry_after: float | None = None
    code: str | None = None  # the API's error code/type; default derived from the status
    type: ClassVar[str] = "error"


@dataclass
class StreamError:
    """An in-stream error event in the API's format; the stream then ends. ``code``: the API's error type/code."""

    message: str
    code: str | None = None
    type: ClassVar[str] = "stream_error"


@dataclass
class Cut:
    """Drop the connection here: no terminal event, and the chunked body is left incomplete.

    ``graceful=True`` ends the chunked body properly instead (a proxy closing politely) — still no terminal event.
    """

    graceful: bool = False
    type: ClassVar[str] = "cut"


@dataclass
class Stall:
    """Send nothing for ``seconds`` (ends early when the server stops or the client hangs up)."""

    seconds: float
    type: ClassVar[str] = "stall"


@dataclass
class Delay:
    """Sleep before the next step (pacing); same mechanics as :class:`Stall`."""

    seconds: float
    type: ClassVar[str] = "delay"


Step = Text | Citation | Reasoning | ToolCall | Usage | Error | StreamError | Cut | Stall | Delay
STEP_TYPES: dict[str, type] = {
    cls.type: cls for cls in (Text, Citation, Reasoning, ToolCall, Usage, Error, StreamError, Cut, Stall, Delay)
}


def step_to_json(step: Step) -> JsonObject:
    return {"type": step.type, **asdict(step)}


def step_from_json(data: JsonValue) -> Step:
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(kind, str) or kind not in STEP_TYPES:
        raise ValueError(f"not a script step: {data!r} (type must be one of {sorted(STEP_TYPES)})")
    cls = STEP_TYPES[kind]
    names = {f.name for f in fields(cls)}
    step: Step = cls(**{k: v for k, v in data.items() if k in names})
    return step


def split_text(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` near-equal, non-empty pieces (fewer when the text is shorter)."""
    if not text:
        return [""]
    n = max(1, min(chunks, len(text)))
    size = math.ceil(len(text) / n)
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class Reply:
    """One scripted model reply: the steps, and the stop reason (default end_turn, or tool_calls with a ToolCall)."""

    steps: list[Step] = field(default_factory=list)
    stop_reason: str | None = None

    @classmethod
    def text(cls, text: str, chunks: int = 1) -> Reply:
        return cls([Text(piece) for piece in split_text(text, chunks)])

    def to_json(self) -> JsonObject:
        return {"steps": [step_to_json(s) for s in self.steps], "stop_reason": self.stop_reason}

    @classmethod
    def from_json(cls, data: Any) -> Reply:
        if isinstance(data, str):
            return cls.text(data)
        if isinstance(data, list):
            return cls([step_from_json(s) for s in data])
        if not isinstance(data, dict):
            raise ValueError(f"not a reply: {data!r}")
        return cls([step_from_json(s) for s in data.get("steps") or []], data.get("stop_reason"))

    def resolved_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_calls" if any(isinstance(s, ToolCall) for s in self.steps) else "end_turn"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case keys
    body: Any  # parsed JSON, raw text when not JSON, None when empty
    #: when the request arrived (``time.monotonic()`` of the server's process): tests of spacing (rate limits)
    at: float = field(default_factory=time.monotonic)

    def to_json(self) -> JsonObject:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body}
