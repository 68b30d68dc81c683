"""Raw completion (``complete``): OpenAI-compatible ``/v1/completions`` and Ollama ``/api/generate`` against the
scripted server — bodies, streamed pieces, errors, no retries, stopping early closes the stream."""

from __future__ import annotations

import asyncio

import pytest

from eca_notebook.providers import CompletionRequest, ProviderError
from eca_notebook.providers._complete import completions_url
from eca_notebook.testing import Error, Reply, Stall, StreamError, Text

from ._helpers import FixedServer, make


def fim(**kw) -> CompletionRequest:
    return CompletionRequest(model="coder", prefix="def f(x):\n    return", suffix="\n\nprint(f(2))\n", **kw)


async def pieces(provider, request: CompletionRequest) -> list[str]:
    return [piece async for piece in provider.complete(request)]


def test_completions_url_sits_next_to_the_chat_url():
    assert completions_url("http://h/v1/chat/completions") == "http://h/v1/completions"
    assert completions_url("http://h/api/chat/completions") == "http://h/api/completions"
    assert completions_url("http://h") == "http://h/v1/completions"


async def test_openai_compatible_fill_in_the_middle(llm, client):
    llm.enqueue(Reply([Text(" x"), Text(" * 2")]))
    provider = make("openai-chat", llm, client, key="sk-x")

    got = await pieces(provider, fim(max_tokens=32, temperature=0.0, stop=["\n\n", "a", "b", "c", "d"]))

    assert got == [" x", " * 2"]
    [request] = llm.requests
    assert request.path == "/v1/completions"
    assert request.body == {"model": "coder", "prompt": "def f(x):\n    return", "suffix": "\n\nprint(f(2))\n",
                            "stream": True, "max_tokens": 32, "temperature": 0.0, "stop": ["\n\n", "a", "b", "c"]}
    assert request.headers["authorization"] == "Bearer sk-x"


async def test_ollama_generate_with_suffix_and_raw(llm, client):
    llm.enqueue(Reply.text(" x * 2"), Reply.text("more"))
    provider = make("ollama", llm, client)

    assert await pieces(provider, fim(max_tokens=16, stop=["\n\n"])) == [" x * 2"]
    assert await pieces(provider, CompletionRequest(model="coder", prefix="x = ")) == ["more"]

    first, second = llm.requests
    assert first.path == second.path == "/api/generate"
    assert first.body["suffix"] == "\n\nprint(f(2))\n" and "raw" not in first.body
    assert first.body["options"] == {"num_predict": 16, "stop": ["\n\n"]}
    assert second.body["raw"] is True and "suffix" not in second.body


@pytest.mark.parametrize("api", ["openai-chat", "ollama"])
async def test_an_http_error_is_a_provider_error_without_retries(api, llm, client):
    llm.enqueue(Reply([Error(503, "busy")]), Reply.text("never"))
    provider = make(api, llm, client)

    with pytest.raises(ProviderError) as caught:
        await pieces(provider, fim())

    assert caught.value.status == 503 and "busy" in caught.value.message
    assert len(llm.requests) == 1


@pytest.mark.parametrize("api", ["openai-chat", "ollama"])
async def test_an_in_stream_error_is_a_provider_error(api, llm, client):
    llm.enqueue(Reply([Text("a"), StreamError("overloaded")]))
    provider = make(api, llm, client)

    with pytest.raises(ProviderError) as caught:
        await pieces(provider, fim())

    assert "overloaded" in caught.value.message


async def test_a_stream_cut_short_is_a_provider_error(client):
    with FixedServer('data: {"choices": [{"index": 0, "text": "a", "finish_reason": null}]}\n\n') as server:
        provider = make("openai-chat", server.url, client)
        with pytest.raises(ProviderError) as caught:
            await pieces(provider, fim())
    assert "ended unexpectedly" in caught.value.message


async def test_stopping_early_closes_the_stream(llm, client):
    llm.enqueue(Reply([Text("first"), Stall(30), Text("never")]))
    provider = make("openai-chat", llm, client)

    stream = provider.complete(fim())
    assert await anext(stream) == "first"
    await stream.aclose()

    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)


async def test_a_refused_port_is_a_provider_error(client):
    provider = make("ollama", "http://127.0.0.1:9", client)
    with pytest.raises(ProviderError) as caught:
        await pieces(provider, fim())
    assert "cannot connect" in caught.value.message
