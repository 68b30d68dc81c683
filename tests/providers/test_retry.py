from __future__ import annotations

import random
from email.utils import formatdate

import pytest

from eca_notebook.providers._retry import backoff_delay, is_retryable_status, parse_retry_after


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
def test_retryable(status):
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 501])
def test_not_retryable(status):
    assert not is_retryable_status(status)


def test_retry_after_seconds_and_ms():
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "1"}) == 0.25
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None


def test_retry_after_http_date():
    now = 1_700_000_000.0
    header = formatdate(now + 42, usegmt=True)
    assert parse_retry_after({"retry-after": header}, now=now) == pytest.approx(42, abs=1)
    assert parse_retry_after({"retry-after": formatdate(now - 100, usegmt=True)}, now=now) == 0.0


def test_backoff_grows_with_jitter_and_is_capped():
    rng = random.Random(1)
    for attempt in range(6):
        step = min(8.0, 0.5 * 2**attempt)
        delay = backoff_delay(attempt, 0.5, 8.0, rng)
        assert step / 2 <= delay <= step
    low = backoff_delay(3, 1.0, 30.0, _Fixed(0.0))
    high = backoff_delay(3, 1.0, 30.0, _Fixed(1.0))
    assert (low, high) == (4.0, 8.0)


class _Fixed(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value
