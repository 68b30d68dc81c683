"""Anthropic Messages: block-structured history, thinking, headers and Anthropic-specific stream events."""

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
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from eca_notebook.providers.base import UrlCitation
from eca_notebook.testing import Reply, StreamError, Text

from ._helpers import FixedServer, collect, collect_until_error, completions, make, request, sse

API = "anthropic"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


async def test_history_maps_to_blocks_with_merged_tool_results(llm, client):
    llm.enqueue(Reply.text("ok"))
    history = [
        UserMessage("list files"),
        AssistantMessage(
            text="Looking.",
            reasoning=[
                Reasoning("I should list.", signature="sig-abc"),
                Reasoning("", encrypted="REDACTED-DATA"),
                Reasoning("unsigned, from another provider"),
            ],
            tool_calls=[ToolCall("toolu_1", "list_dir", '{"path": "."}'), ToolCall("toolu_2", "read", "not json")],
        ),
        ToolResultMessage("toolu_1", "list_dir", "a.txt"),
        ToolResultMessage("toolu_2", "read", "boom", is_error=True),
        UserMessage("also, hurry"),
        AssistantMessage(text="Done."),
        UserMessage("thanks"),
    ]
    req = request(messages=history, system="Be brief.", tools=[ToolSpec("list_dir", "List", SCHEMA)], temperature=0.3)
    await collect(make(API, llm, client, key="sk-ant-test-123456"), req)
    sent = completions(llm, API)[-1]
    assert sent.body == {
        "model": "test-model",
        "max_tokens": 8192,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should list.", "signature": "sig-abc"},
                    {"type": "redacted_thinking", "data": "REDACTED-DATA"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {"path": "."}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
                    {"type": "text", "text": "also, hurry", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}]},
        ],
        "stream": True,
        # prompt-cache breakpoints: tools, system, the last two user messages (the API's maximum of four)
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "list_dir", "description": "List", "input_schema": SCHEMA,
                   "cache_control": {"type": "ephemeral"}}],
        "temperature": 0.3,
    }


async def test_auth_headers(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client, key="sk-ant-test-123456"))
    headers = completions(llm, API)[-1].headers
    assert headers["x-api-key"] == "sk-ant-test-123456"
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


@pytest.mark.parametrize(
    ("max_tokens", "budget", "expected_budget", "expected_max"),
    [(None, None, 4096, 8192), (None, 2000, 2000, 8192), (None, 100, 1024, 8192), (64000, None, 4096, 64000),
     # an explicit output limit is never exceeded: the budget shrinks to fit
     (3000, None, 1500, 3000), (3000, 8000, 1500, 3000)],
)
async def test_thinking_budget_and_max_tokens(llm, client, max_tokens, budget, expected_budget, expected_max):
    llm.enqueue(Reply.text("ok"))
    req = request(reasoning=True, reasoning_budget=budget, max_tokens=max_tokens, temperature=0.5)
    await collect(make(API, llm, client), req)
    body = completions(llm, API)[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": expected_budget}
    assert body["max_tokens"] == expected_max > expected_budget
    assert "temperature" not in body  # the API rejects temperature with extended thinking


async def test_output_limit_too_small_for_thinking_keeps_the_limit(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client), request(reasoning=True, reasoning_budget=2000, max_tokens=1000,
                                                   temperature=0.5))
    body = completions(llm, API)[-1].body
    assert body["max_tokens"] == 1000  # not budget + 8192 behind the user's back
    assert "thinking" not in body  # the API's minimum budget (1024) does not fit under 1000
    assert body["temperature"] == 0.5


async def test_overloaded_stream_error_is_retryable_529(llm, client):
    llm.enqueue(Reply([Text("a"), StreamError("Overloaded", code="overloaded_error")]))
    events, error = await collect_until_error(make(API, llm, client))
    assert events == [TextDelta("a")]
    assert error.status == 529 and error.retryable is True and "Overloaded" in error.message


async def test_redacted_thinking_and_cache_usage(client):
    body = sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "usage": {
            "input_tokens": 12, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 7,
            "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "redacted_thinking", "data": "OPAQUE"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta", "text": "Hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    )
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    assert events == [
        ReasoningStarted("msg_1_thinking_0"),
        ReasoningFinished("msg_1_thinking_0", encrypted="OPAQUE"),
        TextDelta("Hi"),
        Usage(input_tokens=12, output_tokens=9, cache_read_tokens=7, cache_write_tokens=100),
        Finished("end_turn"),
    ]


async def test_thinking_signature_from_the_stream(client):
    body = sse(
        (None, {"type": "message_start", "message": {"id": "msg_2", "usage": {"input_tokens": 1}}}),
        (None, {"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        (None, {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        (None, {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        (None, {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "x=="}}),
        (None, {"type": "content_block_stop", "index": 0}),
        (None, {"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 3}}),
        (None, {"type": "message_stop"}),
    )
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    assert events == [
        ReasoningStarted("msg_2_thinking_0"),
        ReasoningDelta("msg_2_thinking_0", "hmm"),
        ReasoningFinished("msg_2_thinking_0", signature="EqQBx=="),
        Usage(input_tokens=1, output_tokens=3),
        Finished("other"),
    ]


async def test_text_with_unicode_line_separators_arrives_whole(client):
    """U+2028/U+2029/U+0085 raw inside the JSON of an event are text, not SSE line ends (they were cut there)."""
    import json

    text = "a\u2028b\u2029c\x85d"
    events = [
        {"type": "message_start", "message": {"id": "msg_4", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {e['type']}\r\ndata: {json.dumps(e, ensure_ascii=False)}\r\n\r\n" for e in events)
    with FixedServer(body) as server:
        got = await collect(make(API, server.url, client))
    assert got == [TextDelta(text), Usage(input_tokens=1, output_tokens=2), Finished("end_turn")]


async def test_http_overloaded_529_is_retried(llm, client):
    from eca_notebook.testing import Error

    llm.enqueue(Reply([Error(529, "Overloaded")]), Reply.text("fine"))
    events = await collect(make(API, llm, client))
    assert events[0] == TextDelta("fine")
    assert len(completions(llm, API)) == 2


async def test_a_web_search_citation_is_a_url_citation(client):
    """``citations_delta`` of a web search result (the reference shows it as a ``url`` content)."""
    body = sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_3", "usage": {"input_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": "", "citations": []}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "citations_delta", "citation": {
                "type": "web_search_result_location", "url": "https://docs.python.org/3/whatsnew/3.13.html",
                "title": "What's New In Python 3.13", "encrypted_index": "Eo8B", "cited_text": "Python 3.13"}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "It is out."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    )
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    assert events[:2] == [UrlCitation("What's New In Python 3.13", "https://docs.python.org/3/whatsnew/3.13.html"),
                          TextDelta("It is out.")]
