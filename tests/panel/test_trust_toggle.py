"""The panel's per-chat Trust toggle in a real browser: on, the model's file write runs without an approval card
waiting; off again in the same chat, the next write waits; after a reload the chat shows its saved state, and a new
chat starts off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TOGGLE = ".eca-TrustToggle"


def write(name: str, call_id: str) -> list[Reply]:
    return [Reply([ToolCall(call_id, "eca__write_file", json.dumps({"path": name, "content": name}))]),
            Reply.text(f"Wrote {name}.")]


def test_trust_toggle_approves_this_chats_tool_calls(page, lab, llm, workspace: Path):
    open_panel(page, lab, workspace="trust-toggle")
    page.locator(".eca-new-chat").click()
    toggle = page.locator(TOGGLE)
    assert toggle.get_attribute("aria-pressed") == "false"
    assert toggle.get_attribute("aria-label") == "Trust"
    assert "deny rules and paths outside the workspace still ask" in (toggle.get_attribute("title") or "")
    toggle.press("Enter")  # keyboard: a real button
    page.locator(f'{TOGGLE}.eca-mod-trusted[aria-pressed="true"]').wait_for()
    screenshot(page, "trust-toggle-01-on")

    # a new chat: the first prompt carries the trust mode; the write runs without asking
    llm.enqueue(*write("one.txt", "call_t1"))
    send(page, "write one.txt")
    page.locator('.eca-ToolCard[data-tool-call-id="call_t1"][data-tool-state="done"]').wait_for()
    page.get_by_text("Wrote one.txt.").wait_for()
    assert (workspace / "one.txt").read_text() == "one.txt"
    assert page.locator('.eca-ToolCard[data-tool-state="waiting"]').count() == 0
    page.locator(".eca-send").wait_for()

    # off in the same chat (chat/update): the next write waits for approval
    toggle.click()
    page.locator(f'{TOGGLE}[aria-pressed="false"]:not(.eca-mod-trusted)').wait_for()
    llm.enqueue(*write("two.txt", "call_t2"))
    send(page, "write two.txt")
    card = page.locator('.eca-ToolCard[data-tool-call-id="call_t2"][data-tool-state="waiting"]')
    card.wait_for()
    assert not (workspace / "two.txt").exists(), "nothing is written before approval"
    screenshot(page, "trust-toggle-02-off-waits")
    card.locator(".eca-approve").click()
    page.locator('.eca-ToolCard[data-tool-call-id="call_t2"][data-tool-state="done"]').wait_for()
    page.get_by_text("Wrote two.txt.").wait_for()
    wait_until(lambda: (workspace / "two.txt").exists(), message="the approved write on disk")
    page.locator(".eca-send").wait_for()

    # on again; the reload shows the chat's saved state
    toggle.click()
    page.locator(f'{TOGGLE}[aria-pressed="true"]').wait_for()
    chat_id = page.evaluate("() => window.__ecaPanel.store.currentId")
    # the click's chat/update is in flight: an awaited one of the same value makes sure the server has it
    page.evaluate("id => window.__ecaPanel.client.call('chat/update', {chatId: id, trust: true})", chat_id)
    page.reload()
    open_panel(page, lab)
    page.get_by_text("Wrote two.txt.").wait_for()
    assert page.evaluate("() => window.__ecaPanel.store.currentId") == chat_id
    page.locator(f'{TOGGLE}.eca-mod-trusted[aria-pressed="true"]').wait_for()
    screenshot(page, "trust-toggle-03-after-reload")

    # another chat has its own state
    page.locator(".eca-new-chat").click()
    page.locator(".eca-Welcome").wait_for()
    page.locator(f'{TOGGLE}[aria-pressed="false"]').wait_for()
    assert not page.eca_errors, page.eca_errors
