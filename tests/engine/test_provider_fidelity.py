"""What the engine sends to and shows from each provider wire format: output limits in the request bodies the scripted
LLM server recorded, empty answers explained in the chat, unreported usage never shown as zeros."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reasoning, Reply, ScriptedLLMServer, Text, Usage

# Where each wire format carries the output limit.
LIMIT_FIELD = {
    "openai-responses": ("max_output_tokens",),
    "openai-chat": ("max_tokens",),
    "anthropic": ("max_tokens",),
    "ollama": ("options", "num_predict"),
}
PATHS = {"openai-responses": "/v1/responses", "openai-chat": "/v1/chat/completions", "anthropic": "/v1/messages",
         "ollama": "/api/chat"}
# One model per wire format for the tests that don't care which model it is.
MODEL_OF = {"openai-responses": "openai/gpt-4.1", "openai-chat": "vllm/qwen3",
            "anthropic": "anthropic/claude-sonnet-4-5", "ollama": "ollama/llama3.2:1b"}


class Recorder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.messages.append((method, params))

    def contents(self, chat_id: str) -> list[dict[str, Any]]:
        return [p["content"] for m, p in self.messages if m == "chat/contentReceived" and p["chatId"] == chat_id]


@pytest.fixture
async def engine(tmp_path: Path, llm: ScriptedLLMServer):
    env = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000",
        "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "OLLAMA_API_URL": llm.url,
    }
    options = {
        "localModel": False,
        "providers": {
            "openai": {"models": {"gpt-4.1": {"limit": {"output": 1000}},
                                  "gpt-4o": {"limit": {"output": 100_000}},  # more than the model can produce
                                  "my-finetune": {}}},
            "anthropic": {"models": {"claude-sonnet-4-5": {"limit": {"output": 1000}},
                                     "claude-3-5-haiku": {"outputLimit": 20_000},
                                     "my-claude": {}}},
            "ollama": {"models": {"llama3.2:1b": {"outputLimit": 1000}, "plain": {},
                                  "small-window": {"limit": {"context": 4096}}}},
            "vllm": {"api": "openai-chat", "url": llm.url,
                     "models": {"qwen3": {"limit": {"output": 1000}}, "plain": {},
                                "catalog-copy": {"limit": {"context": 32_000, "output": 32_000}}}},
        },
    }
    eng = Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=options, env=env))
    eng.recorder = Recorder()  # type: ignore[attr-defined]
    eng.add_listener(eng.recorder)  # type: ignore[attr-defined]
    await eng.start()
    try:
        yield eng
    finally:
        await eng.aclose()


async def run(engine: Engine, model: str, message: str = "hi") -> list[dict[str, Any]]:
    """Prompt a new chat and wait for the turn to end; the chat's contents."""
    result = await engine.prompt(ChatPromptParams(message=message, model=model))
    assert result.status == "prompting", result
    chat = engine.chats[result.chat_id]
    await asyncio.wait_for(asyncio.shield(chat.task), 30)
    return engine.recorder.contents(chat.id)  # type: ignore[attr-defined]


def sent_limit(llm: ScriptedLLMServer, api: str) -> Any:
    [request] = [r for r in llm.requests if r.path == PATHS[api]]
    value: Any = request.body
    for key in LIMIT_FIELD[api]:
        value = value.get(key) if isinstance(value, dict) else None
    return value


# -- (1) the configured output limit is sent, capped by the model's maximum, with a default ------------------------


@pytest.mark.parametrize(
    ("api", "model", "expected"),
    [
        ("openai-responses", "openai/gpt-4.1", 1000),  # limit.output
        ("openai-responses", "openai/gpt-4o", 16_384),  # capped by the model's own maximum
        ("openai-responses", "openai/my-finetune", 8192),  # nothing known: the default
        ("anthropic", "anthropic/claude-sonnet-4-5", 1000),
        ("anthropic", "anthropic/claude-3-5-haiku", 8192),  # outputLimit 20000 capped by the model's 8192
        ("anthropic", "anthropic/my-claude", 8192),
        ("openai-chat", "vllm/qwen3", 1000),
        ("openai-chat", "vllm/plain", 8192),
        ("openai-chat", "vllm/catalog-copy", 16_000),  # an output limit as large as the window can never succeed
        ("ollama", "ollama/llama3.2:1b", 1000),
        ("ollama", "ollama/plain", 8192),
        ("ollama", "ollama/small-window", 2048),  # the default never fills a small context window
    ],
)
async def test_output_limit_sent_in_each_wire_format(engine: Engine, llm: ScriptedLLMServer, api: str, model: str,
                                                     expected: int):
    llm.enqueue(Reply([Text("ok"), Usage(5, 1)]))
    contents = await run(engine, model)
    assert any(c["type"] == "text" and c["text"] == "ok" for c in contents)
    assert sent_limit(llm, api) == expected


async def test_anthropic_thinking_stays_inside_the_configured_limit(engine: Engine, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("ok"), Usage(5, 1)]))
    await run(engine, "anthropic/claude-sonnet-4-5")  # a reasoning model with limit.output 1000
    [request] = [r for r in llm.requests if r.path == PATHS["anthropic"]]
    assert request.body["max_tokens"] == 1000
    assert "thinking" not in request.body  # Anthropic's minimum thinking budget (1024) doesn't fit under 1000


# -- (2) an empty answer is explained; usage that wasn't reported isn't shown ------------------------------------

RAW_STOP = {"openai-responses": "completed", "openai-chat": "stop", "anthropic": "end_turn", "ollama": "stop"}
RAW_LENGTH = {"openai-responses": "max_output_tokens", "openai-chat": "length", "anthropic": "max_tokens",
              "ollama": "length"}


def system_texts(contents: list[dict[str, Any]]) -> list[str]:
    return [c["text"] for c in contents if c["type"] == "text" and c.get("text") and not c["text"].endswith("\n")]


@pytest.mark.parametrize("api", list(LIMIT_FIELD))
async def test_empty_answer_is_said_with_the_finish_reason(engine: Engine, llm: ScriptedLLMServer, api: str):
    llm.enqueue(Reply([]))  # no content and no counts (the scripted server sends zeros: nothing was counted)
    contents = await run(engine, MODEL_OF[api])
    empty = [t for t in system_texts(contents) if "empty answer" in t]
    assert empty == [f"The model returned an empty answer (finish reason: {RAW_STOP[api]})."]
    assert not [c for c in contents if c["type"] == "usage"]  # no "0 tokens" line
    assert contents[-1] == {"type": "progress", "state": "finished", "text": ""}


@pytest.mark.parametrize("api", list(LIMIT_FIELD))
async def test_empty_answer_at_the_output_limit_names_the_limit(engine: Engine, llm: ScriptedLLMServer, api: str):
    llm.enqueue(Reply([Reasoning("thinking about it at length"), Usage(30, 1000)], stop_reason="max_tokens"))
    model = {"openai-chat": "vllm/qwen3", "anthropic": "anthropic/claude-sonnet-4-5"}.get(api, MODEL_OF[api])
    contents = await run(engine, model)
    [empty] = [t for t in system_texts(contents) if "empty answer" in t]
    assert empty.startswith(f"The model returned an empty answer (finish reason: {RAW_LENGTH[api]}).")
    assert f"output limit ({sent_limit(llm, api)} tokens)" in empty
    [usage] = [c for c in contents if c["type"] == "usage"]  # reported usage is still shown
    assert usage["sessionTokens"] == 1030


@pytest.mark.parametrize("api", list(LIMIT_FIELD))
async def test_an_answer_cut_at_the_output_limit_says_so(engine: Engine, llm: ScriptedLLMServer, api: str):
    llm.enqueue(Reply([Text("Step one is to open the file, then the cell"), Usage(30, 1000)], stop_reason="max_tokens"))
    contents = await run(engine, MODEL_OF[api])
    assert [t for t in system_texts(contents) if "output limit" in t] == [
        f"The answer was cut at the model's output limit ({sent_limit(llm, api):,} tokens). Ask it to continue, or "
        "for a shorter answer."]
    assert contents[-1] == {"type": "progress", "state": "finished", "text": ""}


async def test_an_answer_with_text_says_nothing_more(engine: Engine, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("Hello.")]))
    contents = await run(engine, "vllm/plain")
    assert not [t for t in system_texts(contents) if "empty answer" in t or "output limit" in t]
    assert not [c for c in contents if c["type"] == "usage"]  # zeros from the server: not a measurement


async def test_costs_without_reported_usage_says_so(engine: Engine, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("Hello.")]))
    result = await engine.prompt(ChatPromptParams(message="hi", model="vllm/plain"))
    chat = engine.chats[result.chat_id]
    await asyncio.wait_for(asyncio.shield(chat.task), 30)
    await engine.prompt(ChatPromptParams(message="/costs", chat_id=chat.id))
    texts = system_texts(engine.recorder.contents(chat.id))  # type: ignore[attr-defined]
    assert any("Tokens: none reported by the provider yet" in t for t in texts)
    assert not any("Input tokens: 0" in t for t in texts)
