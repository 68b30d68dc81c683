"""Hunks of a file change: the same blocks as the diff shown, and any subset applies cleanly."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from eca_notebook.tools import fs
from eca_notebook.tools._diff import unified_diff
from eca_notebook.tools._hunks import apply_hunks, describe, diff_hunks
from eca_notebook.tools.base import ToolContext

OLD = "".join(f"line {i}\n" for i in range(1, 41))
# three separate changes: a replacement near the top, an insertion in the middle, a deletion near the end
NEW = OLD.replace("line 2\n", "line two\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")


def test_three_hunks_with_headers_ranges_and_counts() -> None:
    hunks = diff_hunks(OLD, NEW)
    assert [h.id for h in hunks] == ["h1", "h2", "h3"]
    assert [h.header for h in hunks] == ["@@ -1,5 +1,5 @@", "@@ -18,6 +18,7 @@", "@@ -35,6 +36,5 @@"]
    assert [(h.lines_added, h.lines_removed) for h in hunks] == [(1, 1), (1, 0), (0, 1)]
    assert (hunks[1].old_start, hunks[1].old_lines, hunks[1].new_start, hunks[1].new_lines) == (18, 6, 18, 7)
    assert "+extra\n" in hunks[1].text and "-line 2\n" in hunks[0].text
    assert describe(hunks[:1]) == "h1 (@@ -1,5 +1,5 @@)"


def test_each_subset_applies_only_its_hunks() -> None:
    hunks = diff_hunks(OLD, NEW)
    assert apply_hunks(OLD, NEW, hunks, ["h2"]) == OLD.replace("line 20\n", "line 20\nextra\n")
    assert apply_hunks(OLD, NEW, hunks, ["h1", "h3"]) == OLD.replace("line 2\n", "line two\n").replace(
        "line 38\n", "")
    assert apply_hunks(OLD, NEW, hunks, []) == OLD
    assert apply_hunks(OLD, NEW, hunks, ["h1", "h2", "h3"]) == NEW
    assert apply_hunks(OLD, NEW, hunks, ["h9"]) == OLD  # an id the change never had applies nothing


_lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "x\n", "y\n"]), max_size=25)


@settings(max_examples=300, deadline=None)
@given(_lines, _lines, st.booleans(), st.booleans(), st.data())
def test_hunks_match_the_diff_and_subsets_compose(a: list[str], b: list[str], cut_a: bool, cut_b: bool,
                                                  data: st.DataObject) -> None:
    old = "".join(a)[:-1] if cut_a and a else "".join(a)  # with and without a final newline
    new = "".join(b)[:-1] if cut_b and b else "".join(b)
    hunks = diff_hunks(old, new)
    diff, _, _ = unified_diff(old, new, "a", "b")
    assert "".join(h.text for h in hunks) == "".join(diff.splitlines(True)[2:])  # the blocks on screen
    assert apply_hunks(old, new, hunks, [h.id for h in hunks]) == new
    assert apply_hunks(old, new, hunks, []) == old
    chosen = data.draw(st.lists(st.sampled_from([h.id for h in hunks]), unique=True)) if hunks else []
    partial = apply_hunks(old, new, hunks, chosen)
    rest = diff_hunks(partial, new)  # what is left to do is exactly the hunks not taken
    assert len(rest) <= len(hunks) - len(chosen) + 1
    assert apply_hunks(partial, new, rest, [h.id for h in rest]) == new


async def test_edit_file_narrowed_to_one_hunk_writes_it_says_so_and_undoes(tmp_path: Path) -> None:
    ctx = ToolContext(workspace_folders=[tmp_path])
    (tmp_path / "m.txt").write_text(OLD)
    tool = fs.WriteFileTool()
    prepared = tool.prepare({"path": "m.txt", "content": NEW}, ctx)
    assert [h["id"] for h in prepared.details["hunks"]] == ["h1", "h2", "h3"]
    narrowed = tool.select_hunks(prepared, ["h2"], ctx)
    assert [h["applied"] for h in narrowed.details["hunks"]] == [False, True, False]
    assert narrowed.details["linesAdded"] == 1 and narrowed.details["linesRemoved"] == 0  # the diff written
    assert (tmp_path / "m.txt").read_text() == OLD  # nothing before run
    result = await tool.run(narrowed, ctx)
    assert (tmp_path / "m.txt").read_text() == OLD.replace("line 20\n", "line 20\nextra\n")
    assert "Applied: h2 (@@ -18,6 +18,7 @@)" in result.output
    assert "Not applied (the file keeps its previous text there): h1 (@@ -1,5 +1,5 @@), h3 (@@ -35,6 +36,5 @@)" \
        in result.output
    assert result.details is not None and result.details["undoable"] is True
    assert result.undo is not None
    assert "back as it was" in await result.undo()
    assert (tmp_path / "m.txt").read_text() == OLD


async def test_undo_refuses_after_a_later_change_and_removes_a_created_file(tmp_path: Path) -> None:
    ctx = ToolContext(workspace_folders=[tmp_path])
    tool = fs.WriteFileTool()
    created = await tool.run(tool.prepare({"path": "new.txt", "content": "hi\n"}, ctx), ctx)
    (tmp_path / "old.txt").write_text("a\n")
    changed = await tool.run(tool.prepare({"path": "old.txt", "content": "b\n"}, ctx), ctx)
    (tmp_path / "old.txt").write_text("edited by the user\n")
    assert changed.undo is not None and created.undo is not None
    try:
        await changed.undo()
    except ValueError as exc:
        assert "changed after this edit" in str(exc)
    else:
        raise AssertionError("undo overwrote a later change")
    assert (tmp_path / "old.txt").read_text() == "edited by the user\n"
    assert "removed" in await created.undo()
    assert not (tmp_path / "new.txt").exists()
