"""Rewinding and forking a chat from the panel, in a real browser: "Rewind to here" on a user message reverts the
file the removed turn wrote and the message list; "Fork from here" opens a new chat that continues from there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


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
