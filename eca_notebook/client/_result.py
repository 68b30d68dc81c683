"""What a prompt gives back: :class:`PromptResult` and :class:`ToolCallRecord`, built from the streamed contents.

The engine streams a turn as ``chat/contentReceived`` notifications; a script wants one object at the end: the
answer's text, the tool calls and how they ended, usage, and whether it failed. :class:`TurnCollector` turns the
first into the second as the contents arrive, so streaming and the final result always agree.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable

from pydantic import ValidationError

from ..protocol import ChatContentReceivedParams, UnknownContent

__all__ = ["PromptResult", "ToolCallRecord", "TurnCollector", "results_table"]

log = logging.getLogger(__name__)

ERROR_PREFIX = "Error: "


@dataclass
class ToolCallRecord:
    """One tool call of a turn. ``status``: ``"done"``, ``"error"`` (the tool failed, or was stopped while running),
    ``"rejected"`` (by the approval policy, a user or a deny rule — see ``reason``), or ``"pending"`` when the turn
    ended before the call did."""

    id: str
    name: str
    server: str
    arguments: dict[str, Any]
    status: str
    output: str | None = None
    details: dict[str, Any] | None = None
    summary: str | None = None
    reason: str | None = None  # for "rejected": "user-choice" (policy or user) or "user-config" (a deny rule)
    manual_approval: bool = False  # whether the call asked for approval


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
    usage: dict[str, Any] | None = None
    error: str | None = None
    stopped: bool = False
    system: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The turn finished: no error and not stopped."""
        return self.error is None and not self.stopped

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
        self.error: str | None = None
        self.system: list[str] = []
        self.usage: dict[str, Any] | None = None
        self._segments: list[list[str]] = []
        self._new_segment = True
        self._calls: dict[str, ToolCallRecord] = {}

    # -- feeding -------------------------------------------------------------------------------------------------

    def add(self, params: dict[str, Any]) -> None:
        if self.done.is_set():
            return
        try:
            typed = ChatContentReceivedParams.model_validate(params)
        except ValidationError:  # off-spec content from some server: keep it, untyped, rather than lose the turn
            log.warning("chat %s: content of type %r does not match the protocol", self.chat_id,
                        (params.get("content") or {}).get("type"))
            typed = ChatContentReceivedParams.model_construct(
                chat_id=self.chat_id, role=params.get("role"),
                content=UnknownContent.model_construct(**(params.get("content") or {"type": "unknown"})))
        self.contents.append(typed)
        self._digest(params.get("role"), params.get("content") or {})
        if self.queue is not None:
            self.queue.put_nowait(typed)
        content = params.get("content") or {}
        if content.get("type") == "progress" and content.get("state") == "finished":
            self.finish()

    def finish(self, error: str | None = None) -> None:
        """End the turn (idempotent); an ``error`` is kept unless an earlier one is already known."""
        if error and self.error is None:
            self.error = error
        if self.done.is_set():
            return
        self.done.set()
        if self.queue is not None:
            self.queue.put_nowait(None)

    def _digest(self, role: Any, content: dict[str, Any]) -> None:
        kind = content.get("type")
        if kind == "text":
            text = str(content.get("text") or "")
            if role == "assistant":
                if self._new_segment:
                    self._segments.append([])
                    self._new_segment = False
                self._segments[-1].append(text)
            elif role == "system":
                if text.startswith(ERROR_PREFIX) and self.error is None:
                    self.error = text
                else:
                    self.system.append(text)
        elif kind == "usage":
            self.usage = dict(content)
        elif kind in ("toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected"):
            self._new_segment = True
            self._tool_content(kind, content)

    def _tool_content(self, kind: str, content: dict[str, Any]) -> None:
        call_id = str(content.get("id") or "")
        record = self._calls.get(call_id)
        if record is None:
            arguments = content.get("arguments")
            record = ToolCallRecord(
                id=call_id,
                name=str(content.get("name") or ""),
                server=str(content.get("server") or "eca"),
                arguments=dict(arguments) if isinstance(arguments, dict) else {},
                status="pending",
            )
            self._calls[call_id] = record
        if content.get("summary"):
            record.summary = content["summary"]
        if isinstance(content.get("details"), dict):
            record.details = dict(content["details"])
        if isinstance(content.get("arguments"), dict):
            record.arguments = dict(content["arguments"])
        if kind == "toolCallRun":
            record.manual_approval = bool(content.get("manualApproval"))
        elif kind == "toolCalled":
            record.status = "error" if content.get("error") else "done"
            outputs = content.get("outputs") or []
            record.output = "\n".join(str(o.get("text") or o.get("content") or "") for o in outputs
                                      if isinstance(o, dict))
        elif kind == "toolCallRejected":
            record.status = "rejected"
            record.reason = content.get("reason")

    # -- the outcome ---------------------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return "\n\n".join("".join(segment) for segment in self._segments)

    def result(self) -> PromptResult:
        return PromptResult(
            chat_id=self.chat_id,
            prompt=self.prompt,
            model=self.model,
            text=self.text,
            contents=list(self.contents),
            tool_calls=list(self._calls.values()),
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
