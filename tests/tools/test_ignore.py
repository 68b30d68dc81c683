"""The shared .gitignore matcher and walker, checked against git itself where git is available."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eca_notebook.tools.ignore import IgnoreMatcher, iter_entries, walk

from .conftest import HAS_GIT, git_init, write


def make_tree(root: Path) -> None:
    write(root / ".gitignore", "build/\n*.log\nnode_modules\n/only_top.txt\n# comment\n\n")
    write(root / "src/app.py", "x")
    write(root / "src/debug.log", "x")
    write(root / "src/only_top.txt", "x")  # the anchored pattern only matches at the root
    write(root / "only_top.txt", "x")
    write(root / "build/out.bin", "x")
    write(root / "src/build/nested.o", "x")  # "build/" matches at any depth
    write(root / "node_modules/pkg/index.js", "x")
    write(root / "sub/.gitignore", "!keep.log\nlocal.txt\n")
    write(root / "sub/keep.log", "x")  # re-included by the deeper file
    write(root / "sub/other.log", "x")
    write(root / "sub/local.txt", "x")
    write(root / "sub/deep/local.txt", "x")  # unanchored: any depth below sub/
    write(root / "sub/deep/keep.log", "x")
    write(root / "top.txt", "x")




def rel_files(root: Path, **kw: object) -> list[str]:
    return [p.relative_to(root).as_posix() for p, is_dir in walk(root, include_dirs=False, **kw)]  # type: ignore[arg-type]


def test_walk_applies_root_and_nested_gitignore(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert rel_files(tmp_path) == [
        ".gitignore",
        "src/app.py",
        "src/only_top.txt",
        "sub/.gitignore",
        "sub/deep/keep.log",
        "sub/keep.log",
        "top.txt",
    ]


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_walk_agrees_with_git(tmp_path: Path) -> None:
    make_tree(tmp_path)
    write(tmp_path / "excluded_by_info.txt", "x")
    git_init(tmp_path)
    write(tmp_path / ".git/info/exclude", "excluded_by_info.txt\n")
    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert rel_files(tmp_path) == sorted(out, key=lambda p: p.split("/"))
    assert "excluded_by_info.txt" not in rel_files(tmp_path)


def test_walk_yields_dirs_depth_first_sorted_and_prunes(tmp_path: Path) -> None:
    make_tree(tmp_path)
    got = [(p.relative_to(tmp_path).as_posix(), d) for p, d in walk(tmp_path)]
    assert got[:4] == [(".gitignore", False), ("src", True), ("src/app.py", False), ("src/only_top.txt", False)]
    assert ("build", True) not in got and ("node_modules", True) not in got


def test_max_depth_limits_descent(tmp_path: Path) -> None:
    make_tree(tmp_path)
    got = [p.relative_to(tmp_path).as_posix() for p, _ in walk(tmp_path, max_depth=1)]
    assert got == [".gitignore", "src", "sub", "top.txt"]
    assert list(walk(tmp_path, max_depth=0)) == []


def test_git_dir_always_skipped_even_without_gitignore(tmp_path: Path) -> None:
    write(tmp_path / ".git/config", "x")
    write(tmp_path / "a.txt", "x")
    assert rel_files(tmp_path) == ["a.txt"]
    m = IgnoreMatcher.for_root(tmp_path)
    assert m.ignored(Path(".git"), True)
    assert m.ignored(tmp_path / ".git" / "config", False)


def test_ignored_checks_ancestors_and_accepts_both_path_forms(tmp_path: Path) -> None:
    make_tree(tmp_path)
    write(tmp_path / "build/.gitignore", "!*\n")  # cannot re-include inside an ignored directory
    m = IgnoreMatcher.for_root(tmp_path)
    assert m.ignored(Path("build/out.bin"), False)
    assert m.ignored(tmp_path / "build" / "out.bin", False)
    assert m.ignored(Path("build"), True)
    assert not m.ignored(Path("build"), False)  # "build/" is a directory-only pattern
    assert not m.ignored(Path("sub/keep.log"), False)
    assert m.ignored(Path("sub/other.log"), False)
    assert m.ignored(Path("sub/deep/local.txt"), False)
    assert not m.ignored(Path("top.txt"), False)
    assert not m.ignored(tmp_path, True)  # the root itself
    assert not m.ignored(Path("/somewhere/else/x.log"), False)  # outside the root


def test_parent_repo_gitignore_applies_to_a_subfolder_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the repository top is above the root we walk
    write(tmp_path / ".gitignore", "*.tmp\nproj/generated/\n")
    write(tmp_path / "proj/a.py", "x")
    write(tmp_path / "proj/b.tmp", "x")
    write(tmp_path / "proj/generated/g.py", "x")
    assert rel_files(tmp_path / "proj") == ["a.py"]


def test_only_git_matcher_ignores_nothing_else(tmp_path: Path) -> None:
    make_tree(tmp_path)
    files = rel_files(tmp_path, matcher=IgnoreMatcher.only_git(tmp_path))
    assert "build/out.bin" in files and "node_modules/pkg/index.js" in files


def test_walk_subdirectory_with_enclosing_matcher(tmp_path: Path) -> None:
    make_tree(tmp_path)
    m = IgnoreMatcher.for_root(tmp_path)
    got = [p.relative_to(tmp_path).as_posix() for p, _ in walk(tmp_path / "src", matcher=m)]
    assert got == ["src/app.py", "src/only_top.txt"]  # root rules (*.log, build/) still apply


def test_symlinked_dirs_are_not_followed(tmp_path: Path) -> None:
    write(tmp_path / "outside/secret.txt", "x")
    root = tmp_path / "root"
    write(root / "a.txt", "x")
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    got = [(p.relative_to(root).as_posix(), d) for p, d in walk(root)]
    assert got == [("a.txt", False), ("link", False)]


def test_iter_entries_skip_hidden_and_relative_paths(tmp_path: Path) -> None:
    write(tmp_path / ".hidden/x.txt", "x")
    write(tmp_path / ".env", "x")
    write(tmp_path / "d/e.txt", "x")
    got = [(rel, depth, d) for _e, rel, depth, d in iter_entries(tmp_path, skip_hidden=True)]
    assert got == [("d", 1, True), ("d/e.txt", 2, False)]


def test_iter_entries_skip_dirs_at_any_depth(tmp_path: Path) -> None:
    write(tmp_path / "node_modules/lib/x.js", "x")
    write(tmp_path / "d/node_modules/y.js", "x")
    write(tmp_path / "d/node_modules.txt", "x")  # a file of that name is not a directory: kept
    got = [rel for _e, rel, _depth, _d in iter_entries(tmp_path, skip_dirs={"node_modules"})]
    assert got == ["d", "d/node_modules.txt"]


def test_broken_gitignore_pattern_does_not_break_the_walk(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "[z-a]\n***invalid\\\n")
    write(tmp_path / "a.txt", "x")
    assert "a.txt" in rel_files(tmp_path)
