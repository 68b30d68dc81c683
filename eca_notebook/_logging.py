"""Logging that can never block the server, never prints a secret, and cannot be flooded by bad input.

Why: the stdio server's stderr is a pipe owned by the editor. An editor that never drains it fills the pipe (64 KB
on Linux) and a plain ``StreamHandler`` then blocks in ``write`` — on the event loop, so no request is answered
again. Here records only ever go into a bounded queue (``put_nowait``); one background thread writes them out. When
the writer is stuck the queue fills up and further records are *dropped and counted*; the count is reported as a
warning once the writer moves again.

The writer for stderr uses ``os.write`` on a private duplicate of fd 2 and no Python-level lock: a thread stuck in
that write can be abandoned at exit (it is a daemon thread) without ``logging.shutdown`` or the interpreter's final
flush of ``sys.stderr`` waiting on a lock it holds.

Stdlib only, like :mod:`eca_notebook._redact`: every layer may use :class:`Throttle`.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import os
import queue
import sys
import threading
import time
from typing import Any

from ._redact import RedactingFilter

__all__ = ["QUEUE_SIZE", "Throttle", "configure_logging", "dropped_count"]

QUEUE_SIZE = 1000  # records waiting for the writer; beyond this they are dropped (and counted)
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_STOP_WAIT = 2.0  # seconds the exit handler lets the writer drain before abandoning it

_state: dict[str, Any] = {}


class _DroppingQueueHandler(logging.handlers.QueueHandler):
    """Puts records on a bounded queue without ever waiting; counts what did not fit."""

    def __init__(self, q: queue.Queue[Any]) -> None:
        super().__init__(q)
        self.dropped = 0
        self._count_lock = threading.Lock()

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            with self._count_lock:
                self.dropped += 1

    def take_dropped(self) -> int:
        with self._count_lock:
            dropped, self.dropped = self.dropped, 0
        return dropped


class _FdHandler(logging.Handler):
    """Writes formatted records to a file descriptor with ``os.write``; only the queue's one thread calls it."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def handle(self, record: logging.LogRecord) -> bool:  # no handler lock: see the module docstring
        if not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        try:
            data = memoryview((self.format(record) + "\n").encode("utf-8", "backslashreplace"))
            while data:
                data = data[os.write(self.fd, data):]
        except Exception:  # a closed or broken stderr: nothing sensible left to report to
            pass


class _Listener(logging.handlers.QueueListener):
    """Reports how many records were dropped before the next one it writes."""

    def __init__(self, q: queue.Queue[Any], handler: logging.Handler, producer: _DroppingQueueHandler) -> None:
        super().__init__(q, handler, respect_handler_level=False)
        self._producer = producer

    def handle(self, record: logging.LogRecord) -> None:
        dropped = self._producer.take_dropped()
        if dropped:
            note = logging.LogRecord("eca_notebook.logging", logging.WARNING, __file__, 0,
                                     "%d log message(s) dropped: the log output was not being read fast enough",
                                     (dropped,), None)
            super().handle(note)
        super().handle(record)


def configure_logging(level: str | int = "warning", log_file: str | None = None) -> None:
    """Route the root logger through a bounded queue to stderr (or *log_file*), every record redacted.

    Idempotent: a second call replaces the first configuration.
    """
    _shutdown()
    if log_file:
        target: logging.Handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        try:
            target = _FdHandler(os.dup(sys.stderr.fileno()))
        except (AttributeError, OSError, ValueError):  # no real stderr (embedded, pythonw): best effort
            target = logging.StreamHandler(sys.stderr)
    target.setFormatter(logging.Formatter(_FORMAT))
    target.addFilter(RedactingFilter())  # in the writer thread: costs the event loop nothing
    records: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_SIZE)
    producer = _DroppingQueueHandler(records)
    listener = _Listener(records, target, producer)
    listener.start()
    root = logging.getLogger()
    root.handlers[:] = [producer]
    numeric = level if isinstance(level, int) else getattr(logging, str(level).upper(), logging.INFO)
    root.setLevel(numeric if isinstance(numeric, int) else logging.INFO)
    # httpx logs full request lines at INFO; keep them out unless debugging.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    logging.captureWarnings(True)  # warnings.warn would otherwise write to sys.stderr directly, and block
    _state.update(listener=listener, producer=producer, target=target)
    if not _state.get("atexit"):
        atexit.register(_shutdown)
        _state["atexit"] = True


def dropped_count() -> int:
    """Records dropped and not yet reported (for tests and diagnostics)."""
    producer = _state.get("producer")
    return producer.dropped if producer is not None else 0


def _shutdown() -> None:
    """Let the writer drain for a moment, then leave it: a stuck stderr must not keep the process from exiting."""
    listener: _Listener | None = _state.pop("listener", None)
    producer = _state.pop("producer", None)
    target = _state.pop("target", None)
    if listener is None:
        return
    root = logging.getLogger()
    if producer in root.handlers:
        root.removeHandler(producer)
    try:
        listener.queue.put(listener._sentinel, timeout=_STOP_WAIT)  # type: ignore[attr-defined]
    except queue.Full:
        return
    thread = listener._thread
    if thread is not None:
        thread.join(_STOP_WAIT)
        if thread.is_alive():
            return
    listener._thread = None
    if isinstance(target, _FdHandler):
        try:
            os.close(target.fd)
        except OSError:
            pass
    elif target is not None:
        target.close()


class Throttle:
    """Rate limiting for log lines caused by a peer's bad input (malformed frames, bad params).

    ``allow(key)`` is true for the first occurrence of *key* and then at most once per *interval* seconds; it also
    returns how many occurrences were suppressed since the last allowed one, so the message can say so. Memory is
    bounded: at most *max_keys* keys are remembered.
    """

    def __init__(self, interval: float = 10.0, max_keys: int = 256) -> None:
        self.interval = interval
        self.max_keys = max_keys
        self._seen: dict[str, list[float | int]] = {}  # key -> [last allowed time, suppressed since]

    def allow(self, key: str) -> tuple[bool, int]:
        now = time.monotonic()
        entry = self._seen.get(key)
        if entry is None:
            if len(self._seen) >= self.max_keys:
                self._seen.pop(next(iter(self._seen)))
            self._seen[key] = [now, 0]
            return True, 0
        if now - entry[0] >= self.interval:
            suppressed = int(entry[1])
            entry[0], entry[1] = now, 0
            return True, suppressed
        entry[1] += 1
        return False, 0

    def warning(self, logger: logging.Logger, key: str, message: str, *args: Any) -> None:
        """``logger.warning(message, *args)`` unless throttled; never with a traceback."""
        allowed, suppressed = self.allow(key)
        if not allowed:
            return
        if suppressed:
            message += " (%d similar message(s) suppressed)"
            args = (*args, suppressed)
        logger.warning(message, *args)
