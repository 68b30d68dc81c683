"""``delete_file`` through a real ``eca-notebook server`` (stdio): asked by default with a deletion diff and its risk,
approved, the file gone, then ``chat/toolCallUndo`` brings it back byte for byte."""

from __future__ import annotations

import os
import subprocess

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_tools import call, of_type, prompt, wait_tool_run

pytestmark = pytest.mark.e2e


async def test_delete_asked_approved_and_undone(spawn, llm, workspace):
    target = workspace / "old_notes.txt"
    target.write_text("first line\nsecond line\n")
    os.chmod(target, 0o640)
    llm.enqueue(Reply([call("delete_file", {"path": "old_notes.txt", "rationale": "replaced by README"}, "del1")]),
                Reply.text("Deleted the old notes."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "remove old_notes.txt", model="openai/gpt-4.1")
    run = await wait_tool_run(eca, "del1")
    assert run["manualApproval"] is True and target.exists()  # asked by default: nothing deleted yet
    details = run["details"]
    assert details["type"] == "fileChange" and details["linesRemoved"] == 2 and details["linesAdded"] == 0
    assert "+++ /dev/null" in details["diff"] and "-first line\n-second line\n" in details["diff"]
    assert run["risk"]["level"] == "high"  # not tracked by git: only undo brings it back
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "del1"})
    await eca.wait_idle(chat_id)
    called = {c["id"]: c for c in of_type(eca.contents(chat_id), "toolCalled")}
    assert called["del1"]["error"] is False and called["del1"]["details"]["undoable"] is True
    assert not target.exists()

    undone = await eca.request("chat/toolCallUndo", {"chatId": chat_id, "toolCallId": "del1"})
    assert undone["undone"] is True, undone
    assert target.read_text() == "first line\nsecond line\n" and (target.stat().st_mode & 0o777) == 0o640


async def test_deleting_a_tracked_file_is_medium_risk(spawn, llm, workspace):
    (workspace / "tracked.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "tracked.py"]):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)
    llm.enqueue(Reply([call("delete_file", {"path": "tracked.py"}, "del2")]), Reply.text("ok"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "delete tracked.py", model="openai/gpt-4.1")
    run = await wait_tool_run(eca, "del2")
    assert run["risk"]["level"] == "medium" and "tracked by git" in run["risk"]["reason"]
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "del2"})
    await eca.wait_idle(chat_id)
    assert (workspace / "tracked.py").exists()


async def test_rollback_of_the_turn_restores_the_deleted_file(spawn, llm, workspace):
    from .test_server_rewind import turn

    target = workspace / "notes.md"
    target.write_text("# keep me\n")
    llm.enqueue(Reply.text("ANSWER-ONE"), Reply([call("delete_file", {"path": "notes.md"}, "del3")]),
                Reply.text("Deleted."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await turn(eca, "QUESTION-ONE")
    _, second = await turn(eca, "delete notes.md", chat_id, approve=("del3",))
    assert not target.exists()
    assert await eca.request("chat/rollback", {"chatId": chat_id, "contentId": second, "include": ["messages", "tools"]}
                             ) == {}
    assert target.read_text() == "# keep me\n"
