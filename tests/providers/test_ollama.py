"""Ollama native chat: request mapping, NDJSON specifics, and model discovery."""

from __future__ import annotations

from eca_notebook.providers import (
    AssistantMessage,
    Finished,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    list_ollama_models,
)
from eca_notebook.testing import Error, Reply, ScriptedLLMServer

from ._helpers import FixedServer, collect, collect_until_error, completions, free_port, make, request

API = "ollama"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


async def test_history_tools_and_options_mapped(llm, client):
    llm.enqueue(Reply.text("ok"))
    history = [
        UserMessage("weather?"),
        AssistantMessage(text="", tool_calls=[ToolCall("call_1", "get_weather", '{"city": "Paris"}')]),
        ToolResultMessage("call_1", "get_weather", "sunny"),
        AssistantMessage(text="It is sunny."),
        UserMessage("thanks"),
    ]
    req = request(
        messages=history, system="Be brief.", tools=[ToolSpec("get_weather", "Weather", SCHEMA)], reasoning=True,
        temperature=0.1, max_tokens=256,
    )
    await collect(make(API, llm, client), req)
    sent = completions(llm, API)[-1]
    assert sent.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
            },
            {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
            {"role": "assistant", "content": "It is sunny."},
            {"role": "user", "content": "thanks"},
        ],
        "stream": True,
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                    "parameters": SCHEMA}}],
        "think": True,
        "options": {"temperature": 0.1, "num_predict": 256},
    }
    assert "authorization" not in sent.headers


async def test_bearer_when_a_key_is_set(llm, client):
    llm.enqueue(Reply.text("ok"))
    await collect(make(API, llm, client, key="ollama-cloud-key-1"))
    assert completions(llm, API)[-1].headers["authorization"] == "Bearer ollama-cloud-key-1"


async def test_model_not_found_message_passes_through(llm, client):
    llm.enqueue(Reply([Error(404, 'model "llama9" not found, try pulling it first')]))
    _, error = await collect_until_error(make(API, llm, client), request(model="llama9"))
    assert 'model "llama9" not found, try pulling it first' in error.message
    assert error.status == 404 and error.retryable is False


async def test_tool_call_without_id_gets_one(client):
    lines = (
        '{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f",'
        '"arguments":{"a":1}}}]},"done":false}\n'
        '{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",'
        '"prompt_eval_count":3,"eval_count":2}\n'
    )
    with FixedServer(lines, content_type="application/x-ndjson") as server:
        events = await collect(make(API, server.url, client))
    started = events[0]
    assert isinstance(started, ToolCallStarted) and started.id.startswith("call_")
    assert events[1:] == [
        ToolCallDelta(started.id, '{"a": 1}'),
        ToolCallFinished(started.id, "f", '{"a": 1}'),
        Usage(input_tokens=3, output_tokens=2),
        Finished("tool_calls"),
    ]


async def test_error_line_mid_stream(client):
    lines = '{"message":{"role":"assistant","content":"Hi"},"done":false}\n{"error":"out of memory"}\n'
    with FixedServer(lines, content_type="application/x-ndjson") as server:
        events, error = await collect_until_error(make(API, server.url, client))
    assert events == [TextDelta("Hi")]
    assert "out of memory" in error.message


async def test_list_models(client):
    with ScriptedLLMServer(ollama_models=["qwen3:0.6b", "llama3.2:1b"]) as server:
        assert await list_ollama_models(server.url, client) == ["qwen3:0.6b", "llama3.2:1b"]
        assert await list_ollama_models(server.url + "/v1/", client) == ["qwen3:0.6b", "llama3.2:1b"]
        assert [r.path for r in server.requests] == ["/api/tags", "/api/tags"]


async def test_list_models_default(llm, client):
    assert await list_ollama_models(llm.url, client) == ["llama3.2:1b"]


async def test_list_models_unreachable_or_not_ollama(client):
    assert await list_ollama_models(f"http://127.0.0.1:{free_port()}", client, timeout=0.5) == []
    with FixedServer("<html>not ollama</html>", content_type="text/html") as server:
        assert await list_ollama_models(server.url, client) == []
    with FixedServer("nope", status=404) as server:
        assert await list_ollama_models(server.url, client) == []
