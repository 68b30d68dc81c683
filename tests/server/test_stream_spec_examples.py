"""The session stream answering the example messages of ``http-websocket-api.md`` exactly as the spec writes them
(copied verbatim, the spec's ``//`` comments left out): ``client.hello``, ``client.user_message`` with ``/fix`` on
an attached selection, and the tolerant reader — unknown fields ignored, known fields still validated."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._stream_client import Stream, connect

pytestmark = pytest.mark.timeout(300)

#: ``client.hello`` of the spec ("Initial handshake"), verbatim.
SPEC_HELLO: dict[str, Any] = {
    "type": "client.hello",
    "client_info": {
        "name": "vscode-extension",
        "version": "0.1.0",
        "capabilities": ["diff_preview", "terminal_exec", "git_integration"]
    }
}

#: ``client.user_message`` of the spec ("User message with automatic context"), verbatim.
SPEC_USER_MESSAGE: dict[str, Any] = {
    "type": "client.user_message",
    "message": "Fix the authentication bug",
    "context": {
        "active_editor": {
            "file_path": "src/auth/login.ts",
            "language": "typescript",
            "selection": {
                "start": {"line": 23, "character": 0},
                "end": {"line": 45, "character": 12}
            },
            "visible_range": {
                "start": 1,
                "end": 100
            },
            "content_hash": "sha256:abc123..."
        },
        "open_editors": [
            {
                "file_path": "src/auth/session.ts",
                "is_dirty": False,
                "visible": True
            }
        ],
        "diagnostics": [
            {
                "file_path": "src/auth/login.ts",
                "severity": "error",
                "message": "Property 'password' is used before being defined",
                "line": 23,
                "character": 15,
                "source": "typescript"
            }
        ],
        "terminal_output": {
            "command": "npm test",
            "exit_code": 1,
            "stdout": "FAIL src/auth/login.test.ts...",
            "stderr": "",
            "timestamp": "2025-12-30T10:30:45Z"
        },
        "git_context": {
            "branch": "feature/auth-fix",
            "staged_files": [],
            "modified_files": ["src/auth/login.ts", "src/auth/session.ts"],
            "recent_commits": [
                {
                    "sha": "abc123",
                    "message": "Add password validation",
                    "author": "Kevin",
                    "timestamp": "2025-12-30T09:15:00Z"
                }
            ]
        },
        "mentions": [
            {
                "type": "file",
                "path": "src/utils/validator.ts"
            },
            {
                "type": "symbol",
                "name": "validatePassword",
                "file_path": "src/utils/validator.ts",
                "line": 12
            }
        ],
        "command": "/fix"
    }
}


@pytest.fixture
def auth_project(workspace: Path) -> Path:
    """The files the spec's example message names; ``login.ts`` has a marker on every line."""
    (workspace / "src" / "auth").mkdir(parents=True)
    (workspace / "src" / "utils").mkdir(parents=True)
    (workspace / "src" / "auth" / "login.ts").write_text("".join(f"const line{i} = {i}; // L{i}\n"
                                                                 for i in range(1, 61)))
    (workspace / "src" / "auth" / "session.ts").write_text("export const session = {};\n")
    (workspace / "src" / "utils" / "validator.ts").write_text(
        "".join(f"// v{i}\n" for i in range(1, 12)) + "export function validatePassword(p: string) {\n"
        "  return p.length > 8;\n}\n")
    return workspace


@pytest.fixture
async def open_stream(api, jp_http_port, jp_base_url, jp_auth_header):
    opened: list[Stream] = []

    async def start() -> Stream:
        status, created = await api("POST", "sessions", body={"title": "spec examples"})
        assert status == 201, created
        stream = await connect(jp_http_port, jp_base_url, created["id"], jp_auth_header)
        opened.append(stream)
        return stream

    yield start
    for stream in opened:
        await stream.close()


async def test_spec_hello_and_fix_on_the_selection(open_stream, llm, auth_project):
    stream = await open_stream()
    await stream.send(SPEC_HELLO)
    hello = await stream.wait_for("server.hello")
    # true to what is served: completion/inline and the built-in /refactor, the retrieval the model runs itself
    assert {"chat", "code_completion", "refactor"} <= set(hello["server_info"]["model"]["capabilities"])
    assert "multi_file_edit" in hello["server_info"]["capabilities"]
    assert hello["command_mode"] == "local_terminal"  # terminal_exec

    llm.enqueue(Reply.text("The password is read before it is defined; move the check below line 30."))
    start = stream.mark
    await stream.send(SPEC_USER_MESSAGE)
    final = await stream.final(start)
    assert final["metadata"]["success"] is True, final
    assert final["message"].startswith("The password is read")
    assert not stream.of("server.error", start)
    sent = json.dumps(llm.requests[0].body)
    assert "Unknown command" not in sent and "Unknown command" not in json.dumps(stream.of("assistant.token", start))
    # the fix prompt, with the user's words
    assert "Fix the bug in the attached code." in sent
    assert "The user's description of the problem: Fix the authentication bug" in sent
    # the selection (lines 23-45 of login.ts), not the rest of the file
    assert "// L23" in sent and "// L45" in sent and "// L50" not in sent
    # and what the /fix prompt tells the model to use: the diagnostics and the failing test run
    assert "Property 'password' is used before being defined" in sent
    assert "FAIL src/auth/login.test.ts" in sent and "npm test" in sent


async def test_a_newer_clients_extra_fields_are_ignored(open_stream, llm, auth_project):
    stream = await open_stream()
    hello = copy.deepcopy(SPEC_HELLO)
    hello["protocol_version"] = "2"  # one field more than the spec's example, at each level
    hello["client_info"]["platform"] = {"os": "linux"}
    await stream.send(hello)
    reply = await stream.wait_for("server.hello")
    assert reply["session_id"] and not stream.of("server.error")

    message = copy.deepcopy(SPEC_USER_MESSAGE)
    message["message_id"] = "m-1"
    message["context"]["active_editor"]["encoding"] = "utf-8"
    message["context"]["active_editor"]["selection"]["start"]["offset"] = 412
    message["context"]["mentions"][0]["range"] = {"start": 1}
    message["context"]["command"] = "/explain"
    message["message"] = ""
    llm.enqueue(Reply.text("It defines sixty constants."))
    start = stream.mark
    await stream.send(message)
    final = await stream.final(start)
    assert final["metadata"]["success"] is True and not stream.of("server.error", start)
    sent = json.dumps(llm.requests[0].body)
    assert "Explain the attached code." in sent and "// L23" in sent


async def test_known_fields_with_wrong_types_are_still_refused(open_stream, llm, auth_project):
    stream = await open_stream()
    bad_hello = {"type": "client.hello", "client_info": {"name": 5, "capabilities": "terminal_exec"},
                 "extra": True}
    mark = stream.mark
    await stream.send(bad_hello)
    error = await stream.error("INVALID_MESSAGE", mark)
    locs = {tuple(d["loc"]) for d in error["error"]["details"]}
    assert {("client_info", "name"), ("client_info", "capabilities")} <= locs, locs
    assert ("extra",) not in locs  # unknown: ignored, not an error
    assert error["error"]["recoverable"] is True and not stream.of("server.hello")

    await stream.send(SPEC_HELLO)  # the socket stayed open: the spec's hello still works
    await stream.wait_for("server.hello")
    message = copy.deepcopy(SPEC_USER_MESSAGE)
    message["context"]["active_editor"]["selection"]["start"]["line"] = "twenty-three"
    message["context"]["command"] = "fix"  # a command is "/name"
    mark = stream.mark
    await stream.send(message)
    error = await stream.error("INVALID_MESSAGE", mark)
    locs = {tuple(d["loc"]) for d in error["error"]["details"]}
    assert {("context", "active_editor", "selection", "start", "line"), ("context", "command")} <= locs, locs
    assert not llm.requests


async def test_delete_file_asked_approved_and_undone(open_stream, llm, auth_project, state):
    """The spec's ``delete_file`` approval: ``patch.proposed`` with the deletion diff, ``tool.request_approval``
    ``delete_file`` with its risk, approved with the spec's ``client.approval_response``; the file is gone and the
    result says so in the ``client.file_changes`` shape; undo puts it back."""
    target = auth_project / "src" / "auth" / "session.ts"
    stream = await open_stream()
    await stream.send(SPEC_HELLO)
    hello = await stream.wait_for("server.hello")
    assert "delete_file" in hello["capabilities"]
    llm.enqueue(Reply([ToolCall("call_d1", "eca__delete_file",
                                json.dumps({"path": "src/auth/session.ts", "rationale": "merged into login.ts"}))]),
                Reply.text("Removed session.ts."))
    start = stream.mark
    await stream.send({"type": "client.user_message", "message": "Delete the unused session module"})
    ask = await stream.wait_for("tool.request_approval", start=start)
    assert ask["tool_name"] == "delete_file" and ask["request_id"] == "req_call_d1"
    assert ask["args"]["file_path"] == "src/auth/session.ts" and ask["risk_level"] == "high"  # untracked
    patch = stream.of("patch.proposed", start)[-1]
    assert patch["file_path"] == "src/auth/session.ts" and "+++ /dev/null" in patch["diff"]
    assert "-export const session = {};" in patch["diff"] and patch["rationale"] == "merged into login.ts"
    assert target.exists()  # nothing deleted before the answer
    await stream.send({
        "type": "client.approval_response",
        "request_id": "req_call_d1",
        "approved": True,
        "scope": "file",
        "file_path": "src/auth/session.ts"
    })
    final = await stream.final(start)
    assert final["metadata"]["success"] is True and final["metadata"]["files_modified"] == 1
    assert not target.exists()
    done = [m for m in stream.of("tool.execute", start) if m["status"] == "completed"]
    assert done and "file_changes" in done[-1]["result"], stream.of("tool.execute", start)
    (change,) = done[-1]["result"]["file_changes"]
    assert change["type"] == "deleted" and change["file_path"] == "src/auth/session.ts" and change["timestamp"]
    state_message = stream.of("session.state", start)[-1]["state"]
    assert "patch_call_d1" in state_message["applied_patches"]

    engine = state.manager.engine_for(state.manager.default)
    undone = await engine.undo_tool_call(hello["session_id"], "call_d1")
    assert undone.undone is True, undone
    assert target.read_text() == "export const session = {};\n"


async def test_the_other_spec_examples_get_the_answers_the_contract_gives(open_stream, llm, auth_project):
    """The spec's remaining client examples as written (a union like ``"all" | "file" | "hunk"`` takes its first
    value): ids this session never issued are ``NOT_FOUND`` (the socket stays open); a cancel with nothing running
    and the file-watcher event are taken silently."""
    stream = await open_stream()
    await stream.send(SPEC_HELLO)
    await stream.wait_for("server.hello")
    for example, detail in [
        ({"type": "client.approval_response", "request_id": "req_abc123", "approved": True, "scope": "all",
          "file_path": "src/auth/login.ts"}, "request_id"),
        ({"type": "client.patch_apply_result", "patch_id": "patch_abc123", "file_path": "src/auth/login.ts",
          "success": True, "error": None, "applied_hash": "sha256:def456..."}, "patch_id"),
        ({"type": "client.command_result", "command_id": "cmd_abc123", "command": "npm test", "exit_code": 0,
          "stdout": "...", "stderr": "...", "duration_ms": 2340}, "command_id"),
    ]:
        mark = stream.mark
        await stream.send(example)
        error = await stream.error("NOT_FOUND", mark)
        assert detail in error["error"]["details"], error
    (auth_project / "src" / "utils" / "new_helper.ts").write_text("export const x = 1;\n")
    mark = stream.mark
    await stream.send({"type": "client.cancel", "reason": "user_cancelled"})
    await stream.send({"type": "client.file_changes", "changes": [{
        "type": "created", "file_path": "src/utils/new_helper.ts", "content_hash": "sha256:abc123...",
        "timestamp": "2025-12-30T10:35:12Z"}]})
    await stream.send({"type": "client.context_update", "updates": {"diagnostics": [], "terminal_output": {
        "command": "npm test", "exit_code": 0, "stdout": "PASS", "stderr": ""}}})
    llm.enqueue(Reply.text("Still here."))
    start = stream.mark
    await stream.send({"type": "client.user_message", "message": "ping"})
    assert (await stream.final(start))["message"] == "Still here."
    assert not stream.of("server.error", mark)
    assert "PASS" in json.dumps(llm.requests[0].body)  # the context update reached the next turn


async def test_the_other_values_of_the_spec_unions_as_written(open_stream, llm, auth_project):
    """The spec's examples with the other values its unions and comments allow: ``scope`` ``"file"`` and ``"hunk"``
    (``file_path`` given, as its comment says), ``error`` as ``{ "message": "...", "type": "conflict" }``, file
    changes ``"modified"`` and ``"deleted"``: the same answers (``NOT_FOUND`` for ids never issued, the watcher
    event taken silently), never a validation error."""
    stream = await open_stream()
    await stream.send(SPEC_HELLO)
    await stream.wait_for("server.hello")
    for example, detail in [
        ({"type": "client.approval_response", "request_id": "req_abc123", "approved": True, "scope": "file",
          "file_path": "src/auth/login.ts"}, "request_id"),
        ({"type": "client.approval_response", "request_id": "req_abc123", "approved": True, "scope": "hunk",
          "file_path": "src/auth/login.ts"}, "request_id"),
        ({"type": "client.patch_apply_result", "patch_id": "patch_abc123", "file_path": "src/auth/login.ts",
          "success": True, "error": {"message": "...", "type": "conflict"}, "applied_hash": "sha256:def456..."},
         "patch_id"),
    ]:
        mark = stream.mark
        await stream.send(example)
        error = await stream.error("NOT_FOUND", mark)
        assert detail in error["error"]["details"], error
    (auth_project / "src" / "utils" / "new_helper.ts").write_text("export const x = 1;\n")
    mark = stream.mark
    for change in ("modified", "deleted"):
        await stream.send({"type": "client.file_changes", "changes": [{
            "type": change, "file_path": "src/utils/new_helper.ts", "content_hash": "sha256:abc123...",
            "timestamp": "2025-12-30T10:35:12Z"}]})
    llm.enqueue(Reply.text("Still here."))
    start = stream.mark
    await stream.send({"type": "client.user_message", "message": "ping"})
    assert (await stream.final(start))["message"] == "Still here."
    assert not stream.of("server.error", mark)
