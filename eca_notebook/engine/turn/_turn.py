"""One prompt's turn: rounds of provider streaming and tool calls, as ``chat/contentReceived`` contents.

Order (``eca-compat-notes.md``): user echo → metadata (first prompt) → per round: progress "Waiting model" →
progress "Generating" → reasoning / text / toolCallPrepare chunks → usage → for each tool call the sequence in
``_toolcall.py`` → next round … until the model answers without calling a tool → progress finished. The turn owns no
I/O of its own: it calls ``emit`` (which records the content in the chat and fans it out to every connected client),
the provider, and the tool runner.

Failures never escape: a provider error becomes a system text in the chat, a stop keeps what was streamed so far,
and either way the chat ends ``idle`` with its history intact, ready for the next prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import hashlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, nullcontext
from typing import Any, cast
from urllib.parse import urlsplit

from ..._merge import deep_merge
from ..._text import visible
from ...protocol import (
    JsonObject,
    ProgressContent,
    ReasonFinishedContent,
    ReasonStartedContent,
    ReasonTextChunk,
    TextChunk,
    TextContent,
    UrlContent,
    UsageContent,
    UsageLimit,
    WireContent,
)
from ...providers.base import (
    AssistantMessage,
    Finished,
    Message,
    Provider,
    ProviderError,
    ProviderRequest,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    ReasoningStarted,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    UrlCitation,
    Usage,
    UserMessage,
)
from ..chats import Chat
from ..config import ModelInfo, variant_payload
from ..models import ImagePolicy, has_images, prepare_images
from ._repetition import RepetitionGuard
from ._toolcall import ToolCallContents, ToolCallRunner, strip_prefix
from ._window import (
    SMALL_MODEL_PROMPT_TOKENS,
    AfterCompact,
    BeforeCompact,
    ContextFull,
    ContextKeeper,
    ContextWindow,
    context_breakdown,
    is_overflow,
)

log = logging.getLogger(__name__)

#: Records a content in the chat and fans it out: a protocol model, or the wire dict of a streamed chunk.
Emit = Callable[[Chat, str, WireContent], None]

# The same tool call (name and arguments) with the same outcome — the same error, or the same result again — is run at
# most this often per prompt; a further attempt is answered without running it, and the turn ends if the model keeps
# trying. A small model loops like this (ten failed read_file("file.txt"), or forty reads of the same file).
SAME_OUTCOME_LIMIT = 2
BLOCKED_CALLS_LIMIT = 2

# The turn running in this task: lets provider callbacks (e.g. "Loading local model…") reach the right chat.
CURRENT_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("eca_current_turn", default=None)


def _canonical(arguments: str) -> str:
    """A call's JSON arguments as a stable string: the same call with keys in another order or other spacing counts
    as the same call."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


def cache_key(chat_id: str) -> str:
    """The chat's ``prompt_cache_key``: stable for all its requests, different per chat, not the id itself."""
    return "eca-" + hashlib.sha256(chat_id.encode()).hexdigest()[:32]


def format_cost(cost: float | None) -> str | None:
    if cost is None:
        return None
    text = f"{cost:.6f}".rstrip("0").rstrip(".")
    return text or "0"


class _Observed:
    """The provider as a turn sees it: each round's :class:`Finished` is kept (its reason explains an empty answer),
    and a usage of all zeros — nothing was counted, e.g. a proxy that doesn't report usage — is dropped rather than
    shown as a measurement."""

    def __init__(self, provider: Provider) -> None:
        self.inner = provider
        self.id = provider.id
        self.finished: Finished | None = None
        # every request's images made fit for the model first (Turn._fit_images, engine/models/_vision.py)
        self.images: Callable[[ProviderRequest], Awaitable[ProviderRequest]] | None = None

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        self.finished = None
        return self._events(request)

    async def _events(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        if self.images is not None:
            request = await self.images(request)
        events = self.inner.stream(request)
        # closing this generator (a stop, or the turn leaving the loop early) closes the provider's stream too
        async with aclosing(cast(Any, events)) if hasattr(events, "aclose") else nullcontext(events):
            async for event in events:
                if isinstance(event, Usage) and not (event.input_tokens or event.output_tokens
                                                     or event.cache_read_tokens or event.cache_write_tokens):
                    continue
                if isinstance(event, Finished):
                    self.finished = event
                yield event

    def batches(self, request: ProviderRequest) -> AsyncIterator[list[StreamEvent]]:
        """:meth:`stream` a network read at a time, where the provider reads so (``stream_batches``): the turn's
        loop takes a reply's thousands of chunks with one step of the generator chain per read, not per chunk."""
        self.finished = None
        return self._batches(request)

    async def _batches(self, request: ProviderRequest) -> AsyncIterator[list[StreamEvent]]:
        if self.images is not None:
            request = await self.images(request)
        by_read = getattr(self.inner, "stream_batches", None)
        batches = by_read(request) if by_read is not None else _one_by_one(self.inner.stream(request))
        async with aclosing(cast(Any, batches)):
            async for batch in batches:
                kept: list[StreamEvent] = []
                for event in batch:
                    if type(event) is TextDelta:  # nearly every event: nothing to check
                        kept.append(event)
                        continue
                    if isinstance(event, Usage) and not (event.input_tokens or event.output_tokens
                                                         or event.cache_read_tokens or event.cache_write_tokens):
                        continue
                    if isinstance(event, Finished):
                        self.finished = event
                    kept.append(event)
                if kept:
                    yield kept

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _one_by_one(events: AsyncIterator[StreamEvent]) -> AsyncIterator[list[StreamEvent]]:
    """A provider's stream as batches of one event (a provider without ``stream_batches``)."""
    async with aclosing(cast(Any, events)) if hasattr(events, "aclose") else nullcontext(events):
        async for event in events:
            yield [event]


class Turn:
    """Runs rounds against the provider until the model answers without tool calls (or the round cap)."""

    def __init__(
        self,
        chat: Chat,
        provider: Provider,
        model: ModelInfo,
        system: str,
        emit: Emit,
        *,
        max_tokens: int | None = None,
        tools: list[ToolSpec] | None = None,
        runner: ToolCallRunner | None = None,
        max_rounds: int = 40,
        tool_rounds: int | None = None,
        first_round_extra: JsonObject | None = None,
        stop_loops: bool = False,
        on_success: Callable[[], None] | None = None,
        compacting: bool = False,
        system_note: Callable[[], str | None] | None = None,
        compact_hooks: tuple[BeforeCompact, AfterCompact] | None = None,
        auto_compact_percentage: float | None = None,
        default_variant: str | None = None,
    ) -> None:
        # the agent's variant, for a chat that chose none the model has (the reference's agent ``variant``)
        self.default_variant = default_variant
        # asked before each request: a door's note for the system prompt (what changed in the user's editor since
        # the prompt, from the session stream's client.context_update); None or "" adds nothing
        self.system_note = system_note
        self.on_success = on_success  # runs after a normal finish, before "progress finished" (e.g. /compact)
        self.chat = chat
        self.provider = _Observed(provider)
        self.provider.images = self._fit_images
        # images already in the chat before this turn: their notes (cannot see, left out) were given when they came
        self._old_images = {i.sha256 for m in chat.messages[:-1] if isinstance(m, (UserMessage, ToolResultMessage))
                            for i in m.images}
        self._image_notes: set[str] = set()
        self.model = model
        self.system = system
        self.emit = emit
        # the model's output limit goes with every request (limit.output, capped by the model's maximum)
        self.max_tokens = max_tokens if max_tokens is not None else model.max_output_tokens()
        self.tools = tools or []
        self.runner = runner
        self.max_rounds = max(1, max_rounds)
        # After this many rounds with tool calls the model is asked without tools, so it must answer (small models).
        self.tool_rounds = tool_rounds
        self._rounds_with_calls = 0
        self.first_round_extra = first_round_extra or {}  # e.g. tool_choice "required" for a small model
        # Stop a reply that degenerates into a loop (small models): see _repetition.py. Off for other models, whose
        # long repetitive output (a generated fixture, a column of zeros) is more likely meant.
        self.stop_loops = stop_loops
        # Each request is made to fit the model's context window (trimmed, compacted, shortened; _context_window.py).
        # ``compacting``: this turn is /compact itself, whose request is only shortened.
        window = ContextWindow(model, self.max_tokens, chat, auto_compact=auto_compact_percentage)
        self.context = ContextKeeper(chat, window, self._summarise, self._note,
                                     lambda text: self.progress("running", text), compacting=compacting,
                                     reasoning=model.reasoning,
                                     # the user's preCompact/postCompact hooks, triggered "auto" (_hooks.py)
                                     before_compact=compact_hooks[0] if compact_hooks else None,
                                     after_compact=compact_hooks[1] if compact_hooks else None,
                                     # a small model is never compacted: a fixed budget, counted by its tokenizer
                                     budget=SMALL_MODEL_PROMPT_TOKENS if model.compact else None,
                                     count=getattr(provider, "count_tokens", None) if model.compact else None)
        self._sent_estimate = 0  # the uncalibrated estimate of the request being streamed (see ContextWindow)
        self._sent: ProviderRequest | None = None
        self._assistant: AssistantMessage | None = None
        self._text_parts: list[str] = []  # the current round's text chunks, see _join_text
        self._outcomes: dict[tuple[str, str], tuple[int, str]] = {}  # (tool, arguments) → (times in a row, output)
        self._blocked = 0  # repeated calls answered without running them
        self._writers: dict[str, ToolCallContents] = {}  # a turn without a runner writes prepare chunks itself

    # -- helpers -------------------------------------------------------------------------------------------------

    def _system(self, content: WireContent) -> None:
        self.emit(self.chat, "system", content)

    def _note(self, text: str) -> None:
        self._system(TextContent(text=text))

    def _assistant_content(self, content: WireContent) -> None:
        self.emit(self.chat, "assistant", content)

    def _cite(self, citation: UrlCitation) -> None:
        """A page the model cites, as the reference's ``url`` content — an http(s) link only (the model's output may
        be an attacker's: no ``javascript:`` or ``file:`` link reaches a client), its title shown as written out."""
        url = citation.url.strip()
        if urlsplit(url).scheme.lower() not in ("http", "https") or len(url) > 2048:
            return
        self._assistant_content(UrlContent(title=visible(citation.title)[:300] or url, url=url))

    def progress(self, state: str, text: str) -> None:
        """Say what the chat is doing (``running``), or that the prompt is over (``finished``)."""
        self._system(ProgressContent(state="finished" if state == "finished" else "running", text=text))

    def _tool_call(self, call_id: str, called: str) -> ToolCallContents:
        """The writer of this call's contents: the runner's (one writer per call), or — in a turn without tools —
        one of the turn's own."""
        if self.runner is not None:
            return self.runner.contents(call_id, called)
        writer = self._writers.get(call_id)
        if writer is None:
            writer = self._writers[call_id] = ToolCallContents(call_id, called, None, self._emit_as)
        return writer

    def _emit_as(self, role: str, content: WireContent) -> None:
        self.emit(self.chat, role, content)

    # -- the turn ------------------------------------------------------------------------------------------------

    async def run(self) -> bool:
        """Run to the end; True when the model finished normally (False after an error; stops raise)."""
        CURRENT_TURN.set(self)
        try:
            await self._rounds()
        except asyncio.CancelledError:
            self._keep_partial()
            self.progress("finished", "")
            raise
        except ContextFull as exc:  # said plainly: the provider's own error (often raw JSON) helps nobody here
            self._keep_partial()
            self._note(str(exc))
            self.progress("finished", "")
            return False
        except ProviderError as exc:
            self._keep_partial()
            self._note(f"Error: {exc.message}")
            self.progress("finished", "")
            return False
        except Exception as exc:  # a bug must not leave the chat stuck in "running"
            log.exception("turn failed in chat %s", self.chat.id)
            self._keep_partial()
            self._note(f"Error: internal error ({type(exc).__name__}): {exc}")
            self.progress("finished", "")
            return False
        if self.on_success is not None:
            self.on_success()
        self.progress("finished", "")
        return True

    async def _rounds(self) -> None:
        for _ in range(self.max_rounds):
            calls = await self._round()
            if not calls or self.runner is None:
                return
            self._rounds_with_calls += 1
            await self._run_calls(calls)
            if self._blocked >= BLOCKED_CALLS_LIMIT:
                self._note("Stopped: the model kept repeating a tool call with the same result. Rephrase the "
                           "request, or name the file or command it should use.")
                return
            self._take_steer()
        self._note(f"Stopped after {self.max_rounds} tool rounds in one prompt (toolCall.maxRounds). Send another "
                   "prompt to continue.")

    def _take_steer(self) -> None:
        """The round boundary: ``chat/promptSteer`` text sent since the round began joins the history after its tool
        results, before the next request, and is shown as a user content with its id (as the reference server does;
        its ``contentId`` also makes it a rollback point). Notes of the chat's background jobs that ended by
        themselves join here too (history only, as in the reference)."""
        for note in self.chat.job_notes:  # a background job ended: the model hears it here, as in the reference
            self.chat.messages.append(UserMessage(text=note))
        self.chat.job_notes.clear()
        text, self.chat.steer = self.chat.steer, None
        if not text:
            return
        content_id = str(uuid.uuid4())
        self.chat.messages.append(UserMessage(text=text, content_id=content_id))
        self.emit(self.chat, "user", TextContent(text=text + "\n", content_id=content_id))

    async def _run_calls(self, calls: list[ToolCall]) -> None:
        """Run the round's calls in order; every call gets a result in history, even when stopped mid-way."""
        assert self.runner is not None
        done: set[str] = set()
        try:
            for call in calls:
                key = (call.name, _canonical(call.arguments))
                times, previous = self._outcomes.get(key, (0, ""))
                if times >= SAME_OUTCOME_LIMIT:
                    self._blocked += 1
                    self._note(f"Not running {strip_prefix(call.name)} again: the same call already gave the same "
                               f"result {times} times in this prompt.")
                    output = (f"Not run: this exact call already ran {times} times in this prompt with the same "
                              f"result:\n{previous[:300]}\nDo not call it again with the same arguments. Answer the "
                              "user with what you know, or try something different.")
                    self.runner.not_run(call, output)  # its card, shown since the model streamed it, is finished
                    self.chat.messages.append(
                        ToolResultMessage(tool_call_id=call.id, name=call.name, output=output, is_error=True)
                    )
                    done.add(call.id)
                    continue
                result = await self.runner.run(call)
                self.chat.messages.append(
                    ToolResultMessage(tool_call_id=call.id, name=call.name, output=result.output, is_error=result.error,
                                      images=list(result.images))
                )
                self._outcomes[key] = ((times if previous == result.output else 0) + 1, result.output)
                done.add(call.id)
        except asyncio.CancelledError:
            for call in calls:
                if call.id not in done:
                    self.chat.messages.append(
                        ToolResultMessage(tool_call_id=call.id, name=call.name, is_error=True,
                                          output="Not run: the user stopped the prompt.")
                    )
            raise

    async def _round(self) -> list[ToolCall]:
        """One provider call, its request first made to fit the context window. A provider that still finds it
        too long is answered by compacting (or trimming harder) and retrying once; then the turn ends plainly."""
        request = await self.context.fit(self._request())
        try:
            return await self._stream(request)
        except ProviderError as exc:
            if not self._overflowed(exc):
                raise
            log.info("chat %s: the request did not fit the context window (%s)", self.chat.id, exc.message)
            smaller = await self.context.recover(request, exc)
            if smaller is None:
                raise ContextFull(self.context.window.context) from None
        try:
            return await self._stream(smaller)
        except ProviderError as exc:
            if self._overflowed(exc):
                log.info("chat %s: still too long after compacting (%s)", self.chat.id, exc.message)
                raise ContextFull(self.context.window.context) from None
            raise

    def _overflowed(self, exc: ProviderError) -> bool:
        """An overflow error before the model said anything (so nothing shown has to be taken back)."""
        answer = self._assistant
        return (is_overflow(exc) and not self._text_parts
                and (answer is None or not (answer.text or answer.tool_calls or answer.reasoning)))

    def _extra(self) -> JsonObject:
        """``extraPayload`` with the chat's variant merged over it (as the reference merges them)."""
        variants = self.model.variants
        chosen = self.chat.variant if self.chat.variant in variants else self.default_variant
        payload = variant_payload(variants, chosen)
        return deep_merge(dict(self.model.extra_payload), payload) if payload else dict(self.model.extra_payload)

    def _request(self) -> ProviderRequest:
        extra = self._extra()
        if self._rounds_with_calls == 0:  # the first round: every later one follows a round with tool calls
            extra.update(self.first_round_extra)
        note = self.system_note() if self.system_note is not None else None
        # The system prompt and the tools are the same bytes in every round and prompt of the chat (the start of
        # the prompt a provider caches); the note that may change goes after them (ProviderRequest.system_note).
        return ProviderRequest(
            model=self.model.name,
            messages=list(self.chat.messages),
            system=self.system,
            system_note=note or "",
            tools=list(self.tools) if self.tool_rounds is None or self._rounds_with_calls < self.tool_rounds else [],
            max_tokens=self.context.window.output_tokens,  # self.max_tokens, unless a learned window is smaller
            reasoning=self.model.reasoning,
            extra=extra,
            extra_headers=dict(self.model.extra_headers),
            cache_key=cache_key(self.chat.id),
        )

    async def _fit_images(self, request: ProviderRequest) -> ProviderRequest:
        """The request's images as this model can take them (models/_vision.py); the chat is told once per turn about
        each new image the model cannot see or that had to be left out."""
        if not has_images(request.messages):
            return request
        policy = ImagePolicy.for_model(getattr(self.provider.inner, "api", ""), self.model.image_input, self.model.id)
        messages, notes = await asyncio.to_thread(prepare_images, request.messages, policy, self._old_images)
        for note in notes:
            if note not in self._image_notes:
                self._image_notes.add(note)
                self._note(note)
        return dataclasses.replace(request, messages=messages)

    async def _summarise(self, messages: list[Message], max_tokens: int) -> str:
        """The model's summary of ``messages`` (the last asks for it): no tools, the text only. Its tokens count in
        the chat's usage like any other request's."""
        request = ProviderRequest(
            model=self.model.name,
            messages=messages,
            system=self.system,
            max_tokens=max_tokens,
            reasoning=self.model.reasoning,
            reasoning_budget=1024 if self.model.reasoning else None,  # little thinking: the output is the summary
            extra=dict(self.model.extra_payload),
            extra_headers=dict(self.model.extra_headers),
            cache_key=cache_key(self.chat.id),
        )
        estimate = self.context.window.raw(request)
        parts: list[str] = []
        stream = self.provider.stream(request)
        closing = (contextlib.aclosing(cast(Any, stream)) if hasattr(stream, "aclose")
                   else contextlib.nullcontext(stream))
        async with closing:
            async for event in stream:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Usage):
                    self._add_usage(event)
                    self.context.window.measured(
                        estimate, event.input_tokens + event.cache_read_tokens + event.cache_write_tokens)
        return "".join(parts)

    async def _stream(self, request: ProviderRequest) -> list[ToolCall]:
        self._sent_estimate = self.context.window.raw(request)
        self._sent = request  # what the usage's context breakdown describes
        self.progress("running", "Waiting model")
        self._assistant = AssistantMessage()
        self._text_parts.clear()
        generating = False
        reasoning_started: dict[str, float] = {}
        reasoning_text: dict[str, list[str]] = {}
        tool_names: dict[str, str] = {}
        # Argument fragments of a call whose name is not known yet (some OpenAI-compatible servers name the tool in a
        # later chunk than its id): written once the call finishes with its name, so every toolCallPrepare names
        # the real tool, origin and server rather than an unknown native one.
        unnamed: dict[str, list[str]] = {}
        usage_seen = False
        guard = RepetitionGuard() if self.stop_loops else None

        batches = self.provider.batches(request)  # the events of each network read together (the hot path)
        ended = False
        async with contextlib.aclosing(cast(Any, batches)):
            async for batch in batches:
                for event in batch:
                    if not generating:
                        generating = True
                        self.progress("running", "Generating")
                    if isinstance(event, TextDelta):
                        if event.text:
                            self._text_parts.append(event.text)
                            chunk: TextChunk = {"type": "text", "text": event.text}
                            self._assistant_content(chunk)
                            if guard is not None and guard.feed(event.text):
                                self._cut_repetition(guard)
                                ended = True
                                break
                    elif isinstance(event, UrlCitation):
                        self._cite(event)
                    elif isinstance(event, ReasoningStarted):
                        reasoning_started[event.id] = time.monotonic()
                        reasoning_text[event.id] = []
                        self._assistant_content(ReasonStartedContent(id=event.id))
                    elif isinstance(event, ReasoningDelta):
                        reasoning_text.setdefault(event.id, []).append(event.text)
                        reason_chunk: ReasonTextChunk = {"type": "reasonText", "id": event.id, "text": event.text}
                        self._assistant_content(reason_chunk)
                    elif isinstance(event, ReasoningFinished):
                        started = reasoning_started.pop(event.id, time.monotonic())
                        self._assistant.reasoning.append(
                            Reasoning(
                                text="".join(reasoning_text.pop(event.id, [])),
                                signature=event.signature,
                                encrypted=event.encrypted,
                                id=event.id,
                            )
                        )
                        elapsed = int((time.monotonic() - started) * 1000)
                        self._assistant_content(ReasonFinishedContent(id=event.id, total_time_ms=elapsed))
                    elif isinstance(event, ToolCallStarted):
                        tool_names[event.id] = event.name
                    elif isinstance(event, ToolCallDelta):
                        if tool_names.get(event.id):
                            self._tool_call(event.id, tool_names[event.id]).prepare(event.arguments_delta)
                        else:
                            unnamed.setdefault(event.id, []).append(event.arguments_delta)
                    elif isinstance(event, ToolCallFinished):
                        held = unnamed.pop(event.id, None)
                        if held:
                            self._tool_call(event.id, event.name).prepare("".join(held))
                        self._assistant.tool_calls.append(ToolCall(event.id, event.name, event.arguments))
                    elif isinstance(event, Usage):
                        usage_seen = True
                        self._add_usage(event)
                        self.context.window.measured(  # calibrates the next requests' estimates
                            self._sent_estimate,
                            event.input_tokens + event.cache_read_tokens + event.cache_write_tokens)
                    elif isinstance(event, Finished):
                        self.chat.last_stop_reason = event.stop_reason
                        ended = True
                        break
                if ended:
                    break

        self._join_text()
        calls = list(self._assistant.tool_calls) if self._assistant else []
        empty = self._assistant is not None and not self._assistant.text.strip() and not calls
        self._commit_assistant()
        if usage_seen:
            self._system(self._usage_content())
        if empty:
            self._note(self._empty_answer(self.provider.finished))
        elif not calls and self.chat.last_stop_reason == "max_tokens":
            # a text cut mid-word and nothing else: the user would not know it was cut, nor why (the walk's
            # "…The cell" on the embedded model)
            self._note(f"The answer was cut at the model's output limit ({self.context.window.output_tokens:,} "
                       "tokens). Ask it to continue, or for a shorter answer.")
        return calls

    def _cut_repetition(self, guard: RepetitionGuard) -> None:
        """The reply became a loop: keep its useful start (plus one copy of the span) in history and say why it
        stopped. Closing the stream (the caller breaks out of it) ends the generation on the provider's side too."""
        assert self._assistant is not None and guard.keep is not None
        self._join_text()
        self._assistant.text = self._assistant.text[: guard.keep]
        self.chat.last_stop_reason = "repetition"
        span = " ".join((guard.span or "").split())[:40]
        self._note(f"Stopped the answer: the model kept repeating itself (“{span}”). Try asking again, more "
                   "specifically.")

    # -- bookkeeping ---------------------------------------------------------------------------------------------

    def _join_text(self) -> None:
        """Move the text chunks streamed so far into the assistant message. Chunks are collected in a list and
        joined here (at the end of a round, a cut or a stop): ``text += chunk`` on an attribute copies the whole
        text on every chunk, quadratic in a long reply."""
        if self._text_parts and self._assistant is not None:
            self._assistant.text += "".join(self._text_parts)
        self._text_parts.clear()

    def _commit_assistant(self) -> None:
        self._join_text()
        message, self._assistant = self._assistant, None
        if message is not None and (message.text or message.reasoning or message.tool_calls):
            self.chat.messages.append(message)

    def _keep_partial(self) -> None:
        """On stop or failure keep what the user already saw, so history matches the screen.

        Tool calls of an unfinished stream are dropped: they never ran, and a call without a result would make the
        next request invalid for every provider API.
        """
        if self._assistant is not None:
            self._assistant.tool_calls.clear()
        self._commit_assistant()

    def _empty_answer(self, finished: Finished | None) -> str:
        """Said in the chat when a round ends without text or tool calls, so the user isn't left with nothing."""
        reason = (finished.reason or finished.stop_reason) if finished is not None else None
        text = "The model returned an empty answer" + (f" (finish reason: {reason})" if reason else "") + "."
        if finished is not None and finished.stop_reason == "max_tokens" and self.max_tokens:
            text += f" It stopped at its output limit ({self.max_tokens} tokens)."
        return text

    def _add_usage(self, event: Usage) -> None:
        usage = self.chat.usage
        usage.input_tokens += event.input_tokens
        usage.output_tokens += event.output_tokens
        usage.cache_read_tokens += event.cache_read_tokens
        usage.cache_write_tokens += event.cache_write_tokens
        usage.last_input_tokens = event.input_tokens + event.cache_read_tokens + event.cache_write_tokens
        usage.last_output_tokens = event.output_tokens
        cost = self.model.cost(
            event.input_tokens, event.output_tokens, event.cache_read_tokens, event.cache_write_tokens
        )
        usage.last_cost = cost
        if cost is not None:
            usage.cost = (usage.cost or 0.0) + cost

    def _usage_content(self) -> UsageContent:
        usage = self.chat.usage
        last_cost = format_cost(usage.last_cost)
        limit = None
        if self.model.context_limit and self.model.output_limit:
            limit = UsageLimit(context=self.model.context_limit, output=self.model.output_limit)
        window = self.context.window
        return UsageContent(
            session_tokens=usage.session_tokens,
            last_message_cost=last_cost,
            session_cost=format_cost(usage.cost),
            limit=limit,
            # a small model is never compacted (a fixed budget instead): no threshold to show
            auto_compact_percentage=None if self.model.compact else window.auto_compact_percentage,
            context_breakdown=(context_breakdown(self._sent, usage.last_input_tokens, window.context,
                                                 window.chars_per_token) if self._sent is not None else None),
            # early-revision fields, still read by older clients
            message_input_tokens=usage.last_input_tokens,
            message_output_tokens=usage.last_output_tokens,
            message_cost=last_cost,
        )
