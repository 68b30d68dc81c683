"""delete_file: a deletion diff before approval, the write-time checks (the file unchanged, no symlink swapped in on
the way), undo byte for byte, and what it refuses."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from eca_notebook.engine.turn._risk import assess_risk
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.fs import DeleteFileTool

from .conftest import HAS_GIT, write

delete_file = DeleteFileTool()


async def test_prepare_shows_a_deletion_diff_and_deletes_nothing(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "pkg" / "old.py", "a = 1\nb = 2\n")
    prepared = await delete_file.prepare({"path": "pkg/old.py", "rationale": "unused"}, ctx)
    assert prepared.error is None and prepared.summary == 'Deleting file "pkg/old.py"'
    details = prepared.details or {}
    assert details["diff"] == "--- a/pkg/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a = 1\n-b = 2\n"
    assert (details["linesAdded"], details["linesRemoved"], details["rationale"]) == (0, 2, "unused")
    assert target.exists() and not prepared.outside_workspace


async def test_run_deletes_and_undo_restores_bytes_and_mode(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "data.bin", b"\x00\x01binary\xff")
    target.chmod(0o600)
    prepared = await delete_file.prepare({"path": "data.bin"}, ctx)
    assert "Binary file data.bin deleted" in (prepared.details or {})["diff"]
    result = await delete_file.run(prepared, ctx)
    assert not result.error and result.output == "Deleted data.bin" and result.details["undoable"] is True
    assert not target.exists()
    assert result.undo is not None
    assert "restored" in await result.undo()
    assert target.read_bytes() == b"\x00\x01binary\xff" and target.stat().st_mode & 0o777 == 0o600


async def test_undo_never_overwrites_what_took_its_place(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "x.txt", "old\n")
    result = await delete_file.run(await delete_file.prepare({"path": "x.txt"}, ctx), ctx)
    write(target, "new work\n")
    assert result.undo is not None
    with pytest.raises(ValueError, match="exists again"):
        await result.undo()
    assert target.read_text() == "new work\n"


async def test_a_file_changed_after_the_diff_is_not_deleted(ws: Path, ctx: ToolContext) -> None:
    target = write(ws / "x.txt", "shown\n")
    prepared = await delete_file.prepare({"path": "x.txt"}, ctx)
    target.write_text("edited since\n")
    result = await delete_file.run(prepared, ctx)
    assert result.error and "changed since the deletion was shown" in result.output
    assert target.read_text() == "edited since\n"


async def test_a_parent_swapped_for_an_outside_link_is_refused(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(ws / "sub" / "x.txt", "inside\n")
    outside = tmp_path / "outside"
    write(outside / "x.txt", "inside\n")  # the same bytes: only the place differs
    prepared = await delete_file.prepare({"path": "sub/x.txt"}, ctx)
    shutil.rmtree(ws / "sub")
    (ws / "sub").symlink_to(outside, target_is_directory=True)
    result = await delete_file.run(prepared, ctx)
    assert result.error and "refused to delete" in result.output and "symbolic link" in result.output
    assert (outside / "x.txt").read_text() == "inside\n"


@pytest.mark.parametrize("make", ["dir", "link", "missing"])
async def test_refuses_directories_links_and_missing_files(ws: Path, ctx: ToolContext, make: str) -> None:
    write(ws / "real.txt", "x\n")
    if make == "dir":
        (ws / "thing").mkdir()
    elif make == "link":
        (ws / "thing").symlink_to(ws / "real.txt")
    prepared = await delete_file.prepare({"path": "thing"}, ctx)
    assert prepared.error is not None
    assert {"dir": "is a directory", "link": "symbolic link", "missing": "file not found"}[make] in prepared.error
    assert (ws / "real.txt").exists()


async def test_risk_tracked_medium_untracked_and_outside_high(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    write(ws / "loose.txt", "x\n")
    loose = await delete_file.prepare({"path": "loose.txt"}, ctx)
    assert assess_risk(delete_file, loose, ctx).level == "high"
    outside = write(tmp_path / "elsewhere.txt", "x\n")
    far = await delete_file.prepare({"path": str(outside)}, ctx)
    assert far.outside_workspace and assess_risk(delete_file, far, ctx).level == "high"
    if not HAS_GIT:
        return
    write(ws / "kept.py", "y = 2\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "kept.py"], cwd=ws, check=True)
    kept = await delete_file.prepare({"path": "kept.py"}, ctx)
    risk = assess_risk(delete_file, kept, ctx)
    assert risk.level == "medium" and "tracked by git" in risk.reason
    assert assess_risk(delete_file, await delete_file.prepare({"path": "loose.txt"}, ctx), ctx).level == "high"
