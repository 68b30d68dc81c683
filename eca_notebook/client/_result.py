"""What a prompt gives back: :class:`PromptResult` and :class:`ToolCallRecord`, built from the streamed contents.

The engine streams a turn as ``chat/contentReceived`` notifications; a script wants one object at the end: the
answer's text, the tool calls and how they ended, usage, and whether it failed. :class:`TurnCollector` turns the
first into the second as the contents arrive, so streaming and the final result always agree. The fold of the
contents is :class:`eca_notebook.protocol.turn.TurnFold`, the notebook transcript's too: a tool call's ``status``
means the same in a script and in a cell.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..protocol import ChatContentReceivedParams, JsonObject, ProgressContent, UnknownContent
from ..protocol.turn import Change, Content, ToolCallState, ToolCallStatus, TurnFold

__all__ = ["PromptResult", "ToolCallRecord", "TurnCollector", "results_table"]

log = logging.getLogger(__name__)


@dataclass
class ToolCallRecord:
    """One tool call of a turn. ``status`` (:data:`eca_notebook.protocol.turn.TOOL_CALL_STATUSES`): ``"done"``,
    ``"failed"`` (the tool failed, or was stopped while running), ``"rejected"`` (by the approval policy, a user or
    a deny rule — see ``reason``); ``"pending"`` (waiting for approval) or ``"running"`` when the turn ended
    without the engine finishing it (a timeout, a lost connection)."""

    id: str
    name: str
    server: str
    arguments: JsonObject
    status: ToolCallStatus
    output: str | None = None
    details: JsonObject | None = None
    summary: str | None = None
    reason: str | None = None  # for "rejected": "user-choice" (policy or user) or "user-config" (a deny rule)
    manual_approval: bool = False  # whether the call asked for approval

    @classmethod
    def from_state(cls, state: ToolCallState) -> ToolCallRecord:
        """The record of a call as the fold knows it."""
        return cls(id=state.id, name=state.name, server=state.server,
                   arguments=dict(state.arguments) if isinstance(state.arguments, dict) else {},
                   status=state.status, output=state.output, details=state.details, summary=state.summary,
                   reason=state.reason, manual_approval=state.manual_approval)


@dataclass
class PromptResult:
    """The outcome of one prompt.

    ``text`` is all assistant text of the turn (rounds separated by a blank line); ``contents`` every content of
    the chat during the turn, typed; ``usage`` the last ``usage`` content (wire dict); ``error`` the error shown in
    the chat (``"Error: ..."``), the reason the prompt was refused, a timeout, or an exception message; ``system``
    the other system texts (command output such as ``/doctor``, notes like "Context skipped").
    """

    chat_id: str
    prompt: str
    model: str | None = None
    text: str = ""
    contents: list[ChatContentReceivedParams] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: JsonObject | None = None
    error: str | None = None
    stopped: bool = False
    system: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The turn finished: no error and not stopped."""
        return self.error is None and not self.stopped

    @property
    def content_id(self) -> str | None:
        """The ``contentId`` of this prompt's user message: the point ``rollback`` and ``fork`` take (None from a
        server that does not send one)."""
        for item in self.contents:
            if item.role == "user" and item.content.type == "text":
                value = getattr(item.content, "content_id", None)
                return value if isinstance(value, str) else None
        return None

    def _repr_markdown_(self) -> str:
        parts = [self.text or ""]
        if self.system:
            parts.append("\n\n".join(f"> {line}" for line in self.system))
        if self.error:
            parts.append(f"**Error:** {self.error}")
        elif self.stopped:
            parts.append("*(stopped)*")
        return "\n\n".join(p for p in parts if p)


class TurnCollector:
    """Collects one prompt's contents (in arrival order) and knows when the turn is over.

    Owned by the client's event loop; fed from the notification handler, so every method is synchronous and cheap.
    """

    def __init__(self, chat_id: str, prompt: str, policy: Any, *, streaming: bool = False) -> None:
        self.chat_id = chat_id
        self.prompt = prompt
        self.policy = policy
        self.model: str | None = None
        self.contents: list[ChatContentReceivedParams] = []
        self.done = asyncio.Event()
        self.queue: asyncio.Queue[ChatContentReceivedParams | None] | None = asyncio.Queue() if streaming else None
        self.stopped = False
        self.accepted = False  # the engine answered chat/prompt
        self.running = False  # the engine said the chat is running
        self._error: str | None = None  # set by finish(); else the first error note of the turn
        self.fold = TurnFold()

    # -- feeding -------------------------------------------------------------------------------------------------

    def add(self, params: JsonObject) -> Change | None:
        """Fold one ``chat/contentReceived`` of the turn's chat (parsed once, here); what it changed in the fold."""
        if self.done.is_set():
            return None
        content: Content | JsonObject
        role = params.get("role")
        try:
            typed = ChatContentReceivedParams.model_validate(params)
            content = typed.content
        except ValidationError:  # off-spec content from some server: keep it, untyped, rather than lose the turn
            raw = params.get("content")
            wire: JsonObject = raw if isinstance(raw, dict) else {}
            log.warning("chat %s: content of type %r does not match the protocol", self.chat_id, wire.get("type"))
            typed = ChatContentReceivedParams.model_construct(
                chat_id=self.chat_id, role=role,
                content=UnknownContent.model_construct(None, **(wire or {"type": "unknown"})))
            content = wire  # the fold keeps what is valid of it
        self.contents.append(typed)
        change = self.fold.step(role if isinstance(role, str) else None, content)
        if self.queue is not None:
            self.queue.put_nowait(typed)
        if isinstance(change.content, ProgressContent) and change.content.state == "finished":
            self.finish()
        return change

    def add_subagent(self, child_id: str, params: JsonObject) -> Change | None:
        """Fold one content of a subagent's chat (``parentChatId`` is this turn's): the subagent's fold of the turn's
        fold — not the turn's answer."""
        if self.done.is_set():
            return None
        role, content = params.get("role"), params.get("content")
        return self.fold.step_subagent(child_id, role if isinstance(role, str) else None,
                                       content if isinstance(content, dict) else {})

    def finish(self, error: str | None = None) -> None:
        """End the turn (idempotent); an ``error`` is kept unless an earlier one is already known."""
        if error and self.error is None:
            self._error = error
        if self.done.is_set():
            return
        self.done.set()
        if self.queue is not None:
            self.queue.put_nowait(None)

    # -- the outcome ---------------------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The assistant's text: its text blocks (the parts between tool calls) separated by a blank line."""
        return "\n\n".join(self.fold.texts())

    @property
    def error(self) -> str | None:
        """The error the turn ended with: from :meth:`finish`, else the first error shown in the chat."""
        if self._error is not None:
            return self._error
        return next((note.text for note in self.fold.notes() if note.error), None)

    @error.setter
    def error(self, value: str | None) -> None:
        self._error = value

    @property
    def system(self) -> list[str]:
        """The system texts of the turn other than its error."""
        error = self.error
        notes = [note.text for note in self.fold.notes()]
        if error in notes:
            notes.remove(error)
        return notes

    @property
    def usage(self) -> JsonObject | None:
        """The last ``usage`` content (wire form)."""
        return self.fold.usage_content

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """The calls the engine took past their preparation, in order."""
        return [ToolCallRecord.from_state(state) for state in self.fold.calls() if state.started]

    def result(self) -> PromptResult:
        return PromptResult(
            chat_id=self.chat_id,
            prompt=self.prompt,
            model=self.model,
            text=self.text,
            contents=list(self.contents),
            tool_calls=self.tool_calls,
            usage=self.usage,
            error=self.error,
            stopped=self.stopped,
            system=list(self.system),
        )


def _cell(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("|", "\\|")


def results_table(results: Iterable[PromptResult], *, width: int = 80) -> str:
    """A Markdown table of results (no pandas): prompt, model, answer (or error), tool calls, tokens, status. Cells
    are cut at ``width`` characters and ``|`` is escaped, so the table always renders."""
    lines = ["| # | prompt | model | answer | tools | tokens | status |", "|---|---|---|---|---|---|---|"]
    for number, result in enumerate(results, 1):
        tools = ", ".join(f"{c.name} ({c.status})" for c in result.tool_calls)
        tokens = (result.usage or {}).get("sessionTokens")
        status = "error" if result.error else ("stopped" if result.stopped else "ok")
        answer = result.text if not result.error else result.error
        cells = [str(number), _cell(result.prompt, width), _cell(result.model, width), _cell(answer, width),
                 _cell(tools, width), "" if tokens is None else str(tokens), status]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
