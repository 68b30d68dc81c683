"""One tool call as a card: name, summary, arguments, status, the diff to approve, and the output.

The card draws a :class:`ToolCallState` (updated from the call's ``toolCall*`` contents by the transcript). A pending
call (``toolCallRun`` with ``manualApproval``) shows **Approve**, **Approve for session** and **Reject**; a click calls
``on_decision`` once and disables the buttons, so a double click cannot answer twice. ``render`` is separate from
the state updates so the chat view can coalesce redraws of a call whose arguments stream in many chunks.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from .._transcript import ToolCallState
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


class ToolCard:
    """``widget`` is the box to display; ``state`` the call it draws."""

    def __init__(self, state: ToolCallState,
                 on_decision: Callable[[ToolCallState, bool, str | None], None] | None = None,
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
        self.widget = widgets.VBox([self.header, self.args_view, self.diff_view, self.buttons, self.output_box,
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
        """Answer the approval (what the buttons do); False when it was not pending or was answered already."""
        if self.state.decided or self.state.status != "pending":
            return False
        self.state.decided = True
        for button in self._buttons:
            button.disabled = True
        self.state.status = "running" if approved else "rejected"
        self.render()
        if self.on_decision is not None:
            self.on_decision(self.state, approved, save)
        return True

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
                  f'<span class="{_status_class(state.status)}">{html.escape(label)}</span>')
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
        if state.output is not None:
            text = state.output
            if len(text) > MAX_OUTPUT_CHARS:
                text = text[:MAX_OUTPUT_CHARS] + f"\n… [{len(state.output) - MAX_OUTPUT_CHARS} more characters]"
            output_html = f'<pre class="eca-output{" eca-error" if state.error else ""}">{html.escape(text)}</pre>'
            if self.output_html.value != output_html:
                self.output_html.value = output_html
                self.output_box.set_title(0, "Error output" if state.error else "Output")
            self.output_box.layout.display = None
