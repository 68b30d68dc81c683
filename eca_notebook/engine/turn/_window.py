"""Keeping a long chat inside its model's context window: estimate each request, trim, compact, recover.

Why: a chat grows with every prompt and every tool output, and a long tool loop grows it inside one prompt. Sent
as is, the request eventually exceeds the model's window and the provider answers with an HTTP 400 the user can do
nothing with. So before every provider call of a turn the request is estimated and, when it is nearly full
(:data:`TRIGGER` of the input allowance — the window minus the output the request asks for; a little earlier for a
small model):

1. **Trim** the oldest tool outputs: each is replaced in the history by ``[output of <tool> trimmed to save
   context]`` (the results of the round being answered and the latest :data:`KEEP_TOOL_OUTPUTS` others are kept),
   until the request is down to :data:`TRIM_TO`. Tool outputs are the bulk of a long chat and the least valuable
   once the model has acted on them; trimming costs no model call.
2. **Compact** when that is not enough: the model summarises the earlier history (the ``/compact`` summary) and the
   turn continues from the summary plus the recent messages (at most :data:`TAIL_SHARE` of the allowance, always
   starting at a user or assistant message, so no tool result is separated from its call). A note in the chat says
   so. The summary request is itself made to fit (oldest tool outputs trimmed, oldest messages left out, long texts
   shortened), so a chat moved to a smaller model can still be compacted.
3. **Trim harder**, when even the summary plus the recent messages are too many: the latest tool outputs the model
   has already seen go too (at most :data:`_MAX_COMPACTIONS` summaries per prompt: a tool loop in a window that holds
   only a few of its outputs is not summarised every round).
4. **Shorten** long texts in what is sent, as a last resort, when the recent messages alone do not fit (a huge
   attached file): the start and end of each are kept; the history keeps the full text.

**A small model** (the embedded one, any ``compact`` model) is never compacted: summarising costs it a whole extra
generation and the 135M model's summary is worth little, while every token it reads delays its first word (on two
cores about 2 ms each). Its requests get a fixed budget instead, :data:`SMALL_MODEL_PROMPT_TOKENS`, counted with its
own tokenizer where the provider has one (:class:`~eca_notebook.providers.base.TokenCounter`): the oldest turns are
left out of what is sent, down to half the budget at a time (the chat keeps them; the log says so, the chat does
not), and when the current turn alone is over the budget its longest texts are shortened (start and end kept).

A provider may still answer "too long" (the estimate is only an estimate, the window may be unknown or configured
too large). :func:`is_overflow` recognises those answers in every API's words; the turn then compacts (or trims
harder) and retries once, and when even that does not fit, ends with :class:`ContextFull` — a plain sentence, never
the provider's raw error, and the chat's history intact.

Estimates: about :data:`CHARS_PER_TOKEN` characters per token (:data:`SMALL_MODEL_CHARS_PER_TOKEN` for a small
model, whose tokenizer is coarser), calibrated by the input tokens the provider reports for the requests of the
chat: the ratio of measured to estimated tokens (never below 1: a provider that shortens the history itself, like
the embedded model's, must not make the estimate optimistic) scales every later estimate. The window is
``ModelInfo.context_limit`` (catalog, or ``contextLimit`` / ``limit.context`` in config); when it is unknown only
the provider's answer can tell, and the limit an overflow error names is remembered for the chat.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ...protocol import ContextBreakdown, ContextCategory
from ...providers.base import AssistantMessage, Message, ProviderError, ProviderRequest, ToolResultMessage, UserMessage
from ..chats import COMPACT_PREFIX, Chat
from ..config import ModelInfo
from ._toolcall import strip_prefix

__all__ = [
    "AUTO_COMPACT_PERCENTAGE",
    "CHARS_PER_TOKEN",
    "COMPACT_PREFIX",
    "COMPACT_PROMPT",
    "KEEP_TOOL_OUTPUTS",
    "SMALL_MODEL_CHARS_PER_TOKEN",
    "SMALL_MODEL_PROMPT_TOKENS",
    "TAIL_SHARE",
    "TRIGGER",
    "TRIM_TO",
    "AfterCompact",
    "BeforeCompact",
    "CompactionStopped",
    "ContextFull",
    "ContextKeeper",
    "ContextWindow",
    "CountTokens",
    "clip_messages",
    "context_breakdown",
    "estimate_messages",
    "estimate_request",
    "estimate_text",
    "is_overflow",
    "overflow_numbers",
    "shrink_messages",
    "tail_start",
    "trim_tool_outputs",
]

log = logging.getLogger(__name__)

COMPACT_PROMPT = (
    "Summarize our conversation so far for your own future reference: the goal, decisions made, files and code "
    "involved, what is done and what remains. Be complete but concise; this summary will replace the history."
)
# Added when the summary is made in the middle of a prompt: the work goes on from it.
_ONGOING = (" The latest request is still being worked on and the work continues right after this summary: state "
            "that request in full, and what was already found or changed for it.")

CHARS_PER_TOKEN = 4.0
SMALL_MODEL_CHARS_PER_TOKEN = 3.0
# Everything a small model's request may hold besides its answer: system prompt, tools, history and the prompt with
# its contexts. Measured on the two-core machine while busy (load 7): the embedded model reads about 150 prompt
# tokens/s (590 tokens: 3.8 s to the first token, 1,290: 7.9 s, 2,515: 22.7 s). A full budget is a first word in
# about 7 s, and an unchanged start (llama.cpp's prompt cache, see ContextKeeper._fit_budget) only the new turn's
# tokens; with the panel's whole notebook attached the first word took 18–160 s (bench_first_contact.py).
SMALL_MODEL_PROMPT_TOKENS = 1024
_MESSAGE_TOKENS = 4  # role and separators, per message
_TOOL_TOKENS = 8  # per tool offered, besides its name, description and schema

TRIGGER = 0.85  # a request estimated above this share of the input allowance is made smaller before it is sent
AUTO_COMPACT_PERCENTAGE = 75  # …or above this share (percent) of the whole window: the reference's default
# A small model's: the embedded model's provider drops the oldest messages itself past (window − reply − 1200) × 3
# characters (providers/local.py); compacting before that keeps a summary of them instead.
_SMALL_MODEL_TRIGGER = 0.75
TRIM_TO = 0.6  # trimming tool outputs goes down to this share, so it does not happen again every round
TAIL_SHARE = 0.4  # the recent messages a compaction keeps, as a share of what the history may use
_SUMMARY_SHARE = 0.2  # the summary's output budget, as a share of the allowance (and at most _SUMMARY_TOKENS)
_SUMMARY_TOKENS = 4096
_HISTORY_WORTH_COMPACTING = 0.2  # below this share the history is not what fills the window (system prompt, tools)
KEEP_TOOL_OUTPUTS = 2  # besides those of the round being answered
_TRIM_MIN_CHARS = 400  # shorter outputs are not worth trimming
_CLIP_MIN_CHARS = 1200  # shortening keeps at least this much of a text
_MAX_COMPACTIONS = 3  # per turn: a turn that keeps filling the window after this is only shortened
_RATIO_MIN_TOKENS = 256  # requests smaller than this (estimated) do not calibrate the estimate
_MAX_RATIO = 3.0

_TRIMMED = "[output of {tool} trimmed to save context]"
_TRIMMED_START = "[output of "
_CLIPPED = "\n[… {n} characters cut to fit the context window …]\n"
_LEFT_OUT = "[The earliest part of the conversation was left out: it did not fit in the context window.]"


class ContextFull(Exception):
    """The request does not fit the model's context window even after compacting: the turn ends with this
    message (a plain sentence for the chat, never the provider's error)."""

    def __init__(self, context: int | None) -> None:
        window = f"context window of {context:,} tokens" if context else "context window"
        super().__init__(f"The conversation no longer fits the model's {window}: start a new chat, or /compact to "
                         "summarise it (a smaller attachment or a shorter message may also help).")
        self.context = context


class CompactionStopped(ContextFull):
    """A ``preCompact``/``postCompact`` hook answered ``continue: false``: the turn ends with its message."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.context = None


#: Counts the tokens of each text with a model's own tokenizer (:meth:`TokenCounter.count_tokens`).
CountTokens = Callable[[Sequence[str]], Awaitable[list[int]]]

#: Asked before an automatic compaction (the user's ``preCompact`` hooks): None to go on, else (what the user is
#: told, whether the turn stops too). After one: the user's ``postCompact`` hooks with the summary, answering (text
#: to append to the summary, what the user is told when the turn stops there — else None).
BeforeCompact = Callable[[], Awaitable[tuple[str, bool] | None]]
AfterCompact = Callable[[str], Awaitable[tuple[str, str | None]]]


# -- estimates ---------------------------------------------------------------------------------------------------


def estimate_text(text: str, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Tokens of a text, estimated from its length (no tokenizer: the providers' differ, and none is at hand)."""
    return math.ceil(len(text) / chars_per_token) if text else 0


# An image costs about this many tokens once fitted to its provider (Anthropic: width × height / 750, ~1.6k for a
# 1092 px square, ~3.3k at its 1568 px cap; OpenAI's high detail ~1.1k): counted as text of that many tokens.
_IMAGE_CHARS = int(1600 * CHARS_PER_TOKEN)


def _chars(message: Message) -> int:
    if isinstance(message, UserMessage):
        return len(message.text) + len(message.images) * _IMAGE_CHARS
    if isinstance(message, ToolResultMessage):
        return len(message.output) + len(message.name) + len(message.images) * _IMAGE_CHARS
    return (len(message.text) + sum(len(r.text) for r in message.reasoning)
            + sum(len(c.name) + len(c.arguments) for c in message.tool_calls))


def _message_tokens(message: Message, chars_per_token: float) -> int:
    return math.ceil(_chars(message) / chars_per_token) + _MESSAGE_TOKENS


def estimate_messages(messages: Sequence[Message], chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Tokens of a history, estimated."""
    return sum(_message_tokens(m, chars_per_token) for m in messages)


def estimate_request(request: ProviderRequest, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Tokens of a whole request, estimated: system prompt, tool schemas and history."""
    tools = sum(estimate_text(t.name + t.description + json.dumps(t.parameters), chars_per_token) + _TOOL_TOKENS
                for t in request.tools)
    return estimate_text(request.full_system(), chars_per_token) + tools + estimate_messages(request.messages,
                                                                                      chars_per_token)


# The reference's canonical colours and swatches of the context categories (every client draws the same bar).
_CATEGORY_STYLE = {
    "System prompt": ("#61afef", "🟦"),
    "Tool definitions": ("#e8924a", "🟧"),
    "Tool calls": ("#e06c75", "🟥"),
    "Conversation": ("#98c379", "🟩"),
}
_FREE_STYLE = ("#5c6370", "⬜")


def context_breakdown(request: ProviderRequest, reported: int, context: int | None,
                      chars_per_token: float = CHARS_PER_TOKEN) -> ContextBreakdown:
    """What fills the window, by the reference's categories: estimates of the request's parts, scaled so they add
    up to the input tokens the provider ``reported`` for it (when it did)."""
    tools = sum(estimate_text(t.name + t.description + json.dumps(t.parameters), chars_per_token) + _TOOL_TOKENS
                for t in request.tools)
    calls = conversation = 0
    for message in request.messages:
        tokens = _message_tokens(message, chars_per_token)
        if isinstance(message, ToolResultMessage):
            calls += tokens
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            share = sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
            part = math.ceil(tokens * share / max(1, _chars(message)))
            calls += part
            conversation += tokens - part
        else:
            conversation += tokens
    raw = [(name, tokens) for name, tokens in (("System prompt", estimate_text(request.full_system(), chars_per_token)),
                                               ("Tool definitions", tools), ("Tool calls", calls),
                                               ("Conversation", conversation)) if tokens > 0]
    estimated = sum(t for _, t in raw)
    used = reported if reported > 0 else estimated
    scale = used / estimated if reported > 0 and estimated else 1.0
    categories = [ContextCategory(name=name, tokens=round(tokens * scale), color=_CATEGORY_STYLE[name][0],
                                  emoji=_CATEGORY_STYLE[name][1]) for name, tokens in raw]
    return ContextBreakdown(categories=categories, used_tokens=used,
                            free_tokens=max(0, context - used) if context else None, context_limit=context or None,
                            free_color=_FREE_STYLE[0], free_emoji=_FREE_STYLE[1])


# -- overflow errors ---------------------------------------------------------------------------------------------

_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error", "request_too_large",
                   "model_context_window_exceeded"}
# The providers' words: OpenAI "maximum context length is …" / "exceeds the context window", Anthropic "prompt is
# too long" / "exceed context limit", llama.cpp "exceeds the available context size", Ollama "input length exceeds
# the context length", vLLM and OpenRouter "maximum context length", Gemini "input token count … exceeds the
# maximum number of tokens", LM Studio "greater than the context length", Mistral "too large for model with …
# maximum context length".
_OVERFLOW_TEXT = re.compile(
    r"context[ _-]?(?:length|window|size|limit)|prompt is too long|too many (?:input )?tokens"
    r"|input (?:is )?too long|exceeds? the (?:available |maximum )?context|reduce the length of the"
    r"|input token count.*exceeds|maximum number of tokens allowed|prompt (?:is )?too large",
    re.IGNORECASE | re.DOTALL,
)
_NOT_OVERFLOW_STATUS = {401, 402, 403, 404, 408, 429}
_NUMBER = r"(\d[\d,]*)"
_LIMIT_PATTERNS = [
    re.compile(p, re.IGNORECASE) for p in (
        r"maximum context length (?:is|of) (?:about )?" + _NUMBER,
        r"context (?:window|length|size|limit)(?: of| is|:)? " + _NUMBER + r" tokens",
        r"> " + _NUMBER + r" maximum",  # Anthropic: prompt is too long: 210000 tokens > 200000 maximum
        r"exceed context limit: \d[\d,]* \+ \d[\d,]* > " + _NUMBER,  # Anthropic: input + max_tokens > context
        r"n_ctx\D{0,4}" + _NUMBER,
        r"maximum number of tokens allowed \(" + _NUMBER,
    )
]
_USED_PATTERNS = [
    re.compile(p, re.IGNORECASE) for p in (
        _NUMBER + r" in the messages",  # vLLM
        r"(?:messages|input) resulted in " + _NUMBER,
        r"prompt is too long: " + _NUMBER,
        r"exceed context limit: " + _NUMBER,
        r"n_prompt_tokens\D{0,4}" + _NUMBER,
        r"input token count \(" + _NUMBER,
        r"requested (?:about )?" + _NUMBER + r" tokens",
    )
]


def is_overflow(error: ProviderError) -> bool:
    """Whether a provider error says the request was too long for the model's context window."""
    if error.status in _NOT_OVERFLOW_STATUS or error.retryable:
        return False
    code = (getattr(error, "code", None) or "").lower()
    if code in _OVERFLOW_CODES or error.status == 413:
        return True
    return bool(_OVERFLOW_TEXT.search(error.message))


def _first_number(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def overflow_numbers(message: str) -> tuple[int | None, int | None]:
    """(the window, the prompt's tokens) as an overflow error states them, where it does."""
    return _first_number(_LIMIT_PATTERNS, message), _first_number(_USED_PATTERNS, message)


# -- making a history smaller ------------------------------------------------------------------------------------


def trim_tool_outputs(messages: Sequence[Message], save_tokens: int, chars_per_token: float = CHARS_PER_TOKEN,
                      *, keep: int = KEEP_TOOL_OUTPUTS) -> tuple[list[Message], int]:
    """Replace the oldest tool outputs with a short note until about ``save_tokens`` are saved.

    Never trimmed: the results after the last assistant message (the model has not seen them yet) and the latest
    ``keep`` others. Returns a new list (the messages themselves are not changed) and how many were trimmed.
    """
    last_assistant = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    earlier = [i for i, m in enumerate(messages) if isinstance(m, ToolResultMessage) and i < last_assistant]
    candidates = earlier[: max(0, len(earlier) - keep)]
    result = list(messages)
    saved = trimmed = 0
    for i in candidates:
        if saved >= save_tokens:
            break
        message = result[i]
        assert isinstance(message, ToolResultMessage)
        if message.output.startswith(_TRIMMED_START) or (len(message.output) < _TRIM_MIN_CHARS
                                                          and not message.images):
            continue
        note = _TRIMMED.format(tool=strip_prefix(message.name) or "a tool")
        result[i] = dataclasses.replace(message, output=note, images=[])  # an old plot goes with its output
        saved += (estimate_text(message.output, chars_per_token) - estimate_text(note, chars_per_token)
                  + math.ceil(len(message.images) * _IMAGE_CHARS / chars_per_token))
        trimmed += 1
    return result, trimmed


def _clip_text(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    marker = _CLIPPED.format(n=f"{len(text) - keep:,}")
    head = keep * 2 // 3
    return text[:head] + marker + text[len(text) - (keep - head):]


def _clipped(message: Message, keep: int) -> Message:
    if isinstance(message, UserMessage):
        return dataclasses.replace(message, text=_clip_text(message.text, keep))
    if isinstance(message, ToolResultMessage):
        return dataclasses.replace(message, output=_clip_text(message.output, keep))
    # only the text: tool call arguments must stay valid JSON, and signed reasoning must be sent back unchanged
    return dataclasses.replace(message, text=_clip_text(message.text, keep))


def _text_of(message: Message) -> str:
    """The text a message puts in a request, for counting its tokens."""
    if isinstance(message, UserMessage):
        return message.text
    if isinstance(message, ToolResultMessage):
        return message.output
    return message.text + "".join(c.name + c.arguments for c in message.tool_calls)


def _clippable(message: Message) -> int:
    if isinstance(message, UserMessage | AssistantMessage):
        return len(message.text)
    return len(message.output)


def clip_messages(messages: Sequence[Message], target_tokens: int,
                  chars_per_token: float = CHARS_PER_TOKEN) -> list[Message]:
    """Shorten the longest texts (keeping their start and end, with a marker) until the messages fit
    ``target_tokens`` — or every text is down to its minimum. Returns a new list."""
    result = list(messages)
    for _ in range(len(result)):
        excess = estimate_messages(result, chars_per_token) - target_tokens
        if excess <= 0:
            break
        i = max(range(len(result)), key=lambda k: _clippable(result[k]))
        size = _clippable(result[i])
        keep = max(_CLIP_MIN_CHARS, size - math.ceil(excess * chars_per_token) - len(_CLIPPED) - 16)
        if keep >= size:
            break
        result[i] = _clipped(result[i], keep)
    return result


def _boundaries(messages: Sequence[Message]) -> list[int]:
    """Where a history may be cut: before a user or assistant message, never before a tool result (which must
    follow the call it answers)."""
    return [i for i, m in enumerate(messages) if not isinstance(m, ToolResultMessage)]


def tail_start(messages: Sequence[Message], tail_tokens: int, chars_per_token: float = CHARS_PER_TOKEN) -> int:
    """Where the recent messages a compaction keeps begin: the earliest cut after which they fit ``tail_tokens``
    (at least the last cut), never 0 when another cut exists. 0: there is nothing before to summarise."""
    cuts = [i for i in _boundaries(messages) if i > 0]
    if not cuts:
        return 0
    start = cuts[-1]
    size = estimate_messages(messages[start:], chars_per_token)
    for previous, current in zip(reversed(cuts[:-1]), reversed(cuts[1:]), strict=True):
        size += estimate_messages(messages[previous:current], chars_per_token)
        if size > tail_tokens:
            break
        start = previous
    return start


def shrink_messages(messages: Sequence[Message], target_tokens: int,
                    chars_per_token: float = CHARS_PER_TOKEN) -> tuple[list[Message], int]:
    """A history made to fit ``target_tokens`` for one request, whatever it takes: tool outputs trimmed, texts
    longer than a quarter of the target shortened (one huge message should not push out all the others), then the
    oldest messages left out (at cuts, a note in their place), then long texts shortened further. The last message
    and one before it are always kept. Returns the messages and how many were left out."""
    result = list(messages)
    over = estimate_messages(result, chars_per_token) - target_tokens
    if over > 0:
        result, _ = trim_tool_outputs(result, over, chars_per_token, keep=0)
    if estimate_messages(result, chars_per_token) > target_tokens:
        longest = max(_CLIP_MIN_CHARS, int(target_tokens * chars_per_token / 4))
        result = [_clipped(m, longest) if _clippable(m) > longest else m for m in result]
    start = 0
    note = estimate_text(_LEFT_OUT, chars_per_token) + _MESSAGE_TOKENS
    for cut in (i for i in _boundaries(result) if 0 < i < len(result) - 1):
        if estimate_messages(result[start:], chars_per_token) + (note if start else 0) <= target_tokens:
            break
        start = cut
    if start:
        result = [UserMessage(text=_LEFT_OUT), *result[start:]]
    if estimate_messages(result, chars_per_token) > target_tokens:
        result = clip_messages(result, target_tokens, chars_per_token)
    return result, start


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


# -- the window of one chat --------------------------------------------------------------------------------------


@dataclass
class _Calibration:
    """What a chat has learned about its window (kept on the chat in memory, for the model it was learned with)."""

    model: str
    ratio: float = 1.0
    context: int | None = None  # a window an overflow error named
    # a small model's: the first message its last request sent (the oldest ones before it are left out)
    first_sent: Message | None = None


class ContextWindow:
    """One chat's window on one model: the input allowance and calibrated estimates."""

    def __init__(self, model: ModelInfo, output_tokens: int, chat: Chat | None = None, *,
                 auto_compact: float | None = None) -> None:
        self.chars_per_token = SMALL_MODEL_CHARS_PER_TOKEN if model.compact else CHARS_PER_TOKEN
        self.trigger = _SMALL_MODEL_TRIGGER if model.compact else TRIGGER  # share of the allowance
        # the config's ``autoCompactPercentage`` (the reference's, default 75): share of the whole window
        self.auto_compact_percentage = float(auto_compact if auto_compact is not None else AUTO_COMPACT_PERCENTAGE)
        self._asked = max(0, output_tokens)
        known: _Calibration | None = getattr(chat, "context_window", None) if chat is not None else None
        if known is None or known.model != model.id:
            known = _Calibration(model.id)
            if chat is not None:
                chat.context_window = known
        self._calibration = known
        self._configured = model.context_limit

    @property
    def context(self) -> int | None:
        """The window in tokens: the smaller of the configured one and one an overflow error named."""
        windows = [w for w in (self._configured, self._calibration.context) if w]
        return min(windows) if windows else None

    @property
    def output_tokens(self) -> int:
        """The output limit to ask for: the turn's, cut to half a window it would not fit (as
        :meth:`ModelInfo.max_output_tokens` does for a configured window — this also covers a learned one)."""
        context = self.context
        if context and self._asked >= context:
            return max(1, context // 2)
        return self._asked

    @property
    def calibration(self) -> _Calibration:
        """What the chat learned about this window (kept on the chat)."""
        return self._calibration

    @property
    def ratio(self) -> float:
        """Measured tokens per estimated token (≥ 1)."""
        return self._calibration.ratio

    def allowance(self, output_tokens: int | None = None) -> int | None:
        """Input tokens a request may use: the window minus the output it asks for (None: window unknown)."""
        context = self.context
        if not context:
            return None
        output = self.output_tokens if output_tokens is None else output_tokens
        return max(context // 4, context - output)

    def threshold(self, allowance: int) -> float:
        """Tokens above which a request is made smaller: ``autoCompactPercentage`` of the window, or earlier when
        the output the request asks for needs the room (:data:`TRIGGER` of the allowance)."""
        context = self.context
        limit = self.trigger * allowance
        if context:
            limit = min(limit, self.auto_compact_percentage / 100 * context)
        return limit

    def raw(self, request: ProviderRequest) -> int:
        """The uncalibrated estimate of a request (what :meth:`measured` compares the reported count with)."""
        return estimate_request(request, self.chars_per_token)

    def estimate(self, request: ProviderRequest) -> int:
        """A request's tokens, estimated and calibrated."""
        return math.ceil(self.raw(request) * self.ratio)

    def tokens(self, messages: Sequence[Message]) -> int:
        """A history's tokens, estimated and calibrated."""
        return math.ceil(estimate_messages(messages, self.chars_per_token) * self.ratio)

    def measured(self, raw_estimate: int, input_tokens: int) -> None:
        """The provider counted ``input_tokens`` for a request estimated at ``raw_estimate``: calibrate."""
        if raw_estimate >= _RATIO_MIN_TOKENS and input_tokens > 0:
            self._calibration.ratio = min(_MAX_RATIO, max(1.0, input_tokens / raw_estimate))

    def learn(self, error: ProviderError, raw_estimate: int) -> None:
        """An overflow error for a request estimated at ``raw_estimate``: remember the window and the prompt size
        it names, or — when it names neither — that the request was at least a little too big."""
        limit, used = overflow_numbers(error.message)
        if limit:
            self._calibration.context = min(limit, self._calibration.context or limit)
        if used and raw_estimate >= _RATIO_MIN_TOKENS:
            self._calibration.ratio = min(_MAX_RATIO, max(self.ratio, used / raw_estimate))
        allowance = self.allowance()
        if allowance is None:  # nothing known: the window is somewhat smaller than what was sent
            self._calibration.context = max(256, int((raw_estimate * self.ratio + self.output_tokens) * 0.8))
        elif not used and raw_estimate * self.ratio < allowance:
            # the estimate was optimistic: the request really was over the allowance
            self._calibration.ratio = min(_MAX_RATIO, max(self.ratio, allowance * 1.1 / max(1, raw_estimate)))


# -- keeping a turn's requests in the window ---------------------------------------------------------------------

#: Streams a summary request (history, output limit) with the turn's model and system prompt, no tools; its text.
Summarise = Callable[[list[Message], int], Awaitable[str]]


class ContextKeeper:
    """Makes each request of one turn fit the window (see the module docstring), with the turn's callbacks:
    ``summarise`` asks the model for a summary; ``note`` and ``progress`` speak in the chat.

    ``compacting``: the turn is ``/compact`` itself — its request is only shortened (never compacted), and the
    history is left alone for the command to replace. ``reasoning``: the model reasons, so a summary request leaves
    room for that besides the summary.
    """

    def __init__(self, chat: Chat, window: ContextWindow, summarise: Summarise, note: Callable[[str], None],
                 progress: Callable[[str], None], *, compacting: bool = False, reasoning: bool = False,
                 before_compact: BeforeCompact | None = None, after_compact: AfterCompact | None = None,
                 budget: int | None = None, count: CountTokens | None = None) -> None:
        self.chat = chat
        # a small model's fixed budget in tokens (never compacted: the oldest turns are left out instead), counted
        # by ``count`` — the model's own tokenizer — or estimated when there is none
        self.budget = budget
        self.count = count
        self.window = window
        self.summarise = summarise
        self.note = note
        self.progress = progress
        self.compacting = compacting
        self.reasoning = reasoning
        self.compactions = 0
        self._shortened_said = False
        self.before_compact = before_compact  # the user's compaction hooks (_hooks.py), for automatic compaction
        self.after_compact = after_compact
        self._compaction_vetoed = False  # a preCompact hook blocked it: not asked again in this turn

    def _with_history(self, request: ProviderRequest, messages: Sequence[Message] | None = None) -> ProviderRequest:
        return dataclasses.replace(request, messages=list(self.chat.messages if messages is None else messages))

    async def fit(self, request: ProviderRequest) -> ProviderRequest:
        """The request to send: as is when it fits comfortably, else trimmed / compacted / shortened."""
        if self.budget is not None and not self.compacting:
            return await self._fit_budget(request, self.budget)
        allowance = self.window.allowance(request.max_tokens)
        if allowance is None or self.window.estimate(request) <= self.window.threshold(allowance):
            return request
        return await self._reduce(request, allowance, forced=False)

    async def recover(self, request: ProviderRequest, error: ProviderError) -> ProviderRequest | None:
        """After an overflow error: a smaller request to retry with, or None when it cannot be made smaller."""
        if self.budget is not None and not self.compacting:
            self.window.learn(error, self.window.raw(request))
            smaller = await self._fit_budget(request, self.budget // 2)
            return smaller if smaller.messages != request.messages else None
        before = self.window.raw(request)
        self.window.learn(error, before)
        start = request if self.compacting else self._with_history(request)
        start = dataclasses.replace(start, max_tokens=min(request.max_tokens or self.window.output_tokens,
                                                          self.window.output_tokens))
        allowance = self.window.allowance(start.max_tokens)
        assert allowance is not None  # learn() always knows a window afterwards
        smaller = await self._reduce(start, allowance, forced=True)
        if self.window.raw(smaller) > before * 0.9 and (smaller.max_tokens or 0) >= (request.max_tokens or 0):
            return None  # nothing came off: the same request would fail the same way
        return smaller

    async def _reduce(self, request: ProviderRequest, allowance: int, *, forced: bool) -> ProviderRequest:
        window = self.window
        enough = TRIM_TO * allowance if forced else window.threshold(allowance)  # after an error it goes further
        fixed = window.estimate(self._with_history(request, []))  # system prompt and tools
        if self.compacting:  # /compact's own request: shorten what is sent, keep the history for the command
            messages, omitted = shrink_messages(request.messages, self._raw_tokens(TRIM_TO * allowance - fixed),
                                                window.chars_per_token)
            if omitted:
                self.note(f"The oldest {_count(omitted, 'message')} did not fit in the context window: the summary "
                          "leaves them out.")
            return self._with_history(request, messages)

        # 1. trim the oldest tool outputs (in the history: they stay trimmed)
        request = self._trim(request, allowance, keep=KEEP_TOOL_OUTPUTS)
        if window.estimate(request) <= enough:
            return request

        # 2. compact the earlier history into a summary
        history = window.tokens(self.chat.messages)
        if self.compactions < _MAX_COMPACTIONS and history >= _HISTORY_WORTH_COMPACTING * allowance:
            if await self._compact(request, allowance, fixed, forced=forced):
                request = self._with_history(request)
                if window.estimate(request) <= enough:
                    return request

        # 3. trim the latest outputs too (never those the model has not seen yet)
        request = self._trim(request, allowance, keep=0)

        # 4. shorten what is sent when the recent messages alone are too long (the history keeps them whole)
        if window.estimate(request) > enough:
            messages = clip_messages(request.messages, self._raw_tokens(TRIM_TO * allowance - fixed),
                                     window.chars_per_token)
            if messages != request.messages:
                if not self._shortened_said:
                    self._shortened_said = True
                    self.note("The latest messages are long for the context window: the model sees them "
                              "shortened (their start and end).")
                request = self._with_history(request, messages)
        return request

    # -- a small model: a fixed budget, the oldest turns left out -------------------------------------------------

    async def _tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text: the model's own count where the provider has one, else the estimate."""
        if self.count is not None:
            try:
                return list(await self.count(texts))
            except ProviderError as exc:  # the tokenizer is unreachable: the stream will say why, if it matters
                log.info("chat %s: counting tokens failed (%s): estimating", self.chat.id, exc.message)
        return [estimate_text(t, self.window.chars_per_token) for t in texts]

    async def _fit_budget(self, request: ProviderRequest, budget: int) -> ProviderRequest:
        """The request within ``budget`` tokens, the chat's history unchanged. What is sent starts where the last
        request started as long as that fits; when it no longer does, it starts at the earliest turn (a turn starts
        at a user message, so no tool result is parted from its call) after which at most half the budget is used
        — the current turn always. So the start moves now and then, not with every prompt: llama.cpp reuses what it
        read of an unchanged start (its prompt cache) and reads only the new turn. The current turn's longest texts
        are shortened when it alone is over."""
        messages = list(request.messages)
        tools = sum(estimate_text(t.name + t.description + json.dumps(t.parameters), self.window.chars_per_token)
                    + _TOOL_TOKENS for t in request.tools)
        counts = await self._tokens([request.full_system(), *(_text_of(m) for m in messages)])
        room = max(budget // 4, budget - counts[0] - tools)
        sizes = [c + _MESSAGE_TOKENS for c in counts[1:]]
        starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
        calibration = self.window.calibration
        start = next((i for i in starts if messages[i] is calibration.first_sent), 0)
        if sum(sizes[start:]) > room:
            start = next((i for i in starts if i > start and sum(sizes[i:]) <= room // 2),
                         starts[-1] if starts else 0)
        calibration.first_sent = messages[start] if messages else None
        if start:
            log.info("chat %s: %d earlier messages left out of the small model's request (budget %d tokens)",
                     self.chat.id, start, budget)
        kept, sizes = messages[start:], sizes[start:]
        for _ in range(4):  # the current turn alone is over: shorten its longest text, recount
            over = sum(sizes) - room
            if over <= 0:
                break
            i = max(range(len(kept)), key=lambda k: sizes[k])
            text = _text_of(kept[i])
            tokens = max(1, sizes[i] - _MESSAGE_TOKENS)
            keep = int((tokens - over) * len(text) / tokens * 0.95) - len(_CLIPPED) - 16
            if keep <= 0 or keep >= len(text):
                break
            kept[i] = _clipped(kept[i], keep)
            [count] = await self._tokens([_text_of(kept[i])])
            sizes[i] = count + _MESSAGE_TOKENS
        return dataclasses.replace(request, messages=kept)

    def _trim(self, request: ProviderRequest, allowance: int, *, keep: int) -> ProviderRequest:
        """Trim the oldest tool outputs in the history until the request is down to :data:`TRIM_TO`."""
        window = self.window
        over = window.estimate(request) - TRIM_TO * allowance
        if over <= 0:
            return request
        messages, trimmed = trim_tool_outputs(self.chat.messages, math.ceil(over / window.ratio),
                                              window.chars_per_token, keep=keep)
        if not trimmed:
            return request
        self.chat.messages = messages
        # (the history changes in the middle: a provider's prompt cache is read only up to the first trimmed output)
        log.info("chat %s: trimmed %d tool outputs to save context; the cached prompt prefix ends at the first of "
                 "them", self.chat.id, trimmed)
        self.note(f"Context nearly full: trimmed the output of {_count(trimmed, 'earlier tool call')} to save "
                  "space.")
        return self._with_history(request)

    def _raw_tokens(self, calibrated: float) -> int:
        """Calibrated tokens back to raw estimate units (what the history functions count)."""
        return max(1, int(calibrated / self.window.ratio))

    async def _compact(self, request: ProviderRequest, allowance: int, fixed: int, *, forced: bool) -> bool:
        """Summarise the earlier history; on success it is replaced by the summary plus the recent messages. False
        when there was nothing to summarise or the model gave no summary."""
        window = self.window
        cpt = window.chars_per_token
        messages = list(self.chat.messages)
        start = tail_start(messages, self._raw_tokens(TAIL_SHARE * max(1, allowance - fixed)), cpt)
        if start == 0 or self._compaction_vetoed:
            return False
        if self.before_compact is not None:
            veto = await self.before_compact()
            if veto is not None:
                why, stop = veto
                if stop:
                    raise CompactionStopped(why)
                self._compaction_vetoed = True
                self.note(why)
                return False
        earlier, recent = messages[:start], messages[start:]
        room = _SUMMARY_TOKENS * (2 if self.reasoning else 1)
        summary_tokens = max(128, min(window.output_tokens or room, room, int(_SUMMARY_SHARE * allowance)))
        summary_allowance = window.allowance(summary_tokens) or allowance
        system = window.estimate(dataclasses.replace(request, messages=[], tools=[]))  # no tools in a summary request
        last_user = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
        instruction = COMPACT_PROMPT + (_ONGOING if last_user < start else "")
        sent, omitted = shrink_messages([*earlier, UserMessage(text=instruction)],
                                        self._raw_tokens(0.9 * summary_allowance - system), cpt)
        self.progress("Compacting the conversation")
        log.info("chat %s: compacting %d messages (keeping %d); the cached prompt prefix ends at the system prompt",
                 self.chat.id, len(earlier), len(recent))
        try:
            text = (await self.summarise(sent, summary_tokens)).strip()
        except ProviderError as exc:
            if not is_overflow(exc):
                raise
            # the summary request itself was too long (the estimate was off): once more, with half as much
            log.info("chat %s: the summary request did not fit (%s)", self.chat.id, exc.message)
            sent, more = shrink_messages(sent, estimate_messages(sent, cpt) // 2, cpt)
            omitted += more
            try:
                text = (await self.summarise(sent, summary_tokens)).strip()
            except ProviderError as again:
                if not is_overflow(again):
                    raise
                text = ""
        if not text:
            self.note("Context nearly full, and compacting the conversation failed: the model gave no summary.")
            return False
        self.compactions += 1
        # The summary stands for the prompts it replaces: it carries the latest one's id, so a rollback to any of
        # them cuts at the summary (and is refused, as after /compact) rather than missing the history.
        content_id = next((m.content_id for m in reversed(earlier) if isinstance(m, UserMessage) and m.content_id),
                          None)
        # the turn is this chat's only writer while it runs: nothing changed the history during the summary
        summary = UserMessage(text=f"{COMPACT_PREFIX}\n\n{text}", content_id=content_id)
        self.chat.messages = [summary, *recent]
        stopped: str | None = None
        if self.after_compact is not None:
            extra, stopped = await self.after_compact(text)
            if extra:  # a postCompact hook's additionalContext stays visible after the summary
                summary.text += extra
        left_out = (f" The oldest {_count(omitted, 'message')} did not fit in the summary request and "
                    f"{'was' if omitted == 1 else 'were'} left out." if omitted else "")
        if forced:
            self.note(f"The request did not fit the model's context window: compacted the earlier conversation "
                      f"({_count(len(earlier), 'message')}) into a summary and retried.{left_out}")
        else:
            self.note(f"Context was nearly full: compacted the earlier conversation ({_count(len(earlier), 'message')})"
                      f" into a summary; the prompt continues from it.{left_out}")
        if stopped is not None:
            raise CompactionStopped(stopped)
        return True
