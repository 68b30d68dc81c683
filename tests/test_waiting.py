"""The suite's one way to wait (tests/_waiting.py): it returns the condition's value, awaits an async check, and
fails with the thing it waited for — a helper that never failed would make every test using it unable to fail."""

from __future__ import annotations

import pytest

from tests._waiting import until, wait_until


async def test_until_returns_the_value_once_the_condition_holds() -> None:
    calls = []

    def condition() -> object:
        calls.append(1)
        return len(calls) >= 3 and "ready"

    assert await until(condition) == "ready"
    assert len(calls) == 3


async def test_until_awaits_an_async_check() -> None:
    async def check() -> bool:
        return True

    assert await until(check) is True


async def test_until_fails_naming_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match="the index built: not reached in 0 s"):
        await until(lambda: False, timeout=0.05, what="the index built")


def test_wait_until_blocks_and_fails_alike() -> None:
    assert wait_until(lambda: 7) == 7
    with pytest.raises(AssertionError, match="a job: not reached"):
        wait_until(lambda: None, timeout=0.05, what="a job")
