"""WorkspaceManager: which folders a client may name, and one shared, once-started engine per workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from eca_notebook.engine import Engine
from eca_notebook.server._workspaces import WorkspaceError, WorkspaceManager, workspace_id_for


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "file.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    (root / "link-out").symlink_to(tmp_path / "outside")
    (root / "link-in").symlink_to(root / "a")
    return root


def test_resolve_accepts_folders_under_the_root(root):
    manager = WorkspaceManager(root)
    assert manager.resolve(None) == root.resolve()
    assert manager.resolve("") == root.resolve()
    assert manager.resolve("a/b") == (root / "a" / "b").resolve()
    assert manager.resolve("a/b/../../a") == (root / "a").resolve()
    assert manager.resolve(str(root / "a")) == (root / "a").resolve()
    assert manager.resolve((root / "a" / "b").as_uri()) == (root / "a" / "b").resolve()
    assert manager.resolve("link-in") == (root / "a").resolve()  # a symlink that stays inside is fine


@pytest.mark.parametrize("path", ["..", "../outside", "link-out", "/", "missing", "file.txt", "a\x00b",
                                  "file://otherhost/tmp"])
def test_resolve_refuses_everything_else(root, path):
    with pytest.raises(WorkspaceError):
        WorkspaceManager(root).resolve(path)


def test_resolve_refuses_absolute_paths_outside(root, tmp_path):
    with pytest.raises(WorkspaceError, match="outside the server root"):
        WorkspaceManager(root).resolve(str(tmp_path / "outside"))
    with pytest.raises(WorkspaceError, match="outside the server root"):
        WorkspaceManager(root).resolve((tmp_path / "outside").as_uri())


def test_register_is_idempotent_and_the_id_is_stable(root):
    manager = WorkspaceManager(root)
    a, b = manager.resolve("a"), manager.resolve("a/b")
    first = manager.register([a, b])
    assert manager.register([b, a]) is first  # the id does not depend on the order
    assert first.id == workspace_id_for([a, b]) == WorkspaceManager(root).register([a, b]).id
    assert [w.path for w in manager.list()] == ["", "a"]
    assert first.describe(default=False)["folders"] == ["a", "a/b"]
    assert manager.get(first.id) is first and manager.get("nope") is None
    assert manager.default.describe(default=True)["path"] == ""


class CountingEngine(Engine):
    starts = 0

    async def start(self) -> None:
        type(self).starts += 1
        await asyncio.sleep(0.05)  # a slow model discovery: concurrent callers must all wait for it
        await super().start()


async def test_one_engine_per_workspace_started_once(root, eca_env):
    CountingEngine.starts = 0
    manager = WorkspaceManager(root, engine_factory=CountingEngine)
    workspace = manager.default
    assert workspace.state == "stopped"
    engines = await asyncio.gather(*(manager.ready(workspace) for _ in range(5)))
    assert all(e is engines[0] for e in engines) and CountingEngine.starts == 1
    assert workspace.state == "running" and engines[0].registry.models()
    other = await manager.ready(manager.register_path("a"))
    assert other is not engines[0] and [p.name for p in other.workspace_folders] == ["a"]
    await manager.aclose()
    assert engines[0]._closed and other._closed and workspace.engine is None
    await manager.aclose()  # idempotent
    with pytest.raises(RuntimeError):
        await manager.ready(workspace)


# -- idle engines are released and come back on demand ----------------------------------------------------------------


async def test_an_idle_engine_is_released_and_comes_back_with_its_saved_chats(root, eca_env):
    manager = WorkspaceManager(root, idle_timeout=0.2)
    workspace = manager.default
    engine = await manager.ready(workspace)
    engine.create_chat("kept", title="a chat worth keeping")
    # The watch releases it once nothing has used it for the timeout (a condition, with a generous guard).
    for _ in range(400):
        if workspace.engine is None:
            break
        await asyncio.sleep(0.05)
    assert workspace.engine is None and workspace.state == "stopped" and engine._closed
    again = await manager.ready(workspace)  # on demand: a new engine, which finds the chat on disk
    assert again is not engine
    assert [c.id for c in again.list_chats()] == ["kept"]
    assert again.get_chat("kept").title == "a chat worth keeping"
    await manager.aclose()


async def test_an_engine_in_use_is_not_released(root, eca_env):
    manager = WorkspaceManager(root, idle_timeout=1000)
    workspace = manager.default
    engine = await manager.ready(workspace)
    workspace.last_used -= 2000  # long unused...
    workspace.connections = 1  # ...but a client is attached
    assert await manager.release_idle() == [] and workspace.engine is engine
    workspace.connections = 0
    engine.pending_approvals[("c", "t")] = object()  # a tool call waits for an answer
    assert await manager.release_idle() == [] and workspace.engine is engine
    engine.pending_approvals.clear()
    job = await engine.jobs.start("sleep 300", cwd=str(root), env={}, chat_id="c")  # a background job runs
    assert await manager.release_idle() == [] and workspace.engine is engine
    await engine.jobs.kill(job.id)
    manager.engine_for(workspace)  # a call (REST, a new socket) restarts the clock
    assert await manager.release_idle() == [] and workspace.engine is engine
    workspace.last_used -= 2000
    assert await manager.release_idle() == [workspace] and workspace.engine is None
    await manager.aclose()


async def test_idle_release_can_be_turned_off(root, eca_env):
    manager = WorkspaceManager(root, idle_timeout=0)
    engine = await manager.ready(manager.default)
    manager.default.last_used -= 10**6
    assert await manager.release_idle() == [] and manager.default.engine is engine
    await manager.aclose()
