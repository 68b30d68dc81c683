"""Prompt-cache billing for the scripted LLM server: usage computed from the request bytes, as the real APIs bill.

Why: a test or benchmark of prompt caching must not script the cache counts it wants to see — the counts have to
follow from what the client sent. So the server keeps what earlier requests would have left in a provider's cache
and reports each request's input, cache-read and cache-write tokens from it:

- **Anthropic** (explicit breakpoints): the prompt is its blocks in cache order — tools, system, then each message's
  content blocks. At each ``cache_control`` breakpoint the prefix up to it is written to the cache (when it is at
  least :data:`MIN_CACHEABLE` tokens); a request reads the longest cached prefix ending at a breakpoint or at one of
  the 20 blocks before one (the API's look-back), writes from there to its last breakpoint and pays full price only
  for what follows.
- **OpenAI** (automatic): any earlier request's prefix is reused, in whole blocks, rounded down to 128-token steps,
  from 1,024 tokens on — within the same ``prompt_cache_key`` (requests without one share one cache).

Block identity ignores the ``cache_control`` markers themselves. Tokens are estimated at 4 characters each.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from typing import Any

from ..protocol import JsonObject, JsonValue

__all__ = ["LOOKBACK_BLOCKS", "MIN_CACHEABLE", "PromptCache", "anthropic_blocks", "openai_blocks"]

MIN_CACHEABLE = 1024  # tokens: shorter prefixes are not cached (Anthropic's Sonnet minimum; OpenAI's)
LOOKBACK_BLOCKS = 20
_OPENAI_STEP = 128


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _plain(block: Any) -> Any:
    """A block without its ``cache_control`` marker (which does not change what is cached)."""
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def _blocks(content: JsonValue) -> list[JsonValue]:
    """A system prompt's or message's blocks (a text is one text block)."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else _list(content)


def anthropic_blocks(body: JsonObject) -> list[tuple[str, bool]]:
    """A Messages request as (canonical JSON of each block, whether it carries a breakpoint), in cache order."""
    blocks: list[tuple[str, bool]] = []
    for tool in _list(body.get("tools")):
        blocks.append((json.dumps(_plain(tool), sort_keys=True), isinstance(tool, dict) and "cache_control" in tool))
    for block in _blocks(body.get("system")):
        blocks.append((json.dumps(_plain(block), sort_keys=True), isinstance(block, dict) and "cache_control" in block))
    for message in _list(body.get("messages")):
        if not isinstance(message, dict):
            continue
        for block in _blocks(message.get("content")):
            blocks.append((json.dumps([message.get("role"), _plain(block)], sort_keys=True),
                           isinstance(block, dict) and "cache_control" in block))
    return blocks


def openai_blocks(body: JsonObject) -> list[str]:
    """A Responses or Chat Completions request as the canonical JSON of its parts, in prompt order."""
    parts = [json.dumps(t, sort_keys=True) for t in _list(body.get("tools"))]
    if body.get("instructions"):
        parts.append(json.dumps(body["instructions"]))
    parts += [json.dumps(item, sort_keys=True) for item in _list(body.get("input") or body.get("messages"))]
    return parts


def _chain(texts: list[str]) -> tuple[list[str], list[int]]:
    """The hash of each prefix (through block i) and the tokens through block i."""
    hashes: list[str] = []
    totals: list[int] = []
    digest = hashlib.sha256()
    total = 0
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
        hashes.append(digest.copy().hexdigest())
        total += _tokens(text)
        totals.append(total)
    return hashes, totals


class PromptCache:
    """What a provider's prompt cache holds, across the requests the server answered (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._anthropic: set[str] = set()
        self._openai: dict[str, set[str]] = {}

    def bill_anthropic(self, body: JsonObject) -> tuple[int, int, int]:
        """(input tokens, cache-read tokens, cache-write tokens) of a Messages request, updating the cache."""
        blocks = anthropic_blocks(body)
        hashes, totals = _chain([b[0] for b in blocks])
        if not blocks:
            return 0, 0, 0
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        with self._lock:
            hit = -1
            for point in breakpoints:
                for i in range(point, max(-1, point - LOOKBACK_BLOCKS), -1):
                    if hashes[i] in self._anthropic:
                        hit = max(hit, i)
                        break
            read = totals[hit] if hit >= 0 else 0
            last = max((p for p in breakpoints if totals[p] >= MIN_CACHEABLE), default=-1)
            write = totals[last] - read if last > hit else 0
            for point in breakpoints:
                if totals[point] >= MIN_CACHEABLE:
                    self._anthropic.add(hashes[point])
        return totals[-1] - read - write, read, write

    def bill_openai(self, body: JsonObject) -> tuple[int, int]:
        """(input tokens not cached, cached tokens) of a Responses / Chat Completions request, updating the cache."""
        hashes, totals = _chain(openai_blocks(body))
        if not hashes:
            return 0, 0
        key = str(body.get("prompt_cache_key") or "")
        with self._lock:
            seen = self._openai.setdefault(key, set())
            hit = max((i for i, h in enumerate(hashes) if h in seen), default=-1)
            cached = totals[hit] if hit >= 0 else 0
            cached = cached // _OPENAI_STEP * _OPENAI_STEP if cached >= MIN_CACHEABLE else 0
            seen.update(hashes)
        return totals[-1] - cached, cached
