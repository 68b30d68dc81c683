"""One tool call as a card: name, summary, arguments, status, the diff to approve, and the output.

The card draws a :class:`ToolCallState` (updated from the call's ``toolCall*`` contents by the transcript). A pending
call (``toolCallRun`` with ``manualApproval``) shows **Approve**, **Approve for session** and **Reject**; a click calls
``on_decision`` once and disables the buttons, so a double click cannot answer twice. ``render`` is separate from
the state updates so the chat view can coalesce redraws of a call whose arguments stream in many chunks.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from ...protocol import JsonObject
from .._transcript import Block, ToolCallState
from .._untrusted import safe_markdown_html
from ._diff import render_diff_html

__all__ = ["STATUS_LABELS", "ToolCard"]

STATUS_LABELS = {
    "preparing": "preparing…",
    "pending": "waiting for your approval",
    "running": "running…",
    "done": "done",
    "failed": "failed",
    "rejected": "rejected",
}
MAX_OUTPUT_CHARS = 20000


def _status_class(status: str) -> str:
    if status == "pending":
        return "eca-status eca-status-pending"
    if status == "done":
        return "eca-status eca-status-done"
    if status in ("failed", "rejected"):
        return f"eca-status eca-status-{status}"
    return "eca-status"


def _risk_html(risk: JsonObject | None, *, pending: bool) -> str:
    """The engine's risk level as a badge (its reason as the tooltip), and the reason spelled out while the call
    waits for the user — the moment it matters."""
    if not risk or risk.get("level") not in ("low", "medium", "high"):
        return ""
    level = html.escape(str(risk["level"]))
    reason = html.escape(str(risk.get("reason") or ""))
    badge = (f' <span class="eca-risk eca-risk-{level}" data-risk="{level}" title="{level} risk: {reason}">'
             f'{level} risk</span>')
    return badge + (f'<div class="eca-risk-reason eca-risk-{level}">{reason}</div>' if pending and reason else "")



def _notes_html(details: JsonObject | None, status: str) -> str:
    """The model's reason for a change (and how to verify it), or what a finished code search found."""
    if not details:
        return ""
    if details.get("type") == "fileChange" and details.get("rationale"):
        given = details.get("acceptanceCriteria")
        criteria = [str(c) for c in given] if isinstance(given, list) else []
        items = "".join(f"<li>{html.escape(c)}</li>" for c in criteria)
        return (f'<div class="eca-rationale">{html.escape(str(details["rationale"]))}'
                + (f'<ul class="eca-criteria">{items}</ul>' if items else "") + "</div>")
    if details.get("type") == "retrieval" and details.get("message") and status == "done":
        return f'<div class="eca-found">{html.escape(str(details["message"]))}</div>'
    return ""

class ToolCard:
    """``widget`` is the box to display; ``state`` the call it draws."""

    def __init__(self, state: ToolCallState,
                 on_decision: Callable[[ToolCallState, bool, str | None, list[str] | None], None] | None = None,
                 on_undo: Callable[[ToolCard], None] | None = None) -> None:
        import ipywidgets as widgets

        self.state = state
        self.on_decision = on_decision
        self.on_undo = on_undo
        self.undo_button = widgets.Button(description="Undo", icon="undo", layout=widgets.Layout(
            width="auto", display="none"), tooltip="Restore what this call changed")
        self.undo_button.add_class("eca-undo")
        self.undo_button.on_click(lambda _b: self.undo())
        self.undo_note = widgets.HTML()
        self.header = widgets.HTML()
        self.args_view = widgets.HTML()
        self.diff_view = widgets.HTML(layout=widgets.Layout(display="none"))
        # a change split into hunks: one checkbox each, all ticked; Approve applies the ticked ones
        self.hunk_boxes: dict[str, Any] = {}
        self.hunk_view = widgets.VBox(layout=widgets.Layout(display="none"))
        self.hunk_view.add_class("eca-hunks")
        self.approve_button = widgets.Button(description="Approve", button_style="success", icon="check",
                                             tooltip="Run this tool call")
        self.approve_session_button = widgets.Button(description="Approve for session", button_style="info",
                                                     tooltip="Run it, and calls like it for the rest of this session")
        self.reject_button = widgets.Button(description="Reject", button_style="danger", icon="times",
                                            tooltip="Do not run it; the model is told you rejected it")
        for button in self._buttons:
            button.layout = widgets.Layout(width="auto")
        self.approve_button.on_click(lambda _b: self.decide(True, None))
        self.approve_session_button.on_click(lambda _b: self.decide(True, "session"))
        self.reject_button.on_click(lambda _b: self.decide(False, None))
        self.buttons = widgets.HBox(list(self._buttons), layout=widgets.Layout(display="none"))
        self.output_html = widgets.HTML()
        self.output_box = widgets.Accordion(children=[self.output_html], titles=("Output",),
                                            layout=widgets.Layout(display="none"))
        self.output_box.selected_index = None
        # a spawn_agent call: the subagent's steps (texts, nested cards), collapsible, shown by show_subagent
        self.subagent_body = widgets.VBox()
        self.subagent_box = widgets.Accordion(children=[self.subagent_body], titles=("Subagent",),
                                              layout=widgets.Layout(display="none"))
        self.subagent_box.add_class("eca-subagent")
        self.nested: dict[int, Any] = {}  # id(block) → its nested widget (ToolCard or HTML)
        self.widget = widgets.VBox([self.header, self.subagent_box, self.args_view, self.diff_view, self.hunk_view,
                                    self.buttons, self.output_box,
                                    widgets.HBox([self.undo_button, self.undo_note])])
        self.widget.add_class("eca-card")
        self.render()

    @property
    def _buttons(self) -> tuple[Any, Any, Any]:
        return (self.approve_button, self.approve_session_button, self.reject_button)

    @property
    def call_id(self) -> str:
        return self.state.id

    @property
    def status(self) -> str:
        return self.state.status

    def decide(self, approved: bool, save: str | None = None) -> bool:
        """Answer the approval (what the buttons do); False when it was not pending or was answered already.
        With hunk checkboxes, an approval applies the ticked hunks (none ticked: a rejection)."""
        if self.state.decided or self.state.status != "pending":
            return False
        hunks = self.chosen_hunks() if approved else None
        if hunks is not None and not hunks:
            approved, hunks = False, None
        self.state.decided = True
        for button in (*self._buttons, *self.hunk_boxes.values()):
            button.disabled = True
        self.state.status = "running" if approved else "rejected"
        self.render()
        if self.on_decision is not None:
            self.on_decision(self.state, approved, save, hunks)
        return True

    def chosen_hunks(self) -> list[str] | None:
        """The ids of the ticked hunks; None when every hunk is ticked (the whole change) or there are none."""
        if not self.hunk_boxes or all(box.value for box in self.hunk_boxes.values()):
            return None
        return [hunk_id for hunk_id, box in self.hunk_boxes.items() if box.value]

    def _hunk_changed(self, _change: Any = None) -> None:
        """The Approve button says how much it will apply."""
        chosen = self.chosen_hunks()
        total = len(self.hunk_boxes)
        if chosen is None:
            self.approve_button.description = "Approve"
        elif not chosen:
            self.approve_button.description = "Approve (no hunk selected: rejects)"
        else:
            self.approve_button.description = f"Approve {len(chosen)} of {total} hunks"

    def _render_hunks(self, pending: bool) -> None:
        """Checkboxes for a pending change of two or more hunks; after the decision, which hunks were applied."""
        import ipywidgets as widgets

        listed = (self.state.details or {}).get("hunks")
        hunks = [hunk for hunk in listed if isinstance(hunk, dict)] if isinstance(listed, list) else []
        if pending and len(hunks) > 1 and not self.hunk_boxes:
            for hunk in hunks:
                box = widgets.Checkbox(value=True, indent=False, description=(
                    f"{hunk.get('id')}: {str(hunk.get('text', '')).split(chr(10), 1)[0]} "
                    f"+{hunk.get('linesAdded', 0)} −{hunk.get('linesRemoved', 0)}"),
                    layout=widgets.Layout(width="auto"))
                box.add_class("eca-hunk")
                box.observe(self._hunk_changed, names="value")
                self.hunk_boxes[str(hunk.get("id"))] = box
            self.hunk_view.children = tuple(self.hunk_boxes.values())
        left_out = [h for h in hunks if h.get("applied") is False]
        if not pending and left_out:
            self.hunk_view.children = (widgets.HTML(
                '<span class="eca-hunks-left-out">Not applied: '
                + html.escape(", ".join(f"{h.get('id')} ({str(h.get('text', '')).split(chr(10), 1)[0]})"
                                        for h in left_out)) + "</span>"),)
        display = None if (pending and self.hunk_boxes) or (not pending and left_out) else "none"
        if self.hunk_view.layout.display != display:
            self.hunk_view.layout.display = display

    def undo(self) -> bool:
        """Ask to undo the call's change (what the Undo button does); False when there is nothing to undo."""
        if self.on_undo is None or self.state.undone or self.undo_button.disabled or not self._undoable():
            return False
        self.undo_button.disabled = True
        self.on_undo(self)
        return True

    def undo_finished(self, undone: bool, message: str) -> None:
        """The engine's answer: the card says undone, or why not (and Undo can be tried again)."""
        self.state.undone = self.state.undone or undone
        self.undo_button.disabled = False
        self.undo_note.value = f'<span class="eca-undo-note">{html.escape(message)}</span>'
        self.render()

    def _undoable(self) -> bool:
        details = self.state.details or {}
        return self.state.status == "done" and bool(details.get("undoable"))

    def show_subagent(self, blocks: Sequence[Block], progress: str = "") -> None:
        """Draw the subagent of a ``spawn_agent`` call inside this card: agent, activity, step N/maxSteps as the
        title; its texts and its tool calls (nested cards whose Approve answers in the subagent's chat) inside.
        Open at first; the user may fold it."""
        import ipywidgets as widgets

        details = self.state.details or {}
        args = self.state.arguments if isinstance(self.state.arguments, dict) else {}
        activity = str(args.get("activity") or self.state.summary or "working on a task")
        steps = f"step {details.get('step', 0)}" + (f"/{details['maxSteps']}" if details.get("maxSteps") else "")
        title = f"{details.get('agentName', 'subagent')} · {activity} · {steps}"
        if progress and self.state.status == "running":
            title += f" · {progress}"
        if self.subagent_box.get_title(0) != title:
            self.subagent_box.set_title(0, title)
        if self.subagent_box.layout.display is not None:
            self.subagent_box.layout.display = None
            self.subagent_box.selected_index = 0
        shown = []
        for block in blocks:
            item = self.nested.get(id(block))
            if block.kind == "tool" and block.tool is not None:
                if item is None:
                    item = self.nested[id(block)] = ToolCard(block.tool, on_decision=self.on_decision)
                item.render()
                shown.append(item.widget)
            elif block.kind in ("text", "note") and block.text.strip():
                if item is None:
                    item = self.nested[id(block)] = widgets.HTML()
                    item.add_class("eca-subagent-text")
                value = (f'<div class="eca-note">{html.escape(block.text)}</div>' if block.kind == "note"
                         else safe_markdown_html(block.text))
                if item.value != value:
                    item.value = value
                shown.append(item)
        if tuple(shown) != self.subagent_body.children:
            self.subagent_body.children = tuple(shown)

    def render(self) -> None:
        state = self.state
        label = STATUS_LABELS.get(state.status, state.status)
        if state.status == "rejected" and state.reject_reason == "user-config":
            label = "denied by configuration"
        if state.total_time_ms is not None and state.status in ("done", "failed"):
            label += f" · {state.total_time_ms} ms"
        if state.undone:
            label += " · undone"
        summary = f' <span class="eca-card-summary">{html.escape(state.summary)}</span>' if state.summary else ""
        header = (f'<span class="eca-card-kind">tool</span> '
                  f'<span class="eca-card-title">{html.escape(state.name)}</span>{summary} '
                  f'<span class="{_status_class(state.status)}">{html.escape(label)}</span>'
                  + _risk_html(state.risk, pending=state.status == "pending" and not state.decided)
                  + _notes_html(state.details, state.status))
        if self.header.value != header:
            self.header.value = header
        args = state.args_text()
        args_html = (f'<details><summary>Arguments</summary><pre class="eca-args">{html.escape(args)}</pre></details>'
                     if args.strip() else "")
        if self.args_view.value != args_html:
            self.args_view.value = args_html
        if state.details and state.details.get("type") == "fileChange":
            diff_html = render_diff_html(state.details)
            if self.diff_view.value != diff_html:
                self.diff_view.value = diff_html
            self.diff_view.layout.display = None
        undo_display = None if self._undoable() and not state.undone else "none"
        if self.undo_button.layout.display != undo_display:
            self.undo_button.layout.display = undo_display
        pending = state.status == "pending" and not state.decided
        display = None if pending else "none"
        if self.buttons.layout.display != display:
            self.buttons.layout.display = display
        self._render_hunks(pending)
        if state.output is not None:
            text = state.output
            if len(text) > MAX_OUTPUT_CHARS:
                text = text[:MAX_OUTPUT_CHARS] + f"\n… [{len(state.output) - MAX_OUTPUT_CHARS} more characters]"
            output_html = f'<pre class="eca-output{" eca-error" if state.error else ""}">{html.escape(text)}</pre>'
            if self.output_html.value != output_html:
                self.output_html.value = output_html
                self.output_box.set_title(0, "Error output" if state.error else "Output")
            self.output_box.layout.display = None
