"""deep_merge: dicts merge, the rest replaces, ``null`` kept (config layers) or deleting (request bodies)."""

from __future__ import annotations

from eca_notebook._merge import deep_merge


def test_nests_and_replaces() -> None:
    base = {"a": {"x": 1, "y": 2, "c": [1, 2]}, "b": [1], "keep": 1}
    override = {"a": {"y": 20, "c": [3], "z": {"k": "v"}}, "b": [2], "new": 3}
    assert deep_merge(base, override) == {"a": {"x": 1, "y": 20, "c": [3], "z": {"k": "v"}}, "b": [2], "keep": 1,
                                          "new": 3}


def test_none_replaces_by_default() -> None:
    """Config layers: ``null`` stays in the result, for the schema to read as "default" / "remove this entry"."""
    base = {"a": {"b": 1, "m": {"x": 1}}, "d": 1}
    assert deep_merge(base, {"a": {"m": None, "e": None}, "d": None}) == {"a": {"b": 1, "m": None, "e": None},
                                                                           "d": None}
    assert deep_merge({"d": None}, {"d": {"x": 1}}) == {"d": {"x": 1}}


def test_none_deletes_when_asked() -> None:
    """Request bodies: ``null`` removes the key (at any depth); a ``null`` inside a new object is kept as given."""
    base = {"a": {"x": 1, "y": 2}, "drop": True, "stream_options": {"include_usage": True}}
    extra = {"a": {"y": None}, "drop": None, "stream_options": None, "absent": None, "new": {"k": None}}
    assert deep_merge(base, extra, none_deletes=True) == {"a": {"x": 1}, "new": {"k": None}}


def test_inputs_untouched_and_unshared() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": [0]}
    override = {"a": {"c": [3]}, "e": {"f": [4]}}
    merged = deep_merge(base, override)
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": [0]} and override == {"a": {"c": [3]}, "e": {"f": [4]}}
    merged["a"]["c"].append(5)
    merged["d"].append(1)
    merged["e"]["f"].append(6)
    assert override["a"]["c"] == [3] and base["d"] == [0] and override["e"]["f"] == [4]
    deleted = deep_merge(base, {"d": None}, none_deletes=True)
    deleted["a"]["c"].append(9)
    assert base["a"]["c"] == [1, 2]
