"""Which model inline completion and rewrite use, how each is asked, and the budgets sent — on a real engine
(config from ``initializationOptions``, keys from its environment), against the scripted LLM server."""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.completion._inline import completion_mode, completion_model
from eca_notebook.engine.completion._rewrite import rewrite_model
from eca_notebook.protocol import CompletionInlineParams
from eca_notebook.providers.local import local_model_status
from eca_notebook.testing import Reply, ScriptedLLMServer


def engine_for(tmp_path: Path, config: dict | None = None, **env: str) -> Engine:
    base = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_CACHE_HOME": str(tmp_path / "k"),
            "OLLAMA_API_URL": "http://127.0.0.1:9"}
    return Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=config or {},
                                env={**base, **env}))


@pytest.fixture
def llm():
    with ScriptedLLMServer() as server:
        yield server


async def test_the_fast_model_of_the_chats_provider(tmp_path):
    openai = engine_for(tmp_path, {"localModel": False}, OPENAI_API_KEY="sk-test-1234567890")
    anthropic = engine_for(tmp_path, {"localModel": False}, ANTHROPIC_API_KEY="sk-ant-1234567890")
    try:
        assert completion_model(openai) == "openai/gpt-4.1-mini"
        assert completion_model(anthropic) == "anthropic/claude-haiku-4-5"
        assert rewrite_model(openai) == openai.registry.default_model()  # rewrite: the chat's model
    finally:
        await openai.aclose()
        await anthropic.aclose()


async def test_configured_models_win_and_other_providers_use_the_chat_model(tmp_path, llm):
    config = {"localModel": False, "defaultModel": "vllm/qwen",
              "providers": {"vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen": {}, "coder": {}}}}}
    plain = engine_for(tmp_path, config)
    chosen = engine_for(tmp_path, {**config, "completion": {"model": "vllm/coder"}, "rewrite": {"model": "vllm/coder"}})
    try:
        assert completion_model(plain) == "vllm/qwen"
        assert completion_model(chosen) == "vllm/coder" and rewrite_model(chosen) == "vllm/coder"
    finally:
        await plain.aclose()
        await chosen.aclose()


@pytest.mark.skipif(not local_model_status().available, reason=local_model_status().message)
async def test_offline_the_embedded_model(tmp_path):
    engine = engine_for(tmp_path)
    try:
        assert completion_model(engine) == "local/smollm2-135m"
        provider, info = engine.registry.resolve("local/smollm2-135m")
        assert completion_mode(provider, info, "auto", set()) == "raw"
    finally:
        await engine.aclose()


async def test_modes(tmp_path, llm):
    config = {"localModel": False, "defaultModel": "vllm/qwen",
              "providers": {"vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen": {}}},
                            "ol": {"api": "ollama", "url": llm.url, "models": {"coder": {}}}}}
    engine = engine_for(tmp_path, config)
    try:
        vllm, ollama = engine.registry.resolve("vllm/qwen"), engine.registry.resolve("ol/coder")
        assert completion_mode(*vllm, "auto", set()) == "chat"  # not every OpenAI-compatible server has it
        assert completion_mode(*vllm, True, set()) == "fim"
        assert completion_mode(*ollama, "auto", set()) == "fim"
        assert completion_mode(*ollama, False, set()) == "chat"
        assert completion_mode(*ollama, "auto", {"ol/coder"}) == "chat"  # refused once: chat from then on
    finally:
        await engine.aclose()


async def test_budgets_are_sent(tmp_path, llm):
    config = {"localModel": False, "defaultModel": "vllm/qwen",
              "providers": {"vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen": {}}}},
              "completion": {"fim": True, "prefixLines": 2, "suffixLines": 1, "maxTokens": 12, "contextChars": 10}}
    engine = engine_for(tmp_path, config)
    doc = "".join(f"line{i} = {i}\n" for i in range(20)) + "x = \n" + "".join(f"after{i}\n" for i in range(5))
    llm.enqueue(Reply.text("42"))
    try:
        result = await engine.complete_inline(CompletionInlineParams(
            doc_text=doc, doc_version=3, position={"line": 21, "character": 5}, context="0123456789\nabcdefghi"))
    finally:
        await engine.aclose()
    assert result.items is not None and result.items[0].text == "42"
    [request] = llm.requests
    # the context's end, then 2 lines and the cursor's (its trailing space held back)
    assert request.body["prompt"] == "abcdefghi\n\nline18 = 18\nline19 = 19\nx ="
    assert request.body["suffix"] == "\nafter0\n"
    assert request.body["max_tokens"] == 12
