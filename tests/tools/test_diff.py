from __future__ import annotations

from pathlib import Path

from eca_notebook.tools._diff import file_change_details, unified_diff
from eca_notebook.tools.base import ToolContext


def test_small_edit_exact_text() -> None:
    old = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
    new = "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\neight\n"
    diff, added, removed = unified_diff(old, new, "a/x.txt", "b/x.txt")
    assert diff == (
        "--- a/x.txt\n+++ b/x.txt\n@@ -1,7 +1,8 @@\n"
        " one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n+eight\n"
    )
    assert (added, removed) == (2, 1)


def test_new_file_is_diff_from_empty() -> None:
    diff, added, removed = unified_diff("", "a\nb\n", "a/n.py", "b/n.py")
    assert diff == "--- a/n.py\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    assert (added, removed) == (2, 0)


def test_missing_final_newline_is_marked() -> None:
    diff, added, removed = unified_diff("a\nb", "a\nc", "a/f", "b/f")
    assert diff == ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
                    "\\ No newline at end of file\n")
    assert (added, removed) == (1, 1)


def test_body_lines_that_look_like_headers_are_counted() -> None:
    _, added, removed = unified_diff("-- sql comment\n", "++ weird\n", "a/q", "b/q")
    assert (added, removed) == (1, 1)


def test_identical_is_empty() -> None:
    assert unified_diff("x\n", "x\n", "a/f", "b/f") == ("", 0, 0)


def test_form_feed_is_not_a_line_break() -> None:
    diff, added, removed = unified_diff("a\x0cb\n", "a\x0cc\n", "a/f", "b/f")
    assert (added, removed) == (1, 1)


def test_details_use_workspace_relative_labels(tmp_path: Path) -> None:
    ctx = ToolContext(workspace_folders=[tmp_path])
    d = file_change_details(tmp_path.resolve() / "src" / "m.py", "", "x\n", ctx)
    assert d == {
        "type": "fileChange",
        "path": str(tmp_path.resolve() / "src" / "m.py"),
        "diff": "--- a/src/m.py\n+++ b/src/m.py\n@@ -0,0 +1 @@\n+x\n",
        "linesAdded": 1,
        "linesRemoved": 0,
    }
    outside = file_change_details(Path("/elsewhere/f.txt"), "", "x\n", ctx)
    assert outside["diff"].startswith("--- /elsewhere/f.txt\n+++ /elsewhere/f.txt\n")
