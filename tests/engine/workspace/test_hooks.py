"""Hooks (workspace/_hooks.py): the runner on its own — stdin JSON, stdout JSON, exit 2, timeout, redaction — then the
engine with the scripted LLM server: a ``preToolCall`` hook blocks a write and the model's next request carries its
reason, ``postToolCall`` sees (and may replace) a result, ``preRequest`` rewrites or blocks a prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from eca_notebook._redact import add_secrets
from eca_notebook.client import EcaClient
from eca_notebook.engine.workspace._hooks import _matches, hooks_listing, run_action
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall

SECRET = "hook-secret-value-9876"


def py(tmp_path: Path, name: str, source: str) -> dict[str, Any]:
    """A shell action running a Python script (portable quoting)."""
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    return {"type": "shell", "shell": f"{sys.executable} {script}"}


# -- the runner ----------------------------------------------------------------------------------------------------


async def test_the_event_arrives_as_json_on_stdin_and_a_json_answer_is_parsed(tmp_path: Path) -> None:
    action = py(tmp_path, "echo", "import json, sys\nevent = json.load(sys.stdin)\n"
                "print(json.dumps({'additionalContext': event['tool_name'] + '!', 'cwd': __import__('os').getcwd()}))")
    result = await run_action(action, "echo", {"tool_name": "read_file", "hook_type": "preToolCall"}, cwd=tmp_path)
    assert result.exit == 0 and result.parsed is not None
    assert result.effects["additionalContext"] == "read_file!"
    assert Path(result.effects["cwd"]).resolve() == tmp_path.resolve()


async def test_plain_text_is_not_json_and_exit_2_carries_stderr(tmp_path: Path) -> None:
    plain = await run_action({"type": "shell", "shell": "echo hello"}, "plain", {}, cwd=tmp_path)
    assert plain.exit == 0 and plain.parsed is None and plain.stdout == "hello" and plain.effects == {}
    block = await run_action({"type": "shell", "shell": "echo '{\"approval\": \"allow\"}'; echo nope >&2; exit 2"},
                             "block", {}, cwd=tmp_path)
    assert block.exit == 2 and block.stderr == "nope"
    assert block.effects == {}  # JSON fields count on exit 0 only


async def test_a_hook_that_runs_too_long_is_killed_and_reported(tmp_path: Path) -> None:
    result = await run_action({"type": "shell", "shell": "sleep 60", "timeout": 300}, "slow", {}, cwd=tmp_path)
    assert result.timed_out and result.exit != 0 and "timed out" in result.stderr


async def test_what_a_hook_prints_is_redacted(tmp_path: Path) -> None:
    add_secrets([SECRET])
    result = await run_action({"type": "shell", "shell": f"echo {SECRET}; echo {SECRET} >&2; exit 2"}, "leak", {},
                              cwd=tmp_path)
    assert SECRET not in result.stdout and SECRET not in result.stderr and "***" in result.stderr


async def test_bad_actions_are_results_not_exceptions(tmp_path: Path) -> None:
    missing = await run_action({"type": "shell", "file": "nope.sh"}, "missing", {}, cwd=tmp_path)
    assert missing.exit == 1 and "not found" in missing.stderr
    both = await run_action({"type": "shell", "shell": "true", "file": "x"}, "both", {}, cwd=tmp_path)
    assert both.exit == 1


def test_matchers_follow_the_reference() -> None:
    data = {"server": "eca", "tool_name": "write_file", "tool_input": {"path": "a.clj"}}
    assert _matches({"type": "preToolCall"}, "preToolCall", data)
    assert not _matches({"type": "postToolCall"}, "preToolCall", data)
    assert _matches({"type": "preToolCall", "matcher": "eca__write.*"}, "preToolCall", data)
    assert not _matches({"type": "preToolCall", "matcher": "eca__read.*"}, "preToolCall", data)
    by_args = {"type": "preToolCall", "matcher": {"eca__write_file": {"argsMatchers": {"path": [r".*\.clj"]}}}}
    assert _matches(by_args, "preToolCall", data)
    assert not _matches(by_args, "preToolCall", {**data, "tool_input": {"path": "a.py"}})
    assert _matches({"type": "preToolCall", "matcher": {"write_file": {}}}, "preToolCall", data)
    assert not _matches({"type": "postToolCall"}, "postToolCall", {**data, "error": True})
    assert _matches({"type": "postToolCall", "runOnError": True}, "postToolCall", {**data, "error": True})
    assert _matches({"type": "preCompact", "matcher": "manual"}, "preCompact", {"triggered": "manual"})
    assert not _matches({"type": "preCompact", "matcher": "auto"}, "preCompact", {"triggered": "manual"})
    assert _matches({"type": "prePrompt"}, "preRequest", {})  # the legacy name


def test_listing_groups_by_event() -> None:
    assert hooks_listing({}).startswith("No hooks configured")
    text = hooks_listing({"b": {"type": "postToolCall", "actions": [{}]},
                          "a": {"type": "preToolCall", "description": "Guard", "visible": False,
                                "matcher": {"eca__shell_command": {}}, "actions": [{}]}})
    assert text.index("preToolCall:") < text.index("postToolCall:")
    assert '  - a — Guard (hidden) matcher: {"eca__shell_command": {}}' in text


# -- in the engine -------------------------------------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"}


def config(llm: ScriptedLLMServer, hooks: dict[str, Any]) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1", "hooks": hooks,
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}


def tool_messages(llm: ScriptedLLMServer, index: int) -> list[str]:
    return [m["content"] for m in llm.requests[index].body["messages"] if m["role"] == "tool"]


async def test_a_blocked_write_is_not_run_the_model_is_told_why_and_post_hooks_see_results(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    seen = tmp_path / "seen.jsonl"
    guard = py(tmp_path, "guard", "import json, sys\nevent = json.load(sys.stdin)\n"
               "if event['tool_name'] == 'write_file':\n"
               "    print('writes are frozen until Friday', file=sys.stderr); sys.exit(2)\n")
    audit = py(tmp_path, "audit", f"import json, sys\nevent = json.load(sys.stdin)\n"
               f"open({str(seen)!r}, 'a').write(json.dumps(event) + '\\n')\n"
               "print(json.dumps({'replacedOutput': 'REDACTED BY AUDIT'}))\n")
    hooks = {"guard": {"type": "preToolCall", "actions": [guard]},
             "audit": {"type": "postToolCall", "matcher": "eca__read_file", "actions": [audit]}}
    llm.enqueue(
        Reply([ToolCall("w1", "eca__write_file", json.dumps({"path": "frozen.txt", "content": "x"}))]),
        Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": "README.md"}))]),
        Reply.text("ok"),
    )
    eca = await EcaClient.start(workspace=workspace, config=config(llm, hooks), env=env, approval=lambda c: True)
    try:
        result = await eca.prompt("write then read")
    finally:
        await eca.aclose()
    assert not (workspace / "frozen.txt").exists()
    assert "writes are frozen until Friday" in tool_messages(llm, 1)[0]
    assert tool_messages(llm, 2)[1] == "REDACTED BY AUDIT"
    event = json.loads(seen.read_text())
    assert event["hook_type"] == "postToolCall" and event["tool_call_id"] == "r1"
    assert "demo project" in event["tool_response"] and event["error"] is False
    assert event["chat_id"] == result.chat_id and event["full_model"] == "fake/m1"


async def test_pre_request_rewrites_or_blocks_the_prompt(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    rewrite = py(tmp_path, "rewrite", "import json, sys\nevent = json.load(sys.stdin)\n"
                 "if 'forbidden' in event['prompt']:\n    print('not that', file=sys.stderr); sys.exit(2)\n"
                 "print(json.dumps({'replacedPrompt': '[IMPORTANT] ' + event['prompt'],"
                 " 'additionalContext': 'It is Tuesday.', 'systemMessage': 'rewritten'}))\n")
    llm.enqueue(Reply.text("fine"))
    eca = await EcaClient.start(workspace=workspace, env=env, approval=lambda c: True,
                                config=config(llm, {"rw": {"type": "preRequest", "actions": [rewrite]}}))
    try:
        first = await eca.prompt("hello there")
        sent = llm.requests[0].body["messages"][-1]["content"]
        assert "[IMPORTANT] hello there" in json.dumps(sent) and "It is Tuesday." in json.dumps(sent)
        assert "Hook 'rw': rewritten" in first.system
        blocked = await eca.prompt("something forbidden", chat_id=first.chat_id)
        assert len(llm.requests) == 1  # never sent
        assert "Request blocked by hook 'rw': not that" in blocked.system
    finally:
        await eca.aclose()
