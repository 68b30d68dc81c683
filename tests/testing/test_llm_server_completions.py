"""The scripted LLM server's raw-completion endpoints: OpenAI-compatible ``/v1/completions`` and Ollama
``/api/generate``, streamed and not, with errors in each API's shape."""

from __future__ import annotations

import json

import httpx

from eca_notebook.testing import Error, Reply, ScriptedLLMServer, Text


def test_openai_completions_stream_and_whole():
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply([Text("a"), Text("b")]), Reply([Text("a"), Text("b")]))
        body = {"model": "m", "prompt": "x", "suffix": "y", "stream": True}
        streamed = httpx.post(f"{llm.url}/v1/completions", json=body, timeout=10)
        whole = httpx.post(f"{llm.url}/v1/completions", json={**body, "stream": False}, timeout=10).json()
        assert llm.requests[0].body["suffix"] == "y"
    events = [json.loads(line[6:]) for line in streamed.text.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    assert "".join(e["choices"][0]["text"] for e in events) == "ab"
    assert events[-1]["choices"][0]["finish_reason"] == "stop"
    assert streamed.text.rstrip().endswith("data: [DONE]")
    assert whole["object"] == "text_completion" and whole["choices"][0]["text"] == "ab"


def test_ollama_generate_stream_and_whole():
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply([Text("a"), Text("b")]), Reply.text("ab"), Reply([Error(400, "no insert")]))
        streamed = httpx.post(f"{llm.url}/api/generate", json={"model": "m", "prompt": "x"}, timeout=10)
        whole = httpx.post(f"{llm.url}/api/generate", json={"model": "m", "prompt": "x", "stream": False},
                           timeout=10).json()
        refused = httpx.post(f"{llm.url}/api/generate", json={"model": "m", "prompt": "x", "suffix": "y"}, timeout=10)
    lines = [json.loads(line) for line in streamed.text.splitlines() if line.strip()]
    assert "".join(line["response"] for line in lines) == "ab" and lines[-1]["done"] is True
    assert whole["response"] == "ab" and whole["done"] is True
    assert refused.status_code == 400 and refused.json() == {"error": "no insert"}
