"""Folding streamed chunks for a client that falls behind: the ECA merge rule of the connection's outgoing queue.

The engine streams a reply as one ``chat/contentReceived`` per provider chunk. A client that keeps up sees them as
the model sent them (as the reference server does); once a client is ``MERGE_BACKLOG`` messages behind, the
endpoint's outbox asks :func:`merge_chunks` whether the next notification can be folded into the one queued just
before it, so the client gets fewer, larger chunks and shows the same text.
"""

from __future__ import annotations

from typing import Any

from ..protocol import JsonObject

__all__ = ["MERGE_BACKLOG", "merge_chunks"]

# Chunks merge only once this many messages wait for the client.
MERGE_BACKLOG = 256


def merge_chunks(method: str, first: Any, second: Any) -> JsonObject | None:
    """One ``chat/contentReceived`` for two consecutive ones when a client would show the same: text chunks of the
    same chat and (non-user) role, or reasoning chunks of the same reasoning id. None for anything else. Never
    mutates its inputs (the engine hands the same dict to every listener)."""
    if method != "chat/contentReceived" or not isinstance(first, dict) or not isinstance(second, dict):
        return None
    if first.get("chatId") != second.get("chatId") or first.get("role") != second.get("role"):
        return None
    a, b = first.get("content"), second.get("content")
    if not isinstance(a, dict) or not isinstance(b, dict) or first.get("role") == "user":
        return None
    kind = a.get("type")
    if kind != b.get("type") or not isinstance(a.get("text"), str) or not isinstance(b.get("text"), str):
        return None
    if kind == "text" and a.keys() == b.keys() == {"type", "text"}:
        pass
    elif kind == "reasonText" and a.keys() == b.keys() == {"type", "id", "text"} and a["id"] == b["id"]:
        pass
    else:
        return None
    return {**first, "content": {**a, "text": a["text"] + b["text"]}}
