"""Folding streamed chunks for a client that falls behind: the ECA merge rule of the connection's outgoing queue.

The engine streams a reply as one ``chat/contentReceived`` per provider chunk. A client that keeps up sees them as
the model sent them (as the reference server does); once a client is ``MERGE_BACKLOG`` messages behind, the
endpoint's outbox asks :func:`merge_chunks` whether the next notification can be folded into the one queued just
before it, so the client gets fewer, larger chunks and shows the same text.

And writing them: :func:`encode_text_chunk` gives the outbox the bytes of a text chunk's notification from a template,
the three strings that vary redacted and JSON-escaped, instead of the walks every other message goes through (built,
copied, redacted string by string, encoded) — the same bytes, at a fraction of the cost a chunk adds on its way out.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

from .._redact import redact, secrets_version
from ..protocol import JsonObject

__all__ = ["MERGE_BACKLOG", "encode_text_chunk", "merge_chunks"]

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


_CONTENT_RECEIVED = "chat/contentReceived"
_PARAM_KEYS = ("chatId", "role", "content")
_CONTENT_KEYS = ("type", "text")
# every fixed string of the message: the template writes them as they are while redaction leaves them so
_FIXED = ("jsonrpc", "2.0", "method", _CONTENT_RECEIVED, "params", *_PARAM_KEYS, *_CONTENT_KEYS)
_MAX_PREFIXES = 1024
# (secrets version, whether _FIXED is left as it is, chat id and role → the body up to the text): one tuple, so that
# a thread never sees one version's answer with another's prefixes
_cache: tuple[int, bool, dict[tuple[str, str], str]] = (-1, False, {})


def encode_text_chunk(method: str, params: Any) -> bytes | None:
    """The JSON body of a streamed text chunk's ``chat/contentReceived`` — exactly what the outbox would write for it
    through the connection's ``outgoing`` redaction (every string redacted, keys too; compact UTF-8 JSON) — or None
    for any other notification, a chunk of another shape (a subagent's, an aliased numeric chat id), a lone
    surrogate (the generic path escapes it) or a registry of secrets that would redact the template's own strings.

    What comes before the text depends only on the chat, the role and the registered secrets: it is built once per
    chat and role (and again after a secret is added), the text redacted and escaped per chunk."""
    if method != _CONTENT_RECEIVED or type(params) is not dict:
        return None
    content = params.get("content")
    if type(content) is not dict or tuple(params) != _PARAM_KEYS or tuple(content) != _CONTENT_KEYS:
        return None
    chat_id, role, text = params["chatId"], params["role"], content["text"]
    if type(chat_id) is not str or type(role) is not str or type(text) is not str or content["type"] != "text":
        return None
    global _cache
    cache, version = _cache, secrets_version()
    if cache[0] != version:
        cache = _cache = (version, all(redact(fixed) == fixed for fixed in _FIXED), {})
    if not cache[1]:
        return None
    prefixes = cache[2]
    prefix = prefixes.get((chat_id, role))
    if prefix is None:
        if len(prefixes) >= _MAX_PREFIXES:
            prefixes.clear()
        prefix = prefixes[(chat_id, role)] = (
            f'{{"jsonrpc":"2.0","method":"chat/contentReceived","params":{{"chatId":{encode_basestring(redact(chat_id))},'
            f'"role":{encode_basestring(redact(role))},"content":{{"type":"text","text":'
        )
    try:
        return (prefix + encode_basestring(redact(text)) + "}}}").encode("utf-8")
    except UnicodeEncodeError:
        return None
