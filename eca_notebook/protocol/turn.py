"""What a turn's ``chat/contentReceived`` contents add up to: text, reasoning, notes and tool calls, in order.

Every reader of a turn needs the same fold — the Python client's :class:`~eca_notebook.client.PromptResult` and the
notebook's transcript alike — and two folds drift apart: each grows its own idea of when a tool call is "done". So
the fold lives here, next to the content models, and both read its blocks. It takes the wire form (camelCase dicts,
as notifications arrive) and is cheap per content: a text chunk is appended to a list, joined only when read.

A tool call's status is one of :data:`TOOL_CALL_STATUSES`:

``preparing``  the model is still streaming the call's arguments (``toolCallPrepare``);
``pending``    waiting for the user's approval (``toolCallRun`` with ``manualApproval``);
``running``    approved (or needing no approval) and running;
``done``       finished without error (``toolCalled``);
``failed``     finished with an error, or the turn ended while it was being prepared or run;
``rejected``   rejected by the user, a deny rule (``reason``), or the turn ended while it waited for approval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["TOOL_CALL_STATUSES", "TOOL_CONTENT_TYPES", "Block", "ToolCallState", "ToolCallStatus", "TurnFold"]

ToolCallStatus = Literal["preparing", "pending", "running", "done", "failed", "rejected"]

#: Every status a tool call goes through, in the order it can reach them.
TOOL_CALL_STATUSES: tuple[ToolCallStatus, ...] = ("preparing", "pending", "running", "done", "failed", "rejected")

#: The content types of a tool call's lifecycle.
TOOL_CONTENT_TYPES = frozenset({"toolCallPrepare", "toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected"})

ERROR_PREFIX = "Error:"


def _outputs_text(outputs: Any) -> str:
    """A finished call's outputs as one text (the newer revision names the payload ``text``, the early one
    ``content``)."""
    return "\n".join(str(o.get("text") or o.get("content") or "") for o in outputs or [] if isinstance(o, dict))


@dataclass
class ToolCallState:
    """What is known about one tool call, updated by each of its ``toolCall*`` contents."""

    id: str
    name: str
    server: str = "eca"
    status: ToolCallStatus = "preparing"
    summary: str | None = None
    #: The call's arguments once the engine parsed them (``toolCallRun``); None while they stream.
    arguments: Any = None
    #: The arguments as streamed so far by ``toolCallPrepare``.
    arguments_text: str = ""
    details: dict[str, Any] | None = None
    manual_approval: bool = False
    output: str | None = None
    error: bool = False
    #: For ``rejected``: ``"user-choice"`` (the user or the approval policy) or ``"user-config"`` (a deny rule).
    reason: str | None = None
    total_time_ms: int | None = None
    #: The user (or an approval policy) answered the approval: a late ``toolCallRun`` must not ask again.
    decided: bool = False
    #: The change was undone (``chat/toolCallUndo``); a card offers Undo while ``details.undoable`` and not this.
    undone: bool = False
    #: The engine's risk assessment (wire form ``{"level", "reason"}``), from the first content that carries it.
    risk: dict[str, Any] | None = None
    #: A subagent's call (shown nested in its parent's ``spawn_agent`` card): the subagent's chat, where it is
    #: approved; None: a call of the chat shown.
    chat_id: str | None = None

    @property
    def reject_reason(self) -> str | None:
        """The same as :attr:`reason` (the notebook's tool cards read this name)."""
        return self.reason

    #: The engine took the call past its preparation (a ``toolCallRun`` or later content arrived).
    started: bool = False

    def update(self, content: Mapping[str, Any]) -> None:
        """Apply one ``toolCall*`` content (wire form) of this call."""
        kind = content.get("type")
        self.summary = content.get("summary") or self.summary
        if isinstance(content.get("details"), dict) and content["details"]:
            self.details = dict(content["details"])
        if content.get("server"):
            self.server = content["server"]
        if isinstance(content.get("risk"), dict):
            self.risk = dict(content["risk"])
        if kind == "toolCallPrepare":
            self.arguments_text += content.get("argumentsText") or ""
            return
        self.started = True
        if "arguments" in content and content["arguments"] is not None:
            self.arguments = content["arguments"]
        if kind == "toolCallRun":
            self.manual_approval = bool(content.get("manualApproval"))
            self.status = "pending" if self.manual_approval and not self.decided else "running"
        elif kind == "toolCallRunning":
            self.status = "running"
        elif kind == "toolCalled":
            self.error = bool(content.get("error"))
            self.status = "failed" if self.error else "done"
            self.total_time_ms = content.get("totalTimeMs")
            self.output = _outputs_text(content.get("outputs"))
        elif kind == "toolCallRejected":
            self.status = "rejected"
            self.reason = content.get("reason")

    def interrupted(self) -> None:
        """The turn ended with this call still open (a stop)."""
        if self.status == "pending":
            self.status = "rejected"
        elif self.status in ("preparing", "running"):
            self.status = "failed"

    def args_text(self) -> str:
        """The arguments for display: the parsed ones as indented JSON, else the text streamed so far."""
        if self.arguments is not None:
            try:
                return json.dumps(self.arguments, indent=2, ensure_ascii=False)
            except (TypeError, ValueError):
                return str(self.arguments)
        return self.arguments_text


class Block:
    """One piece of a turn as shown: ``user`` (the prompt), ``text``, ``reasoning``, ``tool`` or ``note`` (a system
    text; ``error`` when it reports a failure).

    Text arrives in chunks: they are kept in a list and joined when :attr:`text` is read, so a long answer is not
    copied once per chunk."""

    __slots__ = ("_parts", "done", "error", "id", "kind", "tool", "total_time_ms")

    def __init__(self, kind: str, text: str = "", *, id: str | None = None, tool: ToolCallState | None = None,
                 error: bool = False) -> None:
        self.kind = kind
        self._parts = [text] if text else []
        self.id = id
        self.tool = tool
        self.error = error
        self.done = False
        self.total_time_ms: int | None = None

    @property
    def text(self) -> str:
        """The block's text so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @text.setter
    def text(self, value: str) -> None:
        self._parts[:] = [value] if value else []

    def append(self, text: str) -> None:
        """Add a streamed chunk."""
        if text:
            self._parts.append(text)

    def __repr__(self) -> str:
        return f"Block({self.kind!r}, {self.text[:40]!r}, id={self.id!r}, done={self.done})"


class TurnFold:
    """The contents of one chat, folded into :class:`Block` s as they arrive.

    ``add`` takes one content (with its role) and returns the blocks it changed; a ``progress finished`` content
    closes the turn's open blocks (reasoning is done, calls still open are :meth:`ToolCallState.interrupted`).
    """

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.tools: dict[str, ToolCallState] = {}
        self.turn_start = 0  # index of the first block of the current turn
        self.progress = ""
        self.title: str | None = None
        #: The last ``usage`` content (wire form).
        self.usage_content: dict[str, Any] | None = None
        #: The chat's latest plan (a ``plan`` content, wire form): each one replaces the one before.
        self.plan_content: dict[str, Any] | None = None
        #: How many blocks there were when the latest plan arrived (tells which turn it belongs to).
        self.plan_at = -1

    def add(self, role: str | None, content: Mapping[str, Any]) -> list[Block]:
        """Fold one content of the chat; returns the blocks it changed."""
        kind = content.get("type")
        if role == "user":
            return []  # the prompt as typed is the reader's to show (the echo carries attached contexts too)
        if kind == "text":
            text = content.get("text") or ""
            if role == "system":
                return [self.note(text, error=text.startswith(ERROR_PREFIX))]
            last = self.blocks[-1] if self.blocks else None
            if last is None or last.kind != "text" or last.done:
                last = Block("text")
                self.blocks.append(last)
            last.append(text)
            return [last]
        if kind == "progress":
            finished = content.get("state") == "finished"
            self.progress = "" if finished else (content.get("text") or "")
            if finished:
                self._close_open_blocks()
            return []
        if kind == "usage":
            self.usage_content = dict(content)
            return []
        if kind == "metadata":
            self.title = content.get("title") or self.title
            return []
        if kind == "plan":
            self.plan_content = dict(content)
            self.plan_at = len(self.blocks)
            return []
        if kind in ("reasonStarted", "reasonText", "reasonFinished"):
            block = self._reasoning(content.get("id") or "")
            if kind == "reasonText":
                block.append(content.get("text") or "")
            elif kind == "reasonFinished":
                block.done = True
                block.total_time_ms = content.get("totalTimeMs")
            return [block]
        if kind in TOOL_CONTENT_TYPES:
            call_id = content.get("id") or ""
            state = self.tools.get(call_id)
            if state is None:
                state = ToolCallState(call_id, content.get("name") or "tool", content.get("server") or "eca")
                self.tools[call_id] = state
                self._end_text()
                self.blocks.append(Block("tool", id=call_id, tool=state))
            state.update(content)
            return [b for b in self.blocks if b.tool is state]
        if kind == "url":
            return [self.note(f"[{content.get('title') or content.get('url')}]({content.get('url')})")]
        return []

    def note(self, text: str, error: bool = False) -> Block:
        """Add a note block (a system text)."""
        block = Block("note", text, error=error)
        self.blocks.append(block)
        return block

    def texts(self, all_turns: bool = False) -> list[str]:
        """The assistant's text blocks of the current turn (or of every turn)."""
        start = 0 if all_turns else self.turn_start
        return [b.text for b in self.blocks[start:] if b.kind == "text"]

    def notes(self, all_turns: bool = False) -> list[Block]:
        """The note blocks of the current turn (or of every turn)."""
        start = 0 if all_turns else self.turn_start
        return [b for b in self.blocks[start:] if b.kind == "note"]

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
