"""Hunk-level approval through a real ``eca-notebook server``: take some hunks of a change, leave the rest."""

from __future__ import annotations

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt, tool_results_sent, wait_tool_run

pytestmark = pytest.mark.e2e

OLD = "".join(f"line {i}\n" for i in range(1, 41))
NEW = OLD.replace("line 2\n", "line two\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")


async def test_three_hunk_edit_with_one_hunk_approved(spawn, llm, workspace):
    target = workspace / "notes.txt"
    target.write_text(OLD)
    llm.enqueue(Reply([call("write_file", {"path": "notes.txt", "content": NEW})]), Reply.text("Noted."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "tidy the notes", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    hunks = run["details"]["hunks"]
    assert [h["id"] for h in hunks] == ["h1", "h2", "h3"]
    assert hunks[1]["text"].startswith("@@ -18,6 +18,7 @@") and "+extra" in hunks[1]["text"]
    assert all("applied" not in h for h in hunks)  # nothing decided yet

    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1", "hunks": ["h2"]})
    await eca.wait_idle(chat_id)
    assert target.read_text() == OLD.replace("line 20\n", "line 20\nextra\n")  # exactly that hunk on disk

    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False
    assert [h["applied"] for h in called["details"]["hunks"]] == [False, True, False]
    assert called["details"]["linesAdded"] == 1 and called["details"]["linesRemoved"] == 0
    assert "-line 2\n" not in called["details"]["diff"]  # the finished call's diff is what was written
    [told] = tool_results_sent("openai-responses", completion_requests(llm)[-1].body)
    assert "Applied: h2 (@@ -18,6 +18,7 @@)" in told
    assert "Not applied" in told and "h1 (@@ -1,5 +1,5 @@)" in told and "h3 (@@ -35,6 +36,5 @@)" in told


async def test_no_hunk_chosen_is_a_rejection_and_all_hunks_is_the_whole_change(spawn, llm, workspace):
    target = workspace / "notes.txt"
    target.write_text(OLD)
    llm.enqueue(Reply([call("write_file", {"path": "notes.txt", "content": NEW})]), Reply.text("OK."),
                Reply([call("write_file", {"path": "notes.txt", "content": NEW}, "call_2")]), Reply.text("Done."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "tidy", model="openai/gpt-4.1")
    await wait_tool_run(eca)
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1", "hunks": []})
    await eca.wait_idle(chat_id)
    assert target.read_text() == OLD
    assert of_type(eca.contents(chat_id), "toolCallRejected")[0]["reason"] == "user-choice"

    mark = len(eca.messages)
    await prompt(eca, "try again", chatId=chat_id, model="openai/gpt-4.1")
    await wait_tool_run(eca, "call_2")
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_2",
                                              "hunks": ["h1", "h2", "h3"]})
    await eca.wait_idle(chat_id, start=mark)
    assert target.read_text() == NEW


async def test_hunk_ids_the_change_never_had_are_a_rejection(spawn, llm, workspace):
    target = workspace / "notes.txt"
    target.write_text(OLD)
    llm.enqueue(Reply([call("write_file", {"path": "notes.txt", "content": NEW})]), Reply.text("OK."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "tidy", model="openai/gpt-4.1")
    await wait_tool_run(eca)
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1", "hunks": ["h9", "x"]})
    await eca.wait_idle(chat_id)
    assert target.read_text() == OLD
    assert of_type(eca.contents(chat_id), "toolCallRejected")[0]["reason"] == "user-choice"
    assert not of_type(eca.contents(chat_id), "toolCalled")
