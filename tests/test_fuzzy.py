"""is_subsequence: the characters of the query, in order, anywhere in the text."""

from __future__ import annotations

import pytest

from eca_notebook._fuzzy import is_subsequence


@pytest.mark.parametrize(
    ("needle", "hay", "expected"),
    [
        ("rms", "repo-map-show", True),
        ("", "anything", True),
        ("", "", True),
        ("abc", "abc", True),
        ("aa", "a", False),  # each character is used once
        ("aa", "banana", True),
        ("srm", "repo-map-show", False),  # order matters
        ("x", "", False),
        ("R", "repo", False),  # callers fold case
    ],
)
def test_is_subsequence(needle: str, hay: str, expected: bool) -> None:
    assert is_subsequence(needle, hay) is expected
