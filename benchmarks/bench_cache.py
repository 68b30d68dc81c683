"""Prompt caching: what a ten-round agent turn costs in input with the prompt cache, against the same turn without.

A prompt with a ~20k-token workspace context (an attached file) runs a 10-round agent turn (nine rounds of
``read_file`` calls, then the answer) against the scripted LLM server with ``prompt_cache=True``: the server bills
each request from its bytes as the API's prompt cache would (``eca_notebook/testing/_cache.py``) — Anthropic from the
request's ``cache_control`` breakpoints (writes at 1.25× the input price, reads at 0.1×), OpenAI automatically from
the longest prefix an earlier request of the same ``prompt_cache_key`` sent (cached tokens at the model's cached
price). The engine adds up the reported tokens at the catalog's prices, as it does for a real provider.

Prints, per API, the input tokens (uncached / cache read / cache write), the input cost with caching, the input cost
of the same tokens all at the full input price, and their ratio. Target for Anthropic: at most 0.35.

Usage: python benchmarks/bench_cache.py [--rounds 10] [--context-tokens 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams, FileContext
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage

MODELS = {"anthropic": "anthropic/claude-sonnet-4-5", "openai": "openai/gpt-4.1"}
TARGET = 0.35


async def one_turn(api: str, rounds: int, context_tokens: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLMServer(prompt_cache=True) as llm:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        words = " ".join(f"word{i % 997}" for i in range(context_tokens * 4 // 8))
        (workspace / "context.md").write_text(words[: context_tokens * 4])
        for i in range(rounds):
            (workspace / f"part{i}.py").write_text(f"# part {i}\n" + "x = 1\n" * 200)
        env = {"HOME": tmp, "XDG_CONFIG_HOME": f"{tmp}/config", "XDG_CACHE_HOME": f"{tmp}/cache",
               "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
               "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-bench-0000", "OLLAMA_API_URL": "http://127.0.0.1:9"}
        options = {"localModel": False, "providers": {"openai": {"promptCacheKey": True}}}
        engine = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=options, env=env))
        await engine.start()
        try:
            replies = [Reply([ToolCall(f"c{i}", "eca__read_file", json.dumps({"path": f"part{i}.py"})), Usage(0, 20)])
                       for i in range(rounds - 1)]
            llm.enqueue(*replies, Reply([Text("Done: every part reads x = 1."), Usage(0, 20)]))
            model = MODELS[api]
            result = await engine.prompt(ChatPromptParams(
                message="Read each part file in turn and tell me what they set.", model=model,
                contexts=[FileContext(path=str(workspace / "context.md"))]))
            chat = engine.chats[result.chat_id]
            await asyncio.wait_for(asyncio.shield(chat.task), 300)
            sent = [r for r in llm.requests if r.path in ("/v1/messages", "/v1/responses")]
            assert len(sent) == rounds, f"{len(sent)} requests, expected {rounds}"
            usage = chat.usage
            info = engine.registry.model_infos()[model]
            assert info.input_cost is not None
            read = info.cache_read_cost if info.cache_read_cost is not None else info.input_cost
            write = info.cache_write_cost if info.cache_write_cost is not None else info.input_cost
            cached = (usage.input_tokens * info.input_cost + usage.cache_read_tokens * read
                      + usage.cache_write_tokens * write) / 1e6
            total = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            full = total * info.input_cost / 1e6
            return {"requests": len(sent), "input": usage.input_tokens, "read": usage.cache_read_tokens,
                    "write": usage.cache_write_tokens, "cached_cost": cached, "full_cost": full,
                    "ratio": cached / full if full else 0.0}
        finally:
            await engine.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--context-tokens", type=int, default=20_000)
    args = parser.parse_args()
    failed = False
    for api in ("anthropic", "openai"):
        r = asyncio.run(one_turn(api, args.rounds, args.context_tokens))
        print(f"{api:9} {MODELS[api]:28} {r['requests']:.0f} requests: input {r['input']:,.0f} uncached, "
              f"{r['read']:,.0f} cache read, {r['write']:,.0f} cache write tokens")
        print(f"{'':9} input cost with caching ${r['cached_cost']:.4f} / without ${r['full_cost']:.4f} "
              f"= {r['ratio']:.3f}" + (f" (target <= {TARGET})" if api == "anthropic" else ""))
        if api == "anthropic" and r["ratio"] > TARGET:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
