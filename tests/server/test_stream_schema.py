"""The session stream's message models: every example of http-websocket-api.md parses; bad messages fail with
problems a client can act on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.server import _stream_schema as schema

SPEC = Path(__file__).resolve().parents[3] / "shared" / "specs" / "http-websocket-api.md"
# Every "type" the spec's examples name (http-websocket-api.md, 20 messages), copied here so the test runs where the
# spec is not next to the project (CI's clean clone); when it is, the copy is checked against it.
SPEC_TYPES = {
    "agent.plan", "agent.retrieve.status", "assistant.message_final", "assistant.thinking", "assistant.token",
    "client.approval_response", "client.cancel", "client.command_result", "client.context_update",
    "client.file_changes", "client.hello", "client.patch_apply_result", "client.user_message",
    "command.request_approval", "patch.proposed", "server.error", "server.hello", "session.state", "tool.execute",
    "tool.request_approval",
}

CLIENT_EXAMPLES: list[dict[str, Any]] = [
    {"type": "client.hello", "client_info": {"name": "vscode-extension", "version": "0.1.0",
                                             "capabilities": ["diff_preview", "terminal_exec", "git_integration"]}},
    {"type": "client.user_message", "message": "Fix the authentication bug", "context": {
        "active_editor": {"file_path": "src/auth/login.ts", "language": "typescript",
                          "selection": {"start": {"line": 23, "character": 0}, "end": {"line": 45, "character": 12}},
                          "visible_range": {"start": 1, "end": 100}, "content_hash": "sha256:abc123..."},
        "open_editors": [{"file_path": "src/auth/session.ts", "is_dirty": False, "visible": True}],
        "diagnostics": [{"file_path": "src/auth/login.ts", "severity": "error",
                         "message": "Property 'password' is used before being defined", "line": 23, "character": 15,
                         "source": "typescript"}],
        "terminal_output": {"command": "npm test", "exit_code": 1, "stdout": "FAIL src/auth/login.test.ts...",
                            "stderr": "", "timestamp": "2025-12-30T10:30:45Z"},
        "git_context": {"branch": "feature/auth-fix", "staged_files": [],
                        "modified_files": ["src/auth/login.ts", "src/auth/session.ts"],
                        "recent_commits": [{"sha": "abc123", "message": "Add password validation", "author": "Kevin",
                                            "timestamp": "2025-12-30T09:15:00Z"}]},
        "mentions": [{"type": "file", "path": "src/utils/validator.ts"},
                     {"type": "symbol", "name": "validatePassword", "file_path": "src/utils/validator.ts",
                      "line": 12}],
        "command": "/fix"}},
    {"type": "client.context_update", "updates": {"diagnostics": [], "terminal_output": {"stdout": "x"}}},
    {"type": "client.approval_response", "request_id": "req_abc123", "approved": True, "scope": "file",
     "file_path": "src/auth/login.ts"},
    {"type": "client.approval_response", "request_id": "req_abc123", "approved": True, "scope": "hunk",
     "file_path": "src/auth/login.ts", "hunks": ["h1", "h3"]},
    {"type": "client.approval_response", "request_id": "req_abc123", "approved": False, "scope": "all"},
    {"type": "client.patch_apply_result", "patch_id": "patch_abc123", "file_path": "src/auth/login.ts",
     "success": True, "error": None, "applied_hash": "sha256:def456..."},
    {"type": "client.patch_apply_result", "patch_id": "patch_abc123", "file_path": "src/auth/login.ts",
     "success": False, "error": {"message": "changed on disk", "type": "conflict"}, "applied_hash": None},
    {"type": "client.command_result", "command_id": "cmd_abc123", "command": "npm test", "exit_code": 0,
     "stdout": "...", "stderr": "...", "duration_ms": 2340},
    {"type": "client.cancel", "reason": "user_cancelled"},
    {"type": "client.file_changes", "changes": [{"type": "created", "file_path": "src/utils/new_helper.ts",
                                                 "content_hash": "sha256:abc123...",
                                                 "timestamp": "2025-12-30T10:35:12Z"}]},
]


@pytest.mark.parametrize("example", CLIENT_EXAMPLES, ids=lambda e: e["type"])
def test_every_client_example_parses(example: dict[str, Any]) -> None:
    message = schema.parse_client_message(example)
    assert type(message) is schema.CLIENT_MESSAGES[example["type"]]
    assert message.model_dump(exclude_unset=True) == example


def test_the_spec_names_exactly_these_message_types() -> None:
    named = SPEC_TYPES
    if SPEC.exists():
        assert set(re.findall(r'"type": "((?:client|server|assistant|agent|tool|patch|command|session)\.[a-z_.]+)"',
                              SPEC.read_text())) == SPEC_TYPES
    server = {m.model_fields["type"].default for m in (
        schema.ServerHello, schema.AssistantThinking, schema.AgentPlan, schema.AgentRetrieveStatus,
        schema.ToolExecute, schema.PatchProposed, schema.ToolRequestApproval, schema.CommandRequestApproval,
        schema.AssistantToken, schema.AssistantMessageFinal, schema.ServerError, schema.SessionState)}
    assert named == set(schema.CLIENT_MESSAGES) | server


SERVER_EXAMPLES = [
    schema.AssistantThinking(phase="analyzing", message="Analyzing authentication flow..."),
    schema.AgentPlan(steps=[schema.PlanStep(step_number=1, description="Add input validation",
                                            files_involved=["src/auth/login.ts"])], rationale="security"),
    schema.AgentRetrieveStatus(stage="symbol_search", results_count=12, message="Found 12 relevant symbols"),
    schema.ToolExecute(tool_name="read_file", args={"file_path": "src/auth/login.ts"}, status="started", result=None),
    schema.PatchProposed(patch_id="patch_abc123", file_path="src/auth/login.ts", diff="--- a/x\n+++ b/x\n",
                         rationale=None, acceptance_criteria=[], requires_approval=True,
                         hunks=[schema.Hunk(old_start=23, old_lines=5, new_start=23, new_lines=8, content="...",
                                            id="h1")]),
    schema.CommandRequestApproval(command_id="cmd_abc123", command="npm test", working_directory="/workspace/path",
                                  environment={"NODE_ENV": "test"}, requires_approval=True, reason="Verify"),
    schema.ServerError(error=schema.ErrorBody(code="MODEL_ERROR", message="m", details={}, recoverable=True)),
]


@pytest.mark.parametrize("message", SERVER_EXAMPLES, ids=lambda m: m.type)
def test_server_messages_keep_the_spec_shape(message: Any) -> None:
    wire = schema.wire(message)
    assert type(message).model_validate(wire) == message
    assert wire["type"] == message.type and None not in wire  # null fields are present, as the spec shows them
    if message.type == "patch.proposed":
        assert wire["rationale"] is None and wire["acceptance_criteria"] == []


def test_unknown_fields_are_ignored_known_ones_validated() -> None:
    """A tolerant reader: a newer client's extra fields (at any depth) are dropped, never echoed or refused."""
    hello = schema.parse_client_message({"type": "client.hello", "v": 2, "client_info": {"name": "x", "secret": "s"}})
    assert isinstance(hello, schema.ClientHello) and hello.client_info.name == "x"
    assert "secret" not in hello.client_info.model_dump() and "v" not in hello.model_dump()
    with pytest.raises(schema.MessageError):
        schema.parse_client_message({"type": "client.hello", "v": 2, "client_info": {"name": ["x"]}})


@pytest.mark.parametrize(("data", "code", "where"), [
    ([1, 2], "INVALID_MESSAGE", None),
    ({"message": "no type"}, "INVALID_MESSAGE", ("type",)),
    ({"type": 3}, "INVALID_MESSAGE", ("type",)),
    ({"type": "client.bogus"}, "UNKNOWN_MESSAGE_TYPE", None),
    ({"type": "client.hello"}, "INVALID_MESSAGE", ("client_info",)),
    ({"type": "client.hello", "client_info": {"name": 7, "secret": "sk-1"}}, "INVALID_MESSAGE",
     ("client_info", "name")),
    ({"type": "client.user_message"}, "INVALID_MESSAGE", ("message",)),
    ({"type": "client.user_message", "message": "m", "context": {"mentions": [{"type": "url", "path": "x"}]}},
     "INVALID_MESSAGE", ("context", "mentions", 0)),
    ({"type": "client.user_message", "message": "m", "context": {"command": "fix"}}, "INVALID_MESSAGE",
     ("context", "command")),
    ({"type": "client.approval_response", "request_id": "r", "approved": True, "scope": "line"}, "INVALID_MESSAGE",
     ("scope",)),
    ({"type": "client.command_result", "command_id": "c", "exit_code": "zero"}, "INVALID_MESSAGE",
     ("exit_code",)),
    ({"type": "client.file_changes", "changes": [{"type": "renamed", "file_path": "a"}]}, "INVALID_MESSAGE",
     ("changes", 0, "type")),
    ({"type": "client.active_editor", "file_path": ""}, "UNKNOWN_MESSAGE_TYPE", None),
])
def test_bad_messages_fail_with_useful_errors(data: Any, code: str, where: tuple[Any, ...] | None) -> None:
    with pytest.raises(schema.MessageError) as info:
        schema.parse_client_message(data)
    assert info.value.code == code
    if where is not None:
        locs = [tuple(d["loc"]) for d in info.value.details]
        assert any(loc[: len(where)] == where for loc in locs), locs
        assert all("input" not in d for d in info.value.details)  # a message may carry a secret: never echoed
        assert "sk-1" not in str(info.value.details)
    if code == "UNKNOWN_MESSAGE_TYPE":
        assert "client.hello" in info.value.details["known"]
