"""JupyterLab with Jupyter AI and eca-notebook installed (.venv-jupyter-ai), in Chromium: a user opens a new chat
from the launcher, finds ECA in Jupyter AI's persona picker, types "@ECA …", and the answer appears in the chat.
Then the issue's whole story: the user asks for an edit, sees our diff on Jupyter AI's tool call card, clicks its
"Allow once", and the file changes. Screenshots go to test-artifacts/panel; with ECA_README_SCREENSHOTS=1 the one of
the approval also replaces the README's (docs/images/jupyter-ai-chat.png). Runs in .venv-jupyter-ai (see
conftest.py); Playwright drives /usr/bin/chromium with the panel tests' offline flags."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall

from ..panel._lab import ROOT, Lab, chromium_available, launch_browser, screenshot
from ._server import jupyter_ai_lab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.skipif(not chromium_available(), reason="needs /usr/bin/chromium")]
README_IMAGE = ROOT / "docs" / "images" / "jupyter-ai-chat.png"
ANSWER = ("Hello! I'm ECA, running inside Jupyter AI. I can read, edit and run the files and notebooks of this "
          "workspace; every change comes to you as a diff to approve.")


@pytest.fixture
def lab(workspace: Path, home: Path, llm: ScriptedLLMServer):
    lab = jupyter_ai_lab(workspace, home, llm.url)
    yield lab.start(timeout=240)
    lab.stop()


def test_eca_answers_and_edits_in_jupyter_ais_chat(lab: Lab, llm: ScriptedLLMServer, workspace: Path):
    from playwright.sync_api import expect, sync_playwright

    llm.enqueue(Reply.text(ANSWER))
    (workspace / "app.py").write_text("print('hi')\n")
    with sync_playwright() as pw:
        browser = launch_browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(lab.url("lab"), wait_until="domcontentloaded")
            page.locator(".jp-LauncherCard", has_text="Chat").first.click(timeout=120_000)
            chat_input = page.get_by_placeholder("Type a chat message")
            chat_input.wait_for(timeout=120_000)
            # Jupyter AI's persona picker offers ECA (the only persona installed here, so already picked)
            expect(page.get_by_text("ECA", exact=True).first).to_be_visible(timeout=120_000)
            chat_input.click()
            chat_input.press_sequentially("@ECA what can you do here?", delay=20)
            chat_input.press("Enter")
            expect(page.get_by_text(ANSWER)).to_be_visible(timeout=240_000)
            assert list(workspace.glob("*.chat")), "the chat was not saved as a .chat file"
            llm.enqueue(Reply([ToolCall("call_1", "eca__edit_file", json.dumps(
                {"path": "app.py", "original_content": "'hi'", "new_content": "'hello, Jupyter AI'"}))]),
                Reply.text("Done: app.py now greets Jupyter AI."))
            chat_input.click()
            chat_input.press_sequentially("@ECA make app.py greet Jupyter AI", delay=20)
            chat_input.press("Enter")
            # Jupyter AI's tool call card: our diff, and its buttons for our permission request
            allow = page.get_by_role("button", name="Allow once", exact=True)
            allow.wait_for(timeout=240_000)
            expect(page.get_by_text("'hello, Jupyter AI'").first).to_be_visible()
            shot = screenshot(page, "jupyter-ai-permission")
            if os.environ.get("ECA_README_SCREENSHOTS"):
                README_IMAGE.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(shot, README_IMAGE)
            allow.click()
            expect(page.get_by_text("Done: app.py now greets Jupyter AI.")).to_be_visible(timeout=240_000)
            assert (workspace / "app.py").read_text() == "print('hello, Jupyter AI')\n"
            screenshot(page, "jupyter-ai-approved")
        finally:
            browser.close()
