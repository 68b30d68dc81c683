"""The provider contract: a provider-neutral request in, a stream of provider-neutral events out.

Every wire API (OpenAI Responses, Chat Completions, Anthropic Messages, Ollama) is one module that turns a
:class:`ProviderRequest` into HTTP and the HTTP stream back into :data:`StreamEvent` values. The engine only ever sees
these types, so adding a provider touches one file, and a stream from any provider drives the same chat code.

Errors: a provider raises :class:`ProviderError` (after its own retries) — before the first event or mid-stream.
Cancellation: the engine cancels the task iterating the stream; providers must let ``asyncio.CancelledError``
propagate and close the HTTP response (``async with`` does that).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .._images import ImagePart
from ..protocol import JsonObject

__all__ = [
    "AssistantMessage",
    "CompletionRequest",
    "Finished",
    "ImagePart",
    "Message",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningFinished",
    "ReasoningStarted",
    "StreamEvent",
    "TextCompleter",
    "TextDelta",
    "TokenCounter",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolResultMessage",
    "ToolSpec",
    "UrlCitation",
    "Usage",
    "UserMessage",
]

# ---------------------------------------------------------------------------------------------------------------
# History (what we send). Provider-neutral; each provider maps it onto its own message format.
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ToolCall:
    """A complete tool call the model asked for. ``arguments`` is the raw JSON text the model produced."""

    id: str
    name: str
    arguments: str


@dataclass
class Reasoning:
    """Reasoning the model produced in an assistant turn.

    ``signature`` (Anthropic thinking) / ``encrypted`` (OpenAI Responses ``encrypted_content``) must be sent back
    verbatim on the next request for providers that require it; others ignore them.
    """

    text: str
    signature: str | None = None
    encrypted: str | None = None
    id: str | None = None


@dataclass
class UserMessage:
    text: str
    role: Literal["user"] = "user"
    # The ``contentId`` of the prompt this message came from (the user echo clients were shown): lets
    # ``chat/rollback`` / ``chat/fork`` cut the history where the client points. Providers never send it; not part
    # of equality, so a message compares by what the model sees.
    content_id: str | None = field(default=None, compare=False)
    # Images the user attached (``image`` contexts, image files), after the text. Each provider sends them in its own
    # wire format; the engine has already checked them, fitted them to the provider and left them out (described in
    # the text instead) for a model that cannot see (engine/models/_vision.py).
    images: list[ImagePart] = field(default_factory=list)


@dataclass
class AssistantMessage:
    text: str = ""
    reasoning: list[Reasoning] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    role: Literal["assistant"] = "assistant"


@dataclass
class ToolResultMessage:
    tool_call_id: str
    name: str
    output: str
    is_error: bool = False
    role: Literal["tool"] = "tool"
    # Images the tool returned (a notebook's plots, ``read_file`` on a PNG, an MCP tool's image), after ``output``.
    # APIs whose tool results hold only text (OpenAI's, Ollama's) get them in a user message right after the results.
    images: list[ImagePart] = field(default_factory=list)


Message = UserMessage | AssistantMessage | ToolResultMessage


@dataclass
class ToolSpec:
    """A tool offered to the model: ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: JsonObject


@dataclass
class ProviderRequest:
    model: str  # the provider's own model name, without the "provider/" prefix
    messages: list[Message]
    system: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning: bool = False  # ask for reasoning/thinking where the API supports it
    reasoning_budget: int | None = None  # thinking tokens (Anthropic), effort hint elsewhere
    extra: JsonObject = field(default_factory=dict)  # merged into the request body as-is (config `extraPayload`)
    extra_headers: dict[str, str] = field(default_factory=dict)  # per-model headers (config `extraHeaders`)
    # What may change between the rounds of a chat (a door's note on the user's editor): sent after ``system`` and,
    # where the API caches prompts, after the cache breakpoint, so the system prompt before it stays byte-stable.
    system_note: str = ""
    # Stable for every request of one chat (a hash of its id): OpenAI's ``prompt_cache_key`` keeps a chat's requests
    # on the same cache machine; sent only where the provider accepts it (ProviderSettings.prompt_cache_key).
    cache_key: str | None = None

    def full_system(self) -> str:
        """The system prompt and its note as one text, for APIs without cache breakpoints."""
        return f"{self.system}\n\n{self.system_note}" if self.system_note else self.system


# ---------------------------------------------------------------------------------------------------------------
# Stream events (what we get back), in the order the provider produced them.
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class TextDelta:
    text: str


@dataclass
class UrlCitation:
    """A web page the answer cites (OpenAI's ``url_citation`` annotation, Anthropic's web search citation): the
    engine shows it as a ``url`` content, as the reference server does."""

    title: str
    url: str
    type: Literal["text"] = "text"


@dataclass
class ReasoningStarted:
    id: str
    type: Literal["reasoning_started"] = "reasoning_started"


@dataclass
class ReasoningDelta:
    id: str
    text: str
    type: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass
class ReasoningFinished:
    """End of one reasoning block; ``signature``/``encrypted`` are kept to send back (see :class:`Reasoning`)."""

    id: str
    signature: str | None = None
    encrypted: str | None = None
    type: Literal["reasoning_finished"] = "reasoning_finished"


@dataclass
class ToolCallStarted:
    """The model began a tool call. ``index`` orders calls inside one response."""

    id: str
    name: str
    index: int = 0
    type: Literal["tool_call_started"] = "tool_call_started"


@dataclass
class ToolCallDelta:
    """A fragment of a tool call's JSON arguments (clients append them)."""

    id: str
    arguments_delta: str
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass
class ToolCallFinished:
    """A tool call is complete: ``arguments`` is the whole JSON text."""

    id: str
    name: str
    arguments: str
    type: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass
class Usage:
    """Token counts for one provider response (not cumulative). Cache fields are 0 where unknown.

    Providers yield it only when the server reported counts: a stream without them has no Usage event (rather than
    zeros the user would take for a measurement).

    ``input_tokens`` excludes tokens read from or written to the prompt cache (Anthropic's convention; OpenAI's
    totals are normalised to it), so the whole prompt is ``input + cache_read + cache_write`` and each part can be
    priced at its own rate.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    type: Literal["usage"] = "usage"


@dataclass
class Finished:
    """The response ended normally. ``stop_reason`` is normalised: end_turn | tool_calls | max_tokens | other;
    ``reason`` is the provider's own word for it when it gave one (``length``, ``content_filter``…), for messages."""

    stop_reason: str = "end_turn"
    type: Literal["finished"] = "finished"
    reason: str | None = field(default=None, compare=False)


StreamEvent = (
    TextDelta
    | UrlCitation
    | ReasoningStarted
    | ReasoningDelta
    | ReasoningFinished
    | ToolCallStarted
    | ToolCallDelta
    | ToolCallFinished
    | Usage
    | Finished
)


class ProviderError(Exception):
    """A provider failure the user should see in the chat.

    ``status`` is the HTTP status when there was one; ``retryable`` says whether retrying later may help
    (429, 5xx, dropped or stalled stream). ``code`` is the API's own error code or type when it gave one
    (``context_length_exceeded``…): the engine recognises a request too long for the model's window by it. The
    message never contains the API key.
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.code = code


class Provider(Protocol):
    """One configured provider (e.g. ``openai``, ``anthropic``, or a user's ``my-vllm``)."""

    id: str  # the provider id as in config, e.g. "openai"

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Send the request and yield events until :class:`Finished` (always the last event on success)."""
        ...

    async def aclose(self) -> None:
        """Release connections (the shared httpx client is owned by the engine; providers close only their own)."""
        ...


@dataclass
class CompletionRequest:
    """A raw text completion — what inline completion in an editor needs, not a chat turn: the text that follows
    ``prefix`` (and, where the API has fill-in-the-middle, precedes ``suffix``; an empty suffix is a plain
    continuation). Streamed as text pieces by :meth:`TextCompleter.complete`."""

    model: str
    prefix: str
    suffix: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] = field(default_factory=list)
    extra_headers: dict[str, str] = field(default_factory=dict)


class TokenCounter(Protocol):
    """A provider that can count tokens with its model's own tokenizer (the embedded model: llama.cpp's
    ``/tokenize``). Optional: where it is missing, token budgets are estimated from the length of the text."""

    async def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """The tokens of each text, in order; raise :class:`ProviderError` when the tokenizer cannot be reached."""
        ...


class TextCompleter(Protocol):
    """A provider that can also complete raw text (OpenAI-compatible ``/v1/completions``, Ollama ``/api/generate``,
    the embedded model). Optional: providers without it are asked through a chat prompt instead."""

    def complete(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Yield the completion's text pieces; raise :class:`ProviderError` on failure (no retries: an editor's
        suggestion is worth nothing late)."""
        ...
