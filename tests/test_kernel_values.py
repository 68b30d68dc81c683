"""The one description of a kernel value: ``%eca @name`` and the panel's live-kernel probe (which runs this module's
source inside the user's kernel) say the same thing about the same value."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from eca_notebook._kernel_values import NOT_FOUND, describe_value, resolve, summary, user_variables
from eca_notebook.notebook._mentions import attach_mentions
from eca_notebook.tools.live_kernel import probe
from tests.tools.test_live_kernel import NOTEBOOK, NamespaceKernels


def test_the_probe_and_a_mention_describe_a_value_alike():
    def area(w: float, h: float = 1.0) -> float:
        """Area of a rectangle."""
        return w * h

    ns: dict[str, Any] = {"__builtins__": __builtins__, "area": area, "size": len, "rows": list(range(50)),
                          "re": re, "In": ["", "rows = list(range(50))"], "Out": {1: 3.5}}
    for name in ("area", "size", "rows", "re", "In[1]", "Out[1]"):
        _, [mention] = attach_mentions(f"@{name}", ns)
        answer = asyncio.run(probe(NamespaceKernels(ns), NOTEBOOK, {"op": "describe", "name": name}, timeout=5))
        assert answer == {"found": True, "text": mention.text}, name


def test_a_builtin_is_described_without_a_source_it_does_not_have():
    text = describe_value("size", len)
    assert text.startswith("### `size`\ntype: builtin_function_or_method\nsignature: len(obj, /)")
    assert "source" not in text and "unavailable" not in text


def test_names_resolve_without_running_code():
    calls = []
    ns = {"f": lambda: calls.append(1), "obj": type("O", (), {"attr": 7})(), "In": ["", "x = 1"]}
    assert resolve("obj.attr", ns) == 7 and resolve("In[1]", ns) == "x = 1"
    for name in ("f()", "obj.attr + 1", "In[5]", "__import__('os')", "missing"):
        assert resolve(name, ns) is NOT_FOUND, name
    assert calls == []


def test_user_variables_and_their_summaries():
    marker = object()
    ns = {"x": 5, "_private": 1, "In": [], "re": re, "shown": marker, "hidden": marker, "f": lambda a, b=2: a}
    assert [n for n, _ in user_variables(ns, {"hidden": marker})] == ["x", "shown", "f"]
    assert (summary(5), summary([1, 2]), summary(ns["f"])) == ("value=5", "len=2 value=[1, 2]", "signature=(a, b=2)")

    class BrokenLen(list):
        def __len__(self) -> int:
            raise RuntimeError("no")

    assert summary(BrokenLen()).startswith("<unavailable: RuntimeError")


@pytest.mark.parametrize("name", ["@size", "@re"])
def test_mentions_of_builtins_and_modules(name):
    _, [mention] = attach_mentions(name, {"size": len, "re": re})
    assert "unavailable" not in mention.text


class _RaisingMeta(type):
    def __getattribute__(cls, name: str) -> Any:
        if name == "__module__":
            raise RuntimeError("no module")
        return super().__getattribute__(name)


class _Odd(metaclass=_RaisingMeta):
    """A class whose metaclass fails on ``__module__``."""


class _Lazy:
    """A lazy frame whose ``shape`` cannot be known without computing it (dask, a database cursor)."""

    @property
    def shape(self) -> Any:
        raise NotImplementedError("compute() first")

    def __repr__(self) -> str:
        return "<lazy frame>"


def test_one_odd_value_neither_empties_the_listing_nor_fails_its_own_description():
    """A user's object whose ``shape`` or class attributes raise must not make the probe fail: the whole listing
    (``list_variables``, the ``@`` list) came back empty for one such value, and describing it failed outright."""
    ns: dict[str, Any] = {"__builtins__": __builtins__, "odd": _Odd(), "lazy": _Lazy(), "good": 1}
    kernels = NamespaceKernels(ns)
    listing = asyncio.run(probe(kernels, NOTEBOOK, {"op": "list", "query": "", "limit": 10}, timeout=5))
    assert sorted(row["name"] for row in listing["variables"]) == ["good", "lazy", "odd"]
    for name in ("odd", "lazy"):
        answer = asyncio.run(probe(kernels, NOTEBOOK, {"op": "describe", "name": name}, timeout=5))
        assert answer["found"] and f"### `{name}`" in answer["text"], answer
    assert "<lazy frame>" in describe_value("lazy", ns["lazy"])
