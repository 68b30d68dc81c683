"""WorkspaceIndex: building (ignore rules), ranking, incremental refresh, watching, repo map."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

import pytest

from eca_notebook.engine.index._index import Entry, WorkspaceIndex

OLD = time.time() - 3600  # directory mtimes far from "now", so no directory counts as racy


def make_tree(root: Path, files: list[str], dirs: list[str] = (), texts: dict[str, str] | None = None) -> None:
    for rel in dirs:
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    for rel, text in (texts or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    age(root)


def age(root: Path) -> None:
    """Backdate every directory (and .gitignore) under `root`: what a workspace untouched for an hour looks like."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            if name == ".gitignore":
                os.utime(Path(dirpath) / name, (OLD, OLD))
        os.utime(dirpath, (OLD, OLD))


def rels(entries: list[Entry]) -> list[str]:
    return [e.rel for e in entries]


def everything(index: WorkspaceIndex) -> set[str]:
    return set(rels(index.query("", 100_000)))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    make_tree(
        root,
        files=[
            "README.md", "src/app.py", "src/application.yaml", "src/components/Button.tsx",
            "src/components/submit_button.py", "src/secret.txt", "src/debug.log", "tests/test_app.py",
            "build/out.o", "node_modules/pkg/index.js", "docs/guide.md", ".git/config",
            "lib/util_helpers.py", "utilities/a.md", "deep/nested/dir/parser_tool.py", "parser/a.md",
        ],
        texts={".gitignore": "build/\nnode_modules/\n*.log\n", "src/.gitignore": "secret.txt\n"},
    )
    return root


async def built(*folders: Path, **kw) -> WorkspaceIndex:
    index = WorkspaceIndex(list(folders), **kw)
    await index.build()
    return index


# -- building ------------------------------------------------------------------------------------------------------


async def test_build_respects_nested_gitignore_and_skips_git(tree: Path) -> None:
    index = WorkspaceIndex([tree])
    assert index.status()["state"] == "empty" and not index.ready and index.built_at is None
    await index.build()
    found = everything(index)
    assert {"README.md", "src/app.py", "src/components/Button.tsx", "src/.gitignore", "docs/guide.md"} <= found
    assert "src" in found and "src/components" in found
    for ignored in ("build", "build/out.o", "node_modules", "node_modules/pkg/index.js", "src/debug.log",
                    "src/secret.txt", ".git", ".git/config"):
        assert ignored not in found
    status = index.status()
    assert status["state"] == "ready" and index.ready
    assert status["files"] == index.file_count == sum(1 for e in index.query("", 1000) if not e.is_dir)
    assert status["dirs"] == index.dir_count == sum(1 for e in index.query("", 1000) if e.is_dir)
    assert status["builtAt"] == index.built_at and index.built_at is not None
    assert status["durationMs"] is not None and status["truncated"] is False


async def test_entries_carry_absolute_paths_and_kind(tree: Path) -> None:
    index = await built(tree)
    [app] = [e for e in index.query("app.py", 5) if e.rel == "src/app.py"]
    assert app.path == tree / "src" / "app.py" and app.is_dir is False
    [comp] = [e for e in index.query("components", 5) if e.rel == "src/components"]
    assert comp.is_dir is True and comp.path == tree / "src" / "components"


async def test_build_again_is_a_full_rescan(tree: Path) -> None:
    index = await built(tree)
    (tree / "added.txt").write_text("x")
    (tree / "src" / "app.py").unlink()
    await index.build()
    found = everything(index)
    assert "added.txt" in found and "src/app.py" not in found


async def test_max_files_truncates_and_says_so(tree: Path) -> None:
    index = await built(tree, max_files=3)
    assert index.file_count + index.dir_count == 3
    assert index.status()["truncated"] is True
    assert "stopped at 3 entries" in index.repo_map()


async def test_status_is_building_while_the_walk_runs(tree: Path) -> None:
    index = WorkspaceIndex([tree])
    task = asyncio.ensure_future(index.build())
    await asyncio.sleep(0)  # build() has started its worker thread
    assert index.status()["state"] == "building"
    await task
    assert index.status()["state"] == "ready"


# -- ranking -------------------------------------------------------------------------------------------------------


async def test_fuzzy_query_ranks_the_expected_file_first(tree: Path) -> None:
    index = await built(tree)
    results = index.query("appy")
    assert results[0].rel == "src/app.py"
    assert "tests/test_app.py" in rels(results)
    assert all(isinstance(e.score, float) for e in results)
    assert [e.score for e in results] == sorted((e.score for e in results), reverse=True)


async def test_basename_match_beats_a_shallower_path_match(tree: Path) -> None:
    index = await built(tree)
    order = rels(index.query("parser"))
    assert order[0] == "parser"  # the directory itself: exact basename
    assert order.index("deep/nested/dir/parser_tool.py") < order.index("parser/a.md")


async def test_contiguous_beats_subsequence_and_prefix_beats_inside(tmp_path: Path) -> None:
    make_tree(tmp_path, ["m_a_p.py", "map.py", "bitmap.py", "heatmaps/x.txt"])
    index = await built(tmp_path)
    order = rels(index.query("map"))
    assert order.index("map.py") < order.index("bitmap.py") < order.index("m_a_p.py")
    assert order.index("heatmaps") < order.index("m_a_p.py")


async def test_word_boundary_and_exact_case_bonuses(tmp_path: Path) -> None:
    make_tree(tmp_path, ["README.md", "readme.txt", "a_long_submit_button.py", "buttonhole.py", "mybuttons.py"])
    index = await built(tmp_path)
    assert index.query("README")[0].rel == "README.md"
    assert index.query("readme")[0].rel == "readme.txt"
    order = rels(index.query("button"))
    # prefix, then start of a word (despite the longer name), then inside a word
    assert order == ["buttonhole.py", "a_long_submit_button.py", "mybuttons.py"]


async def test_directories_are_findable(tree: Path) -> None:
    index = await built(tree)
    first = index.query("compon")[0]
    assert first.rel == "src/components" and first.is_dir


async def test_query_with_a_slash_matches_the_path(tree: Path) -> None:
    index = await built(tree)
    assert index.query("src/comp")[0].rel == "src/components"
    assert set(rels(index.query("src/comp"))) >= {"src/components/Button.tsx", "src/components/submit_button.py"}
    assert index.query("src/")[0].rel == "src"
    assert "src/components/Button.tsx" in rels(index.query("s/c/butt"))


async def test_fuzzy_across_directories_without_a_slash(tree: Path) -> None:
    index = await built(tree)
    assert index.query("srccompbutton")[0].rel == "src/components/Button.tsx"
    assert index.query("deepparsertool")[0].rel == "deep/nested/dir/parser_tool.py"


async def test_no_match_and_limit(tree: Path) -> None:
    index = await built(tree)
    assert index.query("zzzqqq") == []
    assert len(index.query("", 3)) == 3
    assert len(index.query("a", 2)) == 2
    assert index.query("app", 0) == []


async def test_blank_query_lists_top_level_first(tree: Path) -> None:
    index = await built(tree)
    depths = [e.rel.count("/") for e in index.query("", 1000)]
    assert depths == sorted(depths)
    assert set(rels(index.query("", 1000))[: depths.count(0)]) == {
        ".gitignore", "README.md", "deep", "docs", "lib", "parser", "src", "tests", "utilities"}


async def test_query_normalisation(tree: Path) -> None:
    index = await built(tree)
    assert index.query("./src/app.py")[0].rel == "src/app.py"
    assert index.query(str(tree / "src" / "app.py"))[0].rel == "src/app.py"
    assert index.query("  app . py ")[0].rel == "src/app.py"
    assert index.query("src\\app.py")[0].rel == "src/app.py"


async def test_typing_one_character_at_a_time_gives_the_same_results_as_cold_queries(tree: Path) -> None:
    index = await built(tree)
    target = "srccomponentsbutton"
    for n in range(1, len(target) + 1):
        typed = index.query(target[:n])
        index._cache = None  # what a query without the typing shortcut returns
        cold = index.query(target[:n])
        assert rels(typed) == rels(cold), target[:n]


async def test_unicode_names(tmp_path: Path) -> None:
    make_tree(tmp_path, ["docs/Überblick.md", "İstanbul/notes.txt", "plain.txt"])
    index = await built(tmp_path)
    assert index.query("überb")[0].rel == "docs/Überblick.md"
    assert index.query("notes")[0].rel == "İstanbul/notes.txt"
    assert index.query("plain")[0].rel == "plain.txt"  # offsets after a name whose lowercase is longer


async def test_several_folders_get_distinct_labels(tmp_path: Path) -> None:
    one, two = tmp_path / "a" / "proj", tmp_path / "b" / "proj"
    make_tree(one, ["main.py"])
    make_tree(two, ["main.py", "extra.py"])
    index = await built(one, two)
    results = index.query("main.py")
    assert {e.rel for e in results} == {"proj/main.py", "proj~2/main.py"}
    assert {e.path for e in results} == {one / "main.py", two / "main.py"}
    assert index.query("extra")[0].path == two / "extra.py"


async def test_query_before_build_is_empty(tree: Path) -> None:
    index = WorkspaceIndex([tree])
    assert index.query("app") == [] and index.file_count == 0
    assert "not built" in index.repo_map()
    assert index.refresh() == 0


# -- incremental refresh -------------------------------------------------------------------------------------------


async def test_refresh_picks_up_created_and_deleted_files_and_dirs(tree: Path) -> None:
    index = await built(tree)
    built_at = index.built_at
    assert index.refresh() == 0
    (tree / "src" / "new_module.py").write_text("x")
    (tree / "pkg" / "sub").mkdir(parents=True)
    (tree / "pkg" / "sub" / "deep.py").write_text("x")
    (tree / "docs" / "guide.md").unlink()
    shutil.rmtree(tree / "tests")
    changes = index.refresh()
    assert changes == 1 + 3 + 1 + 2  # new file; pkg, pkg/sub, deep.py; guide.md; tests, tests/test_app.py
    found = everything(index)
    assert {"src/new_module.py", "pkg", "pkg/sub", "pkg/sub/deep.py"} <= found
    assert not {"docs/guide.md", "tests", "tests/test_app.py"} & found
    assert index.query("deep.py")[0].rel == "pkg/sub/deep.py"
    assert index.built_at == built_at  # no full rebuild
    age(tree)
    assert index.refresh() == 0


async def test_refresh_only_rescans_directories_whose_mtime_changed(tree: Path) -> None:
    index = await built(tree)
    index.refresh()
    sneaky = tree / "src" / "components" / "Sneaky.tsx"
    sneaky.write_text("x")
    os.utime(sneaky.parent, (OLD, OLD))  # hide the change from the mtime check
    (tree / "docs" / "visible.md").write_text("x")
    assert index.refresh() == 1
    found = everything(index)
    assert "docs/visible.md" in found and "src/components/Sneaky.tsx" not in found
    await index.build()
    assert "src/components/Sneaky.tsx" in everything(index)


async def test_refresh_handles_a_file_replaced_by_a_directory(tree: Path) -> None:
    index = await built(tree)
    (tree / "docs" / "guide.md").unlink()
    (tree / "docs" / "guide.md").mkdir()
    (tree / "docs" / "guide.md" / "part1.md").write_text("x")
    index.refresh()
    [entry] = [e for e in index.query("", 1000) if e.rel == "docs/guide.md"]
    assert entry.is_dir
    assert "docs/guide.md/part1.md" in everything(index)


async def test_refresh_applies_changed_gitignore_rules(tree: Path) -> None:
    index = await built(tree)
    (tree / "notes.tmp").write_text("x")
    (tree / "src" / "components" / "gen.tmp").write_text("x")
    index.refresh()
    assert {"notes.tmp", "src/components/gen.tmp"} <= everything(index)
    (tree / ".gitignore").write_text("build/\nnode_modules/\n*.log\n*.tmp\n")  # modified in place
    index.refresh()
    found = everything(index)
    assert "notes.tmp" not in found and "src/components/gen.tmp" not in found
    (tree / "src" / "components" / ".gitignore").write_text("Button.tsx\n")  # a new nested .gitignore
    index.refresh()
    found = everything(index)
    assert "src/components/Button.tsx" not in found and "src/components/submit_button.py" in found
    (tree / ".gitignore").write_text("")  # rules removed: build/ and node_modules/ come back
    index.refresh()
    found = everything(index)
    assert {"build/out.o", "node_modules/pkg/index.js", "src/debug.log"} <= found


async def test_refresh_when_a_folder_disappears_and_comes_back(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_tree(root, ["a.py", "sub/b.py"])
    index = await built(root)
    shutil.rmtree(root)
    index.refresh()
    assert everything(index) == set()
    make_tree(root, ["c.py"])
    os.utime(root)  # recreated just now
    index.refresh()
    assert everything(index) == {"c.py"}


async def test_watching_refreshes_in_the_background(tree: Path) -> None:
    index = WorkspaceIndex([tree])
    index.start_watching(interval=0.02)
    try:
        for _ in range(500):
            if index.ready:
                break
            await asyncio.sleep(0.01)
        assert index.ready  # the watcher builds first
        (tree / "watched.py").write_text("x")
        for _ in range(500):
            if "watched.py" in everything(index):
                break
            await asyncio.sleep(0.01)
        assert "watched.py" in everything(index)
        assert index.status()["refreshedAt"] is not None
    finally:
        await index.stop()
    await index.stop()  # stopping twice is fine


# -- repo map ------------------------------------------------------------------------------------------------------


async def test_repo_map_is_an_indented_tree(tree: Path) -> None:
    index = await built(tree)
    text = index.repo_map()
    lines = text.splitlines()
    assert lines[0] == tree.as_posix() + "/"
    assert "  src/" in lines and "    components/" in lines and "      Button.tsx" in lines
    assert lines.index("  src/") < lines.index("    components/") < lines.index("      Button.tsx")
    assert "node_modules" not in text and "truncated" not in text


async def test_repo_map_truncates_with_notes(tmp_path: Path) -> None:
    make_tree(tmp_path, [f"pkg/mod{i:02}.py" for i in range(30)] + ["top.txt", "z/deep/x.py"])
    index = await built(tmp_path)
    small = index.repo_map(max_entries=10, max_per_dir=5)
    assert "(repo map truncated: 10 of 35 entries shown)" in small
    assert "    … 25 more" in small  # pkg shows 5 of its 30 modules
    assert len([ln for ln in small.splitlines() if ln.endswith(".py")]) <= 10
    assert index.repo_map(max_entries=1000, max_per_dir=1000).count(".py") == 31
