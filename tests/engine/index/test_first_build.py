"""An ``@`` typed right after the server started: ``chat/queryContext`` and ``chat/queryFiles`` wait (bounded) for the
workspace index's first build instead of answering from an empty index. A clean-clone run once answered ``[]``
there (a test that queried right after ``initialized``)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import eca_notebook.engine.engine as engine_module
from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.index._index import WorkspaceIndex


@pytest.fixture
def held_build(monkeypatch: pytest.MonkeyPatch):
    """The index's walk waits until the test releases it: the first build is under way for as long as the test says."""
    release = threading.Event()
    build = WorkspaceIndex._build_sync

    def held(self: WorkspaceIndex) -> None:
        assert release.wait(120), "the test never released the build"
        build(self)

    monkeypatch.setattr(WorkspaceIndex, "_build_sync", held)
    yield release
    release.set()


@pytest.fixture
async def engine(tmp_path: Path, held_build: threading.Event):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("# notes\n")
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    eng = Engine(EngineOptions(workspace_folders=[workspace], initialization_options={"localModel": False}, env=env))
    await eng.start()
    try:
        yield eng
    finally:
        held_build.set()
        await eng.aclose()


async def until_building(eng: Engine) -> None:
    deadline = asyncio.get_running_loop().time() + 120
    while eng.index is None or eng.index.status()["state"] != "building":
        assert asyncio.get_running_loop().time() < deadline, "the index build never started"
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("ask", ["files", "context"])
async def test_a_query_before_the_first_build_waits_for_it(engine: Engine, held_build: threading.Event,
                                                           ask: str) -> None:
    await until_building(engine)
    query = asyncio.create_task(engine.query_files("notes") if ask == "files" else engine.query_context("notes", []))
    for _ in range(3):
        await asyncio.sleep(0)  # the query reaches its wait (without one it would have answered from the empty index)
    assert not query.done()
    held_build.set()
    found = await asyncio.wait_for(query, 120)
    assert "notes.md" in [getattr(c, "path", "").rsplit("/", 1)[-1] for c in found]


async def test_a_build_slower_than_the_wait_answers_with_what_there_is(engine: Engine,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "_FIRST_INDEX_WAIT", 0.2)
    await until_building(engine)
    assert await asyncio.wait_for(engine.query_files("notes"), 120) == []  # not a hang: the index is still building
    assert engine.index is not None and not engine.index.ready
