"""The model's plan through a real ``eca-notebook server``: each ``update_plan`` call is followed by one ``plan``
content, its output is a Markdown checklist for clients that do not know that content, and ``chat/open`` replays
the plan — also after a restart."""

from __future__ import annotations

import json

import pytest

from eca_notebook.protocol import ChatContentReceivedParams, PlanContent
from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from .conftest import API_MODELS
from .test_server_chat import completion_requests
from .test_server_tools import prompt, tool_results_sent

pytestmark = pytest.mark.e2e

FIRST = {"explanation": "Small fix.", "entries": [
    {"content": "Read the parser", "status": "in_progress", "files": ["src/parse.py"]},
    {"content": "Fix the bug", "files": ["src/parse.py", "tests/test_parse.py"]},
]}
SECOND = {"entries": [
    {"content": "Read the parser", "status": "completed", "files": ["src/parse.py"]},
    {"content": "Fix the bug", "status": "completed", "files": ["src/parse.py", "tests/test_parse.py"]},
]}


def plan_call(args: dict, call_id: str) -> ToolCall:
    return ToolCall(call_id, "eca__update_plan", json.dumps(args), chunks=2)


def plans(contents: list[tuple[str, dict]]) -> list[dict]:
    return [c for _, c in contents if c["type"] == "plan"]


async def test_update_plan_publishes_a_plan_that_chat_open_replays(spawn, llm, workspace):
    llm.enqueue(
        Reply([Text("Planning."), plan_call(FIRST, "p1")]),
        Reply([plan_call(SECOND, "p2")]),
        Reply.text("Fixed."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "Fix the parser", model=API_MODELS["openai-chat"])
    await eca.wait_idle(chat_id)

    contents = eca.contents(chat_id)
    # every content validates as the protocol's (the plan as PlanContent, not as an unknown content)
    for role, content in contents:
        parsed = ChatContentReceivedParams.model_validate({"chatId": chat_id, "role": role, "content": content})
        assert type(parsed.content) is PlanContent or content["type"] != "plan"
    kinds = [(role, c["type"], c.get("id")) for role, c in contents if c["type"] in ("toolCalled", "plan")]
    assert kinds == [("assistant", "toolCalled", "p1"), ("assistant", "plan", None),
                     ("assistant", "toolCalled", "p2"), ("assistant", "plan", None)]
    first, second = plans(contents)
    assert first == {"type": "plan", "explanation": "Small fix.", "steps": [
        {"description": "Read the parser", "status": "in_progress", "priority": "medium", "files": ["src/parse.py"]},
        {"description": "Fix the bug", "status": "pending", "priority": "medium",
         "files": ["src/parse.py", "tests/test_parse.py"]},
    ]}
    assert [s["status"] for s in second["steps"]] == ["completed", "completed"]

    # what a client that ignores "plan" shows: the call's summary and its output, a Markdown checklist
    called = [c for _, c in contents if c["type"] == "toolCalled"]
    assert called[0]["summary"] == "Plan: 0/2 steps done — Read the parser"
    assert called[1]["outputs"][0]["text"] == (
        "Plan updated: 2/2 steps done.\n\n"
        "- [x] Read the parser (`src/parse.py`)\n"
        "- [x] Fix the bug (`src/parse.py`, `tests/test_parse.py`)"
    )
    # ... which is what the model read back
    bodies = [r.body for r in completion_requests(llm)]
    assert tool_results_sent("openai-chat", bodies[2])[-1] == called[1]["outputs"][0]["text"]

    mark = len(eca.messages)
    assert (await eca.request("chat/open", {"chatId": chat_id}))["found"] is True
    assert plans(eca.contents(chat_id, start=mark)) == [first, second]
    assert await eca.shutdown() == 0

    again = await spawn()
    await again.initialize(workspace)
    assert (await again.request("chat/open", {"chatId": chat_id}))["found"] is True
    assert plans(again.contents(chat_id)) == [first, second]


async def test_a_failed_update_plan_publishes_no_plan(spawn, llm, workspace):
    llm.enqueue(Reply([plan_call({"entries": [{"content": "x", "status": "done"}]}, "p1")]), Reply.text("Oops."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "Plan badly")
    await eca.wait_idle(chat_id)
    contents = eca.contents(chat_id)
    called = [c for _, c in contents if c["type"] == "toolCalled"]
    assert called and called[0]["error"] is True
    assert plans(contents) == []
