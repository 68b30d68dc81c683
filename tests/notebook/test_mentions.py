"""``{expr}`` interpolation and ``@name`` mentions against real values (pandas and numpy when installed)."""

from __future__ import annotations

import pytest

from eca_notebook.notebook._mentions import (
    MAX_VALUE_CHARS,
    attach_mentions,
    describe_value,
    find_mentions,
    interpolate,
)


class Config:
    path = "/data/x.csv"


NS = {"x": 42, "name": "Ada", "cfg": Config(), "d": {"k": "v"}, "In": ["", "x = 42", "print(x)"],
      "Out": {1: [1, 2]}, "items": list(range(10))}


def test_interpolation_of_names_attributes_and_history():
    assert interpolate("{x} and {cfg.path} and {d['k']} and {In[1]} and {Out[1]}", NS) == (
        "42 and /data/x.csv and v and x = 42 and [1, 2]")


def test_unresolved_braces_are_left_as_written():
    text = "a set {y} literal {1, 2} and {x.nope} and {f()}"
    assert interpolate(text, NS) == text


def test_double_braces_escape():
    assert interpolate("{{x}} is {x}", NS) == "{x} is 42"


def test_interpolation_never_calls_anything():
    calls = []

    class Spy:
        def __call__(self):
            calls.append(1)

    assert interpolate("{spy()}", {"spy": Spy()}) == "{spy()}"
    assert calls == []


def test_find_mentions_only_resolving_names_in_order_without_emails():
    text = "compare @items with @x, mail me@example.com, @unknown and @items again; @In[2] @Out[1] @cfg.path"
    assert find_mentions(text, NS) == ["items", "x", "In[2]", "Out[1]", "cfg.path"]


def test_describe_plain_values_are_capped():
    big = "y" * 50_000
    text = describe_value("big", big)
    assert "type: str" in text
    assert len(text) <= MAX_VALUE_CHARS + 100
    assert "..." in text  # middle elided, both ends kept
    assert "len: 10" in describe_value("items", list(range(10)))


def test_describe_function_shows_signature_and_source():
    def area(w: float, h: float = 1.0) -> float:
        """Area of a rectangle."""
        return w * h

    text = describe_value("area", area)
    assert "signature: area(w: " in text and "1.0) -> " in text
    assert "Area of a rectangle." in text and "return w * h" in text


def test_broken_repr_does_not_break_the_prompt():
    class Broken:
        def __repr__(self):
            raise RuntimeError("nope")

    text = describe_value("b", Broken())
    assert "type: " in text and "Broken" in text.split("value:")[1]


def test_attach_mentions_appends_context_and_keeps_the_text():
    message, mentions = attach_mentions("why is @x odd? see @In[2]", NS)
    assert message.startswith("why is @x odd? see @In[2]\n\n")
    assert [m.name for m in mentions] == ["x", "In[2]"]
    assert "### `x`" in message and "value:\n42" in message
    assert "```python\nprint(x)\n```" in message
    assert attach_mentions("nothing here", NS) == ("nothing here", [])


def test_dataframe_mention_has_shape_dtypes_and_head():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"city": ["Paris", "Lyon", "Nice", "Lille", "Metz", "Brest"], "temp": [21.5, 23.0, 25.1, 18.2,
                                                                                           17.0, 16.4]})
    text = describe_value("df", df)
    assert text.splitlines()[1].startswith("type: pandas") and text.splitlines()[1].endswith("DataFrame")
    assert "shape: (6, 2) (rows, columns)" in text
    assert "city" in text.split("dtypes:")[1].split("head")[0]
    assert "float64" in text
    head = text.split("head(5):")[1]
    assert "Paris" in head and "Metz" in head and "Brest" not in head


def test_series_and_array_mentions():
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    s = describe_value("s", pd.Series([1, 2, 3], name="n"))
    assert "shape: (3,), dtype: int64, name: 'n'" in s
    a = describe_value("a", np.arange(12).reshape(3, 4))
    assert "shape: (3, 4), dtype: int64" in a and "[ 8,  9, 10, 11]" in a
