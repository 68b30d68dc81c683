"""What every attached context becomes, and the budgets it must fit: the shared part of rendering contexts.

Each context renders to a :class:`Block` (one XML-ish element: tag, attributes, body); :func:`fit` then cuts its
body to the per-context cap and the whole element to what is left of the prompt's budget, with a note inside the
element saying what was left out and how to get the rest. A context that cannot be rendered raises
:class:`ContextProblem`, whose message the user sees. The limits live here so one place says how big things get.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from ...protocol.context import (
    ChatContext,
    CursorContext,
    DirectoryContext,
    FileContext,
    GitContext,
    McpResourceContext,
    WebContext,
)

__all__ = [
    "CONTEXT",
    "CURSOR_MAX_FILE_BYTES",
    "CURSOR_RADIUS",
    "DIRECTORY_MAX_ENTRIES",
    "NOTEBOOK_MAX_BYTES",
    "NOTEBOOK_OUTPUT_CHARS",
    "PER_CONTEXT_BYTES",
    "WEB_MAX_BYTES",
    "WEB_TIMEOUT",
    "Block",
    "ContextProblem",
    "describe",
    "fit",
    "truncate",
]

PER_CONTEXT_BYTES = 100_000  # one context's element body
WEB_MAX_BYTES = 500_000  # read from a page before reducing it to text
WEB_TIMEOUT = 15.0  # seconds, for the whole fetch
DIRECTORY_MAX_ENTRIES = 500
CURSOR_RADIUS = 20  # lines shown above and below the cursor / selection
CURSOR_MAX_FILE_BYTES = 20_000_000  # the cursor's file is read whole
NOTEBOOK_MAX_BYTES = 50_000_000  # larger .ipynb files are attached as plain text (cut), not parsed
NOTEBOOK_OUTPUT_CHARS = 400  # of one output's text kept in a notebook summary

CONTEXT = TypeAdapter(ChatContext)  # a wire dict → its context model


@dataclass
class Block:
    """One context as an element: ``<tag attrs>body</tag>``, before it is fitted into the budget."""

    tag: str
    attrs: Mapping[str, object]  # each rendered as its text (None and "" left out)
    body: str
    more_hint: str = ""  # appended to the truncation note (how to get the rest)
    total: int | None = None  # size in bytes of the whole source when only part of it was read
    notes: list[str] = field(default_factory=list)  # already-known notes (e.g. the page was cut at 500 KB)

    def open(self) -> str:
        attrs = "".join(f' {k}="{_attr(v)}"' for k, v in self.attrs.items() if v is not None and v != "")
        return f"<{self.tag}{attrs}>"


class ContextProblem(Exception):
    """A context that cannot be rendered; the message is shown to the user."""


def _attr(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fit(block: Block, body_cap: int, budget: int) -> tuple[str | None, str | None]:
    """The rendered element: its body cut to `body_cap` bytes and the whole element to `budget` bytes, with a note
    inside when cut. Returns (element or None when not even a useful part fits, "cap" | "budget" | None = why cut)."""
    opening, closing = block.open(), f"</{block.tag}>\n"
    body = block.body if block.body.endswith("\n") or not block.body else block.body + "\n"
    body_bytes = len(body.encode("utf-8"))
    notes = list(block.notes)
    overhead = len(opening.encode()) + len(closing.encode()) + 1 + sum(len(n.encode()) + 3 for n in notes)
    room = min(body_cap, budget - overhead)
    why = None
    if body_bytes > room:
        why = "cap" if body_cap <= budget - overhead else "budget"
        room -= 250  # the truncation note
        if room < min(200, body_bytes):
            return None, why
        body = truncate(body, room)
        total = max(block.total or 0, body_bytes)
        hint = f"; {block.more_hint}" if block.more_hint else ""
        notes.append(f"truncated: showing the first {len(body.encode('utf-8'))} of {total} bytes{hint}")
    elif block.total and block.total > body_bytes:
        why = "cap"
        hint = f"; {block.more_hint}" if block.more_hint else ""
        notes.append(f"truncated: showing the first {body_bytes} of {block.total} bytes{hint}")
    note_text = "".join(f"[{n}]\n" for n in notes)
    return f"{opening}\n{body}{note_text}{closing}", why


def truncate(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[:max_bytes].decode("utf-8", errors="ignore")
    newline = cut.rfind("\n")
    if newline >= len(cut) * 0.8:
        cut = cut[: newline + 1]
    return cut if cut.endswith("\n") else cut + "\n"


def describe(ctx: Any) -> str:
    if isinstance(ctx, (FileContext, DirectoryContext, CursorContext)):
        return f"{ctx.type} {ctx.path}"
    if isinstance(ctx, WebContext):
        return f"web page {ctx.url}"
    if isinstance(ctx, McpResourceContext):
        return f"MCP resource {ctx.uri}"
    if isinstance(ctx, GitContext):
        return f"git {ctx.part}" if ctx.part else "git"
    if getattr(ctx, "type", None) == "text":
        return f"text {getattr(ctx, 'label', '')}".rstrip()
    return str(getattr(ctx, "type", "context"))
