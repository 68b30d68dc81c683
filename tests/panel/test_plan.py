"""The agent's plan in the panel, in a real browser: a live checklist that follows ``update_plan`` and is there
again when the chat is reopened (``chat/open`` replays the plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STEPS = ["Read notes.txt", "Rewrite notes.txt"]


def plan_call(call_id: str, statuses: list[str], explanation: str | None = None) -> ToolCall:
    entries = [{"content": step, "status": status, "files": ["notes.txt"]}
               for step, status in zip(STEPS, statuses, strict=True)]
    args: dict = {"entries": entries}
    if explanation:
        args["explanation"] = explanation
    return ToolCall(call_id, "eca__update_plan", json.dumps(args))


def statuses(page) -> list[str]:
    steps = page.locator(".eca-Plan .eca-Plan-step")
    return [steps.nth(i).get_attribute("data-status") or "" for i in range(steps.count())]


def test_the_plan_is_a_live_checklist_that_survives_reopening(page, lab, llm, workspace: Path):
    target = workspace / "notes.txt"
    target.write_text("old\n")
    llm.enqueue(
        # the plan, then a change that waits for approval: the plan is on screen while the turn is paused
        Reply([Text("Here is my plan."), plan_call("p_1", ["in_progress", "pending"], "Two small steps."),
               ToolCall("w_1", "eca__write_file", json.dumps({"path": "notes.txt", "content": "new\n"}))]),
        Reply([plan_call("p_2", ["completed", "in_progress"])]),
        Reply([plan_call("p_3", ["completed", "completed"])]),
        Reply.text("All done."),
    )
    open_panel(page, lab, workspace="plan")
    page.locator(".eca-new-chat").click()
    send(page, "tidy notes.txt")

    plan = page.locator(".eca-Plan")
    page.locator('.eca-ToolCard[data-tool-call-id="w_1"][data-tool-state="waiting"]').wait_for()
    plan.wait_for()
    assert statuses(page) == ["in_progress", "pending"]
    assert plan.get_attribute("open") is not None, "a plan under way is shown open"
    assert "0/2 done" in plan.locator(".eca-Plan-header").inner_text()
    assert plan.locator(".eca-Plan-explanation").inner_text() == "Two small steps."
    first, second = plan.locator(".eca-Plan-step").nth(0), plan.locator(".eca-Plan-step").nth(1)
    assert first.get_attribute("aria-current") == "step" and second.get_attribute("aria-current") is None
    assert first.locator(".eca-Plan-description").inner_text() == "Read notes.txt"
    assert first.locator(".eca-Plan-file").all_inner_texts() == ["notes.txt"]
    assert first.locator("input.eca-Plan-check").evaluate("box => box.indeterminate && !box.checked")
    assert not second.locator("input.eca-Plan-check").is_checked()
    # the in-progress step is highlighted: its background differs from a pending step's
    assert first.evaluate("el => getComputedStyle(el).backgroundColor") != second.evaluate(
        "el => getComputedStyle(el).backgroundColor")
    screenshot(page, "plan-01-under-way")

    page.locator('.eca-ToolCard[data-tool-call-id="w_1"] .eca-approve').click()
    page.get_by_text("All done.").wait_for()
    page.locator(".eca-send").wait_for()  # the chat is idle again
    wait_until(lambda: statuses(page) == ["completed", "completed"], message="every step completed")
    assert page.locator(".eca-Plan").count() == 1, "one checklist: the latest plan replaces the earlier ones"
    assert "2/2 done" in plan.locator(".eca-Plan-header").inner_text()
    wait_until(lambda: plan.get_attribute("open") is None, message="a finished plan folds away")
    plan.locator(".eca-Plan-header").click()
    assert plan.locator(".eca-Plan-step").nth(1).locator("input.eca-Plan-check").is_checked()
    assert target.read_text() == "new\n"
    screenshot(page, "plan-02-done")

    # Reopened after a reload (chat/open replays the chat): the same plan, as it ended.
    page.reload()
    open_panel(page, lab)
    page.get_by_text("All done.").wait_for()
    page.locator(".eca-Plan").wait_for()
    assert statuses(page) == ["completed", "completed"]
    assert "2/2 done" in page.locator(".eca-Plan-header").inner_text()
    assert page.locator(".eca-Plan .eca-Plan-file").count() == 2

    # Another chat has no plan; back to this one, the plan is back.
    page.locator(".eca-new-chat").click()
    wait_until(lambda: page.locator(".eca-Plan").count() == 0, message="no plan in a new chat")
    page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-item", has_text="tidy notes.txt").click()
    page.locator(".eca-Plan").wait_for()
    assert statuses(page) == ["completed", "completed"]
    screenshot(page, "plan-03-reopened")
    assert not page.eca_errors, page.eca_errors
