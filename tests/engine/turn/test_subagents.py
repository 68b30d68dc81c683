"""Subagents (turn/_subagents.py, tools/subagent.py): which agents offer ``spawn_agent`` and with which subagents,
what a subagent may use, the per-turn limit, no nesting, and the subagent hooks — with the scripted LLM server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from eca_notebook.client import EcaClient
from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from eca_notebook.tools.base import ToolContext


def config(llm: ScriptedLLMServer | None = None, **extra: Any) -> dict[str, Any]:
    url = llm.url if llm is not None else "http://127.0.0.1:9"
    return {"localModel": False, "defaultModel": "fake/m1",
            "providers": {"fake": {"api": "openai-chat", "url": url, "models": {"m1": {}, "m2": {}}}}, **extra}


def engine(env: dict[str, str], workspace: Path, **extra: Any) -> Engine:
    return Engine(EngineOptions(workspace_folders=[workspace], initialization_options=config(**extra), env=env))


def spawn(call_id: str, agent: str = "explorer", task: str = "look around", **more: Any) -> ToolCall:
    return ToolCall(call_id, "eca__spawn_agent", json.dumps({"agent": agent, "task": task, **more}))


def tool_messages(llm: ScriptedLLMServer, index: int) -> list[str]:
    return [m["content"] for m in llm.requests[index].body["messages"] if m["role"] == "tool"]


def tool_names(llm: ScriptedLLMServer, index: int) -> list[str]:
    return [t["function"]["name"] for t in llm.requests[index].body.get("tools") or []]


# -- what is offered -----------------------------------------------------------------------------------------------


async def test_spawn_agent_lists_the_subagents_a_primary_agent_may_spawn(env, workspace) -> None:
    eng = engine(env, workspace, behavior={
        "reviewer": {"mode": "subagent", "description": "Reviews diffs.", "systemPrompt": "Review.",
                     "spawnableBy": "plan", "maxSteps": 3}})
    try:
        code = eng.offered_tools("code")["eca__spawn_agent"].description
        assert "- explorer: Codebase search specialist" in code and "- general:" in code
        assert "reviewer" not in code  # spawnableBy: plan only
        assert "- reviewer: Reviews diffs." in eng.offered_tools("plan")["eca__spawn_agent"].description
        for sub in ("explorer", "general", "reviewer"):  # a subagent never spawns one
            assert "eca__spawn_agent" not in eng.offered_tools(sub)
            assert "spawn_agent" not in {t.name for t in eng.subagents.child_tools(sub).values()}
        explorer = {t.name for t in eng.subagents.child_tools("explorer").values()}
        assert {"read_file", "grep"} <= explorer and not explorer & {"write_file", "edit_file", "move_file"}
        assert "write_file" in {t.name for t in eng.subagents.child_tools("general").values()}
        listing = eng.subagents.listing(None)
        assert "explorer — " in listing and "max steps: no limit" in listing and "reviewer" not in listing
    finally:
        await eng.aclose()


async def test_no_subagent_no_tool(env, workspace) -> None:
    eng = engine(env, workspace, behavior={"explorer": {"spawnableBy": ["plan"]},
                                           "general": {"spawnableBy": ["plan"]}})
    try:
        assert "eca__spawn_agent" not in eng.offered_tools("code")
        assert "eca__spawn_agent" in eng.offered_tools("plan")
        assert eng.subagents.listing(None) == "No subagents available to the 'code' agent."
    finally:
        await eng.aclose()


async def test_a_subagent_chat_cannot_spawn(env, workspace) -> None:
    eng = engine(env, workspace)
    try:
        tool = eng.subagents.tool
        ctx = ToolContext(workspace_folders=[workspace], chat_id="subagent-123", tool_call_id="c1")
        prepared = tool.prepare({"agent": "explorer", "task": "x"}, ctx)
        assert prepared.error and "nesting" in prepared.error
        ctx.chat_id = "parent"
        unknown = tool.prepare({"agent": "nobody", "task": "x"}, ctx)
        assert unknown.error and "Available agents: explorer, general" in unknown.error
        bad_model = tool.prepare({"agent": "explorer", "task": "x", "model": "fake/none"}, ctx)
        assert bad_model.error and "not available" in bad_model.error
        ok = tool.prepare({"agent": "explorer", "task": "x", "activity": "  a   very long label for the UI that goes on"
                                                                           " and on"}, ctx)
        assert ok.error is None and ok.details is not None
        assert ok.details["agentName"] == "explorer" and ok.details["subagentChatId"].startswith("subagent-")
        assert ok.args["activity"].endswith("...") and len(ok.args["activity"]) == 43
    finally:
        await eng.aclose()


# -- running ---------------------------------------------------------------------------------------------------------


async def test_the_limit_per_turn_is_an_error_the_model_reads(env, workspace, llm) -> None:
    llm.enqueue(
        Reply([spawn("s1"), spawn("s2")]),
        Reply.text("first subagent's findings"),
        Reply.text("done"),
    )
    eca = await EcaClient.start(workspace=workspace, env=env, approval=lambda c: True,
                                config=config(llm, subagents={"maxPerTurn": 1}))
    try:
        result = await eca.prompt("explore twice")
        assert eca.engine is not None
        children = list(eca.engine.subagents.children[result.chat_id])
        assert all(c in eca.engine.chats for c in children)
        assert result.chat_id in {c.id for c in eca.engine.list_chats()}
        assert not set(children) & {c.id for c in eca.engine.list_chats()}  # not listed
        assert await eca.engine.delete(result.chat_id)
        assert not set(children) & set(eca.engine.chats)  # deleting the parent forgets its subagents
    finally:
        await eca.aclose()
    assert len(llm.requests) == 3
    first, second = tool_messages(llm, 2)
    assert "## Agent 'explorer' Result" in first and "first subagent's findings" in first
    assert "maxPerTurn" in second
    assert len(children) == 1
    assert "eca__read_file" in tool_names(llm, 1) and "eca__spawn_agent" not in tool_names(llm, 1)
    assert result.text.endswith("done")


async def test_max_steps_makes_the_last_step_answer(env, workspace, llm) -> None:
    llm.enqueue(
        Reply([spawn("s1", agent="counter")]),
        Reply([ToolCall("c1", "eca__read_file", json.dumps({"path": "README.md"}))]),
        Reply.text("counted"),
        Reply.text("ok"),
    )
    eca = await EcaClient.start(workspace=workspace, env=env, approval=lambda c: True, config=config(
        llm, behavior={"counter": {"mode": "subagent", "description": "Counts.", "maxSteps": 2,
                                   "defaultModel": "m2"}}))
    try:
        await eca.prompt("count")
    finally:
        await eca.aclose()
    assert llm.requests[1].body["model"] == "m2"  # the agent's defaultModel, at the parent's provider
    assert tool_names(llm, 1) and not tool_names(llm, 2)  # the last step has no tools: it must answer
    assert "maximum of 2 steps" in json.dumps(llm.requests[1].body["messages"])
    assert "counted" in tool_messages(llm, 3)[0]


async def test_subagent_hooks(tmp_path, env, workspace, llm) -> None:
    seen = tmp_path / "seen.jsonl"
    script = tmp_path / "hook.py"
    script.write_text(f"import json, sys\nevent = json.load(sys.stdin)\n"
                      f"open({str(seen)!r}, 'a').write(json.dumps(event) + '\\n')\n"
                      "if event['hook_type'] == 'subagentStart':\n"
                      "    print(json.dumps({'additionalContext': 'The repo is tiny.'}))\n")
    action = {"type": "shell", "shell": f"{sys.executable} {script}"}
    hooks = {"start": {"type": "subagentStart", "actions": [action]},
             "post": {"type": "subagentPostRequest", "actions": [action]},
             "parent-post": {"type": "postRequest", "actions": [action]}}
    llm.enqueue(Reply([spawn("s1")]), Reply.text("child answer"), Reply.text("parent answer"))
    eca = await EcaClient.start(workspace=workspace, env={**env, "PATH": "/usr/bin:/bin"},
                                approval=lambda c: True, config=config(llm, hooks=hooks))
    try:
        result = await eca.prompt("go")
        for _ in range(600):  # the post hooks run in the background: wait for all three events
            if seen.exists() and len(seen.read_text().splitlines()) >= 3:
                break
            await asyncio.sleep(0.05)
    finally:
        await eca.aclose()
    assert "The repo is tiny." in json.dumps(llm.requests[1].body["messages"])
    events = [json.loads(line) for line in seen.read_text().splitlines()]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_type.setdefault(event["hook_type"], []).append(event)
    [start] = by_type["subagentStart"]
    assert start["parent_chat_id"] == result.chat_id and start["chat_id"].startswith("subagent-")
    assert start["agent"] == "explorer"
    [post] = by_type["subagentPostRequest"]
    assert post["response"] == "child answer" and post["parent_chat_id"] == result.chat_id
    assert post["follow_up_active"] is False
    assert [e["chat_id"] for e in by_type["postRequest"]] == [result.chat_id]  # not for the subagent

