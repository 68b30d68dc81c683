"""Agent turns through a real ``eca-notebook server``: tool calls, approvals with diffs, behaviors, safety."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall, Usage

from .conftest import API_MODELS, wait_gone
from .test_server_chat import completion_requests, shape

pytestmark = pytest.mark.e2e


def call(name: str, args: dict, call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)


def tool_results_sent(api: str, body: dict) -> list[str]:
    """The tool results a provider request carried back to the model, whatever the wire format."""
    out: list[str] = []
    if api == "openai-responses":
        out += [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    elif api == "anthropic":
        for message in body["messages"]:
            if isinstance(message["content"], list):
                for block in message["content"]:
                    if block["type"] == "tool_result":
                        content = block["content"]
                        out.append(content if isinstance(content, str) else "".join(c["text"] for c in content))
    else:
        out += [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return out


def of_type(contents, kind: str) -> list[dict]:
    return [c for _, c in contents if c["type"] == kind]


async def prompt(eca, message: str, **params) -> str:
    mark = len(eca.messages)
    result = await eca.request("chat/prompt", {"message": message, **params})
    assert result["status"] == "prompting", result
    eca._last_mark = mark
    return result["chatId"]


async def wait_tool_run(eca, call_id: str = "call_1") -> dict:
    msg = await eca.wait_for(lambda m: m.method == "chat/contentReceived"
                             and m.params["content"]["type"] == "toolCallRun" and m.params["content"]["id"] == call_id)
    return msg.params["content"]


@pytest.mark.parametrize("api", list(API_MODELS))
async def test_tool_turn_in_each_provider_format(api, spawn, llm, workspace):
    llm.enqueue(
        Reply([Text("Let me look."), call("read_file", {"path": "README.md"}), Usage(20, 5)]),
        Reply([Text("It is a demo project."), Usage(40, 6)]),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "What is this project?", model=API_MODELS[api])
    await eca.wait_idle(chat_id)

    got = shape(eca.contents(chat_id))
    assert got == [
        ("user", "text", "What is this project?\n"),
        ("system", "metadata", "What is this project?"),
        ("system", "progress", "running", "Waiting model"),
        ("system", "progress", "running", "Generating"),
        ("assistant", "text", "Let me look."),
        *[("assistant", "toolCallPrepare")] * len(of_type(eca.contents(chat_id), "toolCallPrepare")),
        ("system", "usage"),
        ("assistant", "toolCallRun"),
        ("assistant", "toolCallRunning"),
        ("system", "progress", "running", "Calling tool"),
        ("assistant", "toolCalled"),
        ("system", "progress", "running", "Waiting model"),
        ("system", "progress", "running", "Generating"),
        ("assistant", "text", "It is a demo project."),
        ("system", "usage"),
        ("system", "progress", "finished", ""),
    ]
    prepare = of_type(eca.contents(chat_id), "toolCallPrepare")
    assert prepare and "".join(p["argumentsText"] for p in prepare) == json.dumps({"path": "README.md"})
    assert all(p["name"] == "read_file" and p["server"] == "eca" and p["origin"] == "native" for p in prepare)
    run = of_type(eca.contents(chat_id), "toolCallRun")[0]
    assert run["manualApproval"] is False and run["arguments"]["path"] == "README.md" and run["id"] == "call_1"
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False and "# demo project" in called["outputs"][0]["text"]
    assert called["outputs"][0]["content"] == called["outputs"][0]["text"]  # early revision's field too

    bodies = [r.body for r in completion_requests(llm)]
    assert len(bodies) == 2
    sent = tool_results_sent(api, bodies[1])
    assert len(sent) == 1 and "# demo project" in sent[0]


async def test_write_shows_diff_before_approval_and_applies_after(spawn, llm, workspace):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(Reply([call("edit_file", {"path": "hello.py", "original_content": "print('hi')",
                                          "new_content": "print('hello')"})]), Reply.text("Done."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "greet properly", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    assert run["manualApproval"] is True
    details = run["details"]
    assert details["type"] == "fileChange" and details["linesAdded"] == 1 and details["linesRemoved"] == 1
    assert "-print('hi')" in details["diff"] and "+print('hello')" in details["diff"]
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["content"].get("text") ==
                       "Waiting for tool call approval")
    assert target.read_text() == "print('hi')\n"  # nothing changed before approval

    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    assert target.read_text() == "print('hello')\n"
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False and called["details"]["type"] == "fileChange"


async def test_rejected_call_is_reported_to_the_model(spawn, llm, workspace):
    llm.enqueue(Reply([call("write_file", {"path": "new.txt", "content": "x"})]), Reply.text("OK, I won't."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "write a file", model="anthropic/claude-sonnet-4-5")
    await wait_tool_run(eca)
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    assert not (workspace / "new.txt").exists()
    rejected = of_type(eca.contents(chat_id), "toolCallRejected")
    assert len(rejected) == 1 and rejected[0]["reason"] == "user-choice"
    assert not of_type(eca.contents(chat_id), "toolCalled")
    assert "rejected" in tool_results_sent("anthropic", completion_requests(llm)[1].body)[0]


async def test_session_approval_is_granular_for_shell(spawn, llm, workspace):
    llm.enqueue(
        Reply([call("shell_command", {"command": "git status"}, "c1")]),
        Reply([call("shell_command", {"command": "git status --short"}, "c2")]),
        Reply([call("shell_command", {"command": "git status; touch pwned"}, "c3")]),
        Reply.text("done"),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "run things", model="openai/gpt-4.1")
    first = await wait_tool_run(eca, "c1")
    assert first["manualApproval"] is True
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "c1", "save": "session"})
    second = await wait_tool_run(eca, "c2")
    assert second["manualApproval"] is False  # covered by the remembered "git status"
    third = await wait_tool_run(eca, "c3")
    assert third["manualApproval"] is True  # shell metacharacters: never covered by a remembered prefix
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "c3"})
    await eca.wait_idle(chat_id)
    assert not (workspace / "pwned").exists()
    outputs = [c["outputs"][0]["text"] for c in of_type(eca.contents(chat_id), "toolCalled")]
    assert len(outputs) == 2 and all("Exit code" in o for o in outputs)


async def test_deny_rule_from_config_rejects_without_asking(spawn, llm, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps(
        {"toolCall": {"approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": ["rm .*"]}}}}}}))
    llm.enqueue(Reply([call("shell_command", {"command": "rm -rf important"})]), Reply.text("understood"))
    (workspace / "important").mkdir()
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "clean up", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    rejected = of_type(eca.contents(chat_id), "toolCallRejected")
    assert rejected[0]["reason"] == "user-config"
    assert of_type(eca.contents(chat_id), "toolCallRun")[0]["manualApproval"] is False
    assert (workspace / "important").is_dir()
    assert "denied" in tool_results_sent("openai-responses", completion_requests(llm)[1].body)[0]


async def test_plan_behavior_refuses_writes(spawn, llm, workspace):
    llm.enqueue(Reply([call("write_file", {"path": "plan.txt", "content": "x"})]), Reply.text("I'll only plan."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "make a plan", model="openai/gpt-4.1", behavior="plan")
    await eca.wait_idle(chat_id)
    body = completion_requests(llm)[0].body
    offered = {t["name"] for t in body["tools"]}
    assert "eca__read_file" in offered and "eca__write_file" not in offered and "eca__edit_file" not in offered
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is True and "plan" in called["outputs"][0]["text"]
    assert not (workspace / "plan.txt").exists()


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
async def test_paths_outside_the_workspace_always_ask(kind, spawn, llm, workspace, tmp_path):
    secret = tmp_path / "outside.txt"
    secret.write_text("top secret\n")
    path = {"dotdot": "../outside.txt", "absolute": str(secret), "symlink": "link.txt"}[kind]
    if kind == "symlink":
        os.symlink(secret, workspace / "link.txt")
    llm.enqueue(Reply([call("read_file", {"path": path})]), Reply.text("ok"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "read it", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    assert run["manualApproval"] is True  # read_file is allowed by default — but not outside the workspace
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    assert "top secret" not in json.dumps(completion_requests(llm)[1].body)


async def test_stop_during_shell_command_kills_it(spawn, llm, workspace):
    pid_file = workspace / "child.pid"
    llm.enqueue(Reply([call("shell_command", {"command": f"sleep 120 & echo $! > {pid_file.name}; wait"})]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "wait a while", model="openai/gpt-4.1")
    await wait_tool_run(eca)
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_for(lambda m: (m.method == "chat/contentReceived"
                                  and m.params["content"]["type"] == "toolCallRunning"))
    for _ in range(1200):  # a condition, with a generous guard (60 s)
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    child = int(pid_file.read_text())
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id)
    assert await wait_gone(child), f"shell child {child} still alive after stop"

    llm.enqueue(Reply.text("fine"))
    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "still ok?"})
    await eca.wait_idle(chat_id, start=mark)
    assert ("assistant", "text", "fine") in shape(eca.contents(chat_id, start=mark))
    # the stopped call got a result in history, so the provider accepted the next request
    assert tool_results_sent("openai-responses", completion_requests(llm)[-1].body)


async def test_stop_while_waiting_for_approval_rejects_and_ends_cleanly(spawn, llm, workspace):
    llm.enqueue(Reply([call("write_file", {"path": "a.txt", "content": "x"})]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "write", model="openai/gpt-4.1")
    await wait_tool_run(eca)
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id)
    rejected = of_type(eca.contents(chat_id), "toolCallRejected")
    assert rejected and rejected[0]["reason"] == "user-choice"
    assert shape(eca.contents(chat_id))[-1] == ("system", "progress", "finished", "")
    # approving afterwards is ignored, not a crash
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    assert (await eca.request("chat/list", {}))["chats"][0]["id"] == chat_id
    assert not (workspace / "a.txt").exists()


async def test_editor_diagnostics_round_trip(spawn, llm, workspace):
    llm.enqueue(Reply([call("editor_diagnostics", {})]), Reply.text("One error."))
    eca = await spawn()
    asked: list = []

    def diagnostics(params):
        asked.append(params)
        return {"diagnostics": [{"uri": (workspace / "a.py").as_uri(), "severity": "error", "source": "pyright",
                                 "range": {"start": {"line": 3, "character": 1}, "end": {"line": 3, "character": 9}},
                                 "message": "undefined name 'foo'"}]}

    eca.endpoint.register("editor/getDiagnostics", diagnostics)
    await eca.initialize(workspace, capabilities={"codeAssistant": {"chat": True, "editor": {"diagnostics": True}}})
    chat_id = await prompt(eca, "any errors?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    assert asked
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is False and "undefined name 'foo'" in called["outputs"][0]["text"]


@pytest.mark.parametrize("arguments, expected", [
    ('{"path": ', "not valid JSON"),
    ("{}", "path"),
    ('{"path": "missing.txt"}', "not"),
], ids=["bad-json", "missing-field", "no-such-file"])
async def test_bad_tool_arguments_become_tool_errors(arguments, expected, spawn, llm, workspace):
    llm.enqueue(Reply([ToolCall("call_1", "eca__read_file", arguments)]), Reply.text("sorry"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "read", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    called = of_type(eca.contents(chat_id), "toolCalled")[0]
    assert called["error"] is True and expected in called["outputs"][0]["text"]
    assert ("assistant", "text", "sorry") in shape(eca.contents(chat_id))


async def test_scripted_agent_reads_edits_and_runs(spawn, llm, workspace):
    """The issue's "done when": read a file, propose an edit (diff before approval), run a shell command."""
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    llm.enqueue(
        Reply([call("read_file", {"path": "calc.py"}, "r1")]),
        Reply([Text("Found the bug."), call("edit_file", {"path": "calc.py", "original_content": "return a - b",
                                                          "new_content": "return a + b"}, "e1")]),
        Reply([call("shell_command", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"}, "s1")]),
        Reply.text("Fixed: add(2, 3) is 5."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "fix calc.py", model="anthropic/claude-sonnet-4-5")
    edit = await wait_tool_run(eca, "e1")
    assert "+    return a + b" in edit["details"]["diff"]
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "e1"})
    await wait_tool_run(eca, "s1")
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "s1"})
    await eca.wait_idle(chat_id)
    outputs = {c["id"]: c["outputs"][0]["text"] for c in of_type(eca.contents(chat_id), "toolCalled")}
    assert "return a - b" in outputs["r1"] and "5" in outputs["s1"]
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_round_cap_ends_the_turn_with_a_clear_message(spawn, llm, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"maxRounds": 2}}))
    llm.enqueue(*[Reply([call("read_file", {"path": "README.md"}, f"r{i}")]) for i in range(3)])
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "loop forever", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    assert len(completion_requests(llm)) == 2
    texts = [c["text"] for r, c in eca.contents(chat_id) if r == "system" and c["type"] == "text"]
    assert any("Stopped after 2 tool rounds" in t and "maxRounds" in t for t in texts)
    assert shape(eca.contents(chat_id))[-1] == ("system", "progress", "finished", "")


async def test_custom_behavior_has_its_own_prompt_and_tool_rules(spawn, llm, workspace):
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"behavior": {"reviewer": {
        "systemPrompt": "You review code and never change it.",
        "disabledTools": ["write_file", "edit_file", "move_file", "shell_command"],
    }}}))
    llm.enqueue(Reply.text("Looks fine."))
    eca = await spawn()
    init = await eca.initialize(workspace)
    assert "reviewer" in init["chatBehaviors"]
    tools = {t["name"]: t for t in eca.of("tool/serverUpdated")[0]["tools"]}
    native = {"read_file", "directory_tree", "grep", "write_file", "edit_file", "move_file", "shell_command"}
    assert native <= set(tools)
    assert all(t["parameters"]["type"] == "object" and t["description"] for t in tools.values())
    chat_id = await prompt(eca, "review calc.py", model="openai/gpt-4.1", behavior="reviewer")
    await eca.wait_idle(chat_id)
    body = completion_requests(llm)[0].body
    assert body["instructions"].startswith("You review code and never change it.")
    offered = {t["name"] for t in body["tools"]}
    assert "eca__read_file" in offered and not offered & {"eca__write_file", "eca__shell_command"}


async def test_shell_calls_carry_the_references_command_breakdown(spawn, llm, workspace):
    """``toolCallRun`` of a shell call has the reference's ``details``: ``{type: "shellCommand", commands: [{command,
    args, approvalKey?, remembered?}], background?}`` — chains split, the key "approve & remember" would remember
    only for a line it would remember by prefix, ``remembered`` once it is."""
    llm.enqueue(
        Reply([call("shell_command", {"command": "git status --short"}, "c1")]),
        Reply([call("shell_command", {"command": "git status -s"}, "c2")]),
        Reply([call("shell_command", {"command": "ls -la 'my dir' && grep -rn TODO . | head -5"}, "c3")]),
        Reply.text("done"),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    (workspace / "my dir").mkdir()
    chat_id = await prompt(eca, "run things", model="openai/gpt-4.1")
    first = await wait_tool_run(eca, "c1")
    assert first["details"] == {"type": "shellCommand", "commands": [
        {"command": "git", "args": ["status", "--short"], "approvalKey": "git status", "remembered": False}]}
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "c1", "save": "session"})
    second = await wait_tool_run(eca, "c2")
    assert second["manualApproval"] is False
    assert second["details"]["commands"] == [
        {"command": "git", "args": ["status", "-s"], "approvalKey": "git status", "remembered": True}]
    third = await wait_tool_run(eca, "c3")
    assert third["details"] == {"type": "shellCommand", "commands": [
        {"command": "ls", "args": ["-la", "my dir"]},
        {"command": "grep", "args": ["-rn", "TODO", "."]},
        {"command": "head", "args": ["-5"]}]}  # chained: remembered only exactly, so no key
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "c3"})
    await eca.wait_idle(chat_id)
    called = of_type(eca.contents(chat_id), "toolCalled")
    assert [c["details"]["type"] for c in called] == ["shellCommand"] * 3
