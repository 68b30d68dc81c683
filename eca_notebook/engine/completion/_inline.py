"""``completion/inline``: one suggestion at the cursor, fast, cancellable, superseded by the next keystroke.

How a request goes (:meth:`InlineCompleter.complete`):

1. **Supersession.** A newer request for the same document from the same client — the same ``path`` on the same
   connection (any request of that connection when it sent no path) — ends the older one at once: its model call
   is cancelled (the HTTP stream closed, so the server stops generating) and it answers ``{error: {type: "info",
   message: "superseded"}}``. ``$/cancelRequest`` ends a request the same way but answers with JSON-RPC's "request
   cancelled" error, as LSP clients expect. Two clients (two tabs on one notebook) never end each other's.
2. **The model** (:func:`completion_model`): ``completion.model``, else a fast model of the chat's provider, else the
   chat's default model, else the embedded model.
3. **How it is asked** (:func:`completion_mode`): *fill-in-the-middle* — prefix and suffix to a raw completion
   endpoint (Ollama ``/api/generate``; OpenAI-compatible ``/v1/completions`` with ``completion.fim: true``); a *raw*
   continuation of the prefix (the embedded model, which has no FIM tokens); or a *chat* prompt with the cursor
   marked ``<ECA_TAG>`` (the reference server's way; every other provider). An ``auto`` FIM the server refuses
   (HTTP 400/404/405/501) falls back to the chat prompt for the rest of the session.
4. **Budgets**: windows of the text before and after the cursor, the client's extra ``context`` (preceding cells,
   live variables), a token cap; smaller for the embedded model, whose prompt reading dominates its latency.
5. **Streamed and cut** (:class:`~._inline_text.Trim`): the request stops reading as soon as the block around the
   cursor is complete (a blank line, a dedent), so a model that would go on for 200 tokens costs the first 20.

A model's failure or timeout is an answer (``{error: {type: "warning", message}}``), never a JSON-RPC error: an
editor shows it quietly. Nothing here blocks the event loop: the model is reached over async HTTP (the embedded one
runs in its own process) and the text work is a few string operations on bounded windows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass
from typing import Any, Literal

from ...protocol import (
    CompletionInlineError,
    CompletionInlineItem,
    CompletionInlineParams,
    CompletionInlineResult,
    InlinePosition,
    InlineRange,
)
from ...providers import local as _local
from ...providers.base import CompletionRequest, ProviderError, ProviderRequest, TextDelta, UserMessage
from ..config import ModelInfo
from ..models import ModelChoice, UnknownModel
from ._text import TAG, Cursor, Trim, locate, prefix_window, split_trailing_space, suffix_window

__all__ = [
    "FAST_MODELS",
    "INLINE_COMPLETION_PROMPT",
    "Budgets",
    "InlineCompleter",
    "completion_mode",
    "completion_model",
]

log = logging.getLogger(__name__)

#: The completion model when ``completion.model`` is unset and the chat's default model is of this provider.
FAST_MODELS = {"openai": "gpt-4.1-mini", "anthropic": "claude-haiku-4-5"}

# The reference server's inline-completion prompt (resources/prompts/inline_completion.md), with its tag.
INLINE_COMPLETION_PROMPT = f"""You are ECA Code Completer, an editor-native code completion engine.

## Objective

Given user code with {TAG}, generate the correct and useful text that the developer would likely write replacing that \
tag. Output only the text that directly replaces the ECA tag.

## Core rules

- Keep completions concise and safe: prefer 1–5 lines that compile, end at a natural boundary, and do not over-start \
or over-close scopes.
- Match file style exactly: respect indentation, naming conventions, import/usings syntax, quotes, semicolons, \
docstring format, and line wrapping.
- Favor in-scope symbols over inventing new ones; use existing helpers, types, and constants whenever possible.
- If unsure, prefer a short, syntactically valid snippet to a longer guess.
- Infer language from context and fully adhere to its language and framework conventions.
- Never output placeholders or boilerplate such as TODO, FIXME, or lorem ipsum.
- Never repeat the code before or after the tag; output no explanation and no markdown fences.
- Pay attention on spaces after adding newlines to match the resulting code indentation."""

Mode = Literal["fim", "raw", "chat"]
_FIM_REFUSED = (400, 404, 405, 422, 501)  # a server without (that kind of) raw completion


@dataclass(frozen=True)
class Budgets:
    """What the model is shown and may produce (see ``completion`` in the config schema)."""

    prefix_chars: int
    prefix_lines: int
    suffix_chars: int
    suffix_lines: int
    context_chars: int
    max_tokens: int


# The embedded model reads ~1k tokens/s on two cores: its prompt is kept short (≈ 600 tokens) so a suggestion
# comes back in well under a second; it cannot use the suffix (no FIM tokens).
_LOCAL_BUDGETS = Budgets(prefix_chars=1500, prefix_lines=40, suffix_chars=0, suffix_lines=0, context_chars=600,
                         max_tokens=48)
_DEFAULT_BUDGETS = Budgets(prefix_chars=6000, prefix_lines=150, suffix_chars=2000, suffix_lines=50,
                           context_chars=4000, max_tokens=160)


def completion_model(models: ModelChoice) -> str | None:
    """``completion.model``; else, for the chat's default model's provider, its fast model (:data:`FAST_MODELS`)
    when offered; else the chat's default model (an Ollama or OpenAI-compatible model serves both); else None. With
    nothing configured and no key, the chat's default *is* the embedded model: the offline default."""
    configured = models.config.completion.model
    if configured:
        return configured
    registry = models.registry
    infos = registry.model_infos()
    chat = models.selected_model if models.selected_model in infos else registry.default_model()
    if chat is None:
        return None
    fast = FAST_MODELS.get(infos[chat].provider)
    if fast is not None and f"{infos[chat].provider}/{fast}" in infos:
        return f"{infos[chat].provider}/{fast}"
    return chat


def completion_mode(provider: Any, info: ModelInfo, fim: bool | str, refused: set[str]) -> Mode:
    """How to ask this model: ``raw`` (the embedded model), ``fim`` (a provider with raw completion, where allowed:
    Ollama unless ``fim`` is false; an OpenAI-compatible server only with ``fim: true``), else ``chat``."""
    if info.provider == _local.PROVIDER_ID:
        return "raw"
    if fim is False or not callable(getattr(provider, "complete", None)) or info.id in refused:
        return "chat"
    api = getattr(getattr(provider, "settings", None), "api", None)
    if api == "ollama" or fim is True:
        return "fim"
    return "chat"


@dataclass
class _Running:
    task: asyncio.Task[Any] | None
    superseded: bool = False


class InlineCompleter:
    """The engine's ``completion/inline``: one per engine, shared by its connections; it sees only the model choice."""

    def __init__(self, models: ModelChoice) -> None:
        self._models = models
        self._running: dict[Hashable, _Running] = {}
        self._fim_refused: set[str] = set()  # model ids whose server refused raw completion (auto mode)
        self.last_mode: Mode | None = None  # how the last request asked (tests and benchmarks read it)

    def model(self) -> str | None:
        """The model ``completion/inline`` would ask now (:func:`completion_model`); None when none is configured —
        what a door's handshake advertises as ``code_completion``."""
        return completion_model(self._models)

    async def complete(self, params: CompletionInlineParams, origin: object | None = None) -> CompletionInlineResult:
        """Answer one request (see the module docstring); supersedes the document's older request."""
        # one document of one client: two tabs on the same notebook never end each other's requests
        key: Hashable = (id(origin), params.path)
        mine = _Running(asyncio.current_task())
        older = self._running.get(key)
        self._running[key] = mine
        if older is not None and older.task is not None and not older.task.done():
            older.superseded = True
            older.task.cancel()
        try:
            timeout = self._models.config.completion.timeout_seconds
            try:
                async with asyncio.timeout(timeout):
                    return await self._complete(params)
            except TimeoutError:
                return _error("warning", f"No suggestion within {timeout:g} s (completion.timeoutSeconds).")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if mine.superseded and task is not None and task.cancelling() <= 1:
                task.uncancel()
                return _error("info", "superseded")
            raise
        finally:
            if self._running.get(key) is mine:
                del self._running[key]

    # -- one request -------------------------------------------------------------------------------------------

    async def _complete(self, params: CompletionInlineParams) -> CompletionInlineResult:
        models = self._models
        model_id = completion_model(models)
        if model_id is None:
            return _error("warning", models.registry.missing_key_hint())
        try:
            provider, info = models.registry.resolve(model_id)
        except UnknownModel:
            return _error("warning", f"Unknown completion model '{model_id}' (completion.model); available: "
                                     f"{', '.join(models.registry.models()) or 'none'}.")
        cursor = locate(params.doc_text, params.position.line, params.position.character)
        budgets = self._budgets(info)
        mode = completion_mode(provider, info, models.config.completion.fim, self._fim_refused)
        started = time.perf_counter()
        try:
            if mode != "chat":
                try:
                    text = await self._raw(provider, info, cursor, params.context, budgets, fim=mode == "fim")
                except ProviderError as exc:
                    if not (mode == "fim" and models.config.completion.fim == "auto"
                            and exc.status in _FIM_REFUSED):
                        raise
                    log.info("completion: %s refused fill-in-the-middle (%s); asking by chat from now on",
                             info.id, exc.message)
                    self._fim_refused.add(info.id)
                    mode = "chat"
            if mode == "chat":
                text = await self._chat(provider, info, cursor, params, budgets)
        except ProviderError as exc:
            log.info("completion with %s failed: %s", info.id, exc.message)
            return _error("warning", exc.message)
        self.last_mode = mode
        log.debug("completion: %s by %s in %.0f ms", info.id, mode, (time.perf_counter() - started) * 1000)
        if not text.strip():
            return _error("info", "No suggestions found")
        position = InlinePosition(line=params.position.line, character=params.position.character)
        item = CompletionInlineItem(id=uuid.uuid4().hex[:12], text=text,
                                    range=InlineRange(start=position, end=position), doc_version=params.doc_version)
        return CompletionInlineResult(items=[item])

    def _budgets(self, info: ModelInfo) -> Budgets:
        base = _LOCAL_BUDGETS if info.provider == _local.PROVIDER_ID or info.compact else _DEFAULT_BUDGETS
        c = self._models.config.completion

        def pick(value: int | None, default: int) -> int:
            return default if value is None else value

        return Budgets(
            prefix_chars=pick(c.prefix_chars, base.prefix_chars),
            prefix_lines=pick(c.prefix_lines, base.prefix_lines),
            suffix_chars=pick(c.suffix_chars, base.suffix_chars),
            suffix_lines=pick(c.suffix_lines, base.suffix_lines),
            context_chars=pick(c.context_chars, base.context_chars),
            max_tokens=pick(c.max_tokens, base.max_tokens),
        )

    async def _raw(self, provider: Any, info: ModelInfo, cursor: Cursor, context: str | None, budgets: Budgets,
                   *, fim: bool) -> str:
        prefix, trailing = split_trailing_space(prefix_window(cursor.prefix, budgets.prefix_chars,
                                                              budgets.prefix_lines))
        extra = _clip_context(context, budgets.context_chars)
        if extra:
            prefix = extra + "\n\n" + prefix
        suffix = suffix_window(cursor.suffix, budgets.suffix_chars, budgets.suffix_lines) if fim else ""
        trim = Trim(cursor, cursor.suffix, trailing=trailing)
        request = CompletionRequest(
            model=info.name,
            prefix=prefix,
            suffix=suffix,
            max_tokens=budgets.max_tokens,
            temperature=self._models.config.completion.temperature or 0.0,
            stop=["\n"] if trim.single_line else ["\n\n"],
            extra_headers=dict(info.extra_headers),
        )
        return await _collect(provider.complete(request), trim)

    async def _chat(self, provider: Any, info: ModelInfo, cursor: Cursor, params: CompletionInlineParams,
                    budgets: Budgets) -> str:
        prefix = prefix_window(cursor.prefix, budgets.prefix_chars, budgets.prefix_lines)
        suffix = suffix_window(cursor.suffix, budgets.suffix_chars, budgets.suffix_lines)
        parts = []
        if params.path:
            parts.append(f"File: {params.path}")
        extra = _clip_context(params.context, budgets.context_chars)
        if extra:
            parts.append(f"What comes before this code (context only, never repeat it):\n{extra}")
        parts.append(prefix + TAG + suffix)
        request = ProviderRequest(
            model=info.name,
            messages=[UserMessage("\n\n".join(parts))],
            system=INLINE_COMPLETION_PROMPT,
            max_tokens=budgets.max_tokens,
            temperature=self._models.config.completion.temperature,
            reasoning=False,
            extra=dict(info.extra_payload),
            extra_headers=dict(info.extra_headers),
        )

        async def text() -> AsyncIterator[str]:
            stream = provider.stream(request)
            async with contextlib.aclosing(stream):  # closed at once when the suggestion is complete
                async for event in stream:
                    if isinstance(event, TextDelta):
                        yield event.text

        return await _collect(text(), Trim(cursor, cursor.suffix, chat=True))


async def _collect(pieces: AsyncIterator[str], trim: Trim) -> str:
    """Read the model's pieces until the suggestion is complete (the stream is then closed: generation stops)."""
    text = ""
    try:
        async for piece in pieces:
            text += piece
            suggestion, ended = trim.apply(text)
            if ended:
                return suggestion
    finally:
        closing = getattr(pieces, "aclose", None)
        if closing is not None:
            with contextlib.suppress(Exception):
                await closing()
    return trim.apply(text, final=True)[0]


def _clip_context(context: str | None, budget: int) -> str:
    """The end of the client's context (the nearest cells last), cut at a line start."""
    if not context or budget <= 0:
        return ""
    context = context.strip("\n")
    if len(context) <= budget:
        return context
    clipped = context[-budget:]
    newline = clipped.find("\n")
    return clipped[newline + 1:] if 0 <= newline < len(clipped) - 1 else clipped


def _error(kind: Literal["info", "warning", "error"], message: str) -> CompletionInlineResult:
    return CompletionInlineResult(error=CompletionInlineError(type=kind, message=message))
