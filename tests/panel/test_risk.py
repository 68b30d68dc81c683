"""Risk levels in the JupyterLab panel, in a real browser: a model-requested ``rm -rf build`` waits for approval
with a high-risk badge and its reason; ``ls`` shows a low one; both stay in the history after a reload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def shell(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "eca__shell_command", json.dumps({"command": command}))


def badge_of(page, call_id: str):
    return page.locator(f'.eca-ToolCard[data-tool-call-id="{call_id}"] .eca-ToolCard-risk')


def test_rm_rf_build_waits_with_a_high_risk_badge_and_ls_with_a_low_one(page, lab, llm, workspace: Path):
    (workspace / "build").mkdir()
    llm.enqueue(Reply([shell("call_rm", "rm -rf build")]), Reply([shell("call_ls", "ls")]),
                Reply.text("I listed the files instead."))
    open_panel(page, lab, workspace="risk")
    send(page, "clean the build")

    card = page.locator('.eca-ToolCard[data-tool-call-id="call_rm"][data-tool-state="waiting"]')
    card.wait_for()
    badge = card.locator(".eca-ToolCard-risk")
    assert badge.get_attribute("data-risk") == "high"
    assert badge.inner_text().strip() == "high risk"
    assert badge.get_attribute("title") == "high risk: deletes recursively: build"
    assert card.locator(".eca-ToolCard-riskReason").inner_text().strip() == "deletes recursively: build"
    screenshot(page, "risk-01-high-risk-waiting")
    card.locator(".eca-reject").click()

    listing = page.locator('.eca-ToolCard[data-tool-call-id="call_ls"][data-tool-state="waiting"]')
    listing.wait_for()
    assert listing.locator(".eca-ToolCard-risk").get_attribute("data-risk") == "low"
    assert listing.locator(".eca-ToolCard-riskReason").inner_text().strip() == "only reads: ls"
    listing.locator(".eca-approve").click()
    page.locator('.eca-ToolCard[data-tool-call-id="call_ls"][data-tool-state="done"]').wait_for()
    page.get_by_text("I listed the files instead.").wait_for()
    assert (workspace / "build").is_dir()
    # in the history: the badges stay, the spelled-out reason was for the decision
    assert page.locator(".eca-ToolCard-riskReason").count() == 0
    screenshot(page, "risk-02-history")

    page.reload()
    open_panel(page, lab)
    badge_of(page, "call_rm").wait_for()
    assert badge_of(page, "call_rm").get_attribute("data-risk") == "high"
    assert badge_of(page, "call_ls").get_attribute("data-risk") == "low"
    assert not page.eca_errors, page.eca_errors
