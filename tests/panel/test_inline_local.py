"""Ghost text on the embedded model in a real browser (issue #30: after ``def …:`` + Enter nothing appeared, on the
offline default a new user meets first). The lab's completion model is the embedded SmolLM2-135M; the test asserts
that a suggestion is asked for and shown on the new line and that Tab puts it in the def's body — never what the
tiny model writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.providers.local import MODEL_ID, local_model_status

from ._lab import DEFAULT_MODEL, Lab, lab_env, open_panel
from .test_inline import GHOST, STATS_JS, cell_editor, ghost_text, record_frames, sent, sources, type_into
from .test_notebook_tools import open_notebook, write_notebook
from .test_panel import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.local,
    pytest.mark.timeout(600),  # the model loads on the first request, on a busy 2-core machine
    pytest.mark.skipif(not local_model_status().available, reason=local_model_status().message),
]


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm):
    """Ghost text on, answered by the embedded model (the chat keeps the scripted server's model)."""
    from .conftest import _require_browser

    _require_browser()
    config = {"defaultModel": DEFAULT_MODEL, "completion": {"model": MODEL_ID}}
    server = Lab(root=workspace, env=lab_env(lab_home, llm.url, inline_completion=True,
                                             ECA_CONFIG=json.dumps(config)))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_ghost_text_after_enter_under_a_def_line_on_the_embedded_model(page, lab, workspace: Path):
    write_notebook(workspace / "local.ipynb", "")
    frames = record_frames(page)
    open_panel(page, lab, workspace="inline-local")
    open_notebook(page, "local.ipynb")
    editor = cell_editor(page, 0)
    editor.click()
    type_into(editor, "def fahrenheit_to_celsius(f):")

    def suggested() -> bool:
        # the first request may go while the model still loads (and time out): a new line asks again, as a user
        # pressing Backspace and Enter would see it
        for _attempt in range(6):
            editor.press("Enter")
            try:
                wait_until(lambda: ghost_text(page).strip() != "", timeout=60, message="the ghost text")
                return True
            except AssertionError:
                editor.press("Backspace")
                while sources(page)[0] != "def fahrenheit_to_celsius(f):":
                    editor.press("Backspace")
        return False

    assert suggested(), page.evaluate(STATS_JS)
    [request, *_] = sent(page, frames, lambda f: f.get("method") == "completion/inline"
                         and f["params"]["docText"].startswith("def fahrenheit_to_celsius(f):\n"))
    assert request["params"]["position"]["line"] == 2, "asked on the new line"
    assert page.locator(GHOST).is_visible()
    editor.press("Tab")
    wait_until(lambda: len(sources(page)[0].split("\n")) >= 2 and page.locator(GHOST).count() == 0,
               message="Tab to accept the suggestion")
    body = sources(page)[0].split("\n")[1]
    assert body.startswith("    ") and body.strip(), f"the suggestion went into the def's body: {sources(page)[0]!r}"
    assert page.eca_errors == []
