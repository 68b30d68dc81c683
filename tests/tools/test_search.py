"""grep (both backends, same output) and directory_tree on real trees."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.search import DirectoryTreeTool, GrepTool, expand_braces

from .conftest import HAS_GIT, HAS_RG, call, git_init, write


def grep_tool(backend: str) -> GrepTool:
    return GrepTool(backend)  # type: ignore[arg-type]


BACKENDS = ["python", pytest.param("rg", marks=pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed"))]


def make_project(root: Path) -> None:
    write(root / ".gitignore", "build/\n*.log\n")
    write(root / "src/app.py", "import os\n\ndef main():\n    print('TODO: main')\n    return 0\n")
    write(root / "src/util.py", "# TODO tidy\ndef helper():\n    pass\n")
    write(root / "src/web/index.ts", "// TODO: ts\nexport const x = 1;\n")
    write(root / "src/web/view.tsx", "const TODO = 'jsx';\n")
    write(root / "README.md", "Project. TODO: docs\n")
    write(root / "build/gen.py", "# TODO generated\n")  # ignored directory
    write(root / "debug.log", "TODO in a log\n")  # ignored file
    write(root / "docs/.gitignore", "draft.md\n")  # nested .gitignore
    write(root / "docs/draft.md", "TODO draft\n")
    write(root / "docs/final.md", "TODO final\n")
    write(root / ".hidden/secret.py", "TODO hidden\n")  # hidden: skipped
    write(root / "data.bin", b"TODO\0binary")  # binary: skipped


@pytest.fixture(params=[False, pytest.param(True, marks=pytest.mark.skipif(not HAS_GIT, reason="git missing"))],
                ids=["plain", "git"])  # fmt: skip
def project(request: pytest.FixtureRequest, ws: Path) -> Path:
    make_project(ws)
    if request.param:
        git_init(ws)
    return ws


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_files_with_matches(backend: str, project: Path, ctx: ToolContext) -> None:
    prepared, result = await call(grep_tool(backend), {"path": ".", "pattern": "TODO"}, ctx)
    assert prepared.summary == "Searching for 'TODO' in \".\""
    assert not result.error
    assert result.output == "README.md\ndocs/final.md\nsrc/app.py\nsrc/util.py\nsrc/web/index.ts\nsrc/web/view.tsx"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_content_and_count(backend: str, project: Path, ctx: ToolContext) -> None:
    tool = grep_tool(backend)
    _, content = await call(tool, {"path": "src", "pattern": r"TODO:?\s\w+", "output_mode": "content"}, ctx)
    assert content.output == (
        "src/app.py:4:    print('TODO: main')\n"
        "src/util.py:1:# TODO tidy\n"
        "src/web/index.ts:1:// TODO: ts"
    )
    write(project / "src/many.py", "a = 1\nb = 1\nc = 2\n")
    _, count = await call(tool, {"path": "src", "pattern": "= 1", "output_mode": "count"}, ctx)
    assert count.output == "src/many.py:2\nsrc/web/index.ts:1"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_include_globs(backend: str, project: Path, ctx: ToolContext) -> None:
    tool = grep_tool(backend)
    _, py = await call(tool, {"path": ".", "pattern": "TODO", "include": "*.py"}, ctx)
    assert py.output == "src/app.py\nsrc/util.py"  # build/gen.py stays ignored, .hidden stays hidden
    _, ts = await call(tool, {"path": ".", "pattern": "TODO", "include": "*.{ts,tsx}"}, ctx)
    assert ts.output == "src/web/index.ts\nsrc/web/view.tsx"
    _, nested = await call(tool, {"path": ".", "pattern": "TODO", "include": "src/web/*.ts"}, ctx)
    assert nested.output == "src/web/index.ts"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_single_file_and_no_match(backend: str, project: Path, ctx: ToolContext) -> None:
    tool = grep_tool(backend)
    _, one = await call(tool, {"path": "src/app.py", "pattern": "main", "output_mode": "content"}, ctx)
    assert one.output == "src/app.py:3:def main():\nsrc/app.py:4:    print('TODO: main')"
    _, none = await call(tool, {"path": "src", "pattern": "nothing-like-this"}, ctx)
    assert not none.error
    assert none.output == "No matches found for pattern 'nothing-like-this' in src"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_max_results_note(backend: str, ws: Path, ctx: ToolContext) -> None:
    for i in range(12):
        write(ws / f"f{i:02d}.txt", "hit\nhit\n")
    _, result = await call(grep_tool(backend), {"path": ".", "pattern": "hit", "max_results": "5"}, ctx)
    lines = result.output.split("\n")
    assert lines[:5] == ["f00.txt", "f01.txt", "f02.txt", "f03.txt", "f04.txt"]
    assert lines[-1].startswith("[results limited to max_results=5; there are more")
    args = {"path": ".", "pattern": "hit", "max_results": 3, "output_mode": "content"}
    _, content = await call(grep_tool(backend), args, ctx)
    assert content.output.split("\n")[:3] == ["f00.txt:1:hit", "f00.txt:2:hit", "f01.txt:1:hit"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_long_lines_and_crlf(backend: str, ws: Path, ctx: ToolContext) -> None:
    write(ws / "min.js", "var a=" + "x" * 2000 + ";\r\nneedle\r\n" + "é" * 100_000 + "needle\n")
    args = {"path": ".", "pattern": "var a|needle", "output_mode": "content"}
    _, result = await call(grep_tool(backend), args, ctx)
    first, second, third = result.output.split("\n")
    assert first == "min.js:1:var a=" + "x" * 494 + " [... line cut]"
    assert second == "min.js:2:needle"
    assert third == "min.js:3:" + "é" * 500 + " [... line cut]"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_grep_does_not_follow_symlinks(backend: str, ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(tmp_path / "outside/leak.txt", "needle\n")
    (ws / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    (ws / "link.txt").symlink_to(tmp_path / "outside/leak.txt")
    write(ws / "own.txt", "needle\n")
    _, result = await call(grep_tool(backend), {"path": ".", "pattern": "needle"}, ctx)
    assert result.output == "own.txt"


@pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed")
async def test_both_backends_agree_on_a_generated_tree(ws: Path, ctx: ToolContext) -> None:
    rnd = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "needle", "haystack", "TODO", "fixme"]
    write(ws / ".gitignore", "gen*/\n*.tmp\n!keep.tmp\n")
    for i in range(300):
        parts = [rnd.choice(["a", "b", "gen1", "c", "d-e", ".dot"]) for _ in range(rnd.randint(0, 3))]
        name = rnd.choice(["x.py", "y.txt", "z.tmp", "keep.tmp", "w.md", "u_v.rs"])
        body = "\n".join(" ".join(rnd.choice(words) for _ in range(6)) for _ in range(rnd.randint(1, 8))) + "\n"
        write(ws.joinpath(*parts, f"{i}-{name}"), body)
    write(ws / "c" / ".gitignore", "*.md\n")
    for args in (
        {"path": ".", "pattern": "needle"},
        {"path": ".", "pattern": r"\bTODO\b.*fixme", "output_mode": "content"},
        {"path": ".", "pattern": "^alpha", "output_mode": "count"},
        {"path": "a", "pattern": "gamma|delta", "include": "*.{py,rs}", "output_mode": "content"},
        {"path": ".", "pattern": "haystack$", "include": "b/**/*.txt"},
    ):
        _, py = await call(GrepTool("python"), args, ctx)
        _, rg = await call(GrepTool("rg"), args, ctx)
        assert py.output == rg.output, args
        assert py.output.count("\n") > 0, args  # the comparison is about something


@pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed")
async def test_rg_falls_back_to_python_for_lookaround(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "foobar\nfoobaz\n")
    prepared, result = await call(GrepTool("rg"), {"path": ".", "pattern": "foo(?=baz)", "output_mode": "content"}, ctx)
    assert prepared.error is None
    assert result.output == "a.txt:2:foobaz"


async def test_grep_bad_input(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    tool = GrepTool("python")
    assert tool.prepare({"path": ".", "pattern": "("}, ctx).error == (
        "grep: invalid regular expression '(': missing ), unterminated subpattern at position 0"
    )
    assert tool.prepare({"path": "."}, ctx).error == "grep: missing required argument 'pattern'"
    assert tool.prepare({"path": ".", "pattern": "x", "output_mode": "lines"}, ctx).error == (
        "grep: argument 'output_mode' must be one of 'files_with_matches', 'content' or 'count' (got 'lines')"
    )
    assert tool.prepare({"path": "nope", "pattern": "x"}, ctx).error == "grep: path not found: nope"
    assert tool.prepare({"path": ".", "pattern": "x", "include": "  "}, ctx).error == (
        "grep: argument 'include' must not be blank"
    )
    assert tool.prepare({"path": ".", "pattern": "x", "max_results": 0}, ctx).error == (
        "grep: argument 'max_results' must be >= 1 (got 0)"
    )
    outside = tool.prepare({"path": str(tmp_path), "pattern": "x"}, ctx)
    assert outside.error is None and outside.outside_workspace


async def test_grep_outside_workspace_shows_absolute_paths(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    other = tmp_path / "other"
    write(other / "n.txt", "needle\n")
    for backend in ["python"] + (["rg"] if HAS_RG else []):
        _, result = await call(grep_tool(backend), {"path": str(other), "pattern": "needle"}, ctx)
        assert result.output == str((other / "n.txt").resolve()), backend


def test_expand_braces() -> None:
    assert expand_braces("*.py") == ["*.py"]
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{src,lib}/*.{c,h}") == ["src/*.c", "src/*.h", "lib/*.c", "lib/*.h"]


async def test_grep_without_rg_on_path(
    ws: Path, ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws / "a.txt", "needle\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert GrepTool("rg").prepare({"path": ".", "pattern": "x"}, ctx).error == "grep: ripgrep (rg) is not installed"
    _, result = await call(GrepTool("auto"), {"path": ".", "pattern": "needle"}, ctx)  # auto falls back to Python
    assert result.output == "a.txt"


# -- directory_tree -------------------------------------------------------------------------------------------------


async def test_directory_tree_respects_gitignore(project: Path, ctx: ToolContext) -> None:
    (project / "empty_dir").mkdir()
    prepared, result = await call(DirectoryTreeTool(), {"path": "."}, ctx)
    assert prepared.summary == 'Listing file tree "."'
    assert result.output == (
        "./\n"
        "  README.md\n"
        "  data.bin\n"
        "  docs/\n"
        "    final.md\n"
        "  empty_dir/\n"
        "  src/\n"
        "    app.py\n"
        "    util.py\n"
        "    web/\n"
        "      index.ts\n"
        "      view.tsx\n"
        "\n"
        "4 directories, 7 files"
    )


async def test_directory_tree_subdir_and_depth(project: Path, ctx: ToolContext) -> None:
    _, result = await call(DirectoryTreeTool(), {"path": "src", "max_depth": "1"}, ctx)
    assert result.output == "src/\n  app.py\n  util.py\n  web/\n\n1 directory, 2 files"


async def test_directory_tree_truncates_with_note(ws: Path) -> None:
    for i in range(40):
        write(ws / f"d{i // 10}" / f"f{i:02d}.txt", "")
    ctx = ToolContext(workspace_folders=[ws], max_output_lines=20)
    _, result = await call(DirectoryTreeTool(), {"path": "."}, ctx)
    lines = result.output.split("\n")
    assert lines[1:4] == ["  d0/", "    f00.txt", "    f01.txt"]
    assert len([line for line in lines if line.startswith("  ")]) == 10
    assert lines[-2:] == [
        "4 directories, 40 files",
        "[tree truncated: showing 10 of 44 entries; list a sub-directory or use a smaller max_depth]",
    ]


async def test_directory_tree_symlink_shown_not_followed(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(tmp_path / "out/x.txt", "")
    (ws / "link").symlink_to(tmp_path / "out", target_is_directory=True)
    _, result = await call(DirectoryTreeTool(), {"path": "."}, ctx)
    assert result.output == f"./\n  link -> {tmp_path / 'out'}\n\n0 directories, 1 file"


async def test_directory_tree_bad_input(ws: Path, ctx: ToolContext) -> None:
    write(ws / "f.txt", "")
    tool = DirectoryTreeTool()
    assert tool.prepare({"path": "f.txt"}, ctx).error == (
        "directory_tree: f.txt is a file, not a directory (use read_file to read it)"
    )
    assert tool.prepare({"path": "missing"}, ctx).error == "directory_tree: directory not found: missing"
    assert tool.prepare({}, ctx).error == "directory_tree: missing required argument 'path'"
    assert tool.prepare({"path": ".", "max_depth": "deep"}, ctx).error == (
        "directory_tree: argument 'max_depth' must be an integer (got 'deep')"
    )
    (ws / "empty").mkdir()
    _, empty = await call(tool, {"path": "empty"}, ctx)
    assert empty.output == "empty/\n  (empty)\n\n0 directories, 0 files"


@pytest.mark.parametrize("tool", [GrepTool(), DirectoryTreeTool()], ids=lambda t: t.name)
async def test_a_missing_path_outside_the_workspace_asks_before_saying_so(ws: Path, ctx: ToolContext, tool) -> None:
    """"path not found" for ../missing would tell the model what exists outside before anyone was asked."""
    (ws.parent / "there").mkdir()
    write(ws.parent / "there" / "a.txt", "needle\n")
    for name in ("there", "missing"):
        prepared = tool.prepare({"path": f"../{name}", "pattern": "needle"}, ctx)
        assert prepared.error is None and prepared.outside_workspace, prepared
    _, result = await call(tool, {"path": "../missing", "pattern": "needle"}, ctx)
    assert result.error and "not found" in result.output, result.output
