"""The file-changing tools re-check their target when they write, not only when the diff was made (issue #12, 1).

Each test prepares a call (the user is shown "Creating file sub/x.txt"), then — between the diff and the approval —
swaps a directory on the path for a symlink to a folder outside the workspace, then runs the call. The write must be
refused with a clear error and nothing may land outside; on the old code the bytes followed the link and the tool
even reported success.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.fs import EditFileTool, MoveFileTool, WriteFileTool

from .conftest import write

write_file = WriteFileTool()
edit_file = EditFileTool()
move_file = MoveFileTool()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


def swap_for_link(directory: Path, target: Path) -> None:
    """What another process, a ``git checkout`` or another chat's command could do while the user looks at a diff."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.symlink_to(target, target_is_directory=True)


def assert_refused(result, *names: str) -> None:
    assert result.error, result.output
    assert "refused" in result.output and "symbolic link" in result.output and "outside the workspace" in result.output
    assert not result.output.startswith(("Created", "Overwrote", "Replaced", "Moved"))
    for name in names:
        assert name in result.output


async def test_write_file_creating_under_a_dir_swapped_for_an_outside_link(ws: Path, ctx: ToolContext,
                                                                           outside: Path) -> None:
    (ws / "sub").mkdir()
    prepared = write_file.prepare({"path": "sub/x.txt", "content": "secret plans\n"}, ctx)
    assert prepared.summary == 'Creating file "sub/x.txt"' and not prepared.outside_workspace
    swap_for_link(ws / "sub", outside)
    result = await write_file.run(prepared, ctx)
    assert_refused(result, "sub", str(outside))
    assert list(outside.iterdir()) == []  # nothing landed outside, not even a temp file


async def test_write_file_when_the_dir_did_not_exist_yet(ws: Path, ctx: ToolContext, outside: Path) -> None:
    prepared = write_file.prepare({"path": "new/deeper/x.txt", "content": "x"}, ctx)
    assert prepared.summary == 'Creating file "new/deeper/x.txt"'
    (ws / "new").symlink_to(outside, target_is_directory=True)
    result = await write_file.run(prepared, ctx)
    assert_refused(result, "new")
    assert list(outside.iterdir()) == []


async def test_write_file_overwriting_under_a_swapped_dir(ws: Path, ctx: ToolContext, outside: Path) -> None:
    write(ws / "sub/x.txt", "old\n")
    write(outside / "x.txt", "old\n")  # same content: the fingerprint check alone would not notice
    prepared = write_file.prepare({"path": "sub/x.txt", "content": "new\n"}, ctx)
    swap_for_link(ws / "sub", outside)
    result = await write_file.run(prepared, ctx)
    assert_refused(result)
    assert (outside / "x.txt").read_text() == "old\n"


async def test_write_file_through_a_deeper_swapped_component(ws: Path, ctx: ToolContext, outside: Path) -> None:
    (ws / "a/b/c").mkdir(parents=True)
    prepared = write_file.prepare({"path": "a/b/c/x.txt", "content": "x"}, ctx)
    shutil.rmtree(ws / "a/b")
    (ws / "a/b").symlink_to(outside, target_is_directory=True)
    (outside / "c").mkdir()
    result = await write_file.run(prepared, ctx)
    assert_refused(result, "a/b")
    assert list((outside / "c").iterdir()) == []


async def test_edit_file_under_a_swapped_dir(ws: Path, ctx: ToolContext, outside: Path) -> None:
    write(ws / "sub/app.py", "value = 1\n")
    write(outside / "app.py", "value = 1\n")
    prepared = edit_file.prepare({"path": "sub/app.py", "original_content": "value = 1",
                                  "new_content": "value = 2"}, ctx)
    assert prepared.error is None
    swap_for_link(ws / "sub", outside)
    result = await edit_file.run(prepared, ctx)
    assert_refused(result)
    assert (outside / "app.py").read_text() == "value = 1\n"


async def test_edit_file_creating_under_a_swapped_dir(ws: Path, ctx: ToolContext, outside: Path) -> None:
    (ws / "sub").mkdir()
    prepared = edit_file.prepare({"path": "sub/new.py", "original_content": "", "new_content": "x = 1\n"}, ctx)
    assert prepared.summary == 'Creating file "sub/new.py"'
    swap_for_link(ws / "sub", outside)
    result = await edit_file.run(prepared, ctx)
    assert_refused(result)
    assert list(outside.iterdir()) == []


async def test_move_file_destination_dir_swapped(ws: Path, ctx: ToolContext, outside: Path) -> None:
    write(ws / "a.txt", "data\n")
    (ws / "dest").mkdir()
    prepared = move_file.prepare({"source": "a.txt", "destination": "dest/a.txt"}, ctx)
    assert prepared.error is None and not prepared.outside_workspace
    swap_for_link(ws / "dest", outside)
    result = await move_file.run(prepared, ctx)
    assert_refused(result, "dest")
    assert (ws / "a.txt").read_text() == "data\n"  # still where it was
    assert list(outside.iterdir()) == []


async def test_move_file_source_dir_swapped(ws: Path, ctx: ToolContext, outside: Path) -> None:
    write(ws / "src/a.txt", "data\n")
    write(outside / "a.txt", "data\n")  # an outside file the move would pull into the workspace
    prepared = move_file.prepare({"source": "src/a.txt", "destination": "b.txt"}, ctx)
    swap_for_link(ws / "src", outside)
    result = await move_file.run(prepared, ctx)
    assert_refused(result, "src")
    assert (outside / "a.txt").read_text() == "data\n"
    assert not (ws / "b.txt").exists()


async def test_a_swap_inside_the_workspace_is_refused_too(ws: Path, ctx: ToolContext) -> None:
    """The approved diff names a place; a link that now leads elsewhere — even inside — is not that place."""
    (ws / "sub").mkdir()
    (ws / "other").mkdir()
    prepared = write_file.prepare({"path": "sub/x.txt", "content": "x"}, ctx)
    swap_for_link(ws / "sub", ws / "other")
    result = await write_file.run(prepared, ctx)
    assert result.error and "refused" in result.output and "symbolic link" in result.output
    assert "outside the workspace" not in result.output
    assert list((ws / "other").iterdir()) == []


async def test_approved_outside_path_is_still_written(ws: Path, ctx: ToolContext, outside: Path) -> None:
    """What the user explicitly approved outside the workspace is written — at exactly that place."""
    prepared = write_file.prepare({"path": str(outside / "deep/x.txt"), "content": "ok\n"}, ctx)
    assert prepared.outside_workspace
    result = await write_file.run(prepared, ctx)
    assert not result.error, result.output
    assert (outside / "deep/x.txt").read_text() == "ok\n"


async def test_approved_outside_path_whose_dir_was_swapped(ws: Path, ctx: ToolContext, tmp_path: Path,
                                                           outside: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (outside / "deep").mkdir()
    prepared = write_file.prepare({"path": str(outside / "deep/x.txt"), "content": "ok\n"}, ctx)
    swap_for_link(outside / "deep", elsewhere)
    result = await write_file.run(prepared, ctx)
    assert result.error and "refused" in result.output
    assert list(elsewhere.iterdir()) == []


async def test_symlinked_dirs_that_were_there_at_prepare_keep_working(ws: Path, ctx: ToolContext) -> None:
    """A link present when the diff was made was resolved then: the write goes to its (approved) target."""
    (ws / "real").mkdir()
    (ws / "link").symlink_to(ws / "real", target_is_directory=True)
    prepared = write_file.prepare({"path": "link/x.txt", "content": "x\n"}, ctx)
    result = await write_file.run(prepared, ctx)
    assert not result.error, result.output
    assert (ws / "real/x.txt").read_text() == "x\n"


async def test_writes_stay_atomic_and_keep_the_mode(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "sub/run.sh", "#!/bin/sh\necho 1\n")
    os.chmod(target, 0o750)
    inode = target.stat().st_ino
    _, result = await _call(write_file, {"path": "sub/run.sh", "content": "#!/bin/sh\necho 2\n"}, ctx)
    assert not result.error, result.output
    assert target.read_text() == "#!/bin/sh\necho 2\n"
    assert target.stat().st_mode & 0o777 == 0o750
    assert target.stat().st_ino != inode  # replaced by rename, never rewritten in place
    assert sorted(p.name for p in (ws / "sub").iterdir()) == ["run.sh"]  # no temp file left


def test_guarded_write_refuses_a_final_directory_swap(ws: Path, outside: Path) -> None:
    from eca_notebook.tools._files import TargetMoved, guarded_write

    (ws / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(TargetMoved) as caught:
        guarded_write(ws / "sub/x.txt", "x", [ws])
    assert caught.value.outside and caught.value.link == ws / "sub"
    assert list(outside.iterdir()) == []


async def _call(tool, args, ctx):
    prepared = tool.prepare(args, ctx)
    return prepared, await tool.run(prepared, ctx)
