"""Code navigation from the panel, in a real browser: the model's ``editor_definition`` / ``editor_references`` reach
the panel as ``editor/getDefinition`` / ``editor/getReferences``, which it answers from JupyterLab's language server
(jupyter-lsp running jedi-language-server) — and with the lab's language services off, the engine answers them from
its content index instead, so the user still gets an answer."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import Lab, lab_env, open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHAPES = "def area(w, h):\n    return w * h\n"
REPORT = "from shapes import area\n\nprint(area(2, 3))\n"
# Another `area`: the index matches names, the language server knows this one is unrelated.
OTHER = "def area(radius):\n    return 3.14 * radius * radius\n"
INDEX_NOTE = "from the workspace's content index"


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm, request):
    """This module's lab: the venv's bin on PATH, where jupyter-lsp looks for ``jedi-language-server``."""
    from .conftest import _require_browser

    _require_browser()
    if shutil.which("jedi-language-server", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("jedi-language-server is not installed (the test extra: pip install -e '.[test]')")
    (workspace / "shapes.py").write_text(SHAPES)
    (workspace / "report.py").write_text(REPORT)
    (workspace / "other.py").write_text(OTHER)
    env = lab_env(lab_home, llm.url)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    server = Lab(root=workspace, env=env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def language_services(lab: Lab, on: bool) -> None:
    """JupyterLab's "Language Servers → Activate" setting (off by default), read when the page loads."""
    folder = Path(lab.env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "lsp-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.jupyterlab-settings").write_text(json.dumps({"activate": "on" if on else "off"}))


def tool_output(page, call_id: str) -> str:
    card = page.locator(f'.eca-ToolCard[data-tool-call-id="{call_id}"]:is([data-tool-state="done"], '
                        '[data-tool-state="failed"])')
    card.wait_for()
    output = card.locator(".eca-ToolCard-output pre").first.text_content() or ""
    assert card.get_attribute("data-tool-state") == "done", output
    return output


def navigation_answers(page) -> list[dict]:
    return page.evaluate("() => window.__ecaNavigation ? window.__ecaNavigation.stats.answers : null")


def ask(llm) -> None:
    llm.enqueue(
        Reply([ToolCall("def-1", "eca__editor_definition",
                        json.dumps({"path": "report.py", "line": 3, "symbol": "area"}))]),
        Reply([ToolCall("ref-1", "eca__editor_references",
                        json.dumps({"path": "shapes.py", "line": 1, "symbol": "area"}))]),
        Reply.text("`area` is defined in shapes.py and used in report.py."),
    )


def test_definition_and_references_come_from_the_language_server(page, lab, llm):
    language_services(lab, on=True)
    open_panel(page, lab, workspace="navigation-lsp")
    # The language server starts on first use: ask the panel until it answers (the engine would retry a `starting`
    # answer for 30 s only; a cold start on a busy machine may take longer).
    deadline = time.monotonic() + 180
    while True:
        warm = page.evaluate("params => window.__ecaNavigation.definition(params)",
                             {"uri": (lab.root / "report.py").as_uri(), "position": {"line": 3, "character": 7}})
        if warm["status"] == "success" or time.monotonic() > deadline:
            break
        assert warm["status"] == "starting", warm
        page.wait_for_timeout(1000)
    assert warm["status"] == "success", warm
    assert [loc["uri"] for loc in warm["locations"]] == [(lab.root / "shapes.py").as_uri()], warm
    assert warm["locations"][0]["range"]["start"] == {"line": 1, "character": 5}, "1-based, the name's position"

    ask(llm)
    page.locator(".eca-new-chat").click()
    send(page, "where is area defined and used?")
    definition = tool_output(page, "def-1")
    assert definition.splitlines() == ["shapes.py:1:5: def area(w, h):"], definition
    references = tool_output(page, "ref-1")
    rows = references.splitlines()
    assert "shapes.py:1:5: def area(w, h):" in rows and "report.py:3:7: print(area(2, 3))" in rows, references
    assert "other.py" not in references, "the language server knows other.py's area is another function"
    assert INDEX_NOTE not in definition + references
    page.get_by_text("is defined in shapes.py and used in report.py").wait_for()
    answers = [a for a in navigation_answers(page) if a["kind"] in ("definition", "references")]
    assert {(a["kind"], a["source"], a["status"]) for a in answers[-2:]} == {
        ("definition", "lsp", "success"), ("references", "lsp", "success")}, answers
    screenshot(page, "navigation-01-lsp")
    assert not page.eca_errors, page.eca_errors


def test_without_language_services_the_index_answers(page, lab, llm):
    language_services(lab, on=False)
    ask(llm)
    open_panel(page, lab, workspace="navigation-index")
    page.locator(".eca-new-chat").click()
    send(page, "where is area defined and used?")
    definition = tool_output(page, "def-1")
    assert "shapes.py:1:5: def area(w, h):" in definition.splitlines(), definition
    assert INDEX_NOTE in definition and "language servers are off" in definition, definition
    references = tool_output(page, "ref-1")
    assert "report.py:3:7: print(area(2, 3))" in references.splitlines(), references
    assert INDEX_NOTE in references, references
    page.get_by_text("is defined in shapes.py and used in report.py").wait_for()
    answers = navigation_answers(page)
    assert answers and all(a["source"] == "none" and a["status"] == "no-server" for a in answers), answers
    screenshot(page, "navigation-02-index")
    assert not page.eca_errors, page.eca_errors
