"""Logging that never blocks (eca_notebook/_logging.py): a bounded queue that drops and counts, and the throttle for
log lines caused by a peer's bad input. The subprocess behaviour (a stderr nobody reads) is in
tests/e2e/test_server_logging.py."""

from __future__ import annotations

import logging
import threading

import pytest

from eca_notebook import _logging
from eca_notebook._logging import Throttle, configure_logging


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    _logging._shutdown()
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)


def test_a_stuck_writer_makes_logging_drop_and_count_instead_of_block(restore_logging, tmp_path, monkeypatch):
    released = threading.Event()
    entered = threading.Event()
    log_file = tmp_path / "out.log"
    configure_logging("info", str(log_file))
    target = _logging._state["target"]
    original_emit = target.emit

    def stuck_emit(record):  # the writer thread blocks, as on a full stderr pipe
        entered.set()
        released.wait(60)
        original_emit(record)

    monkeypatch.setattr(target, "emit", stuck_emit)
    log = logging.getLogger("eca_notebook.test")
    log.warning("first")
    assert entered.wait(60)
    for i in range(_logging.QUEUE_SIZE + 250):  # never waits: the queue is bounded
        log.warning("record %d", i)
    assert _logging.dropped_count() >= 250

    released.set()
    monkeypatch.setattr(target, "emit", original_emit)
    _logging._state["listener"].queue.join()  # the writer catches up…
    log.warning("after")  # …and the next record is preceded by the count
    _logging._shutdown()  # drains the queue
    text = log_file.read_text()
    assert "log message(s) dropped" in text and "after" in text
    assert text.count("WARNING eca_notebook.test: record") == _logging.QUEUE_SIZE  # the queue's worth, no more


def test_records_are_redacted_in_the_file(restore_logging, tmp_path):
    from eca_notebook._redact import add_secrets

    add_secrets(["file-log-secret-31"])
    log_file = tmp_path / "out.log"
    configure_logging("debug", str(log_file))
    logging.getLogger("eca_notebook.test").info("url http://u:pw@h/x key %s", "file-log-secret-31")
    _logging._shutdown()
    text = log_file.read_text()
    assert "url http://***@h/x key ***" in text and "file-log-secret-31" not in text


def test_throttle_allows_the_first_then_one_per_interval_with_the_suppressed_count(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(_logging.time, "monotonic", lambda: now[0])
    throttle = Throttle(interval=10, max_keys=2)
    assert throttle.allow("a") == (True, 0)
    assert [throttle.allow("a") for _ in range(5)] == [(False, 0)] * 5
    assert throttle.allow("b") == (True, 0)  # keys are independent
    now[0] += 10
    assert throttle.allow("a") == (True, 5)
    throttle.allow("c")  # a third key evicts the oldest: memory stays bounded
    assert len(throttle._seen) == 2


def test_throttled_warning_mentions_what_was_suppressed(monkeypatch, caplog):
    now = [0.0]
    monkeypatch.setattr(_logging.time, "monotonic", lambda: now[0])
    throttle = Throttle(interval=1)
    log = logging.getLogger("eca_notebook.test.throttle")
    with caplog.at_level(logging.WARNING, logger=log.name):
        for _ in range(4):
            throttle.warning(log, "k", "bad frame: %s", "x")
        now[0] = 5
        throttle.warning(log, "k", "bad frame: %s", "y")
    assert [r.getMessage() for r in caplog.records] == ["bad frame: x",
                                                        "bad frame: y (3 similar message(s) suppressed)"]
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in caplog.records)
