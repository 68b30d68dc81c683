"""The repetition guard: loops of every shape are caught early; real answers, however long, are not."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from eca_notebook.engine.turn._repetition import LONG_REPEATS, MIN_RUN, WORD_CHARS, RepetitionGuard

ROOT = Path(__file__).resolve().parents[3]


def feed(text: str, step: int = 3) -> RepetitionGuard | None:
    guard = RepetitionGuard()
    for i in range(0, len(text), step):
        if guard.feed(text[i:i + step]):
            return guard
    return None


@pytest.mark.parametrize("prefix,unit", [
    ("python-1.1.2-py2.py3", "1.0-b13.0."),  # what the embedded model streamed for 46 s
    ("Here you go:\n", "1."),
    ("ok\n", "    return a + b\n"),  # a code line again and again
    ("", "x"),
    ("The answer is ", "the answer is the answer is "),
    ("List:\n", "- item\n"),
])
@pytest.mark.parametrize("step", [1, 4, 37])
def test_loops_are_caught_and_the_useful_start_is_kept(prefix: str, unit: str, step: int):
    text = prefix + unit * (3000 // len(unit))
    guard = feed(text, step)
    assert guard is not None
    assert guard.keep is not None and guard.span is not None
    kept = text[:guard.keep]
    assert kept.startswith(prefix)
    assert len(kept) <= len(prefix) + len(unit)  # one copy of the loop at most
    assert len(unit) % len(guard.span) == 0  # the shortest period ("the answer is " twice is one unit)
    # caught soon after the loop is long enough to be sure, not at the end
    assert guard._total <= len(prefix) + max(MIN_RUN, 6 * len(unit)) + 64 + step


# What the embedded model streamed for a newcomer's "what does this notebook do?" (the walk of 2026-11-28): a
# paragraph of about 190 characters, whose words recur inside it, until the token cap (4,000 characters).
PARAGRAPH = ("The engine is a *machine* that can make the machine learning engine more *machine learning engine "
             "human-like. It can help to make the machine learning engine more *machine learning engine "
             "human-like.\n\n")


@pytest.mark.parametrize("step", [1, 7, 40])
def test_a_looping_paragraph_is_caught_after_three_copies(step: int):
    prefix = "This notebook is about a shopping cart for a machine learning engine.\n\n"
    text = prefix + PARAGRAPH * 20
    guard = feed(text, step)
    assert guard is not None and guard.span is not None and guard.keep is not None
    assert len(guard.span) == len(PARAGRAPH)
    assert text[:guard.keep].startswith(prefix) and len(text[:guard.keep]) <= len(prefix) + len(PARAGRAPH)
    assert guard._total <= len(prefix) + LONG_REPEATS * len(PARAGRAPH) + 64 + step  # not at the token cap


_RNG = random.Random(1)
REAL_ANSWERS = [
    # a markdown table with many similar rows
    "| n | square |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(300)),
    # code with a long run of similar assignments
    "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(300)),
    # a numbered list
    "".join(f"{i}. Step number {i}: do the thing\n" for i in range(1, 200)),
    # a divider, a few repeated short lines
    "=" * 80 + "\n" + "pass\n" * 5 + "Done.\n",
    # a paragraph said twice (a summary restating the introduction) and then something else
    PARAGRAPH * 2 + "So, in short: the engine streams the reply and the panel shows it.\n" * 1,
    # three tests that differ only in their numbers (long, similar, not identical)
    "".join(f"def test_case_{i}():\n    result = compute(value={i}, scale=2, offset=10)\n    assert result == "
            f"expected(value={i}, scale=2, offset=10), 'the computation of case {i} disagrees with the reference'\n\n"
            for i in range(12)),
    # prose
    " ".join(_RNG.choice(["the", "model", "answer", "is", "a", "list", "of", "words", "data"]) for _ in range(3000)),
]


@pytest.mark.parametrize("text", REAL_ANSWERS)
def test_real_answers_are_not_cut(text: str):
    assert feed(text, 5) is None


def _varied_loop(seed: int, words: int = 400) -> str:
    """What the walk's third answer streamed to the cap: a span whose numbers change, never repeating exactly."""
    rng = random.Random(seed)
    return "".join(f'edition of the "pytest-{rng.choice("12")}" ' for _ in range(words // 4))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("step", [1, 9, 50])
def test_a_loop_that_never_repeats_exactly_is_caught_by_its_words(seed: int, step: int):
    prefix = "This notebook is an example of a test suite for the package, in its second edition.\n\n"
    text = prefix + _varied_loop(seed)
    guard = feed(text, step)
    assert guard is not None and guard.span is not None and guard.keep is not None
    assert "edition of the" in guard.span or "pytest-" in guard.span
    assert text[:guard.keep].startswith(prefix) and guard.keep <= len(prefix) + 100  # the loop itself left out
    assert guard._total <= len(prefix) + WORD_CHARS + 64 + step  # soon, not at the token cap


@pytest.mark.parametrize("path", ["README.md", "extension/src/protocol.ts", "notebooks/06-configuring-a-provider.ipynb",
                                  "eca_notebook/engine/turn/_turn.py", "eca_notebook/retrieval/_store.py"])
def test_this_repositorys_own_texts_are_not_loops(path: str):
    """Real text with the fewest distinct three-word sequences found here (generated protocol types, notebook JSON,
    a module of similar calls): streamed, none is cut."""
    text = (ROOT / path).read_text(encoding="utf-8")
    assert len(text) > 10 * WORD_CHARS
    assert feed(text, 40) is None


def test_it_stays_tripped_and_ignores_empty_chunks():
    guard = RepetitionGuard()
    assert not guard.feed("")
    assert not any(guard.feed("abc ") for _ in range(50))
    assert any(guard.feed("ab") for _ in range(400))
    assert guard.feed("anything else")
