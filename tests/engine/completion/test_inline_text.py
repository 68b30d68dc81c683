"""The text rules of inline completion: cursor, windows, and what is kept of a model's answer."""

from __future__ import annotations

import pytest

from eca_notebook.engine.completion._text import (
    Trim,
    heal,
    locate,
    prefix_window,
    split_trailing_space,
    strip_fences,
    suffix_window,
)


def test_locate_is_one_based_and_clamped():
    doc = "ab\ncde\n"
    cursor = locate(doc, 2, 2)
    assert (cursor.prefix, cursor.suffix) == ("ab\nc", "de\n")
    assert (cursor.line_prefix, cursor.line_suffix) == ("c", "de")
    assert locate(doc, 9, 9).prefix == doc  # past the end: the end
    assert locate(doc, 2, 99).prefix == "ab\ncde"  # past the line's end: the line's end
    assert locate(doc, 0, 0).prefix == ""
    assert locate("", 1, 1).suffix == ""


def test_prefix_window_keeps_whole_lines_within_both_budgets():
    prefix = "".join(f"line {i}\n" for i in range(100)) + "x = "
    assert prefix_window(prefix, 10_000, 2) == "line 98\nline 99\nx = "
    window = prefix_window(prefix, 20, 50)
    assert window == "line 99\nx = " and len(window) <= 20
    assert prefix_window("short", 100, 10) == "short"


def test_suffix_window_ends_at_a_line_end():
    suffix = ")\n" + "".join(f"line {i}\n" for i in range(100))
    assert suffix_window(suffix, 10_000, 2) == ")\nline 0\nline 1\n"
    assert suffix_window(suffix, 12, 50) == ")\nline 0\n"
    assert suffix_window(suffix, 0, 50) == ""


def test_strip_fences():
    assert strip_fences("```python\n    x = 1\n```\n") == ("    x = 1", True)
    assert strip_fences("`x + 1`") == ("x + 1", True)
    assert strip_fences("x = 1") == ("x = 1", False)


def test_trailing_space_is_held_back_and_healed():
    assert split_trailing_space("    return ") == ("    return", " ")
    assert split_trailing_space("def f():\n    ") == ("def f():\n   ", " ")  # indentation: all but one space
    assert split_trailing_space("x = 1") == ("x = 1", "")
    assert heal(" 1", " ") == ("1", True)
    assert heal("1", " ") == ("1", True)
    assert heal("  ", "    ") == ("", False)
    assert heal("  x", "    ") == ("x", True)


def trim(doc: str, text: str, *, chat: bool = False, final: bool = True) -> tuple[str, bool]:
    at = doc.index("|")
    cursor = locate(doc.replace("|", ""), doc[:at].count("\n") + 1, at - doc.rfind("\n", 0, at))
    return Trim(cursor, cursor.suffix, chat=chat).apply(text, final=final)


def test_a_blank_line_ends_the_block():
    assert trim("def f():\n    |", "x = 1\n    return x\n\ndef g():") == ("x = 1\n    return x", True)


def test_a_dedent_below_the_cursor_line_ends_the_block():
    assert trim("def f():\n    x = |", "1\n    y = 2\nprint(f())") == ("1\n    y = 2", True)


def test_mid_line_completes_the_line_only():
    assert trim("value = compute(|, 2)\n", "x\n    more") == ("x", True)


def test_the_next_line_below_is_never_repeated():
    doc = "def f():\n    |\n    return total\n"
    assert trim(doc, "total = 0\n    return total") == ("total = 0", True)


@pytest.mark.parametrize(("doc", "text", "kept"), [
    ('print(|)', '"hi")', '"hi"'),  # the closing parenthesis is already there
    ('print(|)', 'len(x)', 'len(x)'),  # balanced: both kept
    ('print("|")', 'hi"', 'hi'),
])
def test_closers_right_of_the_cursor_are_not_repeated(doc, text, kept):
    assert trim(doc, text)[0] == kept


def test_an_unfinished_stream_waits_for_the_indentation():
    doc = "def f():\n    |"
    assert trim(doc, "x = 1\n  ", final=False) == ("x = 1", False)
    assert trim(doc, "x = 1\n    y", final=False) == ("x = 1\n    y", False)


def test_chat_answers_lose_fences_and_echoes():
    assert trim("df.|", "```python\ndf.head()\n```", chat=True) == ("head()", True)
    assert trim("x = |", "<ECA_TAG>42", chat=True)[0] == "42"
    assert trim("    return |", "return math.pi", chat=True)[0] == "math.pi"
    assert trim("x = |", "```py", chat=True, final=False) == ("", False)  # the fence line is not yet complete


def test_a_fence_in_a_raw_continuation_ends_it():
    assert trim("print(df.|", "describe())\n```\nmore") == ("describe())", True)
