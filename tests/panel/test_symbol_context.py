"""Code symbols in the JupyterLab panel's ``@`` completion, in a real browser against a real ``jupyter lab``: typing
``@Circle`` offers the class after the files (once the content index is open: the first keystrokes only start
opening it, and the completion retypes as a user would), choosing it attaches a chip, and the prompt sends the
scripted model just the class's lines.

A module of its own because the lab's root holds the generated code here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from ..e2e.test_symbol_context import make_shapes
from ._lab import screenshot
from .test_panel import complete_in_composer, completion_bodies

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("symbol-workspace")
    make_shapes(root)
    return root


def test_typing_at_circle_offers_the_class_and_sends_only_its_lines(page, lab, llm, workspace: Path):
    llm.enqueue(Reply.text("Circle keeps a radius and computes its area."))
    box = complete_in_composer(page, lab, "symbol-context", "explain @Circle", "class Circle")
    item = page.locator(".eca-Completion", has_text="class Circle").first
    assert item.locator(".eca-Completion-label").inner_text() == "class Circle"
    assert item.locator(".eca-Completion-detail").inner_text().startswith("shapes.py:8-15 · ")
    screenshot(page, "symbol-context-completion")
    item.click()  # a click picks the item whatever has the focus
    chip = page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="class Circle")
    chip.wait_for()
    title = chip.get_attribute("title", timeout=5_000)
    assert title.startswith("shapes.py:8-15 · ") and title.endswith("/geometry/shapes.py"), title
    assert box.input_value() == "explain @Circle ", box.input_value()
    box.press("Enter")
    page.get_by_text("Circle keeps a radius and computes its area.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "explain @Circle" in body  # the mention stays in the message, the definition follows it
    assert "class Circle:" in body and "return math.pi * self.radius ** 2" in body
    assert "BEFORE_MARKER" not in body and "AFTER_MARKER" not in body and "def perimeter_of" not in body
    assert not page.eca_errors, page.eca_errors
