from __future__ import annotations

import pytest

from eca_notebook.providers._think import ThinkTagSplitter

TEXT = "Intro <think>step one, step two</think>The answer is 4. <think>again</think>done"


def run(chunks, start="<think>", end="</think>"):
    splitter = ThinkTagSplitter(start, end)
    pieces = [p for c in chunks for p in splitter.feed(c)] + splitter.flush()
    merged: list[list[str]] = []
    for kind, text in pieces:
        assert text, "no empty pieces"
        if merged and merged[-1][0] == kind:
            merged[-1][1] += text
        else:
            merged.append([kind, text])
    return [tuple(m) for m in merged]


EXPECTED = [
    ("text", "Intro "),
    ("reasoning", "step one, step two"),
    ("text", "The answer is 4. "),
    ("reasoning", "again"),
    ("text", "done"),
]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, len(TEXT)])
def test_any_chunking_gives_the_same_split(size):
    chunks = [TEXT[i : i + size] for i in range(0, len(TEXT), size)]
    assert run(chunks) == EXPECTED


def test_partial_tag_is_held_back_until_decided():
    splitter = ThinkTagSplitter()
    assert splitter.feed("a <th") == [("text", "a ")]
    assert splitter.feed("ought") == [("text", "<thought")]  # not a tag after all
    assert splitter.feed("<") == []
    assert splitter.flush() == [("text", "<")]


def test_custom_tags():
    assert run(["x<<R>>y<</R>>z"], "<<R>>", "<</R>>") == [("text", "x"), ("reasoning", "y"), ("text", "z")]
