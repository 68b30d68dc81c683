"""One chat as seen from a cell: the ECA notifications of its turns folded into blocks (text, reasoning, tool calls,
notes), a progress line and a usage footer. The fold itself is :class:`eca_notebook.protocol.turn.TurnFold`, shared
with the Python client's results, so a cell and a script agree on how each tool call ended.

Both outputs are drawn from this one model: the widget (``widgets/_chat.py``) and the plain-markdown fallback
(``_fallback.py``) for nbconvert/papermill, so the two never disagree about what happened in a turn. No ipywidgets
here: the fallback must work where they are not installed.
"""

from __future__ import annotations

import re

from ..protocol import ImageContent, JsonObject
from ..protocol.turn import TOOL_CONTENT_TYPES, Block, ToolCallState, TurnFold, parse_content

__all__ = ["SHOWN_IMAGE_TYPES", "Block", "ToolCallState", "Transcript", "code_blocks", "format_usage"]

TOOL_TYPES = tuple(sorted(TOOL_CONTENT_TYPES))
#: The image contents a view draws (as ``data:`` URLs): raster types only, never ``image/svg+xml``.
SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def format_usage(content: JsonObject) -> str:
    parts = []
    tokens = content.get("sessionTokens")
    if tokens:
        parts.append(f"{tokens:,} tokens this session")
    inp, out = content.get("messageInputTokens"), content.get("messageOutputTokens")
    if inp or out:
        parts.append(f"last: {inp or 0:,} in / {out or 0:,} out")
    cost = content.get("sessionCost")
    if cost is not None:
        parts.append(f"cost ${cost}")
    return " · ".join(parts)


class Transcript(TurnFold):
    """Blocks of the turns shown in one output (the fold of :mod:`eca_notebook.protocol.turn`), plus the chat's
    status; ``apply`` returns the blocks that changed."""

    def __init__(self) -> None:
        super().__init__()
        self.status = "idle"

    @property
    def usage(self) -> str:
        """The usage footer: the last ``usage`` content, formatted ("" before the first)."""
        return format_usage(self.usage_content) if self.usage_content is not None else ""

    def begin_turn(self, prompt: str) -> Block:
        self.turn_start = len(self.blocks)
        block = Block("user", prompt)
        self.blocks.append(block)
        self.status = "running"
        self.progress = "Starting…"
        return block

    def replayed_prompt(self, prompt: str) -> Block:
        """A prompt of the chat as the server replays it (after a rewind): a finished turn starts here."""
        self._close_open_blocks()
        self.turn_start = len(self.blocks)
        block = Block("user", prompt)
        self.blocks.append(block)
        return block

    def clear(self) -> None:
        """Forget every turn shown (``chat/cleared``); the status stays."""
        TurnFold.__init__(self)

    def apply(self, method: str, params: JsonObject) -> list[Block]:
        if method == "chat/statusChanged":
            status = params.get("status")
            self.status = status if isinstance(status, str) and status else self.status
            return []
        if method != "chat/contentReceived":
            return []
        given = params.get("content")
        content = parse_content(given if isinstance(given, dict) else {})  # parsed once, here: the fold takes it typed
        if isinstance(content, ImageContent):
            return self._image(content)
        role = params.get("role")
        return self.add(role if isinstance(role, str) else None, content)

    def _image(self, content: ImageContent) -> list[Block]:
        """An ``image`` content (a prompt's attachment, an MCP tool's picture): a block whose text is the base64 and
        id the media type — only a raster type with base64 characters only, so the view can put it in a ``data:``
        URL as it is (never SVG: it may carry script, and model/tool output is untrusted)."""
        media_type, data = content.media_type, content.base64
        if media_type not in SHOWN_IMAGE_TYPES or not _BASE64.fullmatch(data):
            return [self.note(f"[image not shown: {media_type[:40]}]")]
        self._end_text()
        block = Block("image", data, id=str(media_type))
        self.blocks.append(block)
        return [block]

    # -- reading -------------------------------------------------------------------------------------------------

    def answer(self, all_turns: bool = False) -> str:
        """The assistant's text of the current turn (or of every turn shown)."""
        return "".join(self.texts(all_turns))

    def pending_tools(self) -> list[ToolCallState]:
        return [t for t in self.tools.values() if t.status == "pending"]

    def to_markdown(self, all_turns: bool = False) -> str:
        """The turn as plain Markdown (the fallback output and a copyable record)."""
        start = 0 if all_turns else self.turn_start
        parts: list[str] = []
        for block in self.blocks[start:]:
            if block.kind == "user":
                continue
            if block.kind == "text":
                parts.append(block.text.strip("\n"))
            elif block.kind == "image":
                parts.append(f"*[image: {block.id}, {len(block.text) * 3 // 4 // 1024} KB]*")
            elif block.kind == "note":
                parts.append("> " + block.text.strip().replace("\n", "\n> "))
            elif block.kind == "reasoning" and block.text.strip():
                parts.append(f"<details><summary>Reasoning</summary>\n\n{block.text.strip()}\n\n</details>")
            elif block.kind == "tool" and block.tool is not None:
                parts.append(_tool_markdown(block.tool))
        # the plan as this turn left it (a turn's own plan comes after its prompt's block, at ``start``)
        if self.plan_content is not None and (all_turns or self.plan_at > start):
            from .widgets import plan_markdown

            parts.append(plan_markdown(self.plan_content))
        if self.usage:
            parts.append(f"*{self.usage}*")
        return "\n\n".join(p for p in parts if p)


def _tool_markdown(tool: ToolCallState) -> str:
    status = tool.status if tool.reject_reason != "user-config" else "denied by configuration"
    lines = [f"**Tool `{tool.name}`**" + (f" — {tool.summary}" if tool.summary else "") + f" · *{status}*"]
    if tool.details and tool.details.get("type") == "fileChange" and tool.details.get("diff"):
        lines.append("```diff\n" + str(tool.details["diff"]).rstrip("\n") + "\n```")
    if tool.output:
        fence = "````" if "```" in tool.output else "```"
        lines.append(f"<details><summary>Output</summary>\n\n{fence}\n{tool.output.rstrip()}\n{fence}\n\n</details>")
    return "\n\n".join(lines)


def code_blocks(markdown: str) -> list[str]:
    """The fenced code blocks of an answer (for ``--format code``); the whole text when it has none."""
    blocks: list[str] = []
    current: list[str] | None = None
    fence = ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if current is None:
            if stripped.startswith("```") or stripped.startswith("~~~"):
                fence = stripped[:3]
                current = []
        elif stripped.startswith(fence) and stripped.strip("`~") == "":
            blocks.append("\n".join(current))
            current = None
        else:
            current.append(line)
    if current:  # an unterminated fence (a stopped answer): keep what arrived
        blocks.append("\n".join(current))
    return blocks
