"""The process that runs a local GGUF model: llama.cpp's OpenAI-compatible server in a child process.

One :class:`LocalRuntime` per model file (:func:`.local.get_local_runtime` keeps them process-wide). The child
(:mod:`._local_server`; see there why a process and not a thread) listens on 127.0.0.1, on a port the OS picks, and
requires a random API key, so other local users can't borrow it. It is started lazily, by the first request that
needs it, from a short-lived thread so no event loop ever waits on the load; every caller — from any event loop or
thread — awaits the same start, so concurrent first uses load the model once. :meth:`LocalRuntime.aclose` stops it
(port closed, no process or thread of ours left); the child also exits by itself when this process dies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

_SERVER_SCRIPT = Path(__file__).with_name("_local_server.py")


@dataclass(frozen=True)
class LoadProgress:
    """A notice while the runtime starts: ``loading`` (then ``ready`` or ``failed``). ``elapsed`` is in seconds."""

    stage: Literal["loading", "ready", "failed"]
    message: str
    elapsed: float = 0.0


ProgressCallback = Callable[[LoadProgress], None | Awaitable[None]]


class LocalRuntimeError(RuntimeError):
    """The runtime could not be started (its message is meant for the user)."""


class LocalRuntime:
    """One llama.cpp server child process for one model file; see the module docstring.

    Safe to use from several event loops and threads: state is guarded by a thread lock and a start in progress
    is a :class:`concurrent.futures.Future` every caller awaits.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        label: str | None = None,
        n_ctx: int = 0,
        threads: int | None = None,
        batch_threads: int | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        self.model_path = str(model_path)
        self.label = label or Path(self.model_path).stem  # for messages: "Loading local model <label>…"
        self.n_ctx = n_ctx  # 0: the model's training context
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
    def generation(self) -> int:
        """Bumped by every :meth:`aclose`: a caller that saw one value and now sees another knows it was stopped
        on purpose (and mustn't restart it)."""
        return self._epoch

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
        await _notify(progress, LoadProgress("loading", f"Loading local model {self.label}…"))
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
            log.info("local model %s loaded in %.2f s at %s (pid %d)", self.label, self.start_seconds, url, proc.pid)
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

    async def exited(self, within: float) -> bool:
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
