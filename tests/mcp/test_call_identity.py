"""Every content of a call to a real MCP server's tool names that tool, its server and ``origin: "mcp"`` — the
``toolCallPrepare`` chunks streamed before the call is resolved included, also when the model's server names the
tool only after the first argument fragment — and the prepare chunks carry the early revision's ``manualApproval``.
"""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from .conftest import stdio

CALL_TYPES = ("toolCallPrepare", "toolCallRun", "toolCallRunning", "toolCalled")


@pytest.mark.parametrize("name_late", [False, True], ids=["named-first", "named-late"])
async def test_every_content_of_an_mcp_call_names_its_server(eca, llm, name_late):
    h = await eca({"demo": stdio()})
    llm.enqueue(Reply([ToolCall("c1", "demo__echo", json.dumps({"text": "hello there"}), chunks=4,
                                name_late=name_late)]), Reply.text("done"))
    chat_id = await h.prompt("echo it")
    run = await h.approve_next(chat_id, "echo")
    assert run["manualApproval"] is True
    await h.idle(chat_id)
    calls = [c for c in h.contents(chat_id) if c["type"] in CALL_TYPES]
    assert {c["type"] for c in calls} == set(CALL_TYPES)
    assert {(c["origin"], c["server"], c["name"], c["id"]) for c in calls} == {("mcp", "demo", "echo", "c1")}
    prepare = [c for c in calls if c["type"] == "toolCallPrepare"]
    assert json.loads("".join(c["argumentsText"] for c in prepare)) == {"text": "hello there"}
    assert all(c["manualApproval"] is True for c in prepare)  # byDefault "ask": the call will ask
    called = next(c for c in calls if c["type"] == "toolCalled")
    assert called["error"] is False and "hello there" in called["outputs"][0]["text"]
    assert not h.invalid


async def test_prepare_says_no_manual_approval_for_an_allowed_server(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}})
    llm.enqueue(Reply([ToolCall("c1", "demo__echo", json.dumps({"text": "hi"}))]), Reply.text("done"))
    chat_id = await h.prompt("echo it")
    await h.idle(chat_id)
    calls = [c for c in h.contents(chat_id) if c["type"] in ("toolCallPrepare", "toolCallRun")]
    assert calls and all(c["manualApproval"] is False for c in calls)
    assert {(c["origin"], c["server"]) for c in calls} == {("mcp", "demo")}
