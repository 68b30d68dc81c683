"""BackgroundTasks: tasks are kept until done, failures logged once with the owner's name, close cancels and waits."""

from __future__ import annotations

import asyncio
import logging

import pytest

from eca_notebook._tasks import BackgroundTasks


async def test_keeps_logs_and_closes(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks("probe")
    release = asyncio.Event()
    finished: list[str] = []

    async def waits() -> None:
        await release.wait()

    async def fails() -> None:
        raise RuntimeError("boom")

    blocked = tasks.spawn(waits(), "waits")
    with caplog.at_level(logging.ERROR):
        failed = tasks.spawn(fails(), "fails", on_done=lambda t: finished.append(t.get_name()))
        await asyncio.wait([failed])
        await asyncio.sleep(0)  # done callbacks run on the next loop iteration
    assert finished == ["fails"]
    assert len(tasks) == 1 and list(tasks) == [blocked]
    assert any("probe: task fails failed" in r.getMessage() for r in caplog.records)

    await tasks.aclose()
    assert blocked.cancelled() and len(tasks) == 0


async def test_expected_errors_are_not_logged_as_errors(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks("probe", ignore=(ValueError,))

    async def expected() -> None:
        raise ValueError("the peer saw it")

    with caplog.at_level(logging.DEBUG):
        task = tasks.spawn(expected(), "expected")
        await asyncio.wait([task])
        await asyncio.sleep(0)
    assert [r.levelno for r in caplog.records if "expected" in r.getMessage()] == [logging.DEBUG]


async def test_close_skips_the_calling_task() -> None:
    tasks = BackgroundTasks("probe")

    async def closes_its_own_set() -> str:
        await tasks.aclose()
        return "closed"

    task = tasks.spawn(closes_its_own_set(), "closer")
    assert await task == "closed"
