"""Behaviour every provider shares (streaming, errors, retries, timeouts, cancellation), run against all four APIs
through the real scripted server."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from eca_notebook.providers import (
    Finished,
    ProviderSettings,
    ReasoningDelta,
    ReasoningFinished,
    ReasoningStarted,
    TextDelta,
    Timeouts,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    Usage,
    create_provider,
    make_http_client,
)
from eca_notebook.providers._http import endpoint_url, error_details, key_env_var
from eca_notebook.testing import (
    Cut,
    Error,
    Reasoning,
    Reply,
    Stall,
    StreamError,
    Text,
    ToolCall,
)
from eca_notebook.testing import Usage as UsageStep

from ._helpers import APIS, FixedServer, collect, collect_until_error, completions, free_port, make, request, sse

each_api = pytest.mark.parametrize("api", APIS)


# -- streaming ---------------------------------------------------------------------------------------------------


@each_api
async def test_text_stream_in_order(api, llm, client):
    llm.enqueue(Reply([Text("Hel"), Text("lo"), Text(" world")]))
    events = await collect(make(api, llm, client))
    assert events == [TextDelta("Hel"), TextDelta("lo"), TextDelta(" world"), Usage(), Finished("end_turn")]


@each_api
async def test_tool_call_started_deltas_finished(api, llm, client):
    args = '{"path": "src/app.py", "limit": 20}'
    llm.enqueue(Reply([Text("Reading."), ToolCall("call_abc", "read_file", args, chunks=4)]))
    events = await collect(make(api, llm, client))

    kinds = [type(e) for e in events]
    assert kinds[0] is TextDelta
    started = kinds.index(ToolCallStarted)
    finished = kinds.index(ToolCallFinished)
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert started < kinds.index(ToolCallDelta) < finished
    assert all(started < events.index(d) < finished for d in deltas)
    assert "".join(d.arguments_delta for d in deltas) == args
    assert len(deltas) == (1 if api == "ollama" else 4)  # Ollama sends whole calls
    assert events[started] == ToolCallStarted("call_abc", "read_file", 0)
    assert events[finished] == ToolCallFinished("call_abc", "read_file", args)
    assert events[-1] == Finished("tool_calls")


@each_api
async def test_parallel_tool_calls_are_indexed(api, llm, client):
    llm.enqueue(Reply([ToolCall("c1", "a", '{"x": 1}'), ToolCall("c2", "b", '{"y": 2}')]))
    events = await collect(make(api, llm, client))
    assert [(e.id, e.index) for e in events if isinstance(e, ToolCallStarted)] == [("c1", 0), ("c2", 1)]
    assert [(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallFinished)] == [
        ("c1", "a", '{"x": 1}'),
        ("c2", "b", '{"y": 2}'),
    ]


@each_api
async def test_reasoning_block_then_text(api, llm, client):
    llm.enqueue(Reply([Reasoning("Let me "), Reasoning("think."), Text("Answer.")]))
    events = await collect(make(api, llm, client))
    started, d1, d2, finished, text = events[:5]
    assert isinstance(started, ReasoningStarted)
    assert (d1, d2) == (ReasoningDelta(started.id, "Let me "), ReasoningDelta(started.id, "think."))
    assert isinstance(finished, ReasoningFinished) and finished.id == started.id
    assert text == TextDelta("Answer.")
    if api == "anthropic":
        assert finished.signature == "sig-1"
    if api == "openai-responses":
        assert finished.encrypted == "enc-1"


@each_api
async def test_usage_per_response(api, llm, client):
    llm.enqueue(Reply([Text("x"), UsageStep(input_tokens=120, output_tokens=7, cache_read_tokens=30)]))
    events = await collect(make(api, llm, client))
    assert events[-1] == Finished("end_turn")
    expected_cache = 0 if api == "ollama" else 30  # Ollama reports no cache figures
    assert events[-2] == Usage(input_tokens=120, output_tokens=7, cache_read_tokens=expected_cache)


@each_api
async def test_max_tokens_stop_reason(api, llm, client):
    llm.enqueue(Reply([Text("trunc")], stop_reason="max_tokens"))
    events = await collect(make(api, llm, client))
    assert events[-1] == Finished("max_tokens")


@each_api
async def test_extra_deep_merged_and_headers_sent(api, llm, client):
    llm.enqueue(Reply.text("ok"))
    provider = make(api, llm, client, headers={"x-provider": "p1", "x-both": "provider"})
    req = request(extra={"custom": {"a": 1, "nested": {"b": 2}}, "stream": True, "gone": None},
                  extra_headers={"x-both": "model"})
    await collect(provider, req)
    sent = completions(llm, api)[-1]
    assert sent.body["custom"] == {"a": 1, "nested": {"b": 2}}
    assert sent.body["stream"] is True
    assert "gone" not in sent.body  # null in extraPayload removes a key: never sent as null
    assert sent.headers["x-provider"] == "p1"
    assert sent.headers["x-both"] == "model"  # per-model headers win over provider headers
    assert sent.headers["content-type"] == "application/json"


# -- errors ----------------------------------------------------------------------------------------------------


@each_api
async def test_429_with_retry_after_then_success(api, llm, client):
    llm.enqueue(Reply([Error(429, "slow down", retry_after=0)]), Reply.text("done"))
    events = await collect(make(api, llm, client))
    assert events[0] == TextDelta("done")
    assert len(completions(llm, api)) == 2


@each_api
async def test_500_exhausts_retries(api, llm, client, caplog):
    caplog.set_level(logging.INFO, logger="eca_notebook.providers")
    llm.enqueue(*[Reply([Error(500, "upstream exploded")]) for _ in range(3)])
    _, error = await collect_until_error(make(api, llm, client, max_retries=2))
    assert error.retryable is True
    assert error.status == 500
    assert "upstream exploded" in error.message
    assert "gave up after 2 retries" in error.message
    assert len(completions(llm, api)) == 3
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2


@each_api
async def test_401_names_env_var_and_never_the_key(api, llm, client, caplog):
    caplog.set_level(logging.DEBUG)
    key = "sk-live-SECRET-0123456789abcdef"
    llm.enqueue(Reply([Error(401, f"Incorrect API key provided: {key}.")]))
    _, error = await collect_until_error(make(api, llm, client, id="my-prov", key=key))
    assert error.status == 401
    assert error.retryable is False
    assert "MY_PROV_API_KEY" in error.message
    assert key not in error.message and key not in str(error)
    assert "***" in error.message
    assert all(key not in r.getMessage() for r in caplog.records)
    assert len(completions(llm, api)) == 1  # 401 is not retried


@each_api
async def test_cut_stream_is_an_unexpected_end(api, llm, client):
    llm.enqueue(Reply([Text("partial"), Cut()]))
    events, error = await collect_until_error(make(api, llm, client))
    assert events == [TextDelta("partial")]
    assert "ended unexpectedly" in error.message
    assert error.retryable is True


@each_api
async def test_graceful_end_without_terminal_event(api, llm, client):
    llm.enqueue(Reply([Text("partial"), Cut(graceful=True)]))
    events, error = await collect_until_error(make(api, llm, client))
    assert events == [TextDelta("partial")]
    assert "ended unexpectedly" in error.message


@each_api
async def test_stall_hits_idle_timeout(api, llm, client):
    llm.enqueue(Reply([Text("a"), Stall(30), Text("b")]))
    provider = make(api, llm, client, timeouts=Timeouts(read=0.3))
    events, error = await collect_until_error(provider)
    assert events == [TextDelta("a")]
    assert "no data from test for 0.3 s" in error.message
    assert error.retryable is True
    assert await asyncio.to_thread(llm.wait_for_disconnect, 10)  # we hung up; the server noticed


@each_api
async def test_in_stream_error_event(api, llm, client):
    llm.enqueue(Reply([Text("a"), StreamError("the model is overloaded, try later")]))
    events, error = await collect_until_error(make(api, llm, client))
    assert events == [TextDelta("a")]
    assert "the model is overloaded, try later" in error.message
    assert len(completions(llm, api)) == 1  # mid-stream: never retried


@each_api
async def test_connection_refused_names_the_url(api, client):
    url = f"http://127.0.0.1:{free_port()}"
    provider = make(api, url, client, max_retries=1)
    _, error = await collect_until_error(provider)
    assert "cannot connect to test at " + url in error.message
    assert "refused" in error.message
    assert error.retryable is True


@each_api
async def test_empty_queue_fails_loudly(api, llm, client):
    _, error = await collect_until_error(make(api, llm, client, max_retries=0))
    assert "no scripted reply queued" in error.message
    assert error.status == 500


@each_api
async def test_cancellation_closes_the_connection(api, llm, client):
    llm.enqueue(Reply([Text("first"), Stall(30), Text("never")]))
    provider = make(api, llm, client)
    got_first = asyncio.Event()
    seen = []

    async def consume():
        async for event in provider.stream(request()):
            seen.append(event)
            got_first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [TextDelta("first")]
    assert await asyncio.to_thread(llm.wait_for_disconnect, 10)


@each_api
async def test_breaking_out_of_the_stream_closes_the_connection(api, llm, client):
    llm.enqueue(Reply([Text("first"), Stall(30), Text("never")]))
    stream = make(api, llm, client).stream(request())
    assert await stream.__anext__() == TextDelta("first")
    await stream.aclose()
    assert await asyncio.to_thread(llm.wait_for_disconnect, 10)


# -- retry policy details (one API is enough: the loop is shared) ------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
async def test_retryable_statuses(status, llm, client):
    llm.enqueue(Reply([Error(status, "transient")]), Reply.text("ok"))
    events = await collect(make("openai-chat", llm, client))
    assert events[0] == TextDelta("ok")
    assert len(completions(llm, "openai-chat")) == 2


@pytest.mark.parametrize("status", [400, 403, 404, 422])
async def test_client_errors_are_not_retried(status, llm, client):
    llm.enqueue(Reply([Error(status, "bad request body")]), Reply.text("unused"))
    _, error = await collect_until_error(make("openai-chat", llm, client))
    assert error.status == status and error.retryable is False
    assert "bad request body" in error.message
    assert len(completions(llm, "openai-chat")) == 1
    if status == 404:
        assert llm.url in error.message  # tells the user which URL was wrong


async def test_retry_after_ms_is_honoured(llm, client):
    llm.enqueue(Reply([Error(503, "busy", retry_after=0.05)]), Reply.text("ok"))
    assert (await collect(make("anthropic", llm, client)))[0] == TextDelta("ok")
    assert len(completions(llm, "anthropic")) == 2


async def test_retry_after_longer_than_max_delay_fails_at_once(llm, client):
    llm.enqueue(Reply([Error(429, "quota window", retry_after=120)]), Reply.text("unused"))
    _, error = await collect_until_error(make("openai-responses", llm, client, retry_max_delay=5))
    assert error.retryable is True and error.status == 429
    assert "wait 120 s" in error.message
    assert len(completions(llm, "openai-responses")) == 1


async def test_insufficient_quota_is_not_retried(llm, client):
    # OpenAI answers 429 for an exhausted account too; retrying cannot help there.
    llm.enqueue(Reply([Error(429, "You exceeded your current quota", code="insufficient_quota")]), Reply.text("x"))
    _, error = await collect_until_error(make("openai-responses", llm, client))
    assert error.status == 429 and error.retryable is False
    assert "exceeded your current quota" in error.message
    assert len(completions(llm, "openai-responses")) == 1


async def test_cancel_during_retry_backoff(llm, client):
    llm.enqueue(Reply([Error(503, "busy", retry_after=20)]), Reply.text("unused"))
    provider = make("openai-chat", llm, client, retry_max_delay=60)
    task = asyncio.create_task(collect(provider))
    while not completions(llm, "openai-chat"):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # now sleeping in the backoff
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(completions(llm, "openai-chat")) == 1 and llm.pending == 1


async def test_mid_stream_failure_is_not_retried(llm, client):
    llm.enqueue(Reply([Text("seen"), Cut()]), Reply.text("would duplicate"))
    events, error = await collect_until_error(make("openai-chat", llm, client))
    assert events == [TextDelta("seen")]
    assert len(completions(llm, "openai-chat")) == 1
    assert llm.pending == 1


async def test_proxy_from_environment(llm, monkeypatch):
    """make_http_client trusts HTTP_PROXY: the scripted server acts as the proxy for an unresolvable host."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", llm.url)
    monkeypatch.setenv("http_proxy", llm.url)
    llm.enqueue(Reply.text("via proxy"))
    async with make_http_client() as proxied:
        provider = make("openai-chat", "http://llm.example.invalid/v1", proxied)
        assert (await collect(provider))[0] == TextDelta("via proxy")
    assert completions(llm, "openai-chat")[-1].headers["host"] == "llm.example.invalid"


# -- helpers -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path", "default", "expected"),
    [
        ("https://api.openai.com", None, "/v1/responses", "https://api.openai.com/v1/responses"),
        ("https://api.openai.com/", None, "/v1/responses", "https://api.openai.com/v1/responses"),
        ("http://127.0.0.1:8080/v1", None, "/v1/chat/completions", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", None, "/v1/chat/completions", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://localhost:11434", None, "/api/chat", "http://localhost:11434/api/chat"),
        ("https://openrouter.ai/api", "/v1/chat/completions", "/v1/chat/completions",
         "https://openrouter.ai/api/v1/chat/completions"),
        ("http://h/v1", "/v1/chat/completions", "/v1/chat/completions", "http://h/v1/v1/chat/completions"),
        ("http://h", "chat", "/v1/chat/completions", "http://h/chat"),
    ],
)
def test_endpoint_url(url, path, default, expected):
    assert endpoint_url(url, path, default) == expected


def test_key_env_var():
    assert key_env_var("openai") == "OPENAI_API_KEY"
    assert key_env_var("my-vllm") == "MY_VLLM_API_KEY"
    assert key_env_var("lm.studio") == "LM_STUDIO_API_KEY"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"error": {"message": "Invalid model", "type": "invalid_request_error", "code": "model_not_found"}}',
         ("Invalid model", "model_not_found")),
        (b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
         ("Overloaded", "overloaded_error")),
        (b'{"error": "model \\"x\\" not found, try pulling it first"}',
         ('model "x" not found, try pulling it first', None)),
        (b'{"detail": "Not Found"}', ("Not Found", None)),
        (b"<html>502 Bad Gateway</html>", ("<html>502 Bad Gateway</html>", None)),
        (b"", ("(empty response body)", None)),
    ],
)
def test_error_details(raw, expected):
    assert error_details(raw) == expected


def test_create_provider_rejects_unknown_api():
    with pytest.raises(ValueError, match="unknown api 'gemini'"):
        settings = ProviderSettings(id="x", api="gemini", url="http://h")  # type: ignore[arg-type]
        create_provider(settings, httpx.AsyncClient())


def test_settings_repr_hides_the_key():
    s = ProviderSettings(id="x", api="openai-chat", url="http://h", key="sk-very-secret-value")
    assert "sk-very-secret-value" not in repr(s)


async def test_request_timeout_is_per_provider(llm, client):
    """The shared client has generous defaults; each provider's own Timeouts apply to its requests."""
    assert client.timeout.read == 120.0
    llm.enqueue(Reply([Stall(30)]))
    _, error = await collect_until_error(make("ollama", llm, client, timeouts=Timeouts(read=0.2)))
    assert "no data from test for 0.2 s" in error.message


def test_providers_do_not_import_upper_layers():
    import subprocess
    import sys

    code = (
        "import sys, eca_notebook.providers, eca_notebook.testing;"
        "bad=[m for m in sys.modules if m.split('.')[0] in ('IPython','ipywidgets','tornado','jupyter_server')"
        " or m.startswith(('eca_notebook.engine','eca_notebook.notebook','eca_notebook.server'))];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# Streams that carry content and a normal end but no token counts at all (a proxy that drops them).
_NO_USAGE = {
    "openai-responses": ("text/event-stream", sse(
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m", "delta": "hi"}),
        ("response.completed", {"type": "response.completed",
                                "response": {"status": "completed", "output": [], "usage": None}}),
    )),
    "openai-chat": ("text/event-stream", sse(
        (None, {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}),
        (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"total": "n/a"}}),
        (None, "[DONE]"),
    )),
    "anthropic": ("text/event-stream", sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_1"}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}),
    )),
    "ollama": ("application/x-ndjson",
               '{"message": {"role": "assistant", "content": "hi"}, "done": false}\n'
               '{"message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop"}\n'),
}


@each_api
async def test_unreported_usage_yields_no_usage_event(api, client):
    content_type, body = _NO_USAGE[api]
    with FixedServer(body, content_type=content_type) as server:
        events = await collect(make(api, server.url, client))
    assert TextDelta("hi") in events
    assert not [e for e in events if isinstance(e, Usage)]  # not Usage(0, 0): nothing was measured
    assert events[-1] == Finished("end_turn")


@each_api
async def test_finished_carries_the_providers_own_reason(api, llm, client):
    llm.enqueue(Reply([Text("trunc")], stop_reason="max_tokens"), Reply.text("ok"))
    provider = make(api, llm, client)
    truncated = (await collect(provider))[-1]
    done = (await collect(provider))[-1]
    raw = {"openai-responses": ("max_output_tokens", "completed"), "openai-chat": ("length", "stop"),
           "anthropic": ("max_tokens", "end_turn"), "ollama": ("length", "stop")}[api]
    assert (truncated.stop_reason, truncated.reason) == ("max_tokens", raw[0])
    assert (done.stop_reason, done.reason) == ("end_turn", raw[1])
