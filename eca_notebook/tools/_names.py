"""Tool names every provider accepts: ``<server>__<tool>`` made safe for the strictest rule of the APIs we speak.

Why: the model calls a tool by the name we offered, and each provider API checks that name. OpenAI (chat completions
and responses) and Anthropic accept only ``^[a-zA-Z0-9_-]{1,64}$``; Ollama's OpenAI-style tools pass the name on to
models trained on the same convention. MCP server and tool names are chosen by others and may hold anything: Jupyter
AI hands every session its built-in server named "Jupyter MCP Server", users name servers ``my.server`` or
``team/tools`` or ``données``. One name with a space and every turn that offers it fails.

The rule: a name that already fits is left alone (``eca__read_file``, ``github__create_issue``: what users and
existing chats know). Any other name is folded to ASCII (``é`` → ``e``), every other character becomes ``_``, the
two parts are shortened to fit, and a short hash of the *original* name is added to the server part — so two names
that clean to the same text (``a b`` and ``a.b``) still differ, and a name is the same in every turn and every
process (the model's earlier calls in the history keep naming the tool it meant). The mapping back is exact because
the engine keys its tools by this name (``llm_name``): what the model calls is looked up, never parsed.

Users never see these names: contents, approvals and ``tool/serverUpdated`` keep the server's and the tool's own.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["MAX_NAME_LENGTH", "PROVIDER_NAME", "provider_tool_name"]

#: The longest tool name OpenAI and Anthropic accept.
MAX_NAME_LENGTH = 64
#: A tool name every provider we speak accepts.
PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

_OTHER = re.compile(r"[^A-Za-z0-9_-]+")
_UNDERSCORES = re.compile(r"_{2,}")
_HASH_LENGTH = 8
_SEPARATOR = "__"
#: What the server part keeps at least when a long tool name needs the room.
_MIN_SERVER = 8


def _clean(text: str, fallback: str) -> str:
    """*text* in ``[A-Za-z0-9_-]``: accents folded, anything else ``_``, no ``__`` (the separator), no edge ``_``."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    cleaned = _UNDERSCORES.sub("_", _OTHER.sub("_", folded)).strip("_")
    return cleaned or fallback


def provider_tool_name(server: str, name: str) -> str:
    """The name the model is offered for tool *name* of *server*: ``server__name`` when that is already valid
    for every provider, otherwise a cleaned form with a stable hash of the original (at most 64 characters)."""
    original = f"{server}{_SEPARATOR}{name}"
    if PROVIDER_NAME.fullmatch(original):
        return original
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    head, tail = _clean(server, "mcp"), _clean(name, "tool")
    room = MAX_NAME_LENGTH - len(_SEPARATOR) - 1 - _HASH_LENGTH  # for head + tail
    if len(head) + len(tail) > room:
        keep_head = min(len(head), max(_MIN_SERVER, room - len(tail)))
        head, tail = head[:keep_head].rstrip("_") or "mcp", tail[: room - keep_head].rstrip("_") or "tool"
    return f"{head}_{digest}{_SEPARATOR}{tail}"
