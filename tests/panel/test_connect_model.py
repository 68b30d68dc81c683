"""Connect a model from the panel (issue #30 item 3), in a real JupyterLab: the header's gear opens the view, an
OpenAI-compatible server (a scripted LLM server) is added with a key, Test shows the provider's own error and then
succeeds, Save writes the user's config file 0600 and makes its model the default — the picker follows at once —
and the next answer comes from that server with the key. The command ``eca-notebook:connect-model`` opens the view."""

from __future__ import annotations

import json
import socket

import pytest

from eca_notebook.testing.llm_server import Error, Reply, ScriptedLLMServer, Text

from ._lab import open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

KEY = "sk-or-PANEL-e2e-SECRET-0123456789"


def test_add_test_and_use_an_openai_compatible_server(page, lab, lab_home):
    with ScriptedLLMServer() as mine:
        open_panel(page, lab)
        page.get_by_role("button", name="Connect a model").click()
        view = page.get_by_role("region", name="Connect a model")
        view.get_by_label("Provider type").select_option("openai-compatible")
        view.get_by_label("Name", exact=True).fill("my-server")
        view.get_by_label("URL", exact=True).fill(mine.url + "/v1")
        view.get_by_label("API key").fill(KEY)
        view.get_by_label("Model", exact=True).fill("qwen3")

        # a key the server refuses: its own words, plainly
        mine.enqueue(Reply([Error(401, "Incorrect API key provided")]))
        view.get_by_role("button", name="Test", exact=True).click()
        alert = view.get_by_role("alert")
        alert.wait_for()
        assert "401" in alert.inner_text() and "Incorrect API key provided" in alert.inner_text()

        mine.enqueue(Reply([Text("OK")]))
        view.get_by_role("button", name="Test", exact=True).click()
        ok = view.locator(".eca-ConnectModel-status.eca-mod-ok")
        ok.wait_for()
        assert "Connected" in ok.inner_text() and "my-server/qwen3" in ok.inner_text()
        test_request = mine.requests[-1]
        assert test_request.headers["authorization"] == f"Bearer {KEY}" and test_request.body["max_tokens"] == 1

        view.get_by_role("button", name="Save", exact=True).click()
        view.locator(".eca-ConnectModel-status.eca-mod-ok", has_text="Key saved").wait_for()
        path = lab_home / ".config" / "eca" / "config.json"
        saved = json.loads(path.read_text())
        assert saved["providers"]["my-server"]["key"] == KEY and saved["defaultModel"] == "my-server/qwen3"
        assert path.stat().st_mode & 0o777 == 0o600
        # the key never comes back to the page: the field is cleared and the list shows it masked
        assert view.get_by_label("API key").input_value() == ""
        view.get_by_label("Provider my-server").get_by_text("key saved").wait_for()
        assert KEY not in page.content()
        # the model picker follows at once (config/updated)
        page.wait_for_function(
            "() => document.querySelector('.eca-ModelPicker')?.value === 'my-server/qwen3'", timeout=60_000)
        screenshot(page, "30-connect-model-saved")

        view.get_by_role("button", name="Close").click()
        view.wait_for(state="detached")
        mine.enqueue(Reply([Text("Answer from my server")]))
        send(page, "hello from the panel")
        page.locator(".eca-MessageList", has_text="Answer from my server").wait_for(timeout=60_000)
        prompt = [r for r in mine.requests if r.path.endswith("/chat/completions")][-1]
        assert prompt.headers["authorization"] == f"Bearer {KEY}"
        assert "hello from the panel" in json.dumps(prompt.body)
        assert KEY not in page.content()

        # the command (which the demo-model notice's button runs) opens the panel on the view
        page.keyboard.press("Control+Shift+C")
        palette = page.locator(".lm-CommandPalette-input")
        palette.wait_for()
        palette.fill("Connect a Model")
        page.locator(".lm-CommandPalette-item", has_text="ECA: Connect a Model").first.click()
        view.wait_for()
        assert page.eca_errors == []  # type: ignore[attr-defined]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_ollama_is_detected_and_its_models_listed(page, lab, lab_home):
    with ScriptedLLMServer(ollama_models=["llama3.2:1b", "qwen3:4b"]) as ollama:
        open_panel(page, lab)
        page.get_by_role("button", name="Connect a model").click()
        view = page.get_by_role("region", name="Connect a model")
        view.get_by_label("Provider type").select_option("ollama")
        assert view.get_by_label("URL", exact=True).input_value() == "http://127.0.0.1:11434"
        assert view.get_by_label("API key").count() == 0  # Ollama takes no key
        if not _listening(11434):  # no daemon on its default port here: the view says so
            view.get_by_role("note").filter(has_text="No Ollama answered at http://127.0.0.1:11434").wait_for()
        view.get_by_label("URL", exact=True).fill(ollama.url)
        view.get_by_label("URL", exact=True).press("Tab")
        view.get_by_role("note").filter(has_text=f"Ollama found at {ollama.url}: 2 models").wait_for()
        assert view.get_by_label("Model", exact=True).input_value() == "llama3.2:1b"
        view.get_by_label("Model", exact=True).fill("qwen3:4b")

        ollama.enqueue(Reply([Text("OK")]))
        view.get_by_role("button", name="Test", exact=True).click()
        view.locator(".eca-ConnectModel-status.eca-mod-ok").wait_for()
        assert ollama.requests[-1].path == "/api/chat" and ollama.requests[-1].body["model"] == "qwen3:4b"

        view.get_by_role("button", name="Save", exact=True).click()
        view.locator(".eca-ConnectModel-status.eca-mod-ok", has_text="ollama/qwen3:4b is now the default").wait_for()
        page.wait_for_function(
            "() => document.querySelector('.eca-ModelPicker')?.value === 'ollama/qwen3:4b'", timeout=60_000)
        saved = json.loads((lab_home / ".config" / "eca" / "config.json").read_text())
        assert saved["providers"]["ollama"] == {"api": "ollama", "url": ollama.url}
        assert saved["defaultModel"] == "ollama/qwen3:4b"

        # a question sent while the view is open closes it, and its answer comes from Ollama
        ollama.enqueue(Reply([Text("Answer from Ollama")]))
        send(page, "hello ollama")
        view.wait_for(state="detached")
        page.locator(".eca-MessageList", has_text="Answer from Ollama").wait_for(timeout=60_000)
        assert "hello ollama" in json.dumps(ollama.requests[-1].body)
        assert page.eca_errors == []  # type: ignore[attr-defined]
