"""Code symbols in ``@`` completion through a real ``eca-notebook server`` over stdio: ``chat/queryContext`` offers
a class and a function as ``file`` contexts with their definition's ``linesRange`` (once the content index is open;
the first keystroke only starts opening it), and a prompt carrying one sends the model just those lines."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests, sent_texts
from .test_server_commands import run

pytestmark = pytest.mark.e2e

SHAPES = '''"""Shapes."""

import math

BEFORE_MARKER = "not part of Circle"


class Circle:
    """A circle."""

    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return math.pi * self.radius ** 2


def perimeter_of(shape):
    return 2 * math.pi * shape.radius


AFTER_MARKER = "not part of Circle either"
'''


def make_shapes(root: Path) -> Path:
    (root / "geometry").mkdir(parents=True, exist_ok=True)
    path = root / "geometry" / "shapes.py"
    path.write_text(SHAPES)
    return path


async def offered_symbols(eca: Any, query: str) -> list[dict[str, Any]]:
    """Ask until the answer has symbols (the first ask only starts opening the index), with a generous guard."""
    for _ in range(1200):  # a condition, with a generous guard (120 s)
        offered = (await eca.request("chat/queryContext", {"query": query, "contexts": []}))["contexts"]
        symbols = [c for c in offered if c["type"] == "file" and c.get("description")]
        if symbols:
            return symbols
        await asyncio.sleep(0.1)
    raise AssertionError(f"no symbol offered for {query!r}")


async def test_symbols_are_offered_and_only_their_lines_reach_the_model(spawn, llm, workspace):
    shapes = make_shapes(workspace)
    eca = await spawn()
    await eca.initialize(workspace)

    symbols = await offered_symbols(eca, "Circle")
    circle = symbols[0]
    assert circle == {"type": "file", "path": str(shapes), "linesRange": {"start": 8, "end": 15},
                      "description": "class Circle"}
    functions = await offered_symbols(eca, "perimeter_of")
    assert functions[0]["description"] == "function perimeter_of"
    assert functions[0]["linesRange"] == {"start": 18, "end": 19}
    methods = await offered_symbols(eca, "area")
    assert {"type": "file", "path": str(shapes), "linesRange": {"start": 14, "end": 15},
            "description": "method Circle.area"} in methods
    # not identifier-like, or too short: no symbols (files only)
    for query in ("C", "shapes.py/", "ci rcle"):
        answer = (await eca.request("chat/queryContext", {"query": query, "contexts": []}))["contexts"]
        assert not [c for c in answer if c.get("description", "").startswith("class")]
    # an attached symbol is not offered again
    again = (await eca.request("chat/queryContext", {"query": "Circle", "contexts": [circle]}))["contexts"]
    assert circle not in again

    llm.enqueue(Reply.text("It is a circle."))
    chat_id, _ = await run(eca, "explain this class", model="openai/gpt-4.1", contexts=[circle])
    await eca.wait_idle(chat_id)
    sent = sent_texts("openai-responses", completion_requests(llm)[-1].body)[-1][1]
    assert sent.startswith("explain this class\n\n<contexts")
    assert "class Circle:" in sent and "return math.pi * self.radius ** 2" in sent
    assert "BEFORE_MARKER" not in sent and "perimeter_of" not in sent and "AFTER_MARKER" not in sent
    assert "import math" not in sent
