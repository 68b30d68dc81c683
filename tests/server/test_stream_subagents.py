"""Subagents through the session stream (a real Jupyter server, the scripted LLM server): the subagent's tool calls
show as the session's ``tool.execute`` and its approvals as the session's ``tool.request_approval`` (answered in
the subagent's chat), its steps as ``assistant.thinking``; its text is not the session's answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_stream_session import call, session  # noqa: F401  (session: a fixture, registered by importing it)

pytestmark = pytest.mark.timeout(300)


async def test_subagent_calls_and_approval_through_the_stream(session, llm, workspace: Path):  # noqa: F811
    stream, _, sid = await session()
    llm.enqueue(
        Reply([call("call_p", "spawn_agent", agent="general", task="Create out.txt", activity="writing")]),
        Reply([call("call_c", "write_file", path="out.txt", content="x\n")]),
        Reply.text("Child wrote out.txt."),
        Reply.text("Parent done."),
    )
    start = await stream.user_message("make the file")
    ask = await stream.wait_for("tool.request_approval", lambda m: m["tool_name"] == "write_file", start=start)
    assert ask["request_id"].startswith("req_subagent-") and ask["request_id"].endswith("_call_c")
    assert ask["args"]["file_path"] == "out.txt"
    # the subagent's file change is the session's pending patch, with its approval
    await stream.wait_for("session.state", lambda m: m["state"]["pending_approvals"] == [ask["request_id"]]
                          and m["state"]["pending_patches"] == ["patch_call_c"], start=start)
    await stream.approve(ask["request_id"], "file", "out.txt")
    final = await stream.final(start)
    assert final["message"] == "Parent done."  # the subagent's text is not the answer
    assert (workspace / "out.txt").read_text() == "x\n"
    executed = [(m["tool_name"], m["status"]) for m in stream.of("tool.execute", start)]
    assert ("write_file", "completed") in executed and ("spawn_agent", "completed") in executed
    spawn = next(m for m in stream.of("tool.execute", start)
                 if m["tool_name"] == "spawn_agent" and m["status"] == "completed")
    assert "Child wrote out.txt." in json.dumps(spawn["result"])
    steps = [m["message"] for m in stream.of("assistant.thinking", start) if "step" in m["message"]]
    assert "general: writing: step 1" in steps
    last = stream.of("session.state")[-1]["state"]
    assert last["pending_approvals"] == [] and last["pending_patches"] == []
    assert last["applied_patches"] == ["patch_call_c"]  # applied, as the session's own
