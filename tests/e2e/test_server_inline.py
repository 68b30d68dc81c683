"""``completion/inline`` and ``rewrite/prompt`` through a real ``eca-notebook server`` process (the stdio door),
against the scripted LLM server: every way of asking a model (chat prompt, OpenAI-compatible and Ollama
fill-in-the-middle), cancellation, supersession, both key spellings, failures answered as results."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from eca_notebook.protocol.errors import REQUEST_CANCELLED, RpcError
from eca_notebook.testing.llm_server import Error, Reasoning, Reply, Stall, Text
from tests._waiting import until

from .conftest import server_env

pytestmark = pytest.mark.e2e

DOC = "import math\n\ndef area(r):\n    return \n\nprint(area(2))\n"
CURSOR = {"line": 4, "character": 12}  # 1-based: after "    return "


def inline(text: str = DOC, version: int = 1, position: dict | None = None, **extra: Any) -> dict[str, Any]:
    return {"docText": text, "docVersion": version, "position": position or CURSOR, **extra}


def posts(llm, path: str | None = None) -> list:
    return [r for r in llm.requests if r.method == "POST" and (path is None or r.path == path)]


async def start(spawn, home, llm, workspace, config: dict | None = None):
    env = server_env(home, llm)
    if config is not None:
        merged = json.loads(env["ECA_CONFIG"])
        merged.update(config)
        env["ECA_CONFIG"] = json.dumps(merged)
    eca = await spawn(env=env)
    eca.endpoint.register("rewrite/contentReceived", lambda params: eca._record("rewrite/contentReceived", params))
    await eca.initialize(workspace)
    return eca


# -- completion/inline -------------------------------------------------------------------------------------------


async def test_completion_by_chat_prompt(spawn, home, llm, workspace):
    llm.enqueue(Reply([Text("```python\n"), Text("math.pi * r ** 2"), Text("\n```")]))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "openai/gpt-4.1"}})

    result = await eca.request("completion/inline", inline(path=str(workspace / "geo.py")))

    assert result["items"][0]["text"] == "math.pi * r ** 2"
    assert result["items"][0]["docVersion"] == 1
    assert result["items"][0]["range"] == {"start": CURSOR, "end": CURSOR}
    [request] = posts(llm, "/v1/responses")
    sent = json.dumps(request.body)
    assert "<ECA_TAG>" in sent and "ECA Code Completer" in sent
    assert "def area(r):\\n    return <ECA_TAG>\\n\\nprint(area(2))" in sent


async def test_kebab_case_keys_are_accepted(spawn, home, llm, workspace):
    llm.enqueue(Reply.text("math.pi * r * r"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "openai/gpt-4.1"}})

    result = await eca.request("completion/inline", {"doc-text": DOC, "doc-version": 7, "position": CURSOR})

    assert result["items"][0]["text"] == "math.pi * r * r"
    assert result["items"][0]["docVersion"] == 7


async def test_openai_compatible_fill_in_the_middle_sends_the_suffix(spawn, home, llm, workspace):
    llm.enqueue(Reply([Text("math.pi"), Text(" * r ** 2\n\nprint('never')")]))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    result = await eca.request("completion/inline", inline())

    assert result["items"][0]["text"] == "math.pi * r ** 2"  # cut at the blank line
    [request] = posts(llm)
    assert request.path == "/v1/completions"
    assert request.body["prompt"].endswith("def area(r):\n    return")  # the trailing space held back
    assert request.body["suffix"].startswith("\n\nprint(area(2))")
    assert request.body["model"] == "qwen3" and request.body["stream"] is True


async def test_ollama_fill_in_the_middle_by_default(spawn, home, llm, workspace):
    llm.enqueue(Reply.text("math.pi * r ** 2"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "ollama/llama3.2:1b"}})

    result = await eca.request("completion/inline", inline())

    assert result["items"][0]["text"] == "math.pi * r ** 2"
    [request] = posts(llm)
    assert request.path == "/api/generate"
    assert request.body["suffix"].startswith("\n\nprint(area(2))") and "raw" not in request.body


async def test_provider_error_is_a_warning_result_and_the_server_goes_on(spawn, home, llm, workspace):
    llm.enqueue(Reply([Error(500, "model exploded")]), Reply([Error(500, "again")]), Reply([Error(500, "again")]),
                Reply([Error(500, "again")]))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    result = await eca.request("completion/inline", inline())

    assert result["error"]["type"] == "warning"
    assert "model exploded" in result["error"]["message"]
    assert len(posts(llm)) == 1  # no retries: a late suggestion is worth nothing
    llm.clear()
    llm.enqueue(Reply.text("2 * math.pi * r"))
    result = await eca.request("completion/inline", inline(version=2))
    assert result["items"][0]["text"] == "2 * math.pi * r"
    assert (await eca.request("chat/list", {}))["chats"] == []  # no chat history was created


async def test_cancel_request_stops_the_model_call(spawn, home, llm, workspace):
    llm.enqueue(Reply([Stall(30), Text("late")]))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    task = asyncio.create_task(eca.request("completion/inline", inline()))
    await until(lambda: len(posts(llm)) == 1)
    task.cancel()  # our endpoint sends $/cancelRequest
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)
    llm.enqueue(Reply.text("ok"))
    assert (await eca.request("completion/inline", inline(version=2)))["items"][0]["text"] == "ok"


async def test_cancel_request_answers_request_cancelled(spawn, home, llm, workspace):
    llm.enqueue(Reply([Stall(30), Text("late")]))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})
    answer: asyncio.Future = asyncio.get_running_loop().create_future()
    proc_stream = eca.endpoint._stream
    # a raw request with a known id, then its cancel: the answer is the JSON-RPC "request cancelled" error
    eca.endpoint._pending[9999] = answer
    await proc_stream.write({"jsonrpc": "2.0", "id": 9999, "method": "completion/inline", "params": inline()})
    await until(lambda: len(posts(llm)) == 1)
    await proc_stream.write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 9999}})
    with pytest.raises(RpcError) as caught:
        await asyncio.wait_for(answer, 30)
    assert caught.value.code == REQUEST_CANCELLED


async def test_newer_request_for_the_same_document_supersedes_the_older(spawn, home, llm, workspace):
    llm.enqueue(Reply([Stall(30), Text("old")]), Reply.text("new"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    older = asyncio.create_task(eca.request("completion/inline", inline(path="/tmp/a.py")))
    await until(lambda: len(posts(llm)) == 1)
    newer = await eca.request("completion/inline", inline(version=2, path="/tmp/a.py"))

    assert newer["items"][0]["text"] == "new"
    assert (await asyncio.wait_for(older, 10)) == {"error": {"type": "info", "message": "superseded"}}
    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)


async def test_requests_for_different_documents_run_side_by_side(spawn, home, llm, workspace):
    llm.enqueue(Reply([Stall(1), Text("first")]), Reply.text("second"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    one = asyncio.create_task(eca.request("completion/inline", inline(path="/tmp/a.py")))
    await until(lambda: len(posts(llm)) == 1)
    two = await eca.request("completion/inline", inline(path="/tmp/b.py"))

    assert two["items"][0]["text"] == "second"
    assert (await one)["items"][0]["text"] == "first"


async def test_without_a_path_the_connection_is_the_document(spawn, home, llm, workspace):
    llm.enqueue(Reply([Stall(30), Text("old")]), Reply.text("new"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    older = asyncio.create_task(eca.request("completion/inline", inline()))
    await until(lambda: len(posts(llm)) == 1)
    newer = await eca.request("completion/inline", inline(version=2))

    assert newer["items"][0]["text"] == "new"
    assert (await older)["error"]["message"] == "superseded"


async def test_nothing_to_suggest_is_info(spawn, home, llm, workspace):
    llm.enqueue(Reply.text("\n\n"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "local-vllm/qwen3", "fim": True}})

    result = await eca.request("completion/inline", inline())

    assert result == {"error": {"type": "info", "message": "No suggestions found"}}


# -- rewrite/prompt ----------------------------------------------------------------------------------------------


def rewrite_params(id: str = "rw-1", **extra: Any) -> dict[str, Any]:
    return {"id": id, "text": "def area(r):\n    return 3.14 * r * r", "prompt": "use math.pi",
            "range": {"start": {"line": 3, "character": 1}, "end": {"line": 4, "character": 25}}, **extra}


def rewrite_contents(eca, rewrite_id: str = "rw-1") -> list[dict]:
    return [p["content"] for p in eca.of("rewrite/contentReceived") if p["rewriteId"] == rewrite_id]


async def test_rewrite_streams_started_text_replace_finished(spawn, home, llm, workspace):
    llm.enqueue(Reply([Reasoning("thinking"), Text("```python\n"), Text("def area(r):\n"),
                       Text("    return math.pi * r * r\n"), Text("```")]))
    eca = await start(spawn, home, llm, workspace, {"rewrite": {"model": "local-vllm/qwen3"}})
    (workspace / "geo.py").write_text(DOC)

    result = await eca.request("rewrite/prompt", rewrite_params(path=str(workspace / "geo.py")))

    assert result == {"status": "prompting", "model": "local-vllm/qwen3"}
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "finished")
    contents = rewrite_contents(eca)
    kinds = [c["type"] for c in contents]
    assert kinds[:2] == ["started", "reasoning"]
    assert kinds[-2:] == ["replace", "finished"]
    assert "".join(c["text"] for c in contents if c["type"] == "text").startswith("```python\ndef area")
    assert contents[-2]["text"] == "def area(r):\n    return math.pi * r * r"
    assert isinstance(contents[-1]["totalTimeMs"], int)
    [request] = posts(llm)
    system = request.body["messages"][0]["content"]
    assert "Generate ONLY the text to be replaced" in system
    assert "- File path: " in system and "print(area(2))" in system  # the file around the selection
    assert request.body["messages"][-1]["content"] == "use math.pi"


async def test_rewrite_error_then_finished(spawn, home, llm, workspace):
    llm.enqueue(*[Reply([Error(500, "rewrite exploded")])] * 4)
    eca = await start(spawn, home, llm, workspace, {"rewrite": {"model": "local-vllm/qwen3"}})

    await eca.request("rewrite/prompt", rewrite_params())
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "finished",
                       timeout=60)

    kinds = [c["type"] for c in rewrite_contents(eca)]
    assert kinds == ["error", "finished"]
    assert "rewrite exploded" in rewrite_contents(eca)[0]["message"]


async def test_rewrite_stop(spawn, home, llm, workspace):
    llm.enqueue(Reply([Text("def area"), Stall(30), Text("(r): pass")]))
    eca = await start(spawn, home, llm, workspace, {"rewrite": {"model": "local-vllm/qwen3"}})

    await eca.request("rewrite/prompt", rewrite_params())
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "text")
    await eca.notify("rewrite/stop", {"id": "rw-1"})
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "finished")

    assert [c["type"] for c in rewrite_contents(eca)] == ["started", "text", "finished"]
    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)


async def test_rewrite_uses_the_chat_model_by_default(spawn, home, llm, workspace):
    llm.enqueue(Reply.text("x = 1"))
    eca = await start(spawn, home, llm, workspace)

    result = await eca.request("rewrite/prompt", rewrite_params())
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "finished")

    assert result["model"] == "anthropic/claude-sonnet-4-5"  # the chat's default model
    assert [c["type"] for c in rewrite_contents(eca)] == ["started", "text", "finished"]


async def test_ollama_refusing_fill_in_the_middle_falls_back_to_chat(spawn, home, llm, workspace):
    llm.enqueue(Reply([Error(400, "llama3.2:1b does not support insert")]), Reply.text("math.pi * r ** 2"),
                Reply.text("2 * r"))
    eca = await start(spawn, home, llm, workspace, {"completion": {"model": "ollama/llama3.2:1b"}})

    first = await eca.request("completion/inline", inline())
    second = await eca.request("completion/inline", inline(version=2))

    assert first["items"][0]["text"] == "math.pi * r ** 2"
    assert second["items"][0]["text"] == "2 * r"
    assert [r.path for r in posts(llm) if r.path != "/api/tags"] == ["/api/generate", "/api/chat", "/api/chat"]
