"""Review and control in the panel, in a real browser (one lab for them all): a three-place edit taken hunk by
hunk; risk levels on calls waiting for approval (``rm -rf build`` high, ``ls`` low); the agent's plan as a live
checklist that ``chat/open`` replays; the model's reason for a change and what a code search found; "Rewind to
here" (the file the removed turn wrote and the message list restored) and "Fork from here" (a new chat continuing
from there)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OLD = "".join(f"line {i}\n" for i in range(1, 41))
NEW = OLD.replace("line 2\n", "line two\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")


def test_an_edit_touching_three_places_is_taken_hunk_by_hunk(page, lab, llm, workspace: Path):
    target = workspace / "notes.txt"
    target.write_text(OLD)
    llm.enqueue(Reply([ToolCall("h_1", "eca__write_file", json.dumps({"path": "notes.txt", "content": NEW}))]),
                Reply.text("Kept your choice."))
    open_panel(page, lab, workspace="hunks")
    page.locator(".eca-new-chat").click()
    send(page, "take only some hunks of this edit")
    card = page.locator('.eca-ToolCard[data-tool-call-id="h_1"][data-tool-state="waiting"]')
    card.wait_for()
    toggles = card.locator(".eca-hunk-toggle")
    toggles.nth(2).wait_for()
    assert toggles.count() == 3 and all(toggles.nth(i).is_checked() for i in range(3))
    assert "@@ -18,6 +18,7 @@" in card.locator('.eca-Hunk[data-hunk-id="h2"]').inner_text()
    assert card.locator(".eca-approve").inner_text() == "Approve"
    card.locator('.eca-hunk-toggle[data-hunk-id="h1"]').uncheck()
    card.locator('.eca-hunk-toggle[data-hunk-id="h3"]').uncheck()
    assert card.locator(".eca-approve").inner_text() == "Approve 1 of 3 hunks"
    screenshot(page, "review-01-one-hunk-chosen")
    assert target.read_text() == OLD, "nothing is written before approval"

    card.locator(".eca-approve").click()
    done = page.locator('.eca-ToolCard[data-tool-call-id="h_1"][data-tool-state="done"]')
    done.wait_for()
    wait_until(lambda: target.read_text() == OLD.replace("line 20\n", "line 20\nextra\n"),
               message="exactly the chosen hunk on disk")
    page.get_by_text("Kept your choice.").wait_for()
    left_out = done.locator(".eca-Hunk.eca-mod-left-out")
    assert left_out.count() == 2 and "not applied" in left_out.first.inner_text()
    assert done.locator(".eca-hunk-toggle").count() == 0, "no checkboxes once decided"
    told = json.dumps(llm.requests[-1].body)
    assert "Applied: h2" in told and "Not applied" in told
    screenshot(page, "review-02-applied")
    assert not page.eca_errors, page.eca_errors


def test_a_change_shows_the_models_reason_and_a_search_what_it_found(page, lab, llm, workspace: Path):
    (workspace / "geometry.py").write_text("class Circle:\n    def area(self, r):\n        return 3.14 * r * r\n")
    change = {"path": "geometry.py", "content": "import math\n", "rationale": "Use math.pi for precision.",
              "acceptance_criteria": ["area(1) == math.pi"]}
    llm.enqueue(Reply([ToolCall("s_1", "eca__search_symbols", json.dumps({"query": "Circle"}))]),
                Reply([ToolCall("w_1", "eca__write_file", json.dumps(change))]), Reply.text("Left as it was."))
    open_panel(page, lab, workspace="reasons")
    page.locator(".eca-new-chat").click()
    send(page, "where is Circle, and make it precise")
    found = page.locator('.eca-ToolCard[data-tool-call-id="s_1"][data-tool-state="done"] .eca-ToolCard-found')
    found.wait_for()
    assert found.inner_text().strip() == 'Found 1 symbol for "Circle"'
    card = page.locator('.eca-ToolCard[data-tool-call-id="w_1"][data-tool-state="waiting"]')
    card.wait_for()
    why = card.locator(".eca-ToolCard-rationale")
    assert why.inner_text().startswith("Use math.pi for precision.")
    assert why.locator(".eca-ToolCard-criteria li").all_inner_texts() == ["area(1) == math.pi"]
    screenshot(page, "review-03-reason-and-search")
    card.locator(".eca-reject").click()
    page.get_by_text("Left as it was.").wait_for()
    assert not page.eca_errors, page.eca_errors


# -- risk levels ------------------------------------------------------------------------------------------------

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


# -- the plan ---------------------------------------------------------------------------------------------------

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


# -- rewind and fork ----------------------------------------------------------------------------------------------

def told(llm) -> str:
    """What the model was sent last."""
    return json.dumps([r.body for r in llm.requests if r.method == "POST"][-1])


def test_rewind_restores_a_file_and_the_messages_and_fork_opens_a_new_chat(page, lab, llm, workspace: Path):
    target = workspace / "rewind-notes.txt"
    llm.enqueue(
        Reply.text("FIRST-ANSWER"),
        Reply([ToolCall("rw_1", "eca__write_file", json.dumps({"path": target.name, "content": "turn two\n"}))]),
        Reply.text("SECOND-ANSWER"),
    )
    open_panel(page, lab, workspace="rewind")
    page.locator(".eca-new-chat").click()
    messages = page.locator(".eca-MessageList")
    users = messages.locator(".eca-Message.eca-mod-user")
    send(page, "FIRST-QUESTION")
    messages.get_by_text("FIRST-ANSWER").wait_for()
    page.locator(".eca-send").wait_for()  # idle again
    send(page, "SECOND-QUESTION")
    page.locator('.eca-ToolCard[data-tool-call-id="rw_1"] .eca-approve').click()
    messages.get_by_text("SECOND-ANSWER").wait_for()
    page.locator(".eca-send").wait_for()
    assert target.read_text() == "turn two\n"
    original = messages.get_attribute("data-chat-id")
    assert users.count() == 2

    # Rewind to the second message: it asks first, with "revert the file changes" ticked
    second = users.nth(1)
    second.hover()
    second.locator(".eca-rewind").click()
    confirm = second.locator(".eca-RewindConfirm")
    confirm.wait_for()
    assert confirm.locator(".eca-rewind-files").is_checked()
    screenshot(page, "rewind-01-confirm")
    confirm.locator(".eca-rewind-confirm").click()
    messages.get_by_text("Reverted 1 file change").wait_for()
    wait_until(lambda: not target.exists(), message="the file turn two wrote to be gone")
    wait_until(lambda: users.count() == 1, message="one user message left")
    assert users.nth(0).locator(".eca-Message-body").inner_text() == "FIRST-QUESTION"
    assert messages.get_by_text("SECOND-QUESTION").count() == 0 and messages.get_by_text("SECOND-ANSWER").count() == 0
    assert messages.locator(".eca-ToolCard").count() == 0
    assert messages.get_by_text("FIRST-ANSWER").is_visible()
    screenshot(page, "rewind-02-rewound")

    llm.enqueue(Reply.text("THIRD-ANSWER"))
    send(page, "THIRD-QUESTION")
    messages.get_by_text("THIRD-ANSWER").wait_for()
    page.locator(".eca-send").wait_for()
    sent = told(llm)
    assert "FIRST-ANSWER" in sent and "THIRD-QUESTION" in sent and "SECOND-QUESTION" not in sent

    # Fork from the first message: a new chat with the first exchange only, shown at once
    first = users.nth(0)
    first.hover()
    first.locator(".eca-fork").click()
    wait_until(lambda: messages.get_attribute("data-chat-id") not in (None, original), message="the forked chat")
    messages.get_by_text("FIRST-ANSWER").wait_for()
    assert messages.get_by_text("THIRD-QUESTION").count() == 0
    wait_until(lambda: page.locator(".eca-ChatHeader-title").inner_text() == "FIRST-QUESTION (2)",
               message="the fork's title")
    llm.enqueue(Reply.text("FORK-ANSWER"))
    send(page, "FORK-QUESTION")
    messages.get_by_text("FORK-ANSWER").wait_for()
    page.locator(".eca-send").wait_for()
    sent = told(llm)
    assert "FIRST-ANSWER" in sent and "FORK-QUESTION" in sent and "THIRD-QUESTION" not in sent
    screenshot(page, "rewind-03-forked")

    # The original chat is untouched, and says where it was forked to
    page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-title", has_text=re.compile(r"^FIRST-QUESTION$")).click()
    wait_until(lambda: messages.get_attribute("data-chat-id") == original, message="the original chat")
    messages.get_by_text("THIRD-ANSWER").wait_for()
    messages.get_by_text("Chat forked to: FIRST-QUESTION (2)").wait_for()
    assert messages.get_by_text("FORK-QUESTION").count() == 0
    assert not page.eca_errors, page.eca_errors
