"""Answer quality of the embedded model: the engine's default path must not make the model worse than the model alone.

Every prompt (the kinds people ask first in a notebook: write a small function, explain a traceback, a pandas
one-liner, what does this code do, small talk) runs

  (a) raw     — straight through the runtime: a minimal Chat Completions request (just the user's message; the
                runtime's own sampling defaults; the same output cap as the engine);
  (b) engine  — through ``EcaClient.stream`` on a fresh chat in a small workspace, exactly as a user's prompt goes
                (system prompt, tool policy, sampling, repetition guard — the default path with nothing configured).

and gets a mechanical check: a Python function prompt passes when a fenced Python block ``ast.parse``s and defines
the asked-for name; an explanation passes when the answer mentions a key term; every answer must be non-empty, free
of degenerate repetition and of tool calls. Printed per path: pass rate, median time to first token, median
tokens/s; then the ratio b/a of the pass rates (the issue asks b/a >= 1.0).

Each prompt runs ``--samples`` times per path (default 2; the raw path samples at the runtime's temperature), paths
alternating, so load on the machine hits both alike.

Usage: python benchmarks/bench_local_quality.py [--samples 2] [--only N] [--verbose]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from eca_notebook.engine.turn._repetition import RepetitionGuard
from eca_notebook.providers.local import REQUEST_HEADERS, LocalOptions, get_local_runtime, local_model_status


@dataclass(frozen=True)
class Case:
    prompt: str
    kind: str  # "function" | "term" | "talk"
    expect: tuple[str, ...] = ()  # function: the name to define; term: any of these (case-insensitive)


CASES: list[Case] = [
    # -- write a small function (the name is asked for, so the check is mechanical) --
    Case("Write a Python function `add(a, b)` that returns the sum of two numbers.", "function", ("add",)),
    Case("Write a Python function `is_prime(n)` that checks whether a number is prime.", "function", ("is_prime",)),
    Case("Write a Python function `reverse_string(s)` that returns the string reversed.", "function",
         ("reverse_string",)),
    Case("Write a Python function `factorial(n)` that computes n factorial.", "function", ("factorial",)),
    Case("Write a Python function `is_even(n)` that returns True when n is even.", "function", ("is_even",)),
    Case("Write a Python function `count_vowels(text)` that counts the vowels in a string.", "function",
         ("count_vowels",)),
    Case("Write a Python function `celsius_to_fahrenheit(c)` that converts a temperature.", "function",
         ("celsius_to_fahrenheit",)),
    Case("Write a Python function `max_of_list(items)` that returns the largest number in a list.", "function",
         ("max_of_list",)),
    Case("Write a Python function `fibonacci(n)` that returns the n-th Fibonacci number.", "function",
         ("fibonacci",)),
    Case("Write a Python function `is_palindrome(s)` that checks whether a string is a palindrome.", "function",
         ("is_palindrome",)),
    Case("Write a Python function `average(numbers)` that returns the mean of a list of numbers.", "function",
         ("average",)),
    # -- explain a traceback --
    Case("Explain this error: ZeroDivisionError: division by zero", "term", ("zero", "divid")),
    Case("What does this error mean? KeyError: 'name'", "term", ("key", "dictionary", "dict")),
    Case("Explain this error: IndexError: list index out of range", "term", ("index", "range", "list")),
    Case("Explain: TypeError: unsupported operand type(s) for +: 'int' and 'str'", "term",
         ("type", "string", "str", "int")),
    Case("Explain: ModuleNotFoundError: No module named 'pandas'", "term", ("install", "module", "pip")),
    Case("Explain this error: NameError: name 'x' is not defined", "term", ("defined", "variable", "name")),
    # -- pandas one-liners --
    Case("In pandas, how do I drop rows with missing values from a DataFrame df?", "term", ("dropna",)),
    Case("In pandas, how do I read a CSV file into a DataFrame?", "term", ("read_csv",)),
    Case("In pandas, how do I get the first 5 rows of a DataFrame df?", "term", ("head",)),
    Case("In pandas, how do I sort a DataFrame df by the column 'age'?", "term", ("sort_values", "sort")),
    Case("In pandas, how do I group a DataFrame df by 'city' and compute the mean?", "term", ("groupby",)),
    # -- what does this code do --
    Case("What does this code do?\n\n```python\nprint(sum(range(10)))\n```", "term", ("sum", "45", "add")),
    Case("What does this code do?\n\n```python\nwords = sorted(words)\n```", "term", ("sort", "alphabet", "order")),
    Case("What does this code do?\n\n```python\nsquares = [x * x for x in range(5)]\n```", "term",
         ("square", "list")),
    Case("What does this code do?\n\n```python\nwith open('data.txt') as f:\n    text = f.read()\n```", "term",
         ("read", "file", "open")),
    Case("What does this code do?\n\n```python\nname = name.upper()\n```", "term", ("upper", "capital")),
    # -- small talk and general questions --
    Case("Hello!", "talk"),
    Case("What is the capital of France?", "term", ("paris",)),
    Case("Thanks, that helped.", "talk"),
    Case("What can you help me with?", "talk"),
    Case("What is a Python list?", "term", ("list", "collection", "sequence", "ordered")),
    Case("How do I install a package with pip?", "term", ("pip install",)),
]

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def check(case: Case, text: str, tool_calls: int) -> tuple[bool, str]:
    """(passed, why not)."""
    if not text.strip():
        return False, "empty"
    if tool_calls:
        return False, f"{tool_calls} tool call(s)"
    if repeats(text):
        return False, "degenerate repetition"
    if case.kind == "function":
        name = case.expect[0]
        for block in _FENCE.findall(text):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name for n in ast.walk(tree)):
                return True, ""
        return False, f"no parseable block defining {name}"
    if case.kind == "term":
        low = text.lower()
        if any(term in low for term in case.expect):
            return True, ""
        return False, f"none of {case.expect} mentioned"
    return True, ""


def repeats(text: str) -> bool:
    guard = RepetitionGuard()
    step = 16
    return any(guard.feed(text[i:i + step]) for i in range(0, len(text), step))


@dataclass
class Sample:
    passed: bool
    why: str
    ttft: float | None
    tokens_per_s: float | None
    text: str


@dataclass
class PathStats:
    samples: list[Sample] = field(default_factory=list)

    def line(self, name: str) -> str:
        n = len(self.samples)
        passed = sum(s.passed for s in self.samples)
        ttfts = [s.ttft for s in self.samples if s.ttft is not None]
        rates = [s.tokens_per_s for s in self.samples if s.tokens_per_s]
        return (f"{name:<8} pass {passed:>3}/{n:<3} ({passed / n:6.1%})   TTFT median {_ms(ttfts)}  p90 "
                f"{_ms(ttfts, 0.9)}   tokens/s median {statistics.median(rates) if rates else 0:6.1f}")

    @property
    def rate(self) -> float:
        return sum(s.passed for s in self.samples) / max(1, len(self.samples))


def _ms(values: list[float], q: float = 0.5) -> str:
    if not values:
        return "     -"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:6.0f} ms"


async def raw_sample(client: httpx.AsyncClient, url: str, key: str, case: Case, max_tokens: int) -> Sample:
    body = {"model": "local", "messages": [{"role": "user", "content": case.prompt}], "stream": True,
            "stream_options": {"include_usage": True}, "max_tokens": max_tokens}
    started = time.perf_counter()
    first = None
    parts: list[str] = []
    tokens = 0
    headers = {"authorization": f"Bearer {key}", **REQUEST_HEADERS}
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    first = first if first is not None else time.perf_counter() - started
                    parts.append(piece)
            if chunk.get("usage"):
                tokens = chunk["usage"].get("completion_tokens") or 0
    total = time.perf_counter() - started
    text = "".join(parts)
    passed, why = check(case, text, 0)
    return Sample(passed, why, first, _rate(tokens, first, total), text)


async def engine_sample(eca, case: Case) -> Sample:
    started = time.perf_counter()
    first = None
    stream = eca.stream(case.prompt, timeout=300)
    async for item in stream:
        content = item.content
        if first is None and getattr(content, "type", "") == "text" and item.role == "assistant":
            first = time.perf_counter() - started
    total = time.perf_counter() - started
    result = stream.result
    text = result.text if result is not None else ""
    calls = len(result.tool_calls) if result is not None else 0
    usage = result.usage if result is not None else None
    tokens = (usage or {}).get("messageOutputTokens") or 0
    passed, why = check(case, text, calls)
    if result is not None and result.error:
        passed, why = False, f"error: {result.error}"
    return Sample(passed, why, first, _rate(tokens, first, total), text)


def _override_options(changes: dict) -> None:
    from dataclasses import replace

    from eca_notebook.providers import local

    options = replace(LocalOptions(), **changes)
    original = local.LocalProvider.__init__

    def init(self, *args, **kwargs):
        kwargs["options"] = kwargs.get("options") or options
        original(self, *args, **kwargs)

    local.LocalProvider.__init__ = init  # type: ignore[method-assign]
    print(f"engine options: {options}")


def _rate(tokens: int, first: float | None, total: float) -> float | None:
    if not tokens or first is None or total <= first or tokens < 2:
        return None
    return (tokens - 1) / (total - first)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--only", type=int, default=0, help="run only the first N prompts")
    parser.add_argument("--verbose", action="store_true", help="print every failed answer")
    parser.add_argument("--sampling", default=None,
                        help='engine path: JSON overriding LocalOptions, e.g. \'{"temperature": 0.6, '
                             '"sampling": {"repeat_penalty": 1.1}}\' (to choose the defaults by measurement)')
    parser.add_argument("--system", default=None, help="engine path: the embedded model's base system prompt")
    args = parser.parse_args()
    if args.system is not None:
        from eca_notebook.providers import local

        local.SYSTEM_PROMPT = args.system
        print(f"engine system prompt: {args.system!r}")
    if args.sampling:
        _override_options(json.loads(args.sampling))
    status = local_model_status()
    if not status.available:
        print(f"skipped: {status.message}")
        return 0
    cases = CASES[: args.only] if args.only else CASES
    print(f"{len(cases)} prompts × {args.samples} samples per path on {status.message}")

    from eca_notebook.client import EcaClient

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "project"
        workspace.mkdir()
        (workspace / "README.md").write_text("# analysis\n\nNotebooks for a small data analysis.\n")
        env = {**os.environ, "HOME": str(Path(tmp) / "home"), "XDG_CONFIG_HOME": str(Path(tmp) / "home/.config"),
               "XDG_CACHE_HOME": str(Path(tmp) / "home/.cache")}
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_URL"):
            env.pop(name, None)
        runtime = get_local_runtime()
        load_started = time.perf_counter()
        url = await runtime.ensure_started()
        print(f"model loaded in {time.perf_counter() - load_started:.1f} s")
        max_tokens = LocalOptions().max_tokens or 1024
        raw, engine = PathStats(), PathStats()
        failures: list[str] = []
        async with httpx.AsyncClient(timeout=httpx.Timeout(300.0)) as http:
            async with await EcaClient.start(workspace=workspace, env=env) as eca:
                for sample in range(args.samples):
                    for number, case in enumerate(cases, 1):
                        pair = [("raw", raw), ("engine", engine)]
                        if (number + sample) % 2:
                            pair.reverse()
                        for name, stats in pair:
                            if name == "raw":
                                result = await raw_sample(http, url, runtime.api_key, case, max_tokens)
                            else:
                                result = await engine_sample(eca, case)
                            stats.samples.append(result)
                            if not result.passed:
                                failures.append(f"[{name}] #{number} {case.prompt[:50]!r}: {result.why}"
                                                + (f"\n    {result.text[:300]!r}" if args.verbose else ""))
                        marks = ["ok" if s.samples[-1].passed else "--" for s in (raw, engine)]
                        print(f"  sample {sample + 1} prompt {number:>2}: raw {marks[0]} engine {marks[1]}",
                              file=sys.stderr)
        await runtime.aclose()
    print()
    print(raw.line("(a) raw"))
    print(engine.line("(b) eng"))
    ratio = engine.rate / raw.rate if raw.rate else float("inf")
    verdict = "OK" if ratio >= 1.0 else "WORSE"
    print(f"pass rate b/a = {ratio:.2f}  ({verdict}: the engine must not make the model worse)")
    if failures:
        print("\nfailures:")
        for line in failures:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
