"""Steering (``chat/promptSteer`` / ``chat/promptSteerRemove``, as the reference server defines them): guidance sent
while a prompt runs joins the model's input at the next round boundary — after the round's tool calls, never in the
middle of one — is shown then as a user content with its ``contentId``, and can be taken back until then. Through
the real client, engine and the scripted LLM server (its recorded requests say what the model was sent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.providers.base import ToolResultMessage, UserMessage
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage

from ...client.conftest import provider_config

STEER = "use pandas, not csv"


@pytest.fixture
async def eca(workspace: Path, env: dict[str, str], llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, env=env, config=provider_config(("fake", llm))) as client:
        yield client


def tool_round(call_id: str = "c1") -> Reply:
    return Reply([ToolCall(call_id, "eca__shell_command", json.dumps({"command": "echo reading data"})),
                  Usage(5, 5)])


def sent_texts(request: Any) -> list[str]:
    return [json.dumps(m.get("content")) for m in request.body["messages"]]


async def test_a_steer_joins_at_the_next_round_and_not_before(eca: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(tool_round(), Reply([Text("Switched to pandas."), Usage(5, 5)]))

    async def steer_while_the_call_waits(content: dict[str, Any]) -> bool:
        # the round's tool call is under way (waiting for approval): the steer must wait for its result
        await eca.steer("chat-1", STEER)
        return True

    result = await eca.prompt("load data.csv", chat_id="chat-1", approval=steer_while_the_call_waits)
    assert result.ok and result.text.endswith("Switched to pandas.")
    first, second = llm.requests
    assert STEER not in json.dumps(first.body)
    messages = second.body["messages"]
    assert messages[-1]["role"] == "user" and STEER in json.dumps(messages[-1]["content"])
    assert messages[-2]["role"] == "tool"  # after the call's result: the call was not interrupted
    # shown in the chat as a user content with its id, between the tool call and the answer
    [echo] = [c for c in result.contents if c.role == "user" and STEER in getattr(c.content, "text", "")]
    assert echo.content.content_id
    chat = eca.engine.chats["chat-1"]
    steered = chat.messages[-2]
    assert isinstance(steered, UserMessage) and steered.text == STEER and steered.content_id == echo.content.content_id
    assert isinstance(chat.messages[-3], ToolResultMessage)


async def test_steers_before_the_boundary_are_joined(eca: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(tool_round(), Reply([Text("ok"), Usage(5, 5)]))

    async def steer_twice(content: dict[str, Any]) -> bool:
        await eca.steer("chat-2", "first hint")
        await eca.steer("chat-2", "second hint")
        return True

    await eca.prompt("go", chat_id="chat-2", approval=steer_twice)
    last = llm.requests[1].body["messages"][-1]
    assert last["role"] == "user" and "first hint\\nsecond hint" in json.dumps(last["content"])


async def test_a_removed_steer_never_reaches_the_model(eca: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(tool_round(), Reply([Text("done"), Usage(5, 5)]))

    async def steer_then_take_back(content: dict[str, Any]) -> bool:
        await eca.steer("chat-3", STEER)
        await eca.remove_steer("chat-3")
        await eca.remove_steer("chat-3")  # idempotent
        return True

    result = await eca.prompt("go", chat_id="chat-3", approval=steer_then_take_back)
    assert result.ok
    assert all(STEER not in json.dumps(r.body) for r in llm.requests)
    assert not [c for c in result.contents if c.role == "user" and STEER in getattr(c.content, "text", "")]


async def test_a_steer_to_an_idle_chat_or_left_at_the_end_is_dropped(eca: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("hello"), Usage(5, 5)]))
    await eca.prompt("hi", chat_id="chat-4")
    await eca.steer("chat-4", "ignored: nothing runs")
    assert eca.engine.chats["chat-4"].steer is None
    # a steer sent while the last round streams (no tool call follows): the prompt ends, the steer is dropped
    llm.enqueue(Reply([Text("answer"), Usage(5, 5)]), Reply([Text("second"), Usage(5, 5)]))

    async def never(content: dict[str, Any]) -> bool:
        return False

    stream = eca.stream("again", chat_id="chat-4", approval=never)
    async for item in stream:
        if item.content.type == "text" and item.role == "assistant":
            await eca.steer("chat-4", "too late")
    assert eca.engine.chats["chat-4"].steer is None
    await eca.prompt("next", chat_id="chat-4")
    assert all("too late" not in json.dumps(r.body) for r in llm.requests)
