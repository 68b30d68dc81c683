"""The embedded local model: load time, time to first token and tokens/s — through ``LocalProvider`` vs. the runtime
called directly, in the same run, so the ratios show what our layers cost on top of llama.cpp.

  load      — ``LocalRuntime`` start (spawn the child → model loaded → HTTP listening), and the model load alone
              as the child measured it; repeated ``--loads`` times (start, stop, start, …);
  raw HTTP  — a bare httpx loop streaming ``/v1/chat/completions`` from the runtime's server, json-decoding chunks;
  provider  — ``LocalProvider.stream`` (OpenAIChatProvider underneath) on the same runtime and the same body
              (built by ``LocalProvider.request_body``), plain text and with a tool (constrained JSON);
  direct    — with ``--inprocess``: ``xllamacpp.Server.handle_chat_completions`` with a streaming callback in this
              process (a second copy of the model; no HTTP at all).

Generation is deterministic (temperature 0, fixed seed) and ``ignore_eos`` makes every run produce exactly
``--tokens`` tokens, so tokens/s compare like with like. Runs alternate between paths; medians are printed.

Usage: python benchmarks/bench_local.py [--tokens 128] [--repeat 10] [--loads 3] [--inprocess]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from dataclasses import dataclass

import httpx

from eca_notebook.providers import Finished, ProviderRequest, ToolSpec, Usage, UserMessage
from eca_notebook.providers.local import (
    REQUEST_HEADERS,
    LocalOptions,
    LocalProvider,
    LocalRuntime,
    local_model_status,
)

PROMPT = "Write a Python function that returns the n-th Fibonacci number, with a docstring."
READ_FILE = ToolSpec(
    "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)


@dataclass
class Run:
    ttft: float  # seconds from sending the request to the first text (or tool-call) event
    total: float  # seconds for the whole stream
    tokens: int  # output tokens the server reported

    @property
    def decode_rate(self) -> float:
        """Tokens/s after the first one (the generation speed the user watches)."""
        return (self.tokens - 1) / (self.total - self.ttft) if self.total > self.ttft and self.tokens > 1 else 0.0


async def raw_http(client: httpx.AsyncClient, url: str, key: str, body: dict) -> Run:
    started = time.perf_counter()
    first = None
    tokens = 0
    headers = {"authorization": f"Bearer {key}", **REQUEST_HEADERS}  # what LocalProvider sends too
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or ():
                if first is None and (choice.get("delta") or {}).get("content"):
                    first = time.perf_counter() - started
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return Run(first or 0.0, time.perf_counter() - started, tokens)


async def provider_run(provider: LocalProvider, request: ProviderRequest) -> Run:
    started = time.perf_counter()
    first = None
    tokens = 0
    async for event in provider.stream(request):
        if first is None and event.type in ("text", "tool_call_started"):
            first = time.perf_counter() - started
        if isinstance(event, Usage):
            tokens = event.output_tokens
        if isinstance(event, Finished):
            break
    return Run(first or 0.0, time.perf_counter() - started, tokens)


def direct_run(server: object, body: dict) -> Run:
    """In-process xllamacpp: the streaming callback runs in this thread (the call blocks until done)."""
    started = time.perf_counter()
    state = {"first": None, "tokens": 0}

    def on_chunk(chunk: dict) -> bool:
        for choice in chunk.get("choices") or ():
            if state["first"] is None and (choice.get("delta") or {}).get("content"):
                state["first"] = time.perf_counter() - started
        if chunk.get("usage"):
            state["tokens"] = chunk["usage"]["completion_tokens"]
        return False

    server.handle_chat_completions(dict(body), on_chunk)  # type: ignore[attr-defined]
    return Run(state["first"] or 0.0, time.perf_counter() - started, state["tokens"])


def summarize(name: str, runs: list[Run], *, whole: bool = False) -> dict[str, float]:
    """Medians. ``whole``: the reply only counts once complete (a tool call), so tokens/s is over the total time."""
    ttft = statistics.median(r.ttft for r in runs) * 1000
    total = statistics.median(r.total for r in runs) * 1000
    tokens = statistics.median(r.tokens for r in runs)
    if whole:
        rate = statistics.median(r.tokens / r.total for r in runs if r.total > 0)
        print(f"  {name:<22} complete {total:8.1f} ms   {rate:7.1f} tok/s overall   ({tokens:.0f} tokens)")
    else:
        rate = statistics.median(r.decode_rate for r in runs)
        print(f"  {name:<22} TTFT {ttft:8.1f} ms   {rate:7.1f} tok/s   total {total:8.1f} ms   ({tokens:.0f} tokens)")
    return {"ttft": ttft, "rate": rate, "total": total}


def ratios(label: str, ours: dict[str, float], base: dict[str, float], whole: bool) -> None:
    if whole:
        print(f"  {label}: complete x{ours['total'] / base['total']:.2f}, tokens/s x{ours['rate'] / base['rate']:.2f}")
    else:
        print(f"  {label}: TTFT x{ours['ttft'] / base['ttft']:.2f}, tokens/s x{ours['rate'] / base['rate']:.2f}, "
              f"total x{ours['total'] / base['total']:.2f}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--inprocess", action="store_true", help="also time xllamacpp's in-process API")
    args = parser.parse_args()

    status = local_model_status()
    print(status.message)
    if not status.available:
        return 1
    assert status.model_path is not None

    runtime = LocalRuntime(status.model_path)
    starts, loads = [], []
    threads_before = threading.active_count()
    for _ in range(max(1, args.loads)):
        await runtime.ensure_started()
        starts.append(runtime.start_seconds or 0.0)
        loads.append(runtime.load_seconds or 0.0)
        await runtime.aclose()
    print(f"threads: {runtime.threads} generating, {runtime.batch_threads} reading the prompt")
    print(f"\nload ({len(starts)}x): start {statistics.median(starts) * 1000:.0f} ms median "
          f"(model load in the child {statistics.median(loads) * 1000:.0f} ms; the rest is process start-up "
          f"and the handshake); threads after stop: {threading.active_count() - threads_before:+d}")

    options = LocalOptions(temperature=0.0, seed=1, max_tokens=args.tokens)
    url = await runtime.ensure_started()
    text_request = ProviderRequest(model="smollm2-135m", messages=[UserMessage(PROMPT)], extra={"ignore_eos": True})
    # No ignore_eos here: once the JSON is complete the grammar admits only the end of the reply.
    tool_request = ProviderRequest(model="smollm2-135m", messages=[UserMessage("Show me README.md")],
                                   tools=[READ_FILE])
    direct_server = None
    if args.inprocess:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = status.model_path
        params.n_ctx = runtime.n_ctx
        params.verbosity = 0
        params.cpuparams.n_threads = runtime.threads  # the same threads as the runtime, to compare like with like
        params.cpuparams_batch.n_threads = runtime.batch_threads
        direct_server = xllamacpp.Server(params)

    results: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(timeout=120) as client:
        provider = LocalProvider(client, runtime=runtime, status=status, options=options)
        for label, request in (("text", text_request), ("tool (constrained JSON)", tool_request)):
            body = provider.request_body(request)
            await raw_http(client, url, runtime.api_key, body)  # warm-up: prompt cache, connections
            await provider_run(provider, request)
            runs: dict[str, list[Run]] = {"raw HTTP": [], "LocalProvider": [], "xllamacpp in-process": []}
            for i in range(args.repeat):
                order = ["raw HTTP", "LocalProvider", "xllamacpp in-process"]
                for name in order if i % 2 == 0 else reversed(order):  # alternate, so order effects cancel
                    if name == "raw HTTP":
                        runs[name].append(await raw_http(client, url, runtime.api_key, body))
                    elif name == "LocalProvider":
                        runs[name].append(await provider_run(provider, request))
                    elif direct_server is not None:
                        runs[name].append(direct_run(direct_server, body))
            whole = bool(request.tools)
            note = " (LocalProvider emits a tool call once its JSON is complete: compare completion times)"
            print(f"\n{label}: {args.repeat} runs each, up to {args.tokens} tokens, medians{note if whole else ''}")
            for name, measured in runs.items():
                if measured:
                    results[f"{label}/{name}"] = summarize(name, measured, whole=whole)
            base = results[f"{label}/raw HTTP"]
            ratios("LocalProvider / raw HTTP", results[f"{label}/LocalProvider"], base, whole)
            if direct_server is not None:
                ratios("raw HTTP / in-process   ", base, results[f"{label}/xllamacpp in-process"], whole)
    await runtime.aclose()
    del direct_server
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
