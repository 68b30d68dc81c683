"""Engine contents → ACP session updates (the translation one session keeps)."""

from __future__ import annotations

import json
from pathlib import Path

from eca_notebook.acp._schema import UPDATE_LIMIT
from eca_notebook.acp._updates import TEXT_CHUNK, SessionUpdates, tool_kind

WS = Path("/ws")


def run(call_id: str = "call_1", name: str = "read_file", manual: bool = False, **extra) -> dict:
    return {"type": "toolCallRun", "origin": "native", "id": call_id, "name": name, "server": "eca",
            "arguments": extra.pop("arguments", {"path": "src/a.py"}), "manualApproval": manual, **extra}


def test_texts_by_role_and_liveness():
    t = SessionUpdates(WS)
    assert t.translate("user", {"type": "text", "text": "hi\n"}, live=True) == ([], None)
    [replayed], _ = t.translate("user", {"type": "text", "text": "hi\n"}, live=False)
    assert replayed == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi\n"}}
    [answer], _ = t.translate("assistant", {"type": "text", "text": "yes"}, live=True)
    assert answer["sessionUpdate"] == "agent_message_chunk"
    [note], _ = t.translate("system", {"type": "text", "text": "Error: boom"}, live=True)
    assert note["content"]["text"] == "Error: boom\n"
    [thought], _ = t.translate("assistant", {"type": "reasonText", "id": "r", "text": "hmm"}, live=True)
    assert thought["sessionUpdate"] == "agent_thought_chunk"
    for dropped in ({"type": "progress", "state": "running", "text": "x"}, {"type": "reasonStarted", "id": "r"},
                    {"type": "toolCallPrepare", "id": "c", "name": "n", "server": "eca", "origin": "native",
                     "argumentsText": "{"}):
        assert t.translate("system", dropped, live=True) == ([], None)


def test_long_text_is_split_under_the_update_limit():
    t = SessionUpdates(WS)
    text = "é" * (TEXT_CHUNK * 3 + 5)
    updates, _ = t.translate("assistant", {"type": "text", "text": text}, live=True)
    assert len(updates) == 4 and "".join(u["content"]["text"] for u in updates) == text
    assert all(len(json.dumps(u).encode()) < UPDATE_LIMIT for u in updates)


def test_tool_call_lifecycle_and_permission_only_when_live_and_manual():
    t = SessionUpdates(WS)
    [started], ask = t.translate("assistant", run(manual=True, summary='Reading file "src/a.py"'), live=True)
    assert started == {"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": 'Reading file "src/a.py"',
                       "kind": "read", "status": "pending", "locations": [{"path": "/ws/src/a.py"}],
                       "rawInput": {"path": "src/a.py"}}
    assert ask is not None and ask.call_id == "call_1" and ask.tool_call["toolCallId"] == "call_1"
    assert "sessionUpdate" not in ask.tool_call
    [running], _ = t.translate("assistant", {**run(), "type": "toolCallRunning"}, live=True)
    assert running == {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "in_progress"}
    [done], _ = t.translate("assistant", {**run(), "type": "toolCalled", "error": False,
                                          "outputs": [{"type": "text", "text": "content"}]}, live=True)
    assert done["status"] == "completed" and done["content"][0]["content"]["text"] == "content"
    _, replay_ask = SessionUpdates(WS).translate("assistant", run(manual=True), live=False)
    assert replay_ask is None


def test_reused_model_ids_get_fresh_acp_ids():
    t = SessionUpdates(WS)
    [first], _ = t.translate("assistant", run(), live=True)
    t.translate("assistant", {**run(), "type": "toolCalled", "error": False, "outputs": []}, live=True)
    [second], _ = t.translate("assistant", run(), live=True)
    [update], _ = t.translate("assistant", {**run(), "type": "toolCallRejected", "reason": "user-choice"}, live=True)
    assert first["toolCallId"] == "call_1" and second["toolCallId"] == "call_1-2"
    assert update["toolCallId"] == "call_1-2" and update["status"] == "failed"
    assert t.acp_id("call_1") == "call_1-2"


def test_execute_output_is_fenced_and_unfinished_calls_fail_after_replay():
    t = SessionUpdates(WS)
    t.translate("assistant", run(name="shell_command", arguments={"command": "ls"}), live=False)
    [done], _ = t.translate("assistant", {**run(name="shell_command"), "type": "toolCalled", "error": False,
                                          "outputs": [{"type": "text", "text": "a\nb"}]}, live=False)
    assert done["content"][0]["content"]["text"] == "```\na\nb\n```"
    t.translate("assistant", run(call_id="call_9"), live=False)
    [interrupted] = t.unfinished()
    assert interrupted["toolCallId"] == "call_9" and interrupted["status"] == "failed"
    assert t.unfinished() == []


def test_oversized_diff_is_left_out_of_the_tool_call():
    t = SessionUpdates(WS)
    big = "x" * (UPDATE_LIMIT + 10) + "\n"
    details = {"type": "fileChange", "path": "/ws/big.txt",
               "diff": f"--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1 @@\n+{big}",
               "linesAdded": 1, "linesRemoved": 0}
    [started], _ = t.translate("assistant", run(name="write_file", arguments={"path": "big.txt", "content": big},
                                                details=details), live=True)
    assert len(json.dumps(started).encode()) <= UPDATE_LIMIT
    assert "too large to show" in started["content"][0]["content"]["text"]
    assert "rawInput" not in started


def test_usage_needs_the_context_size_and_title_becomes_session_info():
    t = SessionUpdates(WS)
    assert t.translate("system", {"type": "usage", "sessionTokens": 5}, live=True) == ([], None)
    [usage], _ = t.translate("system", {"type": "usage", "sessionTokens": 50, "messageInputTokens": 40,
                                        "messageOutputTokens": 10, "sessionCost": "0.25",
                                        "limit": {"context": 1000, "output": 100}}, live=True)
    assert usage == {"sessionUpdate": "usage_update", "used": 50, "size": 1000,
                     "cost": {"amount": 0.25, "currency": "USD"}}
    [info], _ = t.translate("system", {"type": "metadata", "title": "Fix tests"}, live=True)
    assert info == {"sessionUpdate": "session_info_update", "title": "Fix tests"}


def test_round_cap_note_is_noticed():
    t = SessionUpdates(WS)
    t.translate("system", {"type": "text", "text": "Stopped after 3 tool rounds in one prompt (toolCall.maxRounds)."},
                live=True)
    assert t.round_cap_hit


def test_tool_kinds():
    assert tool_kind("read_file") == "read" and tool_kind("edit_file") == "edit"
    assert tool_kind("shell_command") == "execute" and tool_kind("move_file") == "move"
    assert tool_kind("grep") == "search" and tool_kind("directory_tree") == "search"
    assert tool_kind("delete_branch", "github") == "delete"
    assert tool_kind("fetch_url", "web") == "fetch"
    assert tool_kind("run_python", "kernel") == "execute"
    assert tool_kind("create_issue", "github") == "edit"
    assert tool_kind("frobnicate", "x") == "other"
    assert tool_kind("read_file", "other-server") == "read"


def test_plan_content_becomes_a_plan_update_and_the_update_plan_call_alone_does_not():
    t = SessionUpdates(WS)
    called = {**run(name="update_plan", arguments={"entries": [{"content": "a"}]}), "type": "toolCalled",
              "error": False, "outputs": [{"type": "text", "text": "Plan updated: 0/1 steps done.\n\n- [ ] a"}]}
    updates, _ = t.translate("assistant", called, live=True)
    assert [u["sessionUpdate"] for u in updates] == ["tool_call_update"]  # the plan comes from the plan content
    plan = {"type": "plan", "explanation": "why", "steps": [
        {"description": "Read", "status": "completed", "priority": "high", "files": ["src/a.py"]},
        {"description": "Fix", "status": "in_progress", "files": ["src/a.py", "tests/t.py"]},
        {"description": "Ship"},
        {"description": "Odd", "status": "someday", "priority": "urgent"},
    ]}
    [update], ask = t.translate("assistant", plan, live=False)
    assert ask is None
    assert update == {"sessionUpdate": "plan", "entries": [
        {"content": "Read (src/a.py)", "priority": "high", "status": "completed"},
        {"content": "Fix (src/a.py, tests/t.py)", "priority": "medium", "status": "in_progress"},
        {"content": "Ship", "priority": "medium", "status": "pending"},
        {"content": "Odd", "priority": "medium", "status": "pending"},
    ]}
    assert t.translate("assistant", {"type": "plan"}, live=True) == ([], None)


def test_image_contents_become_acp_image_blocks():
    from acp import schema as S

    t = SessionUpdates(WS)
    image = {"type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="}
    [shown], _ = t.translate("assistant", image, live=True)  # an MCP tool's image
    assert shown == {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}}
    S.AgentMessageChunk.model_validate(shown)  # the SDK's own schema takes it
    assert t.translate("user", image, live=True) == ([], None)  # a live prompt's image is already on screen
    [replayed], _ = t.translate("user", image, live=False)
    assert replayed["sessionUpdate"] == "user_message_chunk" and replayed["content"]["type"] == "image"
    assert t.translate("assistant", {"type": "image", "mediaType": "image/png"}, live=True) == ([], None)
