"""read_file, write_file, edit_file, move_file on real files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.fs import EditFileTool, MoveFileTool, ReadFileTool, WriteFileTool

from .conftest import call, write

read_file = ReadFileTool()
write_file = WriteFileTool()
edit_file = EditFileTool()
move_file = MoveFileTool()


# -- read_file ------------------------------------------------------------------------------------------------------


async def test_read_file_returns_plain_content(ws: Path, ctx: ToolContext) -> None:
    write(ws / "src/a.py", "import os\n\nprint(os.sep)\n")
    prepared, result = await call(read_file, {"path": "src/a.py"}, ctx)
    assert prepared.summary == 'Reading file "src/a.py"'
    assert prepared.paths == [(ws / "src/a.py").resolve()]
    assert not prepared.outside_workspace
    assert not result.error
    assert result.output == "import os\n\nprint(os.sep)"


async def test_read_file_window_with_string_numbers(ws: Path, ctx: ToolContext) -> None:
    write(ws / "n.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    _, result = await call(read_file, {"path": "n.txt", "line_offset": "2", "limit": "3"}, ctx)
    assert result.output == (
        "line 3\nline 4\nline 5\n\n"
        "[content truncated (3 line limit): showing lines 3-5 of 10; use line_offset=5 to read more]"
    )
    _, tail = await call(read_file, {"path": "n.txt", "line_offset": 8}, ctx)
    assert tail.output == "line 9\nline 10"


async def test_read_file_default_cap_is_the_context_line_limit(ws: Path) -> None:
    write(ws / "big.txt", "".join(f"{i}\n" for i in range(50)))
    ctx = ToolContext(workspace_folders=[ws], max_output_lines=20)
    _, result = await call(read_file, {"path": "big.txt", "limit": 1000}, ctx)
    lines = result.output.split("\n")
    assert lines[:20] == [str(i) for i in range(20)]
    assert lines[-1] == "[content truncated (20 line limit): showing lines 1-20 of 50; use line_offset=20 to read more]"


async def test_read_file_byte_budget(ws: Path) -> None:
    write(ws / "wide.txt", "".join("x" * 99 + "\n" for _ in range(100)))
    ctx = ToolContext(workspace_folders=[ws], max_output_bytes=1000)
    _, result = await call(read_file, {"path": "wide.txt"}, ctx)
    body, note = result.output.split("\n\n")
    assert body.split("\n") == ["x" * 99] * 10
    assert note == ("[content truncated (1000 B output limit): showing lines 1-10 of 100; "
                    "use line_offset=10 to read more]")


async def test_read_file_huge_file_reads_only_the_window(ws: Path, ctx: ToolContext) -> None:
    line = "0123456789" * 9 + "abcdefghi\n"  # 100 bytes
    with open(ws / "huge.log", "w") as f:
        for i in range(150_000):  # 15 MB
            f.write(f"{i:08d}" + line[8:])
    _, result = await call(read_file, {"path": "huge.log", "line_offset": 120_000, "limit": 2}, ctx)
    assert result.output.split("\n")[:2] == [f"{120_000:08d}" + line[8:-1], f"{120_001:08d}" + line[8:-1]]
    assert result.output.endswith("showing lines 120001-120002 of 150000; use line_offset=120002 to read more]")


async def test_read_file_cuts_an_enormous_single_line(ws: Path) -> None:
    write(ws / "min.js", "a" * 300_000 + "\nsecond\n")
    ctx = ToolContext(workspace_folders=[ws], max_output_bytes=2048)
    _, result = await call(read_file, {"path": "min.js"}, ctx)
    first = result.output.split("\n")[0]
    assert first == "a" * 2048 + " [... line cut at 2 KB]"
    assert result.output.endswith("showing lines 1-1 of 2; use line_offset=1 to read more]")


async def test_read_file_crlf_and_invalid_utf8(ws: Path, ctx: ToolContext) -> None:
    write(ws / "w.txt", b"one\r\ntwo \xff\r\n")
    _, result = await call(read_file, {"path": "w.txt"}, ctx)
    assert result.output == "one\ntwo \ufffd"


@pytest.mark.parametrize(
    "setup, args, message",
    [
        (None, {"path": "nope.txt"},
         "read_file: file not found: nope.txt (relative paths start at the workspace folder <root>)"),
        ("dir", {"path": "d"}, "read_file: d is a directory, not a file (use directory_tree to list it)"),
        (None, {}, "read_file: missing required argument 'path'"),
        (None, {"path": "x", "limit": "lots"}, "read_file: argument 'limit' must be an integer (got 'lots')"),
        (None, {"path": "x", "line_offset": -1}, "read_file: argument 'line_offset' must be >= 0 (got -1)"),
        (None, '{"path": ', "read_file: arguments are not valid JSON"),
    ],
)
async def test_read_file_bad_input(ws: Path, ctx: ToolContext, setup: str | None, args: object, message: str) -> None:
    message = message.replace("<root>", str(ctx.root))
    if setup == "dir":
        (ws / "d").mkdir()
    prepared, result = await call(read_file, args, ctx)
    assert prepared.error == message
    assert result.error and result.output == message


async def test_read_file_binary(ws: Path, ctx: ToolContext) -> None:
    write(ws / "img.dat", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    prepared, result = await call(read_file, {"path": "img.dat"}, ctx)
    assert prepared.error is None
    assert result.error
    assert result.output == ("read_file: img.dat looks like a binary file (it contains NUL bytes); "
                             "it cannot be shown as text")


async def test_read_file_returns_an_image_as_the_image(ws: Path, ctx: ToolContext) -> None:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (30, 20), (1, 2, 3)).save(out, format="PNG")
    write(ws / "plot.png", out.getvalue())
    _, result = await call(read_file, {"path": "plot.png"}, ctx)
    assert not result.error
    [image] = result.images
    assert (image.media_type, image.data, image.width, image.height) == ("image/png", out.getvalue(), 30, 20)
    assert result.output.startswith("plot.png is an image, attached: [image: plot.png, image/png, 30×20 px")
    # a cut one is refused with the reason (its pixel data ends early)
    write(ws / "cut.png", out.getvalue()[:-30])
    _, result = await call(read_file, {"path": "cut.png"}, ctx)
    assert result.error and not result.images
    assert result.output == "read_file: cut.png is truncated or corrupt: its pixels cannot be decoded"
    # a FIFO named like an image is refused, not waited on
    os.mkfifo(ws / "pipe.png")
    _, result = await call(read_file, {"path": "pipe.png"}, ctx)
    assert result.error and result.output == "read_file: pipe.png is not a regular file"


async def test_read_file_empty_and_past_end(ws: Path, ctx: ToolContext) -> None:
    write(ws / "e.txt", "")
    write(ws / "three.txt", "a\nb\nc\n")
    assert (await call(read_file, {"path": "e.txt"}, ctx))[1].output == "[empty file]"
    _, result = await call(read_file, {"path": "three.txt", "line_offset": 7}, ctx)
    assert result.output == "[three.txt has 3 lines; line_offset=7 is past the end]"
    _, result = await call(read_file, {"path": "three.txt", "line_offset": 3}, ctx)
    assert result.output == "[three.txt has 3 lines; line_offset=3 is past the end]"


# -- path safety (all tools share resolve(); read_file and write_file stand in) --------------------------------------


async def test_outside_paths_are_flagged_not_refused(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(tmp_path / "outside.txt", "secret\n")
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "sub/../../outside.txt"):
        prepared = read_file.prepare({"path": path}, ctx)
        assert prepared.error is None
        assert prepared.outside_workspace, path
        assert prepared.paths == [(tmp_path / "outside.txt").resolve()]
        assert prepared.summary == f'Reading file "{(tmp_path / "outside.txt").resolve()}"'


async def test_symlink_escape_is_flagged(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere/creds.txt", "k\n")
    (ws / "link.txt").symlink_to(tmp_path / "elsewhere/creds.txt")
    (ws / "linkdir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert read_file.prepare({"path": "link.txt"}, ctx).outside_workspace
    assert write_file.prepare({"path": "linkdir/new.txt", "content": "x"}, ctx).outside_workspace
    write(ws / "real.txt", "x")
    (ws / "inner_link.txt").symlink_to(ws / "real.txt")
    assert not read_file.prepare({"path": "inner_link.txt"}, ctx).outside_workspace


# -- write_file -----------------------------------------------------------------------------------------------------


async def test_write_file_new_file_diff_and_parent_dirs(ws: Path, ctx: ToolContext) -> None:
    assert write_file.mutates and write_file.default_approval == "ask"
    prepared = write_file.prepare({"path": "pkg/sub/mod.py", "content": "a = 1\nb = 2\n"}, ctx)
    assert prepared.summary == 'Creating file "pkg/sub/mod.py"'
    assert prepared.details == {
        "type": "fileChange",
        "path": str((ws / "pkg/sub/mod.py").resolve()),
        "diff": "--- a/pkg/sub/mod.py\n+++ b/pkg/sub/mod.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n",
        "linesAdded": 2,
        "linesRemoved": 0,
    }
    assert not (ws / "pkg").exists()  # prepare has no side effects
    result = await write_file.run(prepared, ctx)
    assert not result.error, result.output
    assert result.output == "Created pkg/sub/mod.py (2 lines)"
    assert (ws / "pkg/sub/mod.py").read_text() == "a = 1\nb = 2\n"
    assert result.details == dict(prepared.details, undoable=True)


async def test_write_file_overwrite_is_atomic_and_keeps_mode(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "run.sh", "echo old\n")
    target.chmod(0o750)
    os.link(target, ws / "hardlink.sh")  # os.replace swaps the directory entry: the old inode keeps old bytes
    prepared = write_file.prepare({"path": "run.sh", "content": "echo new\n"}, ctx)
    assert prepared.summary == 'Overwriting file "run.sh"'
    assert prepared.details is not None
    assert prepared.details["diff"] == "--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo old\n+echo new\n"
    result = await write_file.run(prepared, ctx)
    assert result.output == "Overwrote run.sh (1 line)"
    assert target.read_text() == "echo new\n"
    assert (ws / "hardlink.sh").read_text() == "echo old\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert sorted(p.name for p in ws.iterdir()) == ["hardlink.sh", "run.sh"]  # no temp file left behind


async def test_write_file_refuses_when_file_changed_since_prepare(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "v1\n")
    prepared = write_file.prepare({"path": "a.txt", "content": "mine\n"}, ctx)
    write(ws / "a.txt", "v2 by someone else\n")
    result = await write_file.run(prepared, ctx)
    assert result.error
    assert result.output == "write_file: a.txt: file changed since the diff was shown; re-read it and try again"
    assert (ws / "a.txt").read_text() == "v2 by someone else\n"


async def test_write_file_refuses_when_new_file_appeared(ws: Path, ctx: ToolContext) -> None:
    prepared = write_file.prepare({"path": "n.txt", "content": "mine\n"}, ctx)
    write(ws / "n.txt", "theirs\n")
    result = await write_file.run(prepared, ctx)
    assert result.error and "file changed since the diff was shown" in result.output
    assert (ws / "n.txt").read_text() == "theirs\n"


async def test_write_file_bad_input(ws: Path, ctx: ToolContext) -> None:
    (ws / "d").mkdir()
    assert write_file.prepare({"path": "d", "content": "x"}, ctx).error == "write_file: d is a directory"
    assert write_file.prepare({"path": "x.txt"}, ctx).error == "write_file: missing required argument 'content'"
    assert (
        write_file.prepare({"path": "x.txt", "content": 5}, ctx).error
        == "write_file: argument 'content' must be a string (got 5)"
    )


# -- edit_file ------------------------------------------------------------------------------------------------------

SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x + 1\n"


async def test_edit_file_exact_diff_and_write(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", SOURCE)
    args = {"path": "m.py", "original_content": "def g(x):\n    return x + 1",
            "new_content": "def g(x):\n    return x * 2"}
    prepared = edit_file.prepare(args, ctx)
    assert prepared.error is None
    assert prepared.summary == 'Editing file "m.py"'
    assert prepared.details == {
        "type": "fileChange",
        "path": str((ws / "m.py").resolve()),
        "diff": "--- a/m.py\n+++ b/m.py\n@@ -3,4 +3,4 @@\n \n \n def g(x):\n-    return x + 1\n+    return x * 2\n",
        "linesAdded": 1,
        "linesRemoved": 1,
        "hunks": [{"id": "h1", "oldStart": 3, "oldLines": 4, "newStart": 3, "newLines": 4, "linesAdded": 1,
                   "linesRemoved": 1,
                   "text": "@@ -3,4 +3,4 @@\n \n \n def g(x):\n-    return x + 1\n+    return x * 2\n"}],
    }
    assert (ws / "m.py").read_text() == SOURCE  # nothing written before approval
    result = await edit_file.run(prepared, ctx)
    assert result.output == "Replaced 1 occurrence in m.py"
    assert (ws / "m.py").read_text() == SOURCE.replace("def g(x):\n    return x + 1", "def g(x):\n    return x * 2")


async def test_edit_file_not_found_and_ambiguous(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", SOURCE)
    missing = edit_file.prepare({"path": "m.py", "original_content": "return x - 1", "new_content": "y"}, ctx)
    assert missing.error == (
        "edit_file: original_content was not found in m.py; re-read the file and copy the exact text "
        "(including whitespace and indentation)"
    )
    ambiguous = edit_file.prepare({"path": "m.py", "original_content": "return x + 1", "new_content": "y"}, ctx)
    assert ambiguous.error == (
        "edit_file: original_content occurs 2 times in m.py; add surrounding lines to make it unique, "
        "or set all_occurrences to true to replace all of them"
    )
    assert ambiguous.details is None


async def test_edit_file_all_occurrences(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", SOURCE)
    args = {"path": "m.py", "original_content": "x + 1", "new_content": "x + 2", "all_occurrences": "true"}
    prepared, result = await call(edit_file, args, ctx)
    assert prepared.details is not None
    assert prepared.details["linesAdded"] == 2 and prepared.details["linesRemoved"] == 2
    assert result.output == "Replaced 2 occurrences in m.py"
    assert (ws / "m.py").read_text() == SOURCE.replace("x + 1", "x + 2")


async def test_edit_file_changed_since_prepare(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", SOURCE)
    prepared = edit_file.prepare({"path": "m.py", "original_content": "def f", "new_content": "def h"}, ctx)
    write(ws / "m.py", SOURCE + "# appended\n")
    result = await edit_file.run(prepared, ctx)
    assert result.error
    assert result.output == "edit_file: m.py: file changed since the diff was shown; re-read it and try again"
    assert (ws / "m.py").read_text() == SOURCE + "# appended\n"


async def test_edit_file_keeps_crlf_line_endings(ws: Path, ctx: ToolContext) -> None:
    write(ws / "w.txt", "a\r\nb\r\nc\r\n")
    _, result = await call(edit_file, {"path": "w.txt", "original_content": "a\nb", "new_content": "a\nB\nb"}, ctx)
    assert not result.error, result.output
    assert (ws / "w.txt").read_bytes() == b"a\r\nB\r\nb\r\nc\r\n"


async def test_edit_file_creates_a_missing_file_with_empty_original(ws: Path, ctx: ToolContext) -> None:
    prepared, result = await call(edit_file, {"path": "new.md", "original_content": "", "new_content": "# T\n"}, ctx)
    assert prepared.summary == 'Creating file "new.md"'
    assert result.output == "Created new.md"
    assert (ws / "new.md").read_text() == "# T\n"


@pytest.mark.parametrize(
    "args, message",
    [
        ({"path": "gone.py", "original_content": "a", "new_content": "b"},
         "edit_file: file not found: gone.py (relative paths start at the workspace folder <root>)"),
        ({"path": "m.py", "original_content": "", "new_content": "b"},
         "edit_file: original_content is empty; copy the text to replace from the file "
         "(use write_file to replace the whole file)"),
        ({"path": "m.py", "original_content": "def f", "new_content": "def f"},
         "edit_file: new_content is the same as original_content; nothing to change"),
        ({"path": "bin.dat", "original_content": "a", "new_content": "b"},
         "edit_file: cannot change bin.dat: file looks binary (it contains NUL bytes)"),
        ({"path": "m.py", "original_content": "def f"}, "edit_file: missing required argument 'new_content'"),
        ({"path": "m.py", "original_content": "def f", "new_content": "x", "all_occurrences": "sometimes"},
         "edit_file: argument 'all_occurrences' must be a boolean (got 'sometimes')"),
        ({"path": ".", "original_content": "a", "new_content": "b"}, "edit_file: . is a directory, not a file"),
    ],
)  # fmt: skip
async def test_edit_file_bad_input(ws: Path, ctx: ToolContext, args: dict, message: str) -> None:
    message = message.replace("<root>", str(ctx.root))
    write(ws / "m.py", SOURCE)
    write(ws / "bin.dat", b"a\0b")
    prepared, result = await call(edit_file, args, ctx)
    assert prepared.error == message
    assert result.error and result.output == message


# -- move_file ------------------------------------------------------------------------------------------------------


async def test_move_file(ws: Path, ctx: ToolContext) -> None:
    write(ws / "old/name.py", "x = 1\n")
    prepared = move_file.prepare({"source": "old/name.py", "destination": "new/dir/name2.py"}, ctx)
    assert prepared.error is None
    assert prepared.summary == 'Moving "old/name.py" to "new/dir/name2.py"'
    assert prepared.details == {
        "type": "fileChange",
        "path": str((ws / "new/dir/name2.py").resolve()),
        "diff": "--- a/old/name.py\n+++ b/new/dir/name2.py\n",
        "linesAdded": 0,
        "linesRemoved": 0,
    }
    result = await move_file.run(prepared, ctx)
    assert result.output == "Moved old/name.py to new/dir/name2.py"
    assert not (ws / "old/name.py").exists()
    assert (ws / "new/dir/name2.py").read_text() == "x = 1\n"


async def test_move_file_errors(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "a")
    write(ws / "b.txt", "b")
    (ws / "d").mkdir()
    assert move_file.prepare({"source": "a.txt", "destination": "b.txt"}, ctx).error == (
        "move_file: destination already exists: b.txt"
    )
    assert move_file.prepare({"source": "zz.txt", "destination": "c.txt"}, ctx).error == (
        "move_file: source not found: zz.txt"
    )
    assert move_file.prepare({"source": "d", "destination": "d/inner"}, ctx).error == (
        "move_file: cannot move a directory inside itself"
    )
    assert move_file.prepare({"source": "a.txt"}, ctx).error == "move_file: missing required argument 'destination'"
    # the destination appears between prepare and run
    prepared = move_file.prepare({"source": "a.txt", "destination": "c.txt"}, ctx)
    write(ws / "c.txt", "c")
    result = await move_file.run(prepared, ctx)
    assert result.error and result.output == "move_file: destination already exists: c.txt"
    assert (ws / "a.txt").read_text() == "a"


async def test_move_file_source_changed_since_prepare(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "a")
    prepared = move_file.prepare({"source": "a.txt", "destination": "c.txt"}, ctx)
    write(ws / "a.txt", "changed")
    result = await move_file.run(prepared, ctx)
    assert result.error and "file changed since the move was shown" in result.output
    assert not (ws / "c.txt").exists()


async def test_move_file_outside_is_flagged(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(ws / "a.txt", "a")
    prepared = move_file.prepare({"source": "a.txt", "destination": str(tmp_path / "out.txt")}, ctx)
    assert prepared.outside_workspace
    assert prepared.details is not None
    assert prepared.details["diff"] == f"--- a/a.txt\n+++ {(tmp_path / 'out.txt').resolve()}\n"


async def test_move_file_moves_a_symlink_not_its_target(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    target = write(tmp_path / "target.txt", "t")
    (ws / "link").symlink_to(target)
    prepared, result = await call(move_file, {"source": "link", "destination": "link2"}, ctx)
    assert not prepared.outside_workspace
    assert not result.error, result.output
    assert (ws / "link2").is_symlink() and target.exists()


async def test_the_file_tools_never_rewrite_a_notebook_s_json(ws, ctx) -> None:
    import nbformat

    from eca_notebook.tools.fs import EditFileTool, WriteFileTool

    path = ws / "analysis.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    before = path.read_bytes()
    edit = EditFileTool().prepare({"path": "analysis.ipynb", "original_content": "x = 1", "new_content": "x = 2"},
                                  ctx)
    write = WriteFileTool().prepare({"path": "analysis.ipynb", "content": "{}"}, ctx)
    for prepared in (edit, write):
        assert prepared.error and "notebook_edit_cell" in prepared.error, prepared.error
    assert path.read_bytes() == before
    # a new notebook may be written whole, if it is one
    bad = WriteFileTool().prepare({"path": "new.ipynb", "content": '{"cells": "no"}'}, ctx)
    assert bad.error and "would not be a valid notebook" in bad.error
    good = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# New")]))
    assert WriteFileTool().prepare({"path": "new.ipynb", "content": good}, ctx).error is None


@pytest.mark.parametrize(("tool", "args"), [
    (ReadFileTool(), {"path": "../X"}),
    (WriteFileTool(), {"path": "../X/new.txt", "content": "x"}),  # a parent that is a file, or missing
    (EditFileTool(), {"path": "../X", "original_content": "absent text", "new_content": "y"}),
    (MoveFileTool(), {"source": "../X", "destination": "moved.txt"}),
    (MoveFileTool(), {"source": "README.md", "destination": "../X"}),
], ids=lambda x: getattr(x, "name", ""))
async def test_an_outside_path_that_cannot_be_used_asks_like_one_that_can(ws: Path, ctx: ToolContext, tool,
                                                                         args) -> None:
    """No existence oracle outside the workspace: "file not found", "already exists" or "text not found" would tell
    the model about the user's files before anyone was asked. Such a call asks like any outside call; it fails only
    once approved."""
    write(ws / "README.md", "# readme\n")
    write(ws.parent / "exists.txt", "old content\n")
    answers = []
    for name in ("exists.txt", "missing.txt"):
        given = {k: v.replace("X", name) if isinstance(v, str) else v for k, v in args.items()}
        prepared = tool.prepare(given, ctx)
        assert prepared.error is None and prepared.outside_workspace, prepared
        answers.append(prepared)
    failed = next(p for p in answers if isinstance(p.state, dict) and "held_error" in p.state)
    result = await tool.run(failed, ctx)
    assert result.error and result.output.startswith(f"{tool.name}: ")
    assert (ws.parent / "exists.txt").read_text() == "old content\n"  # a failure changes nothing
