"""Seeded, bounded fuzz input for the doors' tests: JSON-RPC-shaped messages with hostile values, and raw garbage.

Seeded (every run sends the same input, so a failure reproduces) and bounded (a few thousand messages: the four
door fuzz tests together stay well under a minute). Each door test ends by checking the server still answers.
"""

from __future__ import annotations

import json
import random
from typing import Any

# Field names the doors look at, so fuzzed params reach validation and handlers, not just "unknown field".
FIELDS = ["chatId", "message", "model", "behavior", "agent", "contexts", "query", "toolCallId", "save", "name",
          "sessionId", "prompt", "cwd", "mcpServers", "modeId", "modelId", "id", "limit", "sortBy", "type", "path",
          "linesRange", "uri", "protocolVersion", "clientCapabilities", "capabilities", "workspaceFolders"]
WEIRD_STRINGS = ["", " ", "\u0000", "../../etc/passwd", "a" * 300, "é\ud800", "\u2028", "null", "1", "-1",
                 "/doctor", "/compact", "@file", "subagent-x", "\r\nContent-Length: 5\r\n\r\n{}", "{\"id\":1}"]


def value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 2**31, 2**63, -(2**70), 7])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e-9])
    if kind in (4, 5):
        return rng.choice(WEIRD_STRINGS)
    if kind == 6:
        return "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(0, 20)))
    if kind == 7:
        return [value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(FIELDS): value(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


def message(rng: random.Random, methods: list[str]) -> Any:
    """A JSON-RPC-like message: mostly well-formed envelopes with bad params, sometimes a broken envelope."""
    method = rng.choice(methods) if rng.random() < 0.9 else rng.choice(["", "nope/x", "$/x", 5, None])
    msg: dict[str, Any] = {"jsonrpc": "2.0" if rng.random() < 0.9 else rng.choice(["1.0", 2, None]),
                           "method": method}
    if rng.random() < 0.7:
        msg["id"] = rng.choice([rng.randrange(10**6), f"f{rng.randrange(10**6)}", None, 1.5, True, [1], {"a": 1}])
    if rng.random() < 0.9:
        params = {f: value(rng) for f in rng.sample(FIELDS, rng.randrange(0, 5))}
        msg["params"] = params if rng.random() < 0.9 else value(rng)
    if rng.random() < 0.03:
        return [msg, value(rng)] if rng.random() < 0.5 else []
    if rng.random() < 0.03:  # a response to nothing
        return {"jsonrpc": "2.0", "id": rng.randrange(100), "result": value(rng)}
    return msg


def body(rng: random.Random, methods: list[str]) -> bytes:
    """One message's bytes: usually JSON, sometimes not JSON at all."""
    roll = rng.random()
    if roll < 0.85:
        return json.dumps(message(rng, methods)).encode()
    if roll < 0.93:
        return rng.choice([b"", b"null", b"42", b'"s"', b"{", b"[1,", b"\xff\xfe", b"{\"a\":NaN}", b"[" * 5000])
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
