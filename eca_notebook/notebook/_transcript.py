"""One chat as seen from a cell: the ECA notifications of its turns folded into blocks (text, reasoning, tool calls,
notes), a progress line and a usage footer.

Both outputs are drawn from this one model: the widget (``widgets/_chat.py``) and the plain-markdown fallback
(``_fallback.py``) for nbconvert/papermill, so the two never disagree about what happened in a turn. No ipywidgets
here: the fallback must work where they are not installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCallState", "Block", "Transcript", "code_blocks", "format_usage"]


@dataclass
class ToolCallState:
    """What the user knows about one tool call, updated by its ``toolCall*`` contents."""

    id: str
    name: str
    server: str = "eca"
    status: str = "preparing"  # preparing | pending | running | done | failed | rejected
    summary: str | None = None
    arguments: Any = None
    arguments_text: str = ""
    details: dict[str, Any] | None = None
    manual_approval: bool = False
    output: str | None = None
    error: bool = False
    reject_reason: str | None = None
    total_time_ms: int | None = None
    decided: bool = False  # the user (or the policy) answered the approval

    def update(self, content: dict[str, Any]) -> None:
        kind = content.get("type")
        self.summary = content.get("summary") or self.summary
        if content.get("details"):
            self.details = content["details"]
        if content.get("server"):
            self.server = content["server"]
        if kind == "toolCallPrepare":
            self.arguments_text += content.get("argumentsText") or ""
        elif kind == "toolCallRun":
            self.arguments = content.get("arguments")
            self.manual_approval = bool(content.get("manualApproval"))
            self.status = "pending" if self.manual_approval and not self.decided else "running"
        elif kind == "toolCallRunning":
            self.arguments = content.get("arguments", self.arguments)
            self.status = "running"
        elif kind == "toolCalled":
            self.error = bool(content.get("error"))
            self.status = "failed" if self.error else "done"
            self.total_time_ms = content.get("totalTimeMs")
            outputs = content.get("outputs") or []
            self.output = "\n".join(str(o.get("text") or o.get("content") or "") for o in outputs
                                    if isinstance(o, dict))
        elif kind == "toolCallRejected":
            self.status = "rejected"
            self.reject_reason = content.get("reason")

    def interrupted(self) -> None:
        """The turn ended with this call still open (a stop)."""
        if self.status == "pending":
            self.status = "rejected"
        elif self.status in ("preparing", "running"):
            self.status = "failed"

    def args_text(self) -> str:
        if self.arguments is not None:
            try:
                return json.dumps(self.arguments, indent=2, ensure_ascii=False)
            except (TypeError, ValueError):
                return str(self.arguments)
        return self.arguments_text


@dataclass
class Block:
    kind: str  # "user" | "text" | "reasoning" | "tool" | "note"
    text: str = ""
    id: str | None = None
    tool: ToolCallState | None = None
    error: bool = False
    done: bool = False
    total_time_ms: int | None = None


TOOL_TYPES = ("toolCallPrepare", "toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected")


def format_usage(content: dict[str, Any]) -> str:
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


@dataclass
class Transcript:
    """Blocks of the turns shown in one output; ``apply`` returns the blocks that changed."""

    blocks: list[Block] = field(default_factory=list)
    tools: dict[str, ToolCallState] = field(default_factory=dict)
    progress: str = ""
    usage: str = ""
    title: str | None = None
    status: str = "idle"
    turn_start: int = 0  # index of the first block of the current turn

    def begin_turn(self, prompt: str) -> Block:
        self.turn_start = len(self.blocks)
        block = Block("user", prompt)
        self.blocks.append(block)
        self.status = "running"
        self.progress = "Starting…"
        return block

    def note(self, text: str, error: bool = False) -> Block:
        block = Block("note", text, error=error)
        self.blocks.append(block)
        return block

    def apply(self, method: str, params: dict[str, Any]) -> list[Block]:
        if method == "chat/statusChanged":
            self.status = params.get("status") or self.status
            return []
        if method != "chat/contentReceived":
            return []
        role = params.get("role")
        content = params.get("content") or {}
        kind = content.get("type")
        if role == "user":
            return []  # the cell shows the prompt as typed (the echo carries the attached kernel context too)
        if kind == "text":
            text = content.get("text") or ""
            if role == "system":
                return [self.note(text, error=text.startswith("Error:"))]
            last = self.blocks[-1] if self.blocks else None
            if last is None or last.kind != "text" or last.done:
                last = Block("text")
                self.blocks.append(last)
            last.text += text
            return [last]
        if kind == "progress":
            self.progress = (content.get("text") or "") if content.get("state") == "running" else ""
            if content.get("state") == "finished":
                self._close_open_blocks()
            return []
        if kind == "usage":
            self.usage = format_usage(content)
            return []
        if kind == "metadata":
            self.title = content.get("title") or self.title
            return []
        if kind in ("reasonStarted", "reasonText", "reasonFinished"):
            block = self._reasoning(content.get("id") or "")
            if kind == "reasonText":
                block.text += content.get("text") or ""
            elif kind == "reasonFinished":
                block.done = True
                block.total_time_ms = content.get("totalTimeMs")
            return [block]
        if kind in TOOL_TYPES:
            call_id = content.get("id") or ""
            state = self.tools.get(call_id)
            if state is None:
                state = ToolCallState(call_id, content.get("name") or "tool", content.get("server") or "eca")
                self.tools[call_id] = state
                self._end_text()
                block = Block("tool", id=call_id, tool=state)
                self.blocks.append(block)
            state.update(content)
            return [b for b in self.blocks if b.tool is state]
        if kind == "url":
            return [self.note(f"[{content.get('title') or content.get('url')}]({content.get('url')})")]
        return []

    def _end_text(self) -> None:
        if self.blocks and self.blocks[-1].kind == "text":
            self.blocks[-1].done = True

    def _reasoning(self, reason_id: str) -> Block:
        for block in reversed(self.blocks):
            if block.kind == "reasoning" and block.id == reason_id:
                return block
        self._end_text()
        block = Block("reasoning", id=reason_id)
        self.blocks.append(block)
        return block

    def _close_open_blocks(self) -> None:
        for block in self.blocks[self.turn_start:]:
            if block.kind == "reasoning":
                block.done = True
            if block.tool is not None:
                block.tool.interrupted()

    # -- reading -------------------------------------------------------------------------------------------------

    def answer(self, all_turns: bool = False) -> str:
        """The assistant's text of the current turn (or of every turn shown)."""
        start = 0 if all_turns else self.turn_start
        return "".join(b.text for b in self.blocks[start:] if b.kind == "text")

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
            elif block.kind == "note":
                parts.append("> " + block.text.strip().replace("\n", "\n> "))
            elif block.kind == "reasoning" and block.text.strip():
                parts.append(f"<details><summary>Reasoning</summary>\n\n{block.text.strip()}\n\n</details>")
            elif block.kind == "tool" and block.tool is not None:
                parts.append(_tool_markdown(block.tool))
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
