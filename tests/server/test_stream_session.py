"""The session stream through a real Jupyter server and the scripted LLM server: handshake, a turn with automatic
context, hunk approval, client-applied patches (and a conflict), both command modes, cancel, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from eca_notebook.testing.llm_server import Error, Reply, Stall, Text, ToolCall, Usage

from ._stream_client import Stream, connect

pytestmark = pytest.mark.timeout(300)

OLD = "".join(f"v{i} = {i}\n" for i in range(1, 31))
NEW = OLD.replace("v2 = 2\n", "v2 = 20\n").replace("v15 = 15\n", "v15 = 150\n").replace("v28 = 28\n", "v28 = 280\n")
FIRST_AND_LAST = OLD.replace("v2 = 2\n", "v2 = 20\n").replace("v28 = 28\n", "v28 = 280\n")
MIDDLE = OLD.replace("v15 = 15\n", "v15 = 150\n")


def call(call_id: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)


def request_text(llm, index: int) -> str:
    return json.dumps(llm.requests[index].body)


@pytest.fixture
def app_py(workspace: Path) -> Path:
    path = workspace / "app.py"
    path.write_text(OLD)
    return path


@pytest.fixture
async def session(api, jp_http_port, jp_base_url, jp_auth_header):
    """``await session(capabilities)`` → (stream after the handshake, its server.hello, the session id)."""
    opened: list[Stream] = []

    async def start(capabilities: list[str] | None = None, hello: bool = True) -> tuple[Stream, Any, str]:
        status, created = await api("POST", "sessions", body={"title": "stream test"})
        assert status == 201, created
        stream = await connect(jp_http_port, jp_base_url, created["id"], jp_auth_header)
        opened.append(stream)
        reply = await stream.hello(capabilities) if hello else None
        return stream, reply, created["id"]

    yield start
    for stream in opened:
        await stream.close()


async def test_handshake(session, state):
    stream, hello, sid = await session(["diff_preview", "git_integration"])
    assert hello["session_id"] == sid and hello["workspace_id"] == state.manager.default.id
    assert hello["patch_mode"] == "server" and hello["command_mode"] == "server_runner"
    assert {"hunk_approval", "server_runner"} <= set(hello["capabilities"])
    assert "local_terminal" not in hello["capabilities"]  # the client cannot run commands
    assert hello["server_info"]["version"] and hello["server_info"]["model"]["model_name"] == "gpt-4.1"
    state_message = stream.of("session.state")[-1]["state"]
    assert state_message == {"pending_patches": [], "applied_patches": [], "pending_approvals": [],
                             "current_step": None, "total_steps": None}
    mark = stream.mark
    await stream.send({"type": "client.hello", "client_info": {"name": "again"}})
    await stream.error("INVALID_MESSAGE", mark)  # one handshake per socket


async def test_turn_with_context_and_hunk_approval(session, llm, app_py):
    stream, _, sid = await session()
    llm.enqueue(
        Reply([Text("Scaling "), Text("three values."),
               call("call_w1", "write_file", path="app.py", content=NEW, rationale="Scale the values",
                    acceptance_criteria=["v2 is 20", "tests pass"]), Usage(30, 10)]),
        Reply([Text("Done: two of three applied."), Usage(40, 5)]),
    )
    context = {
        "active_editor": {"file_path": "app.py", "language": "python", "visible_range": {"start": 1, "end": 30},
                          "selection": {"start": {"line": 14, "character": 0}, "end": {"line": 15, "character": 3}}},
        "diagnostics": [{"file_path": "app.py", "severity": "error", "line": 15, "message": "Mark-DIAG-1"}],
        "terminal_output": {"command": "pytest", "exit_code": 1, "stdout": "Mark-TERM-2", "stderr": ""},
        "git_context": {"branch": "mark-branch-3", "modified_files": ["app.py"]},
        "open_editors": [{"file_path": "README.md", "is_dirty": True}],
        "mentions": [{"type": "file", "path": "README.md"}, {"type": "file", "path": "../outside.txt"}],
    }
    start = await stream.user_message("Scale the values", context)
    patch = await stream.wait_for("patch.proposed", start=start)
    assert patch["patch_id"] == "patch_call_w1" and patch["file_path"] == "app.py"
    assert patch["diff"].startswith("--- a/app.py\n+++ b/app.py\n")
    assert patch["rationale"] == "Scale the values" and patch["acceptance_criteria"] == ["v2 is 20", "tests pass"]
    assert patch["requires_approval"] is True
    assert [h["id"] for h in patch["hunks"]] == ["h1", "h2", "h3"] and "+v15 = 150" in patch["hunks"][1]["content"]
    ask = await stream.wait_for("tool.request_approval", start=start)
    assert ask["request_id"] == "req_call_w1" and ask["tool_name"] == "write_file"
    assert ask["args"] == {"file_path": "app.py", "reason": "Scale the values", "patch_id": "patch_call_w1"}
    await stream.wait_for("session.state", lambda m: m["state"]["pending_approvals"] == ["req_call_w1"]
                          and m["state"]["pending_patches"] == ["patch_call_w1"], start=start)
    assert app_py.read_text() == OLD

    await stream.approve("req_call_w1", "hunk", "app.py", hunks=["h1", "h3"])
    final = await stream.final(start)
    assert final["message"] == "Scaling three values.Done: two of three applied."
    meta = final["metadata"]
    assert meta["success"] is True and meta["stop_reason"] == "completed" and meta["files_modified"] == 1
    assert meta["tools_used"] == ["write_file"] and meta["tokens_used"] == 85
    assert app_py.read_text() == FIRST_AND_LAST
    state = stream.of("session.state", start)[-1]["state"]
    assert state["applied_patches"] == ["patch_call_w1"] and state["pending_patches"] == []
    assert state["pending_approvals"] == []

    first = request_text(llm, 0)
    for marker in ("Mark-DIAG-1", "Mark-TERM-2", "mark-branch-3", "v14 = 14", "v15 = 15", "# demo project"):
        assert marker in first, marker
    assert "v1 = 1\\n" not in first  # only the selected lines of app.py, not the whole file
    assert "outside.txt" in first and "outside the workspace" in first  # said, never read
    tokens = stream.of("assistant.token", start)
    assert [t["cumulative_text"] for t in tokens][:2] == ["Scaling ", "Scaling three values."]
    executes = stream.of("tool.execute", start)
    assert [e["status"] for e in executes] == ["started", "completed"]
    assert "Not applied" in executes[1]["result"]["output"]
    kinds = [m["type"] for m in stream.received[start:]]
    assert kinds.index("assistant.thinking") < kinds.index("assistant.token")
    assert kinds[-2:] == ["assistant.message_final", "session.state"]


async def test_client_applies_patches_and_a_conflict_reaches_the_model(session, llm, app_py):
    stream, hello, _ = await session(["apply_patches"])
    assert hello["patch_mode"] == "client"
    llm.enqueue(Reply([call("call_c1", "write_file", path="app.py", content=NEW)]), Reply.text("Applied."))
    start = await stream.user_message("Only v15")
    await stream.wait_for("tool.request_approval", start=start)
    mark = stream.mark
    await stream.approve("req_call_c1", "hunk", hunks=["h2"])
    again = await stream.wait_for("patch.proposed", start=mark)
    assert again["patch_id"] == "patch_call_c1" and again["requires_approval"] is False
    assert [h["id"] for h in again["hunks"]] == ["h2"] and "+v15 = 150" in again["diff"]
    assert "v2 = 20" not in again["diff"] and app_py.read_text() == OLD  # the server leaves the file alone
    app_py.write_text(MIDDLE)  # the client applies it
    await stream.send({"type": "client.patch_apply_result", "patch_id": "patch_call_c1", "file_path": "app.py",
                       "success": True, "error": None, "applied_hash": "sha256:0"})
    final = await stream.final(start)
    assert final["metadata"]["success"] is True
    assert stream.of("session.state", start)[-1]["state"]["applied_patches"] == ["patch_call_c1"]

    llm.enqueue(Reply([call("call_c2", "edit_file", path="app.py", original_content="v3 = 3", new_content="v3 = 30")]),
                Reply.text("It conflicted."))
    start = await stream.user_message("Now v3")
    await stream.wait_for("tool.request_approval", start=start)
    mark = stream.mark
    await stream.approve("req_call_c2", "all")
    await stream.wait_for("patch.proposed", lambda p: not p["requires_approval"], start=mark)
    await stream.send({"type": "client.patch_apply_result", "patch_id": "patch_call_c2", "file_path": "app.py",
                       "success": False, "error": {"type": "conflict", "message": "Conflict-77: buffer changed"}})
    final = await stream.final(start)
    assert final["metadata"]["stop_reason"] == "completed"
    assert "Conflict-77" in request_text(llm, 3)
    assert stream.of("tool.execute", start)[-1]["status"] == "failed"
    state = stream.of("session.state", start)[-1]["state"]
    assert "patch_call_c2" not in state["applied_patches"] and state["pending_patches"] == []
    assert app_py.read_text() == MIDDLE


async def test_local_terminal_commands(session, llm, workspace):
    stream, hello, _ = await session(["terminal_exec"])
    assert hello["command_mode"] == "local_terminal" and "local_terminal" in hello["capabilities"]
    llm.enqueue(Reply([call("call_s1", "shell_command", command="echo one")]),
                Reply([call("call_s2", "shell_command", command="echo two", working_directory="sub")]),
                Reply.text("Both ran."))
    (workspace / "sub").mkdir()
    start = await stream.user_message("Run them")
    first = await stream.wait_for("command.request_approval", start=start)
    assert first["command_id"] == "cmd_call_s1" and first["command"] == "echo one"
    assert first["requires_approval"] is True and Path(first["working_directory"]) == workspace
    assert first["environment"] == {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    await stream.wait_for("session.state", lambda m: m["state"]["pending_approvals"] == ["cmd_call_s1"], start=start)
    await stream.approve("cmd_call_s1", "file")
    await stream.send({"type": "client.command_result", "command_id": "cmd_call_s1", "command": "echo one",
                       "exit_code": 0, "stdout": "Out-ONE\n", "stderr": "", "duration_ms": 5})
    second = await stream.wait_for("command.request_approval", lambda m: m["command_id"] == "cmd_call_s2",
                                   start=start)
    assert Path(second["working_directory"]) == workspace / "sub"
    # a result for a command still awaiting approval counts as the approval
    await stream.send({"type": "client.command_result", "command_id": "cmd_call_s2", "command": "echo two",
                       "exit_code": 3, "stdout": "", "stderr": "Err-TWO\n", "duration_ms": 5})
    final = await stream.final(start)
    assert final["metadata"]["success"] is True
    assert "Exit code: 0" in request_text(llm, 1) and "Out-ONE" in request_text(llm, 1)
    assert "Exit code: 3" in request_text(llm, 2) and "Err-TWO" in request_text(llm, 2)
    assert not [a for a in stream.of("tool.request_approval", start)]  # asked as commands, not as tools
    assert not (workspace / "one").exists()
    mark = stream.mark
    await stream.send({"type": "client.command_result", "command_id": "cmd_nothing", "exit_code": 0})
    await stream.error("NOT_FOUND", mark)


async def test_server_runner_and_policy(session, llm, workspace, state):
    stream, hello, _ = await session()
    assert hello["command_mode"] == "server_runner"
    llm.enqueue(Reply([call("call_r1", "shell_command", command="echo server-$((6*7))")]), Reply.text("Ran."))
    start = await stream.user_message("Run it")
    ask = await stream.wait_for("tool.request_approval", start=start)
    assert ask["request_id"] == "req_call_r1" and ask["tool_name"] == "execute_command"
    assert ask["args"]["command"] == "echo server-$((6*7))" and ask["risk_level"] in ("low", "medium", "high")
    await stream.approve("req_call_r1", "file")
    done = await stream.wait_for("tool.execute", lambda e: e["status"] != "started", start=start)
    assert done["status"] == "completed" and "server-42" in done["result"]["output"]
    await stream.final(start)

    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"commandExecution": {"modes": []}}))
    engine = state.manager.engine_for(state.manager.default)
    await engine.reload_config()
    assert engine.config.command_execution.modes == []
    stream2, hello2, _ = await session(["terminal_exec"])
    assert hello2["command_mode"] is None
    assert not {"local_terminal", "server_runner"} & set(hello2["capabilities"])
    llm.enqueue(Reply([call("call_r2", "shell_command", command="echo refused")]), Reply.text("Refused."))
    start = await stream2.user_message("Run it")
    await stream2.error("POLICY_VIOLATION", start)
    final = await stream2.final(start)
    assert "not allowed" in request_text(llm, 3) or "rejected" in request_text(llm, 3)
    assert final["metadata"]["success"] is True


async def test_cancel_busy_and_model_error(session, llm):
    stream, _, _ = await session()
    llm.enqueue(Reply([Text("Working"), Stall(60)]))
    start = await stream.user_message("Long")
    await stream.wait_for("assistant.token", start=start)
    mark = await stream.user_message("Another")
    await stream.error("SESSION_BUSY", mark)
    await stream.send({"type": "client.cancel", "reason": "user_cancelled"})
    final = await stream.final(start)
    assert final["metadata"]["stop_reason"] == "cancelled" and final["metadata"]["success"] is False

    llm.enqueue(*[Reply([Error(500, "upstream exploded")]) for _ in range(4)])
    start = await stream.user_message("Break")
    error = await stream.wait_for("server.error", start=start, timeout=120)
    assert error["error"]["code"] == "MODEL_ERROR" and error["error"]["recoverable"] is True
    final = await stream.final(start)
    assert final["metadata"]["stop_reason"] == "error" and final["metadata"]["success"] is False
    llm.clear()
    llm.enqueue(Reply.text("Recovered."))
    start = await stream.user_message("Again")
    final = await stream.final(start)
    assert final["message"] == "Recovered." and final["metadata"]["success"] is True
    assert "Break" in request_text(llm, 0)  # the failed turn's question is still in the history


async def test_malformed_messages_keep_the_socket_open(session, llm, state):
    stream, _, _ = await session(hello=False)
    start = await stream.user_message("too early")
    await stream.error("HANDSHAKE_REQUIRED", start)
    await stream.hello()
    for raw, code in [("{nope", "INVALID_MESSAGE"), ("[1]", "INVALID_MESSAGE"), ("7", "INVALID_MESSAGE"),
                      ('{"no": "type"}', "INVALID_MESSAGE"), ('{"type": "client.bogus"}', "UNKNOWN_MESSAGE_TYPE")]:
        mark = stream.mark
        await stream.send(raw)
        await stream.error(code, mark)
    mark = stream.mark
    await stream.send({"type": "client.approval_response", "request_id": 5, "approved": "maybe", "extra": 1})
    error = await stream.error("INVALID_MESSAGE", mark)
    locs = {tuple(d["loc"]) for d in error["error"]["details"]}
    assert {("request_id",), ("approved",), ("scope",)} <= locs and ("extra",) not in locs, locs  # (tolerant)
    assert all("input" not in d for d in error["error"]["details"])
    mark = stream.mark
    await stream.approve("req_unknown", "file")
    await stream.error("NOT_FOUND", mark)
    mark = stream.mark
    await stream.send({"type": "client.patch_apply_result", "patch_id": "patch_x", "file_path": "a", "success": True})
    await stream.error("NOT_FOUND", mark)
    mark = stream.mark
    limit = state.limits.max_message_size
    await stream.send(json.dumps({"type": "client.user_message", "message": "x" * (limit + 10)}))
    error = await stream.error("MESSAGE_TOO_LARGE", mark)
    assert error["error"]["details"]["limit"] == limit
    llm.enqueue(Reply.text("Still here."))
    start = await stream.user_message("Hello?")
    assert (await stream.final(start))["message"] == "Still here."


async def test_refusals_before_the_upgrade(api, jp_http_port, jp_base_url, jp_auth_header):
    _, created = await api("POST", "sessions", body={})
    sid = created["id"]
    for session_id, headers, query, code in [
        ("no-such-session", jp_auth_header, {}, 404),
        (sid, {**jp_auth_header, "Origin": "http://evil.example.com"}, {}, 403),
        (sid, {}, {}, 403),
        (sid, jp_auth_header, {"workspace_id": "0" * 16}, 404),
    ]:
        with pytest.raises(HTTPClientError) as info:
            stream = await connect(jp_http_port, jp_base_url, session_id, headers, **query)
            await stream.close()
        assert info.value.code == code, (session_id, headers, info.value)
    token = jp_auth_header["Authorization"].split()[-1]
    stream = await connect(jp_http_port, jp_base_url, sid, {"Authorization": f"Bearer {token}"})
    try:
        assert (await stream.hello())["session_id"] == sid
    finally:
        await stream.close()


async def test_plan_steps_and_context_updates(session, llm, app_py):
    stream, _, _ = await session()
    entries = [{"content": "Read", "status": "completed", "files": ["app.py"]},
               {"content": "Change", "status": "in_progress", "files": ["app.py", "lib.py"]},
               {"content": "Test", "status": "pending"}]
    llm.enqueue(Reply([call("call_p", "update_plan", entries=entries, explanation="Small steps")]),
                Reply([call("call_m1", "write_file", path="app.py", content=NEW)]),
                Reply.text("Planned."))
    start = await stream.user_message("Plan it", {"diagnostics": [{"file_path": "app.py", "severity": "warning",
                                                                   "message": "Before-1"}]})
    plan = await stream.wait_for("agent.plan", start=start)
    assert [s["step_number"] for s in plan["steps"]] == [1, 2, 3] and plan["rationale"] == "Small steps"
    assert plan["steps"][1] == {"step_number": 2, "description": "Change", "files_involved": ["app.py", "lib.py"]}
    await stream.wait_for("session.state", lambda m: m["state"]["current_step"] == 2
                          and m["state"]["total_steps"] == 3, start=start)
    await stream.wait_for("tool.request_approval", start=start)
    await stream.send({"type": "client.context_update",
                       "updates": {"terminal_output": {"command": "make", "stdout": "Mid-TURN-9"}}})
    await stream.approve("req_call_m1", "file", "app.py", approved=False)
    await stream.final(start)
    assert "Mid-TURN-9" not in request_text(llm, 1) and "Mid-TURN-9" in request_text(llm, 2)
    assert app_py.read_text() == OLD  # rejected
    llm.enqueue(Reply.text("Next."))
    start = await stream.user_message("And now?")
    await stream.final(start)
    later = request_text(llm, 3)
    assert "Before-1" in later and "Mid-TURN-9" in later  # the merged automatic context


async def test_file_changes_feed_the_content_index(session, llm, workspace):
    stream, hello, _ = await session()
    if "text_search" not in hello["capabilities"]:
        pytest.skip("the content index (retrieval tools) is not installed")
    helper = workspace / "src" / "fresh_helper.py"
    helper.parent.mkdir()
    helper.write_text("def quokka_helper(x):\n    return x * 2\n")
    mark = stream.mark
    await stream.send({"type": "client.file_changes", "changes": [
        {"type": "created", "file_path": "src/fresh_helper.py"},
        {"type": "modified", "file_path": "../elsewhere.py"}]})
    error = await stream.error("INVALID_MESSAGE", mark)  # the outside path is refused, the rest is taken
    assert error["error"]["details"]["outside"] == ["../elsewhere.py"]
    llm.enqueue(Reply([call("call_t1", "search_text", query="quokka_helper")]), Reply.text("Found."))
    start = await stream.user_message("Where is quokka_helper?")
    try:
        await stream.final(start)
    finally:
        print(json.dumps(stream.received[start:], indent=1)[:6000])
    status = stream.of("agent.retrieve.status", start)
    assert status and status[-1]["stage"] == "text_search" and status[-1]["results_count"] >= 1, status
    assert any(t["phase"] == "retrieving" for t in stream.of("assistant.thinking", start))
    assert "fresh_helper.py" in request_text(llm, 1)


async def test_an_approval_given_in_the_panel_clears_the_streams_request(session, llm, app_py, state):
    stream, _, sid = await session()
    llm.enqueue(Reply([call("call_x", "write_file", path="app.py", content=NEW)]), Reply.text("Done."))
    start = await stream.user_message("Change it")
    await stream.wait_for("tool.request_approval", start=start)
    engine = state.manager.engine_for(state.manager.default)
    assert engine.approve(sid, "call_x")  # the same chat, answered from another door
    await stream.final(start)
    assert stream.of("session.state", start)[-1]["state"]["pending_approvals"] == []
    assert app_py.read_text() == NEW
    mark = stream.mark
    await stream.approve("req_call_x", "file")  # too late: nothing waits any more
    await stream.error("NOT_FOUND", mark)


async def test_an_image_attachment_reaches_the_model_and_image_contents_go_out(session, llm):
    import base64
    import io

    from PIL import Image

    from eca_notebook.server._stream_events import SessionBook

    out = io.BytesIO()
    Image.new("RGB", (30, 20), "red").save(out, "PNG")
    data = base64.b64encode(out.getvalue()).decode()
    stream, _, _ = await session()
    llm.enqueue(Reply([Text("A red box."), Usage(10, 3)]))
    start = stream.mark
    await stream.send({"type": "client.user_message", "message": "what is this?",
                       "images": [{"media_type": "image/png", "data": data, "name": "shot.png"}]})
    final = await stream.final(start)
    assert final["message"] == "A red box."
    parts = [p for item in llm.requests[0].body["input"] if isinstance(item.get("content"), list)
             for p in item["content"]]
    assert [p["image_url"] for p in parts if p["type"] == "input_image"] == [f"data:image/png;base64,{data}"]
    assert stream.of("assistant.image", start) == []  # the user's own image is on the client's screen already

    book = SessionBook([])
    [message], _, _ = book.translate("assistant", {"type": "image", "mediaType": "image/png", "base64": data})
    assert message.type == "assistant.image" and message.media_type == "image/png" and message.data == data
    assert book.translate("user", {"type": "image", "mediaType": "image/png", "base64": data})[0] == []
