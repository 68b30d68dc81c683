"""A workspace's custom tool in the panel (real JupyterLab, Chromium): the trust question names it, the panel's
Custom tools list shows it only once the workspace is trusted, and a call to it waits on its card for Approve,
then runs with the model's argument kept literal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHOUT = {"description": "Prints a message in upper case.",
         "command": "printf '%s\\n' {{message}} | tr a-z A-Z",
         "schema": {"properties": {"message": {"type": "string"}}, "required": ["message"]}}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "README.md").write_text("# demo project\n")
    (root / ".eca").mkdir()
    (root / ".eca" / "config.json").write_text(json.dumps({"customTools": {"shout": SHOUT}}))
    return root


def test_a_workspace_custom_tool_is_listed_once_trusted_and_asks(page, lab, llm, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    message = "hi; touch PWNED"
    llm.enqueue(Reply.text("Trusted."),
                Reply([ToolCall("call_shout", "eca__shout", json.dumps({"message": message}), chunks=2)]),
                Reply.text("Shouted."))
    open_panel(page, lab, workspace="custom-tools")
    assert page.locator(".eca-CustomTools").count() == 0  # held: nothing to list yet
    page.locator(".eca-new-chat").click()
    send(page, "hello")
    card = page.locator(".eca-Question")
    card.wait_for()
    text = card.locator(".eca-Question-text").inner_text()
    assert "  • custom tool shout (the model may call it): printf '%s\\n' {{message}} | tr a-z A-Z" in text
    screenshot(page, "custom-tools-01-question")
    card.locator(".eca-Question-option").nth(0).click()  # Trust this workspace
    page.get_by_text("Trusted.").wait_for()
    tools = page.locator(".eca-CustomTools")
    tools.wait_for()
    assert tools.locator("summary").inner_text() == "Custom tools: 1"
    tools.locator("summary").click()
    row = page.get_by_label("Custom tool shout")
    assert row.inner_text().split() == ["shout", "Prints", "a", "message", "in", "upper", "case."]
    screenshot(page, "custom-tools-02-listed")

    send(page, "shout it")
    waiting = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    waiting.wait_for()
    screenshot(page, "custom-tools-03-waiting")
    waiting.locator(".eca-approve").click()
    page.get_by_text("Shouted.").wait_for()
    wait_until(lambda: any("call_shout" in json.dumps(r.body) for r in llm.requests[-1:]),
               message="the tool's output sent to the model")
    sent = json.dumps(llm.requests[-1].body)
    assert json.dumps(f"Exit code: 0\n\n{message.upper()}\n") in sent
    assert not (workspace / "PWNED").exists()
    assert not page.eca_errors, page.eca_errors
