"""OpenAI Chat Completions: request mapping, reasoning variants, and the tolerance local servers need."""

from __future__ import annotations

import json

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
from eca_notebook.testing import Reasoning as ReasoningStep
from eca_notebook.testing import Reply, ScriptedLLMServer, Text

from ._helpers import FixedServer, collect, collect_until_error, completions, make, request, sse

API = "openai-chat"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


def strip_ids(events):
    """Reasoning ids are generated; compare them by consistency, not value."""
    ids: dict[str, str] = {}
    out = []
    for e in events:
        if isinstance(e, (ReasoningStarted, ReasoningDelta, ReasoningFinished)):
            e = type(e)(**{**e.__dict__, "id": ids.setdefault(e.id, f"r{len(ids)}")})
        out.append(e)
    return out


async def test_history_tools_and_options_mapped_to_messages(llm, client):
    llm.enqueue(Reply.text("ok"))
    history = [
        UserMessage("list files"),
        AssistantMessage(
            text="",
            reasoning=[Reasoning("not sent back")],
            tool_calls=[ToolCall("call_1", "list_dir", '{"path": "."}'), ToolCall("call_2", "read", "")],
        ),
        ToolResultMessage("call_1", "list_dir", "a.txt"),
        ToolResultMessage("call_2", "read", "boom", is_error=True),
        AssistantMessage(text="Done.", reasoning=[Reasoning("only reasoning")]),
        AssistantMessage(reasoning=[Reasoning("reasoning-only turn is skipped")]),
        UserMessage("thanks"),
    ]
    req = request(
        messages=history, system="Be brief.", tools=[ToolSpec("list_dir", "List", SCHEMA)], max_tokens=64,
        temperature=0.0,
    )
    await collect(make(API, llm, client), req)
    sent = completions(llm, API)[-1]
    assert sent.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "list_dir", "arguments": '{"path": "."}'}},
                    {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "thanks"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "list_dir", "description": "List", "parameters": SCHEMA}}],
        "max_tokens": 64,
        "temperature": 0.0,
    }


async def test_no_key_means_no_authorization_header(llm, client):
    llm.enqueue(Reply.text("ok"), Reply.text("ok"))
    await collect(make(API, llm, client))
    assert "authorization" not in completions(llm, API)[-1].headers
    await collect(make(API, llm, client, key="local-key-12345"))
    assert completions(llm, API)[-1].headers["authorization"] == "Bearer local-key-12345"


async def test_url_with_v1_is_not_doubled_and_custom_path_is_used(llm, client):
    llm.enqueue(Reply.text("a"), Reply.text("b"))
    await collect(make(API, llm.url + "/v1", client))
    await collect(make(API, llm, client, completion_path="/chat/completions"))
    assert [r.path for r in llm.requests] == ["/v1/chat/completions", "/chat/completions"]


async def test_think_tags_split_across_chunks(llm, client):
    llm.enqueue(Reply([Text("<thi"), Text("nk>Let me "), Text("see.</th"), Text("ink>The answer"), Text(" is 4.")]))
    events = strip_ids(await collect(make(API, llm, client)))
    assert events == [
        ReasoningStarted("r0"),
        ReasoningDelta("r0", "Let me "),
        ReasoningDelta("r0", "see."),
        ReasoningFinished("r0"),
        TextDelta("The answer"),
        TextDelta(" is 4."),
        Usage(),
        Finished("end_turn"),
    ]


async def test_custom_think_tags(llm, client):
    llm.enqueue(Reply([Text("Hi [[r]]hmm[[/r]]ok <think>not a tag here</think>")]))
    provider = make(API, llm, client, think_tag_start="[[r]]", think_tag_end="[[/r]]")
    events = strip_ids(await collect(provider))
    assert events[:5] == [
        TextDelta("Hi "),
        ReasoningStarted("r0"),
        ReasoningDelta("r0", "hmm"),
        ReasoningFinished("r0"),
        TextDelta("ok <think>not a tag here</think>"),
    ]


async def test_unclosed_think_tag_at_end_stays_reasoning(llm, client):
    llm.enqueue(Reply([Text("<think>still thinking <")]))
    events = strip_ids(await collect(make(API, llm, client)))
    assert events[:4] == [
        ReasoningStarted("r0"),
        ReasoningDelta("r0", "still thinking "),
        ReasoningDelta("r0", "<"),
        ReasoningFinished("r0"),
    ]


async def test_reasoning_content_field(llm, client):
    llm.enqueue(Reply([ReasoningStep("a"), ReasoningStep("b"), Text("c")]))
    events = strip_ids(await collect(make(API, llm, client)))
    assert events[:5] == [
        ReasoningStarted("r0"),
        ReasoningDelta("r0", "a"),
        ReasoningDelta("r0", "b"),
        ReasoningFinished("r0"),
        TextDelta("c"),
    ]


async def test_reasoning_field_openrouter_style(client):
    with ScriptedLLMServer(chat_reasoning_field="reasoning") as server:
        server.enqueue(Reply([ReasoningStep("why"), Text("because")]))
        events = strip_ids(await collect(make(API, server, client)))
    assert events[:4] == [ReasoningStarted("r0"), ReasoningDelta("r0", "why"), ReasoningFinished("r0"),
                          TextDelta("because")]


async def test_extra_none_removes_a_field_strict_servers_reject(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client), request(extra={"stream_options": None, "top_p": 0.9}))
    body = completions(llm, API)[-1].body
    assert "stream_options" not in body and body["top_p"] == 0.9


def chunk(delta=None, finish=None, **extra):
    data = {"id": "x", "object": "chat.completion.chunk", "choices": []}
    if delta is not None or finish is not None:
        data["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    data.update(extra)
    return (None, data)


async def test_tolerates_missing_done_ids_and_indexes(client):
    """Some servers omit [DONE], tool-call ids and indexes, and say "stop" after calling tools."""
    body = sse(
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"function": {"name": "f", "arguments": '{"a":'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": " 1}"}}]}),
        chunk(finish="stop"),
        chunk(usage={"prompt_tokens": 50, "completion_tokens": 4, "prompt_cache_hit_tokens": 10}),
    )
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    started = events[0]
    assert isinstance(started, ToolCallStarted) and started.id.startswith("call_") and started.name == "f"
    assert events[1:] == [
        ToolCallDelta(started.id, '{"a":'),
        ToolCallDelta(started.id, " 1}"),
        ToolCallFinished(started.id, "f", '{"a": 1}'),
        Usage(input_tokens=40, output_tokens=4, cache_read_tokens=10),
        Finished("tool_calls"),
    ]


async def test_text_with_unicode_line_separators_arrives_whole(client):
    """JSON may carry U+2028, U+2029 and U+0085 raw inside a string (servers writing UTF-8 do): they are no SSE line
    end, so the chunk holding them is text like any other (it was cut in two at them and dropped). CRLF and CR line
    ends, and the last one cut between two reads, are line ends."""
    text = "a\u2028b\u2029c\x85d"
    body = (f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': text}}]}, ensure_ascii=False)}\r\n\r\n"
            f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': '!'}}]})}\r\r"
            f"data: {json.dumps({'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n")
    with FixedServer(body) as server:
        events = await collect(make(API, server.url, client))
    assert events == [TextDelta(text), TextDelta("!"), Finished("end_turn", reason="stop")]


async def test_no_finish_and_no_done_is_an_unexpected_end(client):
    with FixedServer(sse(chunk({"content": "Hi"}))) as server:
        events, error = await collect_until_error(make(API, server.url, client))
    assert events == [TextDelta("Hi")]
    assert "ended unexpectedly" in error.message


async def test_error_chunk_in_stream(client):
    body = sse(chunk({"content": "Hi"}), (None, {"error": {"message": "context length exceeded", "code": 400}}))
    with FixedServer(body) as server:
        events, error = await collect_until_error(make(API, server.url, client))
    assert events == [TextDelta("Hi")]
    assert "context length exceeded" in error.message
    assert error.status == 400 and error.retryable is False


async def test_output_limit_key_for_openai_itself_and_compatible_servers(llm, client):
    # OpenAI's own service rejects max_tokens for reasoning models; compatible servers all read max_tokens.
    for url, key in [("https://api.openai.com", "max_completion_tokens"),
                     ("https://my-team.openai.azure.com/openai/deployments/x", "max_completion_tokens"),
                     ("http://127.0.0.1:8000/v1", "max_tokens"), ("https://openrouter.ai/api/v1", "max_tokens")]:
        body = make(API, url, client).request_body(request(max_tokens=321))
        assert body[key] == 321
        other = ({"max_tokens", "max_completion_tokens"} - {key}).pop()
        assert other not in body


async def test_extra_payload_chooses_the_output_limit_key(llm, client):
    provider = make(API, llm, client)
    body = provider.request_body(request(max_tokens=321, extra={"max_completion_tokens": 99}))
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
    body = provider.request_body(request(max_tokens=321, extra={"max_tokens": None}))  # null: send none
    assert "max_tokens" not in body and "max_completion_tokens" not in body
