"""Every REST route: status codes, bodies (validated against the documented schemas), validation errors."""

from __future__ import annotations

import json

import pytest

from eca_notebook.engine.config import load_config
from eca_notebook.server import _schemas as s
from eca_notebook.testing.llm_server import Reply, Text, ToolCall
from tests._waiting import until

from .conftest import MODEL


def check(model, body):
    """The body matches its documented schema (and is returned for further checks)."""
    model.model_validate(body)
    return body


def assert_error(status: int, body, expected: int, *, loc=None, message: str | None = None) -> None:
    assert status == expected, body
    check(s.ApiError, body)
    assert body["status"] == expected
    if loc is not None:
        assert loc in [d["loc"] for d in body["details"]], body
    if message is not None:
        assert message in body["message"], body


# -- health and workspaces ---------------------------------------------------------------------------------------


async def test_health(api, connect, workspace):
    status, body = await api("GET", "health")
    assert status == 200
    assert check(s.Health, body) == {"status": "ok", "version": "0.1.0", "workspaces": 1, "engines": 0,
                                     "connections": 0}
    sock = await connect()
    await sock.initialize()
    _, body = await api("GET", "health")
    assert (body["engines"], body["connections"]) == (1, 1)


async def test_workspaces_list_register_get(api, workspace):
    (workspace / "sub" / "deeper").mkdir(parents=True)
    status, body = await api("GET", "workspaces")
    assert status == 200
    [root] = check(s.WorkspaceList, body)["workspaces"]
    assert root["path"] == "" and root["default"] is True and root["engine"] == "stopped" and root["folders"] == [""]

    status, created = await api("POST", "workspaces", "register", body={"path": "sub/deeper"})
    assert status == 201, created
    check(s.WorkspaceInfo, created)
    assert created["path"] == "sub/deeper" and created["name"] == "deeper" and created["engine"] == "running"
    assert created["default"] is False
    status, again = await api("POST", "workspaces", "register", body={"path": "sub/../sub/deeper/", "start": False})
    assert status == 200 and again["id"] == created["id"]

    status, got = await api("GET", "workspaces", created["id"])
    assert status == 200 and got == created
    _, body = await api("GET", "workspaces")
    assert [w["path"] for w in body["workspaces"]] == ["", "sub/deeper"]

    status, lazy = await api("POST", "workspaces", "register", body={"path": "sub", "start": False})
    assert status == 201 and lazy["engine"] == "stopped"


@pytest.mark.parametrize(
    "body, loc",
    [
        ({"path": "../outside"}, ["path"]),
        ({"path": "missing"}, ["path"]),
        ({"path": "README.md"}, ["path"]),
        ({"path": 5}, ["path"]),
        ({"path": 7, "extra": 1}, ["path"]),
        ({"start": "maybe"}, ["start"]),
    ],
)
async def test_register_refuses_bad_bodies(api, workspace, body, loc):
    status, error = await api("POST", "workspaces", "register", body=body)
    assert_error(status, error, 400, loc=loc)


async def test_malformed_json_bodies_are_400(api, workspace):
    status, error = await api("POST", "workspaces", "register", raw=b"{not json")
    assert_error(status, error, 400, message="not valid JSON")
    status, error = await api("POST", "workspaces", "register", raw=b"[1, 2]")
    assert_error(status, error, 400, message="JSON object")


async def test_unknown_workspace_is_404(api, workspace):
    for path in (("workspaces", "0123456789abcdef"), ("workspaces", "0123456789abcdef", "policy"),
                 ("workspaces", "0123456789abcdef", "index", "status")):
        status, error = await api("GET", *path)
        assert_error(status, error, 404, message="unknown workspace")
    status, error = await api("GET", "sessions", params={"workspace_id": "nope"})
    assert_error(status, error, 404)
    status, error = await api("GET", "models", params={"workspace_id": "nope"})
    assert_error(status, error, 404)


async def test_wrong_methods_are_405(api, workspace, state):
    wid = state.manager.default.id
    for method, path in (("POST", ("health",)), ("DELETE", ("workspaces",)), ("GET", ("workspaces", "register")),
                         ("GET", ("workspaces", wid, "index", "rebuild")),
                         ("POST", ("workspaces", wid, "index", "status")), ("PUT", ("sessions",))):
        status, error = await api(method, *path)
        assert status == 405, (method, path, error)


# -- approval policy ---------------------------------------------------------------------------------------------

NEW_POLICY = {
    "byDefault": "allow",
    "allow": {"eca__read_file": {}},
    "ask": {"eca__shell_command": {"argsMatchers": {"command": ["git .*"]}}},
    "deny": {"eca__shell_command": {"argsMatchers": {"command": ["rm .*"]}}},
}


def normal(approval: dict) -> dict:
    """A policy in its normal form (every rule with its argsMatchers), extra keys dropped."""
    return s.ApprovalPolicy.model_validate({k: approval[k] for k in NEW_POLICY}).model_dump()


async def test_policy_get_and_put_updates_the_engine_and_the_config_file(api, connect, llm, workspace, state):
    config = workspace / ".eca" / "config.json"
    config.parent.mkdir()
    config.write_text('// the user\'s own settings\n{"welcomeMessage": "hi", "toolCall": {"maxRounds": 7}}\n')
    wid = state.manager.default.id

    status, body = await api("GET", "workspaces", wid, "policy")
    assert status == 200
    check(s.Policy, body)
    assert body["config_file"] == ".eca/config.json" and "persisted" not in body
    assert body["approval"]["byDefault"] == "ask" and "eca__grep" in body["approval"]["allow"]

    sock = await connect()
    await sock.initialize()
    mark = len(sock.messages)
    status, body = await api("PUT", "workspaces", wid, "policy", body={"approval": NEW_POLICY})
    assert status == 200, body
    assert body["persisted"] is True
    assert normal(body["approval"]) == normal(NEW_POLICY)
    await sock.wait_for("tool/serverUpdated", start=mark)  # connected clients hear about it

    saved = json.loads(config.read_text())
    assert saved["welcomeMessage"] == "hi" and saved["toolCall"]["maxRounds"] == 7  # merged, not overwritten
    assert saved["toolCall"]["approval"]["allow"]["eca__grep"] is None  # a default rule, removed explicitly
    reloaded = load_config(workspace_folders=[workspace]).config.tool_call.approval
    assert normal(reloaded.model_dump(by_alias=True, mode="json")) == normal(NEW_POLICY)

    # the running engine applies it: with byDefault allow, a write runs without asking
    llm.enqueue(Reply([ToolCall("call_1", "eca__write_file", json.dumps({"path": "made.txt", "content": "x"}))]),
                Reply([Text("written")]))
    result = await sock.request("chat/prompt", {"message": "write it", "model": MODEL})
    await sock.wait_idle(result["chatId"])
    run = [c for _, c in sock.contents(result["chatId"]) if c["type"] == "toolCallRun"]
    assert run and run[0]["manualApproval"] is False
    assert (workspace / "made.txt").read_text() == "x"

    status, body = await api("GET", "workspaces", wid, "policy")
    assert normal(body["approval"]) == normal(NEW_POLICY)


@pytest.mark.parametrize(
    "body, loc",
    [
        ({}, ["approval"]),
        ({"approval": {"byDefault": "maybe"}}, ["approval", "byDefault"]),
        ({"approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": ["(unclosed"]}}}}},
         ["approval", "deny", "eca__shell_command", "argsMatchers"]),
        ({"approval": {"allow": {"eca__grep": {"argMatchers": {}}}}},
         ["approval", "allow", "eca__grep", "argMatchers"]),
        ({"approval": {"dney": {}}, "other": True}, ["approval", "dney"]),  # ("other" ignored; the policy strict)
    ],
)
async def test_policy_put_validates(api, workspace, state, body, loc):
    status, error = await api("PUT", "workspaces", state.manager.default.id, "policy", body=body)
    assert_error(status, error, 400, loc=loc)
    assert not (workspace / ".eca").exists()


async def test_policy_put_never_overwrites_a_broken_config_file(api, workspace, state):
    config = workspace / ".eca" / "config.json"
    config.parent.mkdir()
    config.write_text("{ this is not json")
    status, error = await api("PUT", "workspaces", state.manager.default.id, "policy", body={"approval": NEW_POLICY})
    assert_error(status, error, 409, message="not valid JSON")
    assert config.read_text() == "{ this is not json"
    _, body = await api("GET", "workspaces", state.manager.default.id, "policy")
    assert body["approval"]["byDefault"] == "ask"  # not applied either


async def test_with_pure_config_nothing_is_written_but_the_engine_follows(api, workspace, state, monkeypatch):
    monkeypatch.setenv("ECA_CONFIG", json.dumps({"pureConfig": True, "localModel": False, "defaultModel": MODEL}))
    wid = state.manager.default.id
    status, body = await api("PUT", "workspaces", wid, "policy", body={"approval": NEW_POLICY})
    assert status == 200 and body["persisted"] is False
    assert not (workspace / ".eca").exists()
    _, body = await api("GET", "workspaces", wid, "policy")
    assert normal(body["approval"]) == normal(NEW_POLICY)
    # no chat store either: a session created empty is still listed
    _, created = await api("POST", "sessions", body={"title": "ephemeral"})
    _, listed = await api("GET", "sessions")
    assert [x["id"] for x in listed["sessions"]] == [created["id"]]


# -- index -------------------------------------------------------------------------------------------------------


async def test_index_status_rebuild_refresh_incremental(api, workspace, state):
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("a = 1\n")
    wid = state.manager.default.id

    status, body = await api("GET", "workspaces", wid, "index", "status")
    assert status == 200
    check(s.IndexStatus, body)
    assert body["workspace_id"] == wid

    status, body = await api("POST", "workspaces", wid, "index", "rebuild")
    assert status == 200
    check(s.IndexResult, body)
    assert body["state"] == "ready" and body["files"] == 2 and body["dirs"] >= 1 and body["built_at"]

    (workspace / "src" / "b.py").write_text("b = 2\n")
    status, body = await api("POST", "workspaces", wid, "index", "refresh")
    assert status == 200 and body["changed"] == 1 and body["files"] == 3

    (workspace / "src" / "c.py").write_text("c = 3\n")
    (workspace / "src" / "a.py").unlink()
    changes = [{"type": "created", "file_path": "src/c.py"}, {"type": "deleted", "file_path": "src/a.py"},
               {"type": "modified", "file_path": str(workspace / "src" / "b.py"), "content_hash": "sha256:00"}]
    status, body = await api("POST", "workspaces", wid, "index", "incremental", body={"changes": changes})
    assert status == 200, body
    assert body["accepted"] == 3 and body["changed"] == 2 and body["files"] == 3


@pytest.mark.parametrize(
    "body, loc",
    [
        ({"changes": [{"type": "created", "file_path": "../elsewhere.txt"}]}, ["changes", 0, "file_path"]),
        ({"changes": [{"type": "created", "file_path": "/etc/passwd"}]}, ["changes", 0, "file_path"]),
        ({"changes": [{"type": "renamed", "file_path": "x"}]}, ["changes", 0, "type"]),
        ({"changes": [{"type": "created"}]}, ["changes", 0, "file_path"]),
        ({}, ["changes"]),
    ],
)
async def test_index_incremental_validates(api, workspace, state, body, loc):
    status, error = await api("POST", "workspaces", state.manager.default.id, "index", "incremental", body=body)
    assert_error(status, error, 400, loc=loc)


# -- sessions ----------------------------------------------------------------------------------------------------


async def test_sessions_create_list_get_delete(api, connect, llm, workspace, state):
    sock = await connect()
    await sock.initialize()
    status, empty = await api("POST", "sessions", body={})
    assert status == 201, empty
    check(s.Session, empty)
    assert empty["status"] == "idle" and empty["workspace_id"] == state.manager.default.id
    await sock.wait_for("chat/opened", lambda p: p["chatId"] == empty["id"])  # the panel hears about it

    llm.enqueue(Reply([Text("hello "), Text("there")]))
    status, started = await api("POST", "sessions", body={"session_id": "s-1", "message": "hi", "title": "Greeting",
                                                          "model": MODEL})
    assert status == 201, started
    assert started["id"] == "s-1" and started["prompt_status"] == "prompting" and started["title"] == "Greeting"
    await sock.wait_idle("s-1")  # it streamed to the WebSocket

    status, listed = await api("GET", "sessions")
    assert status == 200
    check(s.SessionList, listed)
    assert {x["id"] for x in listed["sessions"]} == {"s-1", empty["id"]}

    status, detail = await api("GET", "sessions", "s-1")
    assert status == 200
    check(s.SessionDetail, detail)
    assert detail["title"] == "Greeting" and detail["status"] == "idle" and detail["model"] == MODEL
    history = [(h["role"], h["content"]) for h in detail["history"]]
    assert ("user", "hi\n") in [(role, c.get("text")) for role, c in history]
    assert ("assistant", {"type": "text", "text": "hello there"}) in history
    status, same = await api("GET", "sessions", "s-1", params={"workspace_id": state.manager.default.id})
    assert status == 200 and same["history"] == detail["history"]

    status, conflict = await api("POST", "sessions", body={"session_id": "s-1"})
    assert_error(status, conflict, 409)

    status, _ = await api("DELETE", "sessions", "s-1")
    assert status == 204
    await sock.wait_for("chat/deleted", lambda p: p["chatId"] == "s-1")
    status, error = await api("GET", "sessions", "s-1")
    assert_error(status, error, 404, message="unknown session")
    status, error = await api("DELETE", "sessions", "s-1")
    assert_error(status, error, 404)


async def test_sessions_of_another_workspace(api, llm, workspace):
    (workspace / "other").mkdir()
    _, ws = await api("POST", "workspaces", "register", body={"path": "other"})
    status, created = await api("POST", "sessions", body={"workspace_id": ws["id"], "title": "Over there"})
    assert status == 201 and created["workspace_id"] == ws["id"]
    _, root_list = await api("GET", "sessions")
    assert root_list["sessions"] == []
    _, other_list = await api("GET", "sessions", params={"workspace_id": ws["id"]})
    assert [x["title"] for x in other_list["sessions"]] == ["Over there"]
    status, found = await api("GET", "sessions", created["id"])  # found without naming the workspace
    assert status == 200 and found["workspace_id"] == ws["id"]


@pytest.mark.parametrize(
    "body, loc",
    [
        ({"session_id": "has space"}, ["session_id"]),
        ({"session_id": "x" * 257}, ["session_id"]),
        ({"message": ""}, ["message"]),
        ({"message": 3}, ["message"]),
        ({"model": "nobody/nothing", "message": "hi"}, ["model"]),
        ({"behavior": "sleepy"}, ["behavior"]),
        ({"prompt": "hi", "title": 5}, ["title"]),  # (an unknown field is ignored, a known one validated)
    ],
)
async def test_session_create_validates(api, workspace, body, loc):
    status, error = await api("POST", "sessions", body=body)
    assert_error(status, error, 400, loc=loc)
    _, listed = await api("GET", "sessions")
    assert listed["sessions"] == []


async def test_unknown_workspace_in_a_session_body_is_404(api, workspace):
    status, error = await api("POST", "sessions", body={"workspace_id": "0000000000000000"})
    assert_error(status, error, 404)


# -- models ------------------------------------------------------------------------------------------------------


async def test_models_list_current_and_select(api, connect, workspace):
    status, body = await api("GET", "models")
    assert status == 200
    check(s.ModelList, body)
    ids = [m["id"] for m in body["models"]]
    assert MODEL in ids and body["default"] == MODEL and body["current"] == MODEL
    gpt41 = next(m for m in body["models"] if m["id"] == MODEL)
    assert gpt41["provider"] == "openai" and gpt41["name"] == "gpt-4.1"
    assert all("key" not in json.dumps(m).lower() for m in body["models"])

    status, current = await api("GET", "models", "current")
    assert status == 200
    assert check(s.CurrentModel, current)["model"] == MODEL and current["behavior"] == "code"
    assert current["behaviors"] == ["code", "plan"]

    sock = await connect()
    await sock.initialize()
    mark = len(sock.messages)
    status, changed = await api("PUT", "models", "current", body={"model": "openai/o4-mini", "behavior": "plan"})
    assert status == 200, changed
    assert (changed["model"], changed["behavior"], changed["default"]) == ("openai/o4-mini", "plan", MODEL)
    update = await sock.wait_for("config/updated", start=mark)
    assert update["chat"]["selectModel"] == "openai/o4-mini" and update["chat"]["selectBehavior"] == "plan"
    _, current = await api("GET", "models", "current")
    assert current["model"] == "openai/o4-mini"

    status, only_behavior = await api("PUT", "models", "current", body={"behavior": "agent"})  # the deprecated id
    assert status == 200 and only_behavior["model"] == "openai/o4-mini" and only_behavior["behavior"] == "code"


@pytest.mark.parametrize(
    "body, loc",
    [
        ({}, []),
        ({"model": "nobody/nothing"}, ["model"]),
        ({"behavior": "sleepy"}, ["behavior"]),
        ({"model": ""}, ["model"]),
        ({"model": 5, "provider": "openai"}, ["model"]),  # (an unknown field is ignored, a known one validated)
    ],
)
async def test_select_model_validates(api, workspace, body, loc):
    status, error = await api("PUT", "models", "current", body=body)
    assert_error(status, error, 400, loc=loc)
    _, current = await api("GET", "models", "current")
    assert current["model"] == MODEL and current["behavior"] == "code"


def test_schemas_ignore_unknown_fields_but_not_in_the_policy():
    # a tolerant reader: a newer client's extra field is ignored, a known field still validated …
    assert s.RegisterWorkspace.model_validate({"path": "", "nope": 1}).model_dump(exclude_unset=True) == {"path": ""}
    with pytest.raises(ValueError):
        s.RegisterWorkspace.model_validate({"path": 7, "nope": 1})
    # … except in the approval policy, where a misspelt key ignored would leave a tool allowed
    with pytest.raises(ValueError):
        s.ApprovalPolicy.model_validate({"dney": {"eca__shell_command": {}}})
    with pytest.raises(ValueError):
        s.ApprovalRule.model_validate({"argsMatcher": {"command": ["rm"]}})
    assert s.ApprovalPolicy().model_dump() == {"byDefault": "ask", "allow": {}, "ask": {}, "deny": {}, "risk": {}}


async def test_answers_never_carry_a_secret(api, llm, workspace):
    # a title, a prompt and a model answer that all contain the configured key: every REST answer shows it redacted
    from .conftest import SECRET

    llm.enqueue(Reply([Text(f"echo {SECRET}")]))
    status, started = await api("POST", "sessions", body={"session_id": "s-key", "message": f"use {SECRET}",
                                                          "title": f"key {SECRET}", "model": MODEL})
    assert status == 201, started
    assert started["title"] == "key ***"

    async def idle() -> bool:
        return (await api("GET", "sessions", "s-key"))[1]["status"] == "idle"

    await until(idle)
    answers = [await api("GET", "sessions"), await api("GET", "sessions", "s-key"), await api("GET", "workspaces")]
    assert all(status == 200 for status, _ in answers)
    text = json.dumps([body for _, body in answers])
    assert SECRET not in text and "echo ***" in text
