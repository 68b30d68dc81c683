from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from eca_notebook.protocol import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    METHODS,
    ChatDeleteParams,
    ChatDeleteResult,
    ChatPromptResult,
    InitializeResult,
    McpServerUpdatedParams,
    RpcError,
    client_to_server,
    invalid_params,
    parse_params,
    parse_result,
    server_to_client,
)

C2S, S2C = "client->server", "server->client"

# (direction, kind) of every method the brief and specs name; the table must match exactly.
EXPECTED: dict[str, tuple[str, str]] = {
    "initialize": (C2S, "request"),
    "initialized": (C2S, "notification"),
    "shutdown": (C2S, "request"),
    "exit": (C2S, "notification"),
    "chat/prompt": (C2S, "request"),
    "chat/contentReceived": (S2C, "notification"),
    "chat/toolCallApprove": (C2S, "notification"),
    "chat/toolCallReject": (C2S, "notification"),
    "chat/queryContext": (C2S, "request"),
    "chat/queryCommands": (C2S, "request"),
    "chat/queryFiles": (C2S, "request"),
    "chat/clear": (C2S, "request"),
    "chat/history": (C2S, "request"),
    "workspace/didChangeWorkspaceFolders": (C2S, "notification"),
    "chat/promptStop": (C2S, "notification"),
    "chat/delete": (C2S, "request"),
    "chat/update": (C2S, "request"),
    "chat/selectedBehaviorChanged": (C2S, "notification"),
    "chat/selectedAgentChanged": (C2S, "notification"),
    "chat/selectedModelChanged": (C2S, "notification"),
    "chat/list": (C2S, "request"),
    "chat/open": (C2S, "request"),
    "chat/opened": (S2C, "notification"),
    "chat/deleted": (S2C, "notification"),
    "chat/cleared": (S2C, "notification"),
    "chat/statusChanged": (S2C, "notification"),
    "chat/rollback": (C2S, "request"),
    "chat/fork": (C2S, "request"),
    "chat/toolCallUndo": (C2S, "request"),
    "editor/getDiagnostics": (S2C, "request"),
    "editor/getDefinition": (S2C, "request"),
    "editor/getReferences": (S2C, "request"),
    "chat/askQuestion": (S2C, "request"),
    "notebook/getCells": (S2C, "request"),
    "notebook/applyEdit": (S2C, "request"),
    "notebook/runCells": (S2C, "request"),
    "config/updated": (S2C, "notification"),
    "tool/serverUpdated": (S2C, "notification"),
    "mcp/stopServer": (C2S, "notification"),
    "mcp/startServer": (C2S, "notification"),
    "mcp/enableServer": (C2S, "notification"),
    "mcp/disableServer": (C2S, "notification"),
    "mcp/addServer": (C2S, "request"),
    "mcp/removeServer": (C2S, "request"),
    "mcp/updateServer": (C2S, "request"),
    "tool/serverRemoved": (S2C, "notification"),
    "$/showMessage": (S2C, "notification"),
    "$/progress": (S2C, "notification"),
    "$/cancelRequest": ("both", "notification"),
    "completion/inline": (C2S, "request"),
    "rewrite/prompt": (C2S, "request"),
    "rewrite/contentReceived": (S2C, "notification"),
    "rewrite/stop": (C2S, "notification"),
    "chat/promptSteer": (C2S, "notification"),
    "chat/promptSteerRemove": (C2S, "notification"),
    "jobs/list": (C2S, "request"),
    "jobs/kill": (C2S, "request"),
    "jobs/readOutput": (C2S, "request"),
    "jobs/updated": (S2C, "notification"),
}

NO_PARAMS = ["initialized", "shutdown", "exit", "jobs/list"]

# One valid wire payload per method that takes params (camelCase, as a peer sends it).
SAMPLES: dict[str, dict[str, Any]] = {
    "initialize": {"processId": 1, "capabilities": {}, "workspaceFolders": [{"uri": "file:///w", "name": "w"}]},
    "chat/prompt": {"chatId": "c", "message": "hi", "contexts": [{"type": "web", "url": "https://a"}]},
    "chat/contentReceived": {"chatId": "c", "role": "assistant", "content": {"type": "text", "text": "x"}},
    "chat/toolCallApprove": {"chatId": "c", "toolCallId": "t"},
    "chat/toolCallReject": {"chatId": "c", "toolCallId": "t"},
    "chat/queryContext": {"chatId": "c", "query": "a", "contexts": []},
    "chat/queryCommands": {"query": ""},
    "chat/queryFiles": {"chatId": "c", "query": "comp"},
    "chat/clear": {"chatId": "c", "messages": True},
    "chat/history": {"chatId": "c", "before": "MTIuYWJj", "limit": 50},
    "workspace/didChangeWorkspaceFolders": {"event": {"added": [{"uri": "file:///w2", "name": "w2"}], "removed": []}},
    "chat/promptStop": {"chatId": "c"},
    "chat/delete": {"chatId": "c"},
    "chat/update": {"chatId": "c", "trust": True},
    "chat/selectedBehaviorChanged": {"behavior": "plan"},
    "chat/selectedAgentChanged": {"agent": "reviewer", "chatId": "c"},
    "chat/selectedModelChanged": {"model": "m", "chatId": "c"},
    "chat/list": {"limit": 5, "sortBy": "updatedAt"},
    "chat/open": {"chatId": "c"},
    "chat/opened": {"chatId": "c", "title": "T"},
    "chat/deleted": {"chatId": "c"},
    "chat/cleared": {"chatId": "c", "messages": True},
    "chat/statusChanged": {"chatId": "c", "status": "running"},
    "chat/rollback": {"chatId": "c", "contentId": "k"},
    "chat/fork": {"chatId": "c", "contentId": "k"},
    "editor/getDiagnostics": {"uri": "file:///w/a.py"},
    "editor/getDefinition": {"uri": "file:///w/a.py", "position": {"line": 3, "character": 5}},
    "editor/getReferences": {"uri": "file:///w/a.py", "position": {"line": 3, "character": 5},
                             "includeDeclaration": False},
    "chat/askQuestion": {"chatId": "c", "question": "Which?", "options": [{"label": "A"}], "allowFreeform": False},
    "chat/toolCallUndo": {"chatId": "c", "toolCallId": "t1"},
    "notebook/getCells": {"path": "/w/a.ipynb"},
    "notebook/applyEdit": {"path": "/w/a.ipynb", "edits": [{"action": "replace", "cellId": "x", "source": "1"}]},
    "notebook/runCells": {"path": "/w/a.ipynb", "cellIds": ["x"], "timeoutMs": 1000},
    "config/updated": {"chat": {"models": ["m"]}},
    "tool/serverUpdated": {"type": "mcp", "name": "gh", "args": [], "status": "starting"},
    "mcp/stopServer": {"name": "gh"},
    "mcp/startServer": {"name": "gh"},
    "mcp/enableServer": {"name": "gh"},
    "mcp/disableServer": {"name": "gh"},
    "mcp/addServer": {"name": "gh", "command": "npx", "args": ["gh-mcp"], "scope": "workspace",
                      "workspaceUri": "file:///w"},
    "mcp/removeServer": {"name": "gh"},
    "mcp/updateServer": {"name": "gh", "url": "https://h/mcp"},
    "tool/serverRemoved": {"name": "gh"},
    "$/showMessage": {"type": "info", "message": "hello"},
    "$/progress": {"type": "start", "taskId": "t", "title": "Starting"},
    "$/cancelRequest": {"id": 4},
    "completion/inline": {"docText": "x = 1\n", "docVersion": 3, "position": {"line": 2, "character": 1}},
    "rewrite/prompt": {"id": "r1", "text": "x=1", "prompt": "spaces",
                       "range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 4}}},
    "rewrite/contentReceived": {"rewriteId": "r1", "content": {"type": "text", "text": "x = 1"}},
    "rewrite/stop": {"id": "r1"},
    "chat/promptSteer": {"chatId": "c", "message": "use pandas, not csv"},
    "chat/promptSteerRemove": {"chatId": "c"},
    "jobs/kill": {"jobId": "job-1"},
    "jobs/readOutput": {"jobId": "job-1"},
    "jobs/updated": {"jobs": [{"id": "job-1", "type": "shell", "status": "completed", "label": "python train.py",
                               "summary": "training", "startedAt": "2026-01-01T00:00:00+00:00", "elapsed": "5m2s",
                               "exitCode": 0, "chatId": "c", "chatLabel": "Train"}]},
}


def test_table_covers_exactly_the_expected_methods() -> None:
    assert set(METHODS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entry_direction_kind_and_models(name: str) -> None:
    spec = METHODS[name]
    assert spec.name == name
    assert (spec.direction, spec.kind) == EXPECTED[name]
    if name in NO_PARAMS:
        assert spec.params is None
    elif name != "tool/serverUpdated":  # the one union-typed params (checked through parse_params below)
        assert isinstance(spec.params, type) and issubclass(spec.params, BaseModel)
    if spec.kind == "notification":
        assert spec.result is None
    elif name != "shutdown":
        assert isinstance(spec.result, type) and issubclass(spec.result, BaseModel)
    else:
        assert spec.result is None


def test_every_method_with_params_has_a_sample() -> None:
    assert set(SAMPLES) == set(EXPECTED) - set(NO_PARAMS)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parse_params_round_trips_samples(name: str) -> None:
    parsed = parse_params(name, SAMPLES[name])
    assert isinstance(parsed, BaseModel)
    dumped = parsed.dump()  # type: ignore[attr-defined]
    for key, value in SAMPLES[name].items():
        assert dumped[key] == value


def test_tool_server_updated_is_discriminated() -> None:
    assert isinstance(parse_params("tool/serverUpdated", SAMPLES["tool/serverUpdated"]), McpServerUpdatedParams)
    native = parse_params("tool/serverUpdated", {"type": "native", "tools": []})
    assert native is not None and native.type == "native"  # type: ignore[attr-defined]


def test_direction_helpers() -> None:
    c2s = {s.name for s in client_to_server()}
    s2c = {s.name for s in server_to_client()}
    assert c2s == {n for n, (d, _) in EXPECTED.items() if d in (C2S, "both")}
    assert s2c == {n for n, (d, _) in EXPECTED.items() if d in (S2C, "both")}
    assert {s.name for s in server_to_client("request")} == {"editor/getDiagnostics", "editor/getDefinition",
                                                             "editor/getReferences", "notebook/getCells",
                                                             "notebook/applyEdit", "notebook/runCells",
                                                             "chat/askQuestion"}
    assert "chat/prompt" in {s.name for s in client_to_server("request")}
    assert "chat/prompt" not in {s.name for s in client_to_server("notification")}
    assert all(s.kind == "notification" for s in server_to_client("notification"))


@pytest.mark.parametrize("name", NO_PARAMS)
@pytest.mark.parametrize("raw", [None, {}, []])
def test_no_params_methods_accept_absent_null_empty(name: str, raw: object) -> None:
    assert parse_params(name, raw) is None


@pytest.mark.parametrize("name", NO_PARAMS)
def test_no_params_methods_reject_positional_values(name: str) -> None:
    with pytest.raises(ValidationError):
        parse_params(name, [1, 2])


@pytest.mark.parametrize(
    ("method", "params", "loc"),
    [
        ("chat/prompt", {"message": 42}, ("message",)),
        ("chat/prompt", {"message": "m", "chatId": ["x"]}, ("chatId",)),
        ("chat/toolCallApprove", {"chatId": "c", "toolCallId": 5}, ("toolCallId",)),
        ("initialize", {"processId": "x"}, ("processId",)),
        ("chat/list", {"limit": "many"}, ("limit",)),
        ("$/progress", {"type": "start"}, ("taskId",)),
    ],
)
def test_parse_params_reports_the_bad_field(method: str, params: dict, loc: tuple) -> None:
    with pytest.raises(ValidationError) as info:
        parse_params(method, params)
    assert loc in [err["loc"] for err in info.value.errors()]


@pytest.mark.parametrize("params", [[], ["c"], "chat", 5])
def test_list_or_scalar_params_are_errors_for_methods_with_params(params: object) -> None:
    with pytest.raises(ValidationError):
        parse_params("chat/delete", params)


def test_absent_params_mean_defaults_when_all_optional() -> None:
    assert parse_params("chat/delete", None) == ChatDeleteParams()
    with pytest.raises(ValidationError):
        parse_params("chat/prompt", None)


def test_unknown_method() -> None:
    with pytest.raises(RpcError) as info:
        parse_params("chat/doesNotExist", {})
    assert info.value.code == METHOD_NOT_FOUND


def test_parse_result() -> None:
    assert parse_result("shutdown", None) is None
    assert parse_result("initialize", {}) == InitializeResult()
    assert parse_result("chat/delete", None) == ChatDeleteResult()
    result = parse_result("chat/prompt", {"chatId": "c", "status": "prompting"})
    assert isinstance(result, ChatPromptResult) and result.status == "prompting"
    with pytest.raises(ValidationError):
        parse_result("chat/prompt", {"status": "prompting"})


def test_invalid_params_error_names_field_but_not_input() -> None:
    secret = "sk-very-secret-key"
    with pytest.raises(ValidationError) as info:
        parse_params("initialize", {"processId": secret, "initializationOptions": {"key": secret}})
    err = invalid_params(info.value, "initialize")
    assert err.code == INVALID_PARAMS
    assert "processId" in err.message
    assert err.data == {"errors": [{"loc": ["processId"], "msg": err.data["errors"][0]["msg"], "type": "int_parsing"}]}
    assert secret not in repr(err.to_dict())
