"""ACP diff contents rebuilt from the engine's unified diffs (no file access)."""

from __future__ import annotations

import random
from pathlib import Path

from eca_notebook.acp._diff import diff_contents, hunks, reverse_apply
from eca_notebook.tools._diff import unified_diff

PATH = "/ws/f.txt"


def _diff(old: str, new: str) -> str:
    return unified_diff(old, new, "a/f.txt", "b/f.txt")[0]


def _details(old: str, new: str) -> dict:
    return {"type": "fileChange", "path": PATH, "diff": _diff(old, new), "linesAdded": 0, "linesRemoved": 0}


def test_reverse_apply_recovers_the_old_text_exactly():
    rng = random.Random(7)
    lines = ["alpha\n", "beta\n", "gamma\n", "delta\n", "\n", "x" * 40 + "\n"]
    checked = 0
    for _ in range(2000):
        old = "".join(rng.choice(lines) for _ in range(rng.randint(0, 15))) + rng.choice(["", "tail"])
        new = "".join(rng.choice(lines) for _ in range(rng.randint(0, 15))) + rng.choice(["", "end"])
        diff = _diff(old, new)
        if not diff:
            continue
        assert reverse_apply(new, diff) == old, (old, new, diff)
        checked += 1
    assert checked > 1500


def test_reverse_apply_refuses_a_diff_that_does_not_fit():
    diff = _diff("a\nb\nc\n", "a\nB\nc\n")
    assert reverse_apply("a\nX\nc\n", diff) is None
    assert reverse_apply("anything", "not a diff") is None


def test_missing_final_newline_marker_is_honoured():
    diff = _diff("one\ntwo", "one\ntwo\n")
    assert "\\ No newline at end of file" in diff
    [(_, _, _, _, body)] = hunks(diff)
    assert ("-", "two") in body and ("+", "two\n") in body
    assert reverse_apply("one\ntwo\n", diff) == "one\ntwo"


def test_write_file_gets_whole_texts_and_new_files_no_old_text():
    old, new = "a = 1\nb = 2\n" * 20, ("a = 1\nb = 2\n" * 20).replace("b = 2", "b = 3", 1)
    [content] = diff_contents("write_file", {"path": "f.txt", "content": new}, _details(old, new))
    assert content == {"type": "diff", "path": PATH, "oldText": old, "newText": new}
    [created] = diff_contents("write_file", {"path": "f.txt", "content": "hi\n"}, _details("", "hi\n"))
    assert created == {"type": "diff", "path": PATH, "newText": "hi\n"}


def test_edit_file_gets_the_snippets():
    args = {"path": "f.txt", "original_content": "b = 2", "new_content": "b = 3"}
    [content] = diff_contents("edit_file", args, _details("b = 2\n", "b = 3\n"))
    assert content == {"type": "diff", "path": PATH, "oldText": "b = 2", "newText": "b = 3"}


def test_other_tools_get_one_diff_per_hunk():
    old = "".join(f"line {i}\n" for i in range(40))
    new = old.replace("line 2\n", "LINE 2\n").replace("line 30\n", "LINE 30\n")
    contents = diff_contents("patch", {}, _details(old, new))
    assert len(contents) == 2
    assert "line 2\n" in contents[0]["oldText"] and "LINE 2\n" in contents[0]["newText"]
    assert "LINE 30\n" in contents[1]["newText"]


def test_no_details_or_no_hunks_means_no_diff():
    assert diff_contents("read_file", {"path": "x"}, None) == []
    move = {"type": "fileChange", "path": PATH, "diff": "--- a/x\n+++ b/y\n", "linesAdded": 0, "linesRemoved": 0}
    assert diff_contents("move_file", {}, move) == []
    assert Path(PATH).is_absolute()


async def test_a_notebook_cell_edit_gets_the_whole_cell_sources(tmp_path):
    import nbformat

    from eca_notebook.tools.base import ToolContext
    from eca_notebook.tools.notebook import NotebookEditCellTool

    old = "import pandas as pd\ndf = pd.read_csv('a.csv')\nshare = total / parts"
    new = "import pandas as pd\ndf = pd.read_csv('a.csv')\nshare = total / max(parts, 1)"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(old)])
    nbformat.write(nb, tmp_path / "report.ipynb")
    args = {"path": "report.ipynb", "cell_id": nb.cells[0].id, "source": new}
    prepared = await NotebookEditCellTool().prepare(args, ToolContext(workspace_folders=[tmp_path]))
    got = diff_contents("notebook_edit_cell", args, prepared.details)
    assert got == [{"type": "diff", "path": str(tmp_path / "report.ipynb"), "oldText": old, "newText": new}]


def test_a_deletion_is_the_whole_old_text_and_an_empty_new_text():
    old = "first\nsecond\n" + "".join(f"line {i}\n" for i in range(30)) + "no newline at the end"
    diff = unified_diff(old, "", "a/f.txt", "/dev/null")[0]
    details = {"type": "fileChange", "path": PATH, "diff": diff, "linesAdded": 0, "linesRemoved": 33}
    assert diff_contents("delete_file", {"path": "f.txt"}, details) == [
        {"type": "diff", "path": PATH, "oldText": old, "newText": ""}]
    binary = {**details, "diff": "--- a/f.bin\n+++ /dev/null\nBinary file f.bin deleted (2 KB)\n"}
    assert diff_contents("delete_file", {"path": "f.bin"}, binary) == [
        {"type": "diff", "path": PATH, "oldText": "", "newText": ""}]
