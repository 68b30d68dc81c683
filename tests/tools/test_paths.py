from __future__ import annotations

from pathlib import Path

from eca_notebook.tools._paths import display, is_inside, resolve, workspace_of
from eca_notebook.tools.base import ToolContext

from .conftest import write


def test_relative_paths_resolve_against_the_root(ws: Path, ctx: ToolContext) -> None:
    assert resolve("src/a.py", ctx) == ws.resolve() / "src" / "a.py"
    assert resolve(".", ctx) == ws.resolve()


def test_home_is_expanded(ctx: ToolContext, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", "/tmp")
    assert resolve("~/x.txt", ctx) == Path("/tmp/x.txt").resolve()


def test_dotdot_escape_is_outside(ws: Path, ctx: ToolContext) -> None:
    p = resolve("sub/../../outside.txt", ctx)
    assert p == ws.resolve().parent / "outside.txt"
    assert not is_inside(p, ctx.workspace_folders)
    assert is_inside(resolve("sub/../inside.txt", ctx), ctx.workspace_folders)


def test_absolute_path_outside(ctx: ToolContext) -> None:
    assert not is_inside(resolve("/etc/passwd", ctx), ctx.workspace_folders)


def test_symlink_inside_pointing_outside_is_outside(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    secret = write(tmp_path / "secret/key.txt", "k")
    (ws / "innocent").symlink_to(secret.parent, target_is_directory=True)
    p = resolve("innocent/key.txt", ctx)
    assert p == secret.resolve()
    assert not is_inside(p, ctx.workspace_folders)
    # a new file below the symlinked directory lands outside too
    assert not is_inside(resolve("innocent/new.txt", ctx), ctx.workspace_folders)


def test_workspace_folder_given_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    ctx = ToolContext(workspace_folders=[tmp_path / "alias"])
    p = resolve("a.txt", ctx)
    assert p == real.resolve() / "a.txt"
    assert is_inside(p, ctx.workspace_folders)
    assert display(p, ctx) == "a.txt"


def test_display_and_workspace_of(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    ctx = ToolContext(workspace_folders=[ws, other])
    assert display(ws.resolve() / "a" / "b.py", ctx) == "a/b.py"
    assert display(ws.resolve(), ctx) == "."
    assert display(other.resolve() / "c.py", ctx) == str(other.resolve() / "c.py")
    assert workspace_of(other / "c.py", ctx.workspace_folders) == other.resolve()
    assert workspace_of(Path("/elsewhere"), ctx.workspace_folders) is None


def test_no_workspace_folders_means_everything_is_outside(tmp_path: Path) -> None:
    ctx = ToolContext(workspace_folders=[])
    assert not is_inside(tmp_path, ctx.workspace_folders)
