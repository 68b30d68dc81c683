"""When and how long to wait before retrying a provider request.

Pure functions, no I/O: the HTTP loop in :mod:`._http` asks "is this status worth retrying?" and "how long do I
wait?", and these answers are easy to test on their own. Retries only ever happen before the first stream event
reached the engine — once the user has seen text, a retry would duplicate it.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

# 529 is Anthropic's "overloaded"; the others are the usual transient statuses.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504, 529})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP-date).

    ``retry-after-ms`` (OpenAI, Anthropic) is more precise and wins. Returns ``None`` when absent or unreadable.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_delay(attempt: int, base: float, maximum: float, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter for retry number ``attempt`` (0 for the first retry).

    The jitter (50–100 % of the exponential step) keeps many clients that failed together from retrying together.
    """
    step = min(maximum, base * (2.0**attempt))
    r = (rng or random).random()
    return step * (0.5 + 0.5 * r)
