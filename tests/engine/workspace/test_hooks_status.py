"""Hooks of the chat's life besides prompts and tools (workspace/_chat_status.py, workspace/_hooks.py):
``chatStatusChanged`` sees each change of a chat's aggregate status once, in order; ``preCompact``/``postCompact``
run for the automatic compaction of a long chat too (``triggered: auto``), may veto it or add to the summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from eca_notebook.client import EcaClient
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from tests._waiting import until

SUMMARY_REQUEST = "Summarize our conversation so far"  # what only a summary request contains


def recorder(tmp_path: Path, name: str, answer: str = "", exit_code: int = 0) -> dict[str, Any]:
    """A shell action that appends its event to ``<name>.jsonl``, prints ``answer`` and exits with ``exit_code``."""
    log = tmp_path / f"{name}.jsonl"
    script = tmp_path / f"{name}.py"
    script.write_text(f"import json, sys\nevent = json.load(sys.stdin)\n"
                      f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
                      f"sys.stdout.write({answer!r})\nsys.stderr.write('vetoed by policy')\nsys.exit({exit_code})\n")
    return {"type": "shell", "shell": f"{sys.executable} {script}"}


def events(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    log = tmp_path / f"{name}.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def config(llm: ScriptedLLMServer, hooks: dict[str, Any], **model: Any) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1", "hooks": hooks,
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": model}}}}


async def test_chat_status_changed_sees_each_status_once_with_waiting_and_running_calls(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    hooks = {"status": {"type": "chatStatusChanged", "actions": [recorder(tmp_path, "status")]}}
    llm.enqueue(Reply([ToolCall("w1", "eca__write_file", json.dumps({"path": "new.txt", "content": "x"}))]),
                Reply.text("written"))
    eca = await EcaClient.start(workspace=workspace, config=config(llm, hooks), env=env, approval=lambda c: True)
    try:
        result = await eca.prompt("write a file")
        await until(lambda: any(e["status"] == "idle" for e in events(tmp_path, "status")))
    finally:
        await eca.aclose()
    assert result.ok and (workspace / "new.txt").exists()
    seen = events(tmp_path, "status")
    assert all(e["hook_type"] == "chatStatusChanged" and e["chat_id"] == result.chat_id for e in seen)
    assert all(e["full_model"] == "fake/m1" and "workspaces" in e for e in seen)
    shapes = [(e["status"], e["awaiting_user_input"], e.get("waiting_reason"), e["pending_approval_tool_call_ids"],
               e["running_tool_call_ids"]) for e in seen]
    assert shapes == [
        ("running", False, None, [], []),
        ("running", True, "toolApproval", ["w1"], []),  # the write waits for the user's approval
        ("running", False, None, [], ["w1"]),  # approved: it runs
        ("running", False, None, [], []),
        ("idle", False, None, [], []),
    ]
    assert all(e["pending_question_tool_call_ids"] == [] for e in seen)
    assert "parent_chat_id" not in seen[0]


def long_chat(llm: ScriptedLLMServer) -> tuple[str, str]:
    """Two prompts that together overflow a 16k window (the first one alone fits): the second compacts the first."""
    llm.enqueue(Reply.text("Noted the first part."), Reply.text("Both parts compared."))
    llm.enqueue_when(SUMMARY_REQUEST, Reply.text("SUMMARY: the user sent a long first part of data."))
    return "First part: " + "some data. " * 2600, "Second part: " + "more data. " * 1500


async def test_automatic_compaction_runs_the_compact_hooks_and_keeps_their_context(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    hooks = {"pre": {"type": "preCompact", "actions": [recorder(tmp_path, "pre")]},
             "post": {"type": "postCompact", "matcher": "auto",
                      "actions": [recorder(tmp_path, "post", json.dumps({"additionalContext": "KEEP-THE-PLAN"}))]},
             "manual-only": {"type": "preCompact", "matcher": "manual", "actions": [recorder(tmp_path, "manual")]}}
    first, second = long_chat(llm)
    eca = await EcaClient.start(workspace=workspace, config=config(llm, hooks, contextLimit=16000, outputLimit=1000),
                                env=env, approval=lambda c: True)
    try:
        one = await eca.prompt(first)
        two = await eca.prompt(second, chat_id=one.chat_id)
    finally:
        await eca.aclose()
    assert one.ok and two.ok and "Both parts compared." in two.text
    assert any("compacted the earlier conversation" in s for s in two.system)
    (pre,), (post,) = events(tmp_path, "pre"), events(tmp_path, "post")
    assert pre["triggered"] == "auto" and pre["custom_instructions"] == "" and pre["chat_id"] == one.chat_id
    assert post["triggered"] == "auto" and post["compact_summary"].startswith("SUMMARY: the user sent")
    assert events(tmp_path, "manual") == []  # its matcher is "manual"
    answered = [r for r in llm.requests if r.method == "POST" and SUMMARY_REQUEST not in json.dumps(r.body)][-1]
    sent = json.dumps(answered.body)
    assert "SUMMARY: the user sent" in sent and "KEEP-THE-PLAN" in sent  # the hook's context follows the summary


async def test_a_pre_compact_hook_blocks_automatic_compaction_or_stops_the_turn(
        tmp_path: Path, workspace: Path, env: dict[str, str], llm: ScriptedLLMServer) -> None:
    hooks = {"veto": {"type": "preCompact", "actions": [recorder(tmp_path, "veto", exit_code=2)]}}
    first, second = long_chat(llm)
    eca = await EcaClient.start(workspace=workspace, config=config(llm, hooks, contextLimit=16000, outputLimit=1000),
                                env=env, approval=lambda c: True)
    try:
        one = await eca.prompt(first)
        two = await eca.prompt(second, chat_id=one.chat_id)
    finally:
        await eca.aclose()
    assert "Both parts compared." in two.text  # the model goes on without a summary
    assert "Compaction blocked by hook 'veto'." in two.system
    assert not any(SUMMARY_REQUEST in json.dumps(r.body) for r in llm.requests)
    assert len(events(tmp_path, "veto")) == 1  # asked once per turn

    stop = {"stop": {"type": "preCompact", "actions": [recorder(
        tmp_path, "stop", json.dumps({"continue": False, "stopReason": "no summaries today"}))]}}
    first, second = long_chat(llm)
    before = len(llm.requests)
    eca = await EcaClient.start(workspace=workspace, config=config(llm, stop, contextLimit=16000, outputLimit=1000),
                                env=env, approval=lambda c: True)
    try:
        one = await eca.prompt(first)
        two = await eca.prompt(second, chat_id=one.chat_id)
    finally:
        await eca.aclose()
    assert "Turn stopped by hook 'stop': no summaries today" in "\n".join([*two.system, two.error or ""])
    assert "Both parts compared." not in two.text
    assert not any("Second part" in json.dumps(r.body) for r in llm.requests[before:])  # it never reached the model
