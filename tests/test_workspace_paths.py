"""One containment rule for every door: resolved fully (symlinks included), gone files through their parent."""

from __future__ import annotations

from pathlib import Path

from eca_notebook._workspace_paths import containing_folder, is_inside


def test_inside_outside_and_dotdot(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    assert is_inside(ws / "src" / "a.py", [ws])
    assert is_inside(ws, [ws])
    assert not is_inside(ws / ".." / "elsewhere.txt", [ws])
    assert not is_inside(Path("/etc/passwd"), [ws])


def test_a_gone_file_counts_where_it_lived(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert is_inside(ws / "deleted" / "deep" / "file.py", [ws])


def test_a_symlink_pointing_out_is_outside(tmp_path: Path):
    ws, secret = tmp_path / "ws", tmp_path / "secret"
    ws.mkdir()
    secret.mkdir()
    (secret / "key.txt").write_text("k")
    (ws / "link-dir").symlink_to(secret)
    (ws / "link-file").symlink_to(secret / "key.txt")
    assert not is_inside(ws / "link-dir" / "key.txt", [ws])
    assert not is_inside(ws / "link-file", [ws])


def test_the_deepest_folder_holds_the_path(tmp_path: Path):
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    assert containing_folder(inner / "x.py", [outer, inner]) == inner.resolve()
    assert containing_folder(outer / "y.py", [inner, outer]) == outer.resolve()
    assert containing_folder(tmp_path / "z.py", [outer, inner]) is None
