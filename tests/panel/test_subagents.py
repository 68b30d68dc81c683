"""A subagent in the panel, in a real browser: the parent model calls ``spawn_agent``; the subagent's progress is
drawn inside that call's card (agent, activity, step N/maxSteps, its own tool calls as nested cards — approved
there, in the subagent's chat), never as a chat of its own in the list, and the parent's final answer follows."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def spawn(agent: str, task: str, activity: str) -> Reply:
    return Reply([ToolCall("call_parent", "eca__spawn_agent",
                           json.dumps({"agent": agent, "task": task, "activity": activity}))])


def test_a_subagent_reads_a_file_nested_in_the_parent_card(page, lab, llm, workspace):
    (workspace / "notes.txt").write_text("the answer is 42\n")
    llm.enqueue(spawn("explorer", "Find the answer in notes.txt", "finding the answer"),
                Reply([ToolCall("call_child", "eca__read_file", json.dumps({"path": "notes.txt"}))]),
                Reply.text("Found it: the answer is 42 (notes.txt)."),
                Reply.text("The subagent found 42."))
    open_panel(page, lab, workspace="subagents")
    page.locator(".eca-new-chat").click()
    send(page, "what is the answer?")
    page.get_by_text("The subagent found 42.").wait_for()
    card = page.locator('.eca-ToolCard[data-tool-call-id="call_parent"]')
    nested = card.locator(".eca-Subagent")
    assert nested.locator(".eca-Subagent-agent").inner_text() == "explorer"
    assert nested.locator(".eca-Subagent-activity").inner_text() == "finding the answer"
    assert nested.locator(".eca-Subagent-step").inner_text() == "step 2"
    inner = nested.locator('.eca-ToolCard[data-tool-call-id="call_child"]')
    assert inner.get_attribute("data-tool-state") == "done"
    assert "Found it: the answer is 42" in nested.locator(".eca-Subagent-text").all_inner_texts()[-1]
    screenshot(page, "subagents-01-nested")
    nested.locator(".eca-Subagent-body > summary").click()  # collapsible
    inner.wait_for(state="hidden")
    # the subagent's chat is not in the chat list
    if page.locator(".eca-ChatList").count() == 0:
        page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-item.eca-mod-current").wait_for()
    assert page.locator('.eca-ChatList-item[data-chat-id^="subagent-"]').count() == 0

    # after a reload (chat/open replays the parent, its subagent's contents with parentChatId) the nesting is back
    page.reload()
    open_panel(page, lab)
    page.get_by_text("The subagent found 42.").wait_for()
    card = page.locator('.eca-ToolCard[data-tool-call-id="call_parent"]')
    nested = card.locator(".eca-Subagent")
    assert nested.locator(".eca-Subagent-agent").inner_text() == "explorer"
    inner = nested.locator('.eca-ToolCard[data-tool-call-id="call_child"]')
    inner.wait_for()
    assert inner.get_attribute("data-tool-state") == "done"
    assert "Found it: the answer is 42" in nested.locator(".eca-Subagent-text").all_inner_texts()[-1]
    assert page.locator('.eca-ChatList-item[data-chat-id^="subagent-"]').count() == 0
    screenshot(page, "subagents-03-after-reload")
    assert not page.eca_errors, page.eca_errors


def test_a_subagent_call_is_approved_in_the_nested_card(page, lab, llm, workspace):
    llm.enqueue(spawn("general", "Create out.txt", "writing the file"),
                Reply([ToolCall("call_1", "eca__write_file", json.dumps({"path": "out.txt", "content": "x\n"}))]),
                Reply.text("Created out.txt."),
                Reply.text("The subagent created out.txt."))
    open_panel(page, lab, workspace="subagents-approve")
    page.locator(".eca-new-chat").click()
    send(page, "make a file")
    nested = page.locator('.eca-ToolCard[data-tool-call-id="call_parent"] .eca-Subagent')
    waiting = nested.locator('.eca-ToolCard[data-tool-state="waiting"]')
    waiting.wait_for()
    screenshot(page, "subagents-02-approval")
    waiting.locator(".eca-approve").click()
    page.get_by_text("The subagent created out.txt.").wait_for()
    assert (workspace / "out.txt").read_text() == "x\n"
    assert nested.locator('.eca-ToolCard[data-tool-call-id="call_1"]').get_attribute("data-tool-state") == "done"
    assert not page.eca_errors, page.eca_errors
