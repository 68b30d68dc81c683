"""Prompt caching, variants and the context on the wire (issue 33 items 3–5), through the engine and the scripted LLM
server over real HTTP: Anthropic breakpoints and a byte-stable prefix across rounds and prompts, ``cacheRetention``,
cache tokens at the catalog's cache prices, OpenAI's ``prompt_cache_key`` per chat, the request fields each variant
changes, ``usage.contextBreakdown`` / ``autoCompactPercentage`` and compaction at that percentage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing._cache import anthropic_blocks
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage
from eca_notebook.transports.memory import memory_pair

CLAUDE = "anthropic/claude-sonnet-4-5"


class Recorder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.messages.append((method, params))

    def contents(self, chat_id: str) -> list[dict[str, Any]]:
        return [p["content"] for m, p in self.messages if m == "chat/contentReceived" and p["chatId"] == chat_id]


async def make_engine(tmp_path: Path, llm: ScriptedLLMServer, **config: Any) -> Engine:
    env = {
        "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000",
        "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0000",
        "OLLAMA_API_URL": llm.url,
    }
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("hello\n")
    options = {"localModel": False, **config}
    eng = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=options, env=env))
    eng.recorder = Recorder()  # type: ignore[attr-defined]
    eng.add_listener(eng.recorder)  # type: ignore[attr-defined]
    await eng.start()
    return eng


@pytest.fixture
async def engine(tmp_path: Path, llm: ScriptedLLMServer):
    eng = await make_engine(tmp_path, llm, providers={
        "openai": {"promptCacheKey": True},
        "vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen3": {"reasoning": True}}},
        "strict": {"api": "openai-chat", "url": llm.url, "models": {"m": {}}},
        "ollama": {"models": {"deep": {"reasoning": True}}},
    })
    try:
        yield eng
    finally:
        await eng.aclose()


async def prompt(engine: Engine, model: str, message: str = "hi", chat_id: str | None = None,
                 **params: Any) -> str:
    result = await engine.prompt(ChatPromptParams(message=message, model=model, chat_id=chat_id, **params))
    assert result.status == "prompting", result
    chat = engine.chats[result.chat_id]
    await asyncio.wait_for(asyncio.shield(chat.task), 60)
    return result.chat_id


def bodies(llm: ScriptedLLMServer, path: str) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests if r.path == path]


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a Messages request has cache_control: 'tools[i]', 'system[i]', 'messages[i][j]'."""
    found = [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system[{i}]" for i, b in enumerate(system) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        if isinstance(message["content"], list):
            found += [f"messages[{i}][{j}]" for j, b in enumerate(message["content"]) if "cache_control" in b]
    return found


def tool_round() -> list[Reply]:
    return [Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": "notes.txt"})), Usage(50, 5)]),
            Reply([Text("It says hello."), Usage(60, 5)])]


# -- (3) Anthropic breakpoints and a byte-stable prefix ------------------------------------------------------------


async def test_anthropic_breakpoints_and_prefix_stable_across_rounds_and_prompts(engine: Engine,
                                                                                llm: ScriptedLLMServer):
    llm.enqueue(*tool_round(), Reply([Text("Sure."), Usage(70, 5)]))
    chat_id = await prompt(engine, CLAUDE, "what is in notes.txt?")
    await prompt(engine, CLAUDE, "thanks", chat_id=chat_id)
    first, second, third = bodies(llm, "/v1/messages")

    # at most four, where Anthropic's guidance puts them: the last tool, the system prompt, the last user message
    # and the one before it (the previous request's last message)
    last_tool = len(first["tools"]) - 1
    assert breakpoints(first) == [f"tools[{last_tool}]", "system[0]", "messages[0][0]"]
    assert breakpoints(second) == [f"tools[{last_tool}]", "system[0]", "messages[0][0]", "messages[2][0]"]
    assert breakpoints(third) == [f"tools[{last_tool}]", "system[0]", "messages[2][0]", "messages[4][0]"]
    assert all(b["cache_control"] == {"type": "ephemeral"}
               for b in [first["tools"][-1], first["system"][0], first["messages"][0]["content"][-1]])

    # every request starts with the previous one's bytes: round 2 with round 1's, the next prompt with round 2's
    for before, after in ((first, second), (second, third)):
        assert after["tools"] == before["tools"] and after["system"] == before["system"]
        old, new = anthropic_blocks(before), anthropic_blocks(after)
        assert len(new) > len(old)
        assert [text for text, _ in new[:len(old)]] == [text for text, _ in old]
    # within a turn even the markers stay: round 2 serialises round 1's request as its first bytes
    prefix = json.dumps([first["tools"], first["system"], first["messages"]])
    assert json.dumps([second["tools"], second["system"], second["messages"][:len(first["messages"])]]) == prefix


async def test_cache_retention_long_sends_the_one_hour_ttl_and_bills_writes_at_twice_the_input(
        tmp_path: Path, llm: ScriptedLLMServer):
    eng = await make_engine(tmp_path, llm, providers={"anthropic": {"cacheRetention": "long"}})
    try:
        llm.enqueue(Reply([Text("ok"), Usage(100, 10, cache_read_tokens=2000, cache_write_tokens=500)]))
        chat_id = await prompt(eng, CLAUDE)
        [body] = bodies(llm, "/v1/messages")
        marks = [body["tools"][-1], body["system"][0], body["messages"][-1]["content"][-1]]
        assert all(m["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for m in marks)
        # 1-hour writes cost 2× the input price ($3 → $6 per 1M for Sonnet 4.5)
        assert eng.chats[chat_id].usage.cost == pytest.approx((100 * 3 + 10 * 15 + 2000 * 0.3 + 500 * 6.0) / 1e6)
    finally:
        await eng.aclose()


async def test_cache_tokens_priced_at_the_catalogs_cache_prices(engine: Engine, llm: ScriptedLLMServer):
    # what Anthropic reports: 100 uncached, 2,000 read (0.1×), 500 written (1.25×)
    llm.enqueue(Reply([Text("ok"), Usage(100, 10, cache_read_tokens=2000, cache_write_tokens=500)]))
    chat_id = await prompt(engine, CLAUDE)
    usage = engine.chats[chat_id].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (100, 2000, 500)
    expected = (100 * 3.0 + 10 * 15.0 + 2000 * 0.3 + 500 * 3.75) / 1e6
    assert usage.cost == pytest.approx(expected)
    [shown] = [c for c in engine.recorder.contents(chat_id) if c["type"] == "usage"]  # type: ignore[attr-defined]
    assert shown["lastMessageCost"] == "0.002925"
    # OpenAI's cached_tokens at its cached price (gpt-4.1: $2 input, $0.5 cached, $8 output)
    llm.enqueue(Reply([Text("ok"), Usage(100, 10, cache_read_tokens=2000)]))
    chat_id = await prompt(engine, "openai/gpt-4.1")
    assert engine.chats[chat_id].usage.cost == pytest.approx((100 * 2.0 + 2000 * 0.5 + 10 * 8.0) / 1e6)


async def test_a_server_billing_like_anthropic_reads_the_cache_from_round_two(tmp_path: Path):
    with ScriptedLLMServer(prompt_cache=True) as llm:
        eng = await make_engine(tmp_path, llm)
        try:
            (tmp_path / "ws" / "notes.txt").write_text("word " * 2000)  # a tool output worth caching
            llm.enqueue(*tool_round())
            chat_id = await prompt(eng, CLAUDE, "summarise notes.txt " + "context " * 1500)
            usage = eng.chats[chat_id].usage
            # round 1 wrote the prefix, round 2 read it back and wrote only what was new
            assert usage.cache_read_tokens > 0 and usage.cache_write_tokens > usage.cache_read_tokens
            assert usage.input_tokens < 100  # only what follows the last breakpoint is billed at the full price
        finally:
            await eng.aclose()


# -- (3) OpenAI prompt_cache_key -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "path"), [("openai/gpt-4.1", "/v1/responses"),
                                             ("vllm/qwen3", "/v1/chat/completions")])
async def test_prompt_cache_key_stable_per_chat_and_different_across_chats(tmp_path: Path, llm: ScriptedLLMServer,
                                                                          model: str, path: str):
    eng = await make_engine(tmp_path, llm, providers={
        "openai": {"promptCacheKey": True},
        "vllm": {"api": "openai-chat", "url": llm.url, "promptCacheKey": True, "models": {"qwen3": {}}}})
    try:
        llm.enqueue(*tool_round(), Reply([Text("ok")]), Reply([Text("ok")]))
        first = await prompt(eng, model, "read notes.txt")
        await prompt(eng, model, "again", chat_id=first)
        await prompt(eng, model, "another chat")
        keys = [b.get("prompt_cache_key") for b in bodies(llm, path)]
        assert len(keys) == 4 and all(keys)
        assert keys[0] == keys[1] == keys[2] != keys[3]
        assert first not in keys[0]  # a hash, not the chat id
    finally:
        await eng.aclose()


async def test_prompt_cache_key_not_sent_to_a_compatible_server_unless_configured(engine: Engine,
                                                                                  llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("ok")]))
    await prompt(engine, "strict/m")
    [body] = bodies(llm, "/v1/chat/completions")
    assert "prompt_cache_key" not in body


# -- (4) variants --------------------------------------------------------------------------------------------------


def differing(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


@pytest.mark.parametrize(("model", "path", "field", "value"), [
    ("openai/gpt-5", "/v1/responses", "reasoning", {"effort": "high", "summary": "auto"}),
    ("vllm/qwen3", "/v1/chat/completions", "reasoning_effort", "high"),
    (CLAUDE, "/v1/messages", "thinking", {"type": "enabled", "budget_tokens": 24576}),
    ("ollama/deep", "/api/chat", "think", "high"),
])
async def test_a_variant_changes_exactly_its_documented_request_field(engine: Engine, llm: ScriptedLLMServer,
                                                                      model: str, path: str, field: str, value: Any):
    llm.enqueue(Reply([Text("ok")]), Reply([Text("ok")]), Reply([Text("ok")]))
    plain = await prompt(engine, model, "same words")
    high = await prompt(engine, model, "same words", variant="high")
    low = await prompt(engine, model, "same words", variant="low")
    base, with_high, with_low = bodies(llm, path)
    ignored = {"prompt_cache_key"}  # per chat by design
    assert differing(base, with_high) - ignored <= {field}
    assert with_high[field] == value
    assert differing(with_high, with_low) - ignored == {field}
    assert engine.chats[high].variant == "high" and engine.chats[plain].variant is None
    # the chat keeps its variant for its next prompt
    llm.enqueue(Reply([Text("ok")]))
    await prompt(engine, model, "same words", chat_id=low)
    assert bodies(llm, path)[-1][field] == with_low[field]


async def test_a_model_without_the_variant_ignores_it(engine: Engine, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("ok")]), Reply([Text("ok")]))
    await prompt(engine, "openai/gpt-4.1", "x")
    await prompt(engine, "openai/gpt-4.1", "x", variant="high")  # gpt-4.1 does not reason: no variants
    a, b = bodies(llm, "/v1/responses")
    assert differing(a, b) <= {"prompt_cache_key"}


async def test_configured_variants_merge_over_the_builtin_ones(tmp_path: Path, llm: ScriptedLLMServer):
    eng = await make_engine(tmp_path, llm, providers={"openai": {"models": {"gpt-5": {"variants": {
        "low": {}, "fast": {"reasoning": {"effort": "minimal"}, "text": {"verbosity": "low"}}}}}}})
    try:
        assert eng.registry.model_infos()["openai/gpt-5"].variants.keys() == {"medium", "high", "fast"}
        eng.select_model("openai/gpt-5")
        update = eng.config_updated().dump()["chat"]
        assert update["variants"] == ["fast", "high", "medium"] and update["selectVariant"] is None
        llm.enqueue(Reply([Text("ok")]))
        await prompt(eng, "openai/gpt-5", variant="fast")
        [body] = bodies(llm, "/v1/responses")
        assert body["reasoning"]["effort"] == "minimal" and body["text"] == {"verbosity": "low"}
    finally:
        await eng.aclose()


async def test_selected_model_changed_answers_with_variants_and_keeps_a_valid_variant(engine: Engine,
                                                                                      llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("ok")]))
    chat_id = await prompt(engine, "openai/gpt-5")
    engine.select_model(CLAUDE, chat_id, "high")
    update = engine.variants_updated(chat_id).dump()
    assert update == {"chatId": chat_id, "chat": {"variants": ["high", "low", "medium"], "selectVariant": "high"}}
    engine.select_model("openai/gpt-4.1", chat_id, "high")  # no variants: cleared, shown as null
    assert engine.variants_updated(chat_id).dump()["chat"] == {"variants": [], "selectVariant": None}
    assert engine.chats[chat_id].variant is None


# -- (5) context on the wire and compaction at the configured percentage -------------------------------------------


async def test_usage_carries_context_breakdown_and_auto_compact_percentage(engine: Engine, llm: ScriptedLLMServer):
    llm.enqueue(*tool_round())
    chat_id = await prompt(engine, CLAUDE, "what is in notes.txt?")
    usages = [c for c in engine.recorder.contents(chat_id) if c["type"] == "usage"]  # type: ignore[attr-defined]
    assert len(usages) == 2
    last = usages[-1]
    assert last["autoCompactPercentage"] == 75
    breakdown = last["contextBreakdown"]
    names = [c["name"] for c in breakdown["categories"]]
    assert names == ["System prompt", "Tool definitions", "Tool calls", "Conversation"]
    assert breakdown["usedTokens"] == 60  # the input the provider reported for the request
    assert abs(sum(c["tokens"] for c in breakdown["categories"]) - 60) <= len(names)
    assert breakdown["contextLimit"] == 200_000 and breakdown["freeTokens"] == 200_000 - 60
    assert all(c["color"].startswith("#") and c["emoji"] for c in breakdown["categories"])
    assert breakdown["freeColor"] == "#5c6370"


@pytest.mark.parametrize(("percentage", "compacts"), [(None, False), (40, True)])
async def test_compaction_runs_at_the_configured_percentage(tmp_path: Path, llm: ScriptedLLMServer,
                                                            percentage: int | None, compacts: bool):
    config: dict[str, Any] = {"providers": {"anthropic": {"models": {"small": {
        "limit": {"context": 20_000, "output": 1_000}}}}}}
    if percentage is not None:
        config["autoCompactPercentage"] = percentage
    eng = await make_engine(tmp_path, llm, **config)
    try:
        llm.enqueue_when("Summarize our conversation", Reply([Text("SUMMARY")]))
        llm.enqueue(Reply([Text("ok")]), Reply([Text("ok")]))
        chat_id = await prompt(eng, "anthropic/small", "a" * 4 * 4_000)  # ~4k tokens
        await prompt(eng, "anthropic/small", "b" * 4 * 3_000, chat_id=chat_id)  # ~7k + system and tools: < 75 %
        summaries = [b for b in bodies(llm, "/v1/messages") if "Summarize our conversation" in json.dumps(b)]
        assert bool(summaries) == compacts
        usages = [c for c in eng.recorder.contents(chat_id) if c["type"] == "usage"]  # type: ignore[attr-defined]
        if usages:
            assert usages[-1]["autoCompactPercentage"] == (percentage or 75)
    finally:
        await eng.aclose()


async def test_a_saved_chat_keeps_its_variant(tmp_path: Path, llm: ScriptedLLMServer):
    eng = await make_engine(tmp_path, llm)
    try:
        llm.enqueue(Reply([Text("ok")]))
        chat_id = await prompt(eng, CLAUDE, variant="low")
    finally:
        await eng.aclose()
    again = await make_engine(tmp_path, llm)  # a new session reads the saved chat
    try:
        llm.enqueue(Reply([Text("ok")]))
        await prompt(again, CLAUDE, "more", chat_id=chat_id)
        assert bodies(llm, "/v1/messages")[-1]["thinking"]["budget_tokens"] == 2048
    finally:
        await again.aclose()



async def test_selected_model_changed_over_the_connection_answers_config_updated(tmp_path: Path,
                                                                                 llm: ScriptedLLMServer):
    """chat/selectedModelChanged with a variant, through the server connection: the client gets config/updated with
    the model's variants and the kept variant; a model without it gets null."""
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "OLLAMA_API_URL": "http://127.0.0.1:9"}
    options = {"localModel": False, "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {
        "thinker": {"reasoning": True}, "plain": {}}}}}
    server_side, client_side = memory_pair()
    connection = ServerConnection(server_side, lambda params: Engine(EngineOptions(
        workspace_folders=[tmp_path], initialization_options=options, env=env)))
    client = Endpoint(client_side, name="test-client")
    updates: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    def record(params: dict[str, Any]) -> None:
        updates.append(params)
        arrived.set()

    client.register("config/updated", record)
    server_task = asyncio.create_task(connection.run())
    client_task = asyncio.create_task(client.run())

    async def next_variants() -> dict[str, Any]:
        while True:
            found = [u for u in updates if "variants" in (u.get("chat") or {}) and not u.get("_seen")]
            if found:
                found[0]["_seen"] = True
                return found[0]["chat"]
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), 30)

    try:
        await client.request("initialize", {"processId": None, "capabilities": {},
                                            "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}]})
        await client.notify("initialized")
        await next_variants()  # the initial config/updated names the default model's variants
        await client.notify("chat/selectedModelChanged", {"model": "fake/thinker", "variant": "medium"})
        assert await next_variants() == {"variants": ["high", "low", "medium"], "selectVariant": "medium"}
        await client.notify("chat/selectedModelChanged", {"model": "fake/plain", "variant": "medium"})
        assert await next_variants() == {"variants": [], "selectVariant": None}
    finally:
        await client.close()
        await asyncio.wait_for(server_task, 30)
        client_task.cancel()
        await asyncio.gather(client_task, return_exceptions=True)


async def test_an_agents_variant_is_the_default_and_a_chats_own_wins(tmp_path: Path, llm: ScriptedLLMServer):
    eng = await make_engine(tmp_path, llm, agent={"code": {"variant": "low"}})
    try:
        llm.enqueue(Reply([Text("ok")]), Reply([Text("ok")]), Reply([Text("ok")]))
        await prompt(eng, CLAUDE)
        await prompt(eng, CLAUDE, variant="high")
        await prompt(eng, "openai/gpt-5")  # the agent's variant where this model has one too
        first, second = bodies(llm, "/v1/messages")
        assert first["thinking"]["budget_tokens"] == 2048 and second["thinking"]["budget_tokens"] == 24576
        assert bodies(llm, "/v1/responses")[0]["reasoning"]["effort"] == "low"
    finally:
        await eng.aclose()
