"""The scripted LLM server emits each API's real wire format, records requests, and fails loudly when unscripted.

These tests read the raw bytes with plain httpx, independent of the providers under test elsewhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from eca_notebook.testing import (
    Cut,
    Delay,
    Error,
    Reasoning,
    Reply,
    ScriptedLLMServer,
    Stall,
    StreamError,
    Text,
    ToolCall,
    Usage,
)
from eca_notebook.testing.llm_server import split_text


@pytest.fixture(scope="module")
def _server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def llm(_server: ScriptedLLMServer) -> ScriptedLLMServer:
    _server.clear()
    return _server


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10, trust_env=False) as client:
        yield client


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) pairs from an SSE body."""
    out = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        out.append((name, "\n".join(data)))
    return out


def post(http: httpx.Client, llm: ScriptedLLMServer, path: str, body: dict[str, Any]) -> httpx.Response:
    return http.post(llm.url + path, json=body)


FULL = Reply([Reasoning("hm"), Text("Hi"), Text("!"), ToolCall("call_1", "f", '{"a": 1}', chunks=2), Usage(9, 4, 2)])


# -- wire formats ------------------------------------------------------------------------------------------------


def test_chat_completions_chunks(llm, http):
    llm.enqueue(FULL)
    r = post(http, llm, "/v1/chat/completions", {"model": "gpt-x", "stream": True,
                                                   "stream_options": {"include_usage": True}})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["transfer-encoding"] == "chunked"
    events = sse_events(r.text)
    assert all(name is None for name, _ in events)
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(d) for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "gpt-x" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"reasoning_content": "hm"}
    assert deltas[2:4] == [{"content": "Hi"}, {"content": "!"}]
    assert deltas[4] == {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                         "function": {"name": "f", "arguments": ""}}]}
    assert "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas[5:7]) == '{"a": 1}'
    finals = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finals] == ["tool_calls"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15,
                                   "prompt_tokens_details": {"cached_tokens": 2}}


def test_chat_completions_without_include_usage_has_no_usage_chunk(llm, http):
    llm.enqueue(Reply.text("x"))
    r = post(http, llm, "/chat/completions", {"model": "m", "stream": True})
    chunks = [json.loads(d) for _, d in sse_events(r.text)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


def test_responses_events(llm, http):
    llm.enqueue(FULL)
    r = post(http, llm, "/v1/responses", {"model": "gpt-5", "stream": True})
    events = sse_events(r.text)
    names = [n for n, _ in events]
    payloads = [json.loads(d) for _, d in events]
    assert [p["type"] for p in payloads] == names  # event name repeated as "type"
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    completed = payloads[-1]["response"]
    assert completed["status"] == "completed" and completed["model"] == "gpt-5"
    assert [i["type"] for i in completed["output"]] == ["reasoning", "message", "function_call"]
    assert completed["output"][0]["encrypted_content"] == "enc-1"
    assert completed["output"][1]["content"] == [{"type": "output_text", "annotations": [], "text": "Hi!"}]
    assert completed["output"][2]["call_id"] == "call_1" and completed["output"][2]["arguments"] == '{"a": 1}'
    assert completed["usage"]["input_tokens"] == 11
    assert completed["usage"]["input_tokens_details"] == {"cached_tokens": 2}
    assert completed["usage"]["output_tokens"] == 4
    text_deltas = [p for p in payloads if p["type"] == "response.output_text.delta"]
    assert [p["delta"] for p in text_deltas] == ["Hi", "!"]
    assert all(p["item_id"] == completed["output"][1]["id"] for p in text_deltas)


def test_responses_max_tokens_is_incomplete(llm, http):
    llm.enqueue(Reply([Text("x")], stop_reason="max_tokens"))
    last = json.loads(sse_events(post(http, llm, "/v1/responses", {"model": "m"}).text)[-1][1])
    assert last["type"] == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_anthropic_events(llm, http):
    llm.enqueue(FULL)
    r = post(http, llm, "/v1/messages", {"model": "claude-x", "max_tokens": 10, "stream": True})
    events = sse_events(r.text)
    names = [n for n, _ in events]
    payloads = [json.loads(d) for _, d in events]
    assert [p["type"] for p in payloads] == names
    assert names == [
        "message_start", "ping",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_stop",
        "message_delta", "message_stop",
    ]
    start = payloads[0]["message"]
    assert start["model"] == "claude-x" and start["role"] == "assistant" and start["content"] == []
    assert start["usage"]["input_tokens"] == 9 and start["usage"]["cache_read_input_tokens"] == 2
    assert payloads[2] == {"type": "content_block_start", "index": 0,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
    assert payloads[3]["delta"] == {"type": "thinking_delta", "thinking": "hm"}
    assert payloads[4]["delta"] == {"type": "signature_delta", "signature": "sig-1"}
    assert payloads[7]["delta"] == {"type": "text_delta", "text": "Hi"}
    assert payloads[10]["content_block"] == {"type": "tool_use", "id": "call_1", "name": "f", "input": {}}
    assert [p["delta"]["partial_json"] for p in payloads[11:14]] == ["", '{"a"', ': 1}']
    assert {p["index"] for p in payloads[10:15]} == {2}
    assert payloads[-2]["delta"]["stop_reason"] == "tool_use"
    assert payloads[-2]["usage"] == {"output_tokens": 4}


def test_anthropic_signatures_count_blocks(llm, http):
    llm.enqueue(Reply([Reasoning("a"), Text("x"), Reasoning("b")]))
    payloads = [json.loads(d) for _, d in sse_events(post(http, llm, "/v1/messages", {"model": "m"}).text)]
    sigs = [p["delta"]["signature"] for p in payloads if p["type"] == "content_block_delta"
            and p["delta"]["type"] == "signature_delta"]
    assert sigs == ["sig-1", "sig-2"]


def test_ollama_ndjson(llm, http):
    llm.enqueue(FULL)
    r = post(http, llm, "/api/chat", {"model": "llama3.2:1b", "messages": []})
    assert r.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert all(line["model"] == "llama3.2:1b" for line in lines)
    assert [line["done"] for line in lines] == [False] * 4 + [True]
    assert lines[0]["message"] == {"role": "assistant", "content": "", "thinking": "hm"}
    assert lines[1]["message"] == {"role": "assistant", "content": "Hi"}
    assert lines[3]["message"]["tool_calls"] == [
        {"id": "call_1", "function": {"index": 0, "name": "f", "arguments": {"a": 1}}}
    ]
    final = lines[-1]
    assert final["done_reason"] == "stop"
    assert (final["prompt_eval_count"], final["eval_count"]) == (9, 4)


# -- errors and failure modes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", {"error": {"message": "slow", "type": "rate_limit_exceeded", "param": None,
                                            "code": "rate_limit_exceeded"}}),
        ("/v1/responses", {"error": {"message": "slow", "type": "rate_limit_exceeded", "param": None,
                                     "code": "rate_limit_exceeded"}}),
        ("/v1/messages", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
        ("/api/chat", {"error": "slow"}),
    ],
)
def test_error_step_in_each_format(llm, http, path, expected):
    llm.enqueue(Reply([Error(429, "slow", retry_after=2)]))
    r = post(http, llm, path, {"model": "m"})
    assert r.status_code == 429
    assert r.json() == expected
    assert r.headers["retry-after"] == "2"


def test_fractional_retry_after_uses_ms_header(llm, http):
    llm.enqueue(Reply([Error(503, retry_after=0.25)]))
    r = post(http, llm, "/v1/messages", {"model": "m"})
    assert (r.status_code, r.headers["retry-after-ms"], r.headers["retry-after"]) == (503, "250", "1")
    assert r.json()["error"]["type"] == "api_error"


def test_stream_error_formats(llm, http):
    llm.enqueue(*[Reply([Text("a"), StreamError("Overloaded")]) for _ in range(4)])
    chat = sse_events(post(http, llm, "/v1/chat/completions", {"model": "m"}).text)
    assert json.loads(chat[-1][1])["error"]["message"] == "Overloaded"
    resp = sse_events(post(http, llm, "/v1/responses", {"model": "m"}).text)
    assert resp[-1][0] == "error" and json.loads(resp[-1][1])["message"] == "Overloaded"
    anth = sse_events(post(http, llm, "/v1/messages", {"model": "m"}).text)
    assert anth[-1] == ("error", json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                                       "message": "Overloaded"}}))
    oll = post(http, llm, "/api/chat", {"model": "m"}).text.splitlines()
    assert json.loads(oll[-1]) == {"error": "Overloaded"}


def test_cut_leaves_the_chunked_body_incomplete(llm, http):
    llm.enqueue(Reply([Text("partial"), Cut()]))
    received = []
    with pytest.raises(httpx.RemoteProtocolError):
        with http.stream("POST", llm.url + "/v1/chat/completions", json={"model": "m"}) as r:
            for line in r.iter_lines():
                received.append(line)
    assert any('"content":"partial"' in line for line in received)


def test_graceful_cut_ends_cleanly_without_terminal_event(llm, http):
    llm.enqueue(Reply([Text("partial"), Cut(graceful=True)]))
    text = post(http, llm, "/v1/chat/completions", {"model": "m"}).text
    assert '"content":"partial"' in text and "[DONE]" not in text and "finish_reason\":\"stop" not in text


def test_empty_queue_is_a_loud_500(llm, http):
    r = post(http, llm, "/v1/messages", {"model": "m"})
    assert r.status_code == 500
    assert r.json() == {"error": {"message": "no scripted reply queued"}}


def test_unknown_endpoint_is_404(llm, http):
    assert http.post(llm.url + "/v2/whatever", json={}).status_code == 404
    assert http.get(llm.url + "/nope").status_code == 404


# -- recording and control ------------------------------------------------------------------------------------------


def test_requests_are_recorded_before_replying(llm, http):
    llm.enqueue(Reply([Stall(30)]))
    done = threading.Event()

    def call() -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(10, read=0.5), trust_env=False) as c:
                c.post(llm.url + "/v1/messages", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                       headers={"X-Custom": "Yes"})
        except httpx.ReadTimeout:
            pass
        finally:
            done.set()

    threading.Thread(target=call, daemon=True).start()
    assert done.wait(10)
    (recorded,) = llm.requests
    assert (recorded.method, recorded.path) == ("POST", "/v1/messages")
    assert recorded.body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert recorded.headers["x-custom"] == "Yes"  # keys lower-cased
    assert llm.wait_for_disconnect(10)


def test_fifo_across_endpoints(llm, http):
    llm.enqueue(Reply.text("one"), Reply.text("two"))
    first = post(http, llm, "/api/chat", {"model": "m"}).text
    second = post(http, llm, "/v1/chat/completions", {"model": "m"}).text
    assert '"one"' in first and '"two"' in second
    assert llm.pending == 0


def test_control_endpoints(llm, http):
    one = Reply([Text("a"), Delay(0.01), Text("b")]).to_json()
    assert http.post(llm.url + "/_scripted/enqueue", json=one).json() == {"queued": 1}
    assert http.post(llm.url + "/_scripted/enqueue", json=[Reply.text("c").to_json(), "plain"]).json() == {"queued": 2}
    assert http.post(llm.url + "/_scripted/enqueue", json=[{"type": "text", "text": "steps"}]).json() == {"queued": 1}
    assert llm.pending == 4
    body = post(http, llm, "/api/chat", {"model": "m"}).text
    assert '"content":"a"' in body and '"content":"b"' in body
    recorded = http.get(llm.url + "/_scripted/requests").json()
    assert [(r["method"], r["path"], r["body"]) for r in recorded] == [("POST", "/api/chat", {"model": "m"})]
    assert http.post(llm.url + "/_scripted/enqueue", json={"steps": [{"type": "bogus"}]}).status_code == 400
    assert http.post(llm.url + "/_scripted/clear").json() == {"cleared": True}
    assert llm.pending == 0 and llm.requests == []


def test_api_tags(http):
    with ScriptedLLMServer(ollama_models=["a:1b", "b:7b"]) as server:
        models = http.get(server.url + "/api/tags").json()["models"]
    assert [m["name"] for m in models] == ["a:1b", "b:7b"]
    assert {"model", "modified_at", "size", "digest", "details"} <= set(models[0])


# -- scripts --------------------------------------------------------------------------------------------------------


def test_chat_completions_tool_name_after_the_first_fragment(llm, http):
    llm.enqueue(Reply([ToolCall("call_1", "f", '{"a": 1}', chunks=2, name_late=True)]))
    r = post(http, llm, "/v1/chat/completions", {"model": "gpt-x", "stream": True})
    chunks = [json.loads(d) for _, d in sse_events(r.text)[:-1]]
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks if "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0] == {"index": 0, "id": "call_1", "type": "function", "function": {"arguments": ""}}
    assert calls[1]["function"] == {"arguments": '{"a"'} and calls[2]["function"] == {"name": "f"}
    assert calls[3]["function"] == {"arguments": ': 1}'}


def test_reply_json_round_trip():
    reply = Reply(
        [Text("t"), Reasoning("r"), ToolCall("i", "n", "{}", chunks=2), Usage(1, 2, 3), Error(500, "m", 1.5, "c"),
         StreamError("e", "overloaded_error"), Cut(graceful=True), Stall(0.5), Delay(0.1)],
        stop_reason="max_tokens",
    )
    data = reply.to_json()
    assert data["steps"][0] == {"type": "text", "text": "t"}
    assert data["steps"][2] == {"type": "tool_call", "id": "i", "name": "n", "arguments": "{}", "chunks": 2,
                                "name_late": False}
    assert Reply.from_json(json.loads(json.dumps(data))) == reply


def test_reply_text_chunks_and_stop_reason():
    assert Reply.text("abcdef", chunks=3).steps == [Text("ab"), Text("cd"), Text("ef")]
    assert Reply.text("").steps == [Text("")]
    assert Reply([Text("x")]).resolved_stop_reason() == "end_turn"
    assert Reply([ToolCall("i", "n", "{}")]).resolved_stop_reason() == "tool_calls"
    assert split_text("abc", 10) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        Reply.from_json({"steps": [{"type": "nope"}]})


# -- server lifecycle and speed -------------------------------------------------------------------------------------


def test_stop_interrupts_a_stall_and_drops_the_client(http):
    server = ScriptedLLMServer().start()
    server.enqueue(Reply([Text("a"), Stall(60)]))
    outcome: list[str] = []

    def call() -> None:
        try:
            with httpx.Client(timeout=30, trust_env=False) as c:
                c.post(server.url + "/v1/chat/completions", json={"model": "m"})
            outcome.append("completed")
        except httpx.HTTPError as exc:
            outcome.append(type(exc).__name__)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    while not server.requests:
        threading.Event().wait(0.01)
    server.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert outcome in (["RemoteProtocolError"], ["ReadError"])  # FIN or RST, depending on timing
    server.stop()  # idempotent


def test_large_reply_streams_completely(llm, http):
    n = 20_000
    llm.enqueue(Reply([Text(f"t{i} ") for i in range(n)]))
    with http.stream("POST", llm.url + "/v1/chat/completions", json={"model": "m"}) as r:
        data_lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert len(data_lines) == n + 3  # role chunk, n text chunks, finish chunk, [DONE]


def test_module_main_serves_a_script(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([Reply.text("from file").to_json()]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "eca_notebook.testing.llm_server", "--script", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("URL http://127.0.0.1:")
        url = first.split(" ", 1)[1]
        with httpx.Client(timeout=10, trust_env=False) as c:
            body = c.post(url + "/api/chat", json={"model": "m"}).text
        assert '"content":"from file"' in body
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 0
