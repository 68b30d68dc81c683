"""Approval policies: callables (approve / reject / session), ApprovalRules, the default unattended policy, MANUAL.

The unit tests check the policies as functions; the others run real turns in which the scripted model calls real
tools, and check what happened on disk.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from eca_notebook.client import DEFAULT_UNATTENDED_POLICY, MANUAL, ApprovalRules, EcaClient
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall


def call(name: str, server: str = "eca", origin: str = "native", **extra: Any) -> dict[str, Any]:
    return {"type": "toolCallRun", "id": "c", "name": name, "server": server, "origin": origin, "arguments": {},
            "manualApproval": True, **extra}


def write(call_id: str, path: str, content: str = "hello\n") -> ToolCall:
    return ToolCall(call_id, "eca__write_file", json.dumps({"path": path, "content": content}))


def shell(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "eca__shell_command", json.dumps({"command": command}))


# -- the policies as functions ---------------------------------------------------------------------------------


def test_rules_match_bare_prefixed_server_and_glob_names():
    rules = ApprovalRules(allow=["read_file", "eca__grep", "github", "jira__get_*"], deny=["eca__shell_command"])
    assert rules(call("read_file")) is True
    assert rules(call("grep")) is True
    assert rules(call("create_issue", server="github", origin="mcp")) is True
    assert rules(call("get_ticket", server="jira", origin="mcp")) is True
    assert rules(call("delete_ticket", server="jira", origin="mcp")) is False
    assert rules(call("shell_command")) is False
    assert rules(call("write_file")) is False  # neither list: the default, reject


def test_rules_deny_wins_and_default_is_configurable():
    rules = ApprovalRules(allow=["eca__*"], deny=["write_file"], default="session")
    assert rules(call("write_file")) is False
    assert rules(call("edit_file")) is True
    assert rules(call("query", server="db", origin="mcp")) == "session"
    # a bare name only names native tools: an MCP tool called read_file is not allowed by "read_file"
    assert ApprovalRules(allow=["read_file"])(call("read_file", server="fs", origin="mcp")) is False
    assert ApprovalRules(default=lambda content: content["name"] == "x")(call("x")) is True


def test_default_unattended_policy_rejects_what_changes_or_runs():
    policy = DEFAULT_UNATTENDED_POLICY
    for name in ("write_file", "edit_file", "move_file", "shell_command", "run_python", "insert_cell",
                 "replace_cell", "read_file", "directory_tree", "grep"):
        assert policy(call(name)) is False, name
    assert policy(call("anything", server="github", origin="mcp")) is False
    assert policy(call("custom", details={"type": "fileChange", "path": "a", "diff": "", "linesAdded": 0,
                                          "linesRemoved": 0})) is False
    assert policy(call("list_variables")) is True
    assert policy(call("editor_diagnostics")) is True


# -- real turns --------------------------------------------------------------------------------------------------


async def test_callable_approve_runs_the_tool(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    asked: list[dict[str, Any]] = []

    def policy(content: dict[str, Any]) -> bool:
        asked.append(content)
        return True

    llm.enqueue(Reply([write("w1", "out.txt")]), Reply.text("written"))
    result = await client.prompt("write it", approval=policy)
    assert (workspace / "out.txt").read_text() == "hello\n"
    assert [c["name"] for c in asked] == ["write_file"]
    assert asked[0]["manualApproval"] is True and asked[0]["details"]["type"] == "fileChange"
    [record] = result.tool_calls
    assert record.status == "done" and record.manual_approval and record.details["linesAdded"] == 1
    assert result.text == "written"


async def test_callable_reject_does_not_run_the_tool(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    llm.enqueue(Reply([write("w1", "out.txt")]), Reply.text("ok, not written"))
    result = await client.prompt("write it", approval=lambda content: False)
    assert not (workspace / "out.txt").exists()
    [record] = result.tool_calls
    assert record.status == "rejected" and record.reason == "user-choice"
    assert "rejected" in json.dumps(llm.requests[-1].body["messages"])  # the model was told


async def test_async_policy_and_session_approval(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    asked: list[str] = []

    async def policy(content: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        asked.append(content["arguments"]["path"])
        return "session"

    llm.enqueue(Reply([write("w1", "a.txt")]), Reply([write("w2", "b.txt")]), Reply.text("both"))
    result = await client.prompt("write two files", approval=policy)
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
    assert asked == ["a.txt"]  # the second call was covered by the session approval
    assert [(c.status, c.manual_approval) for c in result.tool_calls] == [("done", True), ("done", False)]


async def test_approval_rules_in_a_turn(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    rules = ApprovalRules(allow=["write_file"], deny=["eca__shell_command"])
    llm.enqueue(Reply([write("w1", "kept.txt"), shell("s1", "touch ran.txt")]), Reply.text("done"))
    result = await client.prompt("do both", approval=rules)
    assert (workspace / "kept.txt").exists()
    assert not (workspace / "ran.txt").exists()
    assert [(c.name, c.status) for c in result.tool_calls] == [("write_file", "done"), ("shell_command", "rejected")]


async def test_default_policy_rejects_a_write_and_a_shell_command(client: EcaClient, llm: ScriptedLLMServer,
                                                                 workspace: Path):
    llm.enqueue(Reply([write("w1", "nope.txt"), shell("s1", "touch ran.txt")]),
                Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": "README.md"}))]),
                Reply.text("gave up"))
    result = await client.prompt("try everything")  # no policy given: DEFAULT_UNATTENDED_POLICY
    assert not (workspace / "nope.txt").exists() and not (workspace / "ran.txt").exists()
    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("write_file", "rejected"), ("shell_command", "rejected"), ("read_file", "done")]  # reads need no approval
    assert result.text == "gave up"


async def test_default_policy_rejects_reads_outside_the_workspace(client: EcaClient, llm: ScriptedLLMServer,
                                                                 tmp_path: Path):
    secret = tmp_path / "outside.txt"
    secret.write_text("private\n")
    llm.enqueue(Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": str(secret)}))]), Reply.text("no"))
    result = await client.prompt("read outside")
    [record] = result.tool_calls
    assert record.manual_approval and record.status == "rejected"
    assert "private" not in json.dumps(llm.requests[-1].body["messages"])


async def test_client_default_policy_and_per_prompt_override(workspace: Path, env, config, llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, config=config, env=env,
                                     approval=ApprovalRules(allow=["write_file"])) as eca:
        llm.enqueue(Reply([write("w1", "one.txt")]), Reply.text("1"), Reply([write("w2", "two.txt")]), Reply.text("2"))
        await eca.prompt("client default allows")
        await eca.prompt("this prompt rejects", approval=lambda content: False)
    assert (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()


async def test_a_failing_policy_rejects(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    def broken(content: dict[str, Any]) -> bool:
        raise RuntimeError("policy bug")

    llm.enqueue(Reply([write("w1", "x.txt")]), Reply.text("ok"))
    result = await client.prompt("write", approval=broken)
    assert not (workspace / "x.txt").exists() and result.tool_calls[0].status == "rejected"


async def test_manual_leaves_the_call_pending_until_approved(client: EcaClient, llm: ScriptedLLMServer,
                                                            workspace: Path):
    waiting: list[tuple[str, str]] = []
    asked = asyncio.Event()

    def on_message(method: str, params: Any) -> None:
        content = params.get("content") or {}
        if method == "chat/contentReceived" and content.get("type") == "toolCallRun" and content["manualApproval"]:
            waiting.append((params["chatId"], content["id"]))
            asked.set()

    client.subscribe(on_message)
    llm.enqueue(Reply([write("w1", "manual.txt")]), Reply.text("done"))
    task = asyncio.create_task(client.prompt("write", approval=MANUAL))
    await asyncio.wait_for(asked.wait(), 30)
    await asyncio.sleep(0.1)
    assert not task.done() and not (workspace / "manual.txt").exists()  # nobody answered yet
    chat_id, call_id = waiting[0]
    await client.approve(chat_id, call_id)
    result = await asyncio.wait_for(task, 30)
    assert (workspace / "manual.txt").exists() and result.tool_calls[0].status == "done"


async def test_a_subagents_approval_is_asked_under_the_parent_turns_policy(client: EcaClient, llm: ScriptedLLMServer,
                                                                           workspace: Path):
    """The subagent works in its own chat (``parentChatId``): its approvals reach the prompt's policy and are
    answered in that chat — the turn would otherwise wait for ever."""
    asked: list[str] = []

    def policy(content: dict[str, Any]) -> bool:
        asked.append(content["name"])
        return content["name"] != "shell_command"

    spawn = ToolCall("p1", "eca__spawn_agent", json.dumps({"agent": "general", "task": "Create out.txt and run ls",
                                                           "activity": "writing"}))
    llm.enqueue(Reply([spawn]), Reply([write("c1", "out.txt"), shell("c2", "ls")]), Reply.text("child done"),
                Reply.text("parent done"))
    result = await asyncio.wait_for(client.prompt("delegate it", approval=policy), 120)
    assert (workspace / "out.txt").read_text() == "hello\n"
    assert sorted(asked) == ["shell_command", "write_file"]
    assert result.text == "parent done"
    assert [c.name for c in result.tool_calls] == ["spawn_agent"]  # the child's calls stay in its own chat
    assert "rejected" in json.dumps(llm.requests[2].body["messages"])  # the child was told its ls was rejected
