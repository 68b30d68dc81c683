"""OpenAI Responses API: request mapping and Responses-specific stream events."""

from __future__ import annotations

import pytest

from eca_notebook.providers import (
    AssistantMessage,
    Finished,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    ReasoningStarted,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from eca_notebook.providers.openai_responses import reasoning_effort
from eca_notebook.testing import Reasoning as ReasoningStep
from eca_notebook.testing import Reply, Text

from ._helpers import FixedServer, collect, collect_until_error, completions, make, request, sse

API = "openai-responses"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


async def test_history_tools_and_options_mapped_to_input_items(llm, client):
    llm.enqueue(Reply.text("ok"))
    history = [
        UserMessage("list files"),
        AssistantMessage(
            text="Looking.",
            reasoning=[
                Reasoning("I should list.", encrypted="gAAA-enc", id="rs_1"),
                Reasoning("from another provider, no encrypted content"),
            ],
            tool_calls=[ToolCall("call_1", "list_dir", '{"path": "."}'), ToolCall("call_2", "read", "")],
        ),
        ToolResultMessage("call_1", "list_dir", "a.txt\nb.txt"),
        ToolResultMessage("call_2", "read", "boom", is_error=True),
        AssistantMessage(text="Done."),
        UserMessage("thanks"),
    ]
    req = request(
        messages=history,
        system="You are helpful.",
        tools=[ToolSpec("list_dir", "List a directory", SCHEMA)],
        max_tokens=500,
        temperature=0.2,
    )
    await collect(make(API, llm, client, key="sk-test-key-123456"), req)
    sent = completions(llm, API)[-1]
    assert sent.body == {
        "model": "test-model",
        "input": [
            {"type": "message", "role": "user", "content": "list files"},
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "I should list."}],
                "encrypted_content": "gAAA-enc",
                "id": "rs_1",
            },
            {"type": "message", "role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "call_1", "name": "list_dir", "arguments": '{"path": "."}'},
            {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"},
            {"type": "function_call_output", "call_id": "call_2", "output": "boom"},
            {"type": "message", "role": "assistant", "content": "Done."},
            {"type": "message", "role": "user", "content": "thanks"},
        ],
        "stream": True,
        "store": False,
        "instructions": "You are helpful.",
        "tools": [
            {"type": "function", "name": "list_dir", "description": "List a directory", "parameters": SCHEMA,
             "strict": False}
        ],
        "max_output_tokens": 500,
        "temperature": 0.2,
    }
    assert sent.headers["authorization"] == "Bearer sk-test-key-123456"


async def test_reasoning_request_asks_for_summaries_and_encrypted_content(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client), request(reasoning=True, reasoning_budget=20000))
    body = completions(llm, API)[-1].body
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False


@pytest.mark.parametrize(("budget", "effort"), [(None, "medium"), (1024, "low"), (8000, "medium"), (32000, "high")])
def test_reasoning_effort(budget, effort):
    assert reasoning_effort(budget) == effort


async def test_without_key_no_authorization_header(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client))
    assert "authorization" not in completions(llm, API)[-1].headers


async def test_encrypted_reasoning_round_trips(llm, client):
    llm.enqueue(Reply([ReasoningStep("thinking"), Text("answer")]), Reply.text("second"))
    provider = make(API, llm, client)
    events = await collect(provider)
    finished = next(e for e in events if isinstance(e, ReasoningFinished))
    assert finished.encrypted == "enc-1"
    # What the engine would store and send back on the next turn:
    history = [
        UserMessage("q"),
        AssistantMessage(
            text="answer", reasoning=[Reasoning("thinking", encrypted=finished.encrypted, id=finished.id)]
        ),
        UserMessage("q2"),
    ]
    await collect(provider, request(messages=history))
    item = completions(llm, API)[-1].body["input"][1]
    assert item == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "thinking"}],
        "encrypted_content": "enc-1",
        "id": finished.id,
    }


async def test_response_failed_event(client):
    body = sse(
        ("response.created", {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m", "delta": "Hi"}),
        ("response.failed", {"type": "response.failed",
                             "response": {"status": "failed", "error": {"code": "server_error", "message": "oops"}}}),
    )
    with FixedServer(body) as server:
        events, error = await collect_until_error(make(API, server.url, client))
    assert events == [TextDelta("Hi")]
    assert "oops" in error.message and error.retryable is True


async def test_raw_reasoning_text_and_summary_parts(client):
    """gpt-oss style ``reasoning_text`` deltas, several summary parts, and a call completed only by item.done."""
    body = sse(
        (None, {"type": "response.output_item.added", "item": {"id": "rs_9", "type": "reasoning", "summary": []}}),
        (None, {"type": "response.reasoning_summary_part.added", "item_id": "rs_9", "summary_index": 0}),
        (None, {"type": "response.reasoning_summary_text.delta", "item_id": "rs_9", "delta": "one"}),
        (None, {"type": "response.reasoning_summary_part.added", "item_id": "rs_9", "summary_index": 1}),
        (None, {"type": "response.reasoning_summary_text.delta", "item_id": "rs_9", "delta": "two"}),
        (None, {"type": "response.output_item.done", "item": {"id": "rs_9", "type": "reasoning",
                                                               "encrypted_content": "E"}}),
        (None, {"type": "response.reasoning_text.delta", "item_id": "rs_10", "delta": "raw"}),
        (None, {"type": "response.output_item.done", "item": {"id": "fc_1", "type": "function_call",
                                                               "call_id": "call_z", "name": "f", "arguments": "{}"}}),
        (None, {"type": "response.completed", "response": {"usage": {"input_tokens": 5, "output_tokens": 2}}}),
    )
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    assert events == [
        ReasoningStarted("rs_9"),
        ReasoningDelta("rs_9", "one"),
        ReasoningDelta("rs_9", "\n\n"),
        ReasoningDelta("rs_9", "two"),
        ReasoningFinished("rs_9", encrypted="E"),
        ReasoningStarted("rs_10"),
        ReasoningDelta("rs_10", "raw"),
        ToolCallStarted("call_z", "f", 0),
        ToolCallFinished("call_z", "f", "{}"),
        ReasoningFinished("rs_10"),
        Usage(input_tokens=5, output_tokens=2),
        Finished("tool_calls"),
    ]
    assert not any(isinstance(e, ToolCallDelta) for e in events)
