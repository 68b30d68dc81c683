"""The question card: the model's ``ask_user`` question (``chat/askQuestion``) answered in the chat widget.

One button per option (an option's label is the answer), a text box when a typed answer is allowed, and **Skip**
(the question is cancelled: the model is told the user did not answer). The card knows nothing of requests: it calls
``on_answer`` once with the answer (``None`` for Skip); the session turns that into the request's result. When the
question goes away unanswered (the chat's Stop, a timeout) the session calls :meth:`QuestionCard.withdraw`.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from ...protocol import JsonObject

__all__ = ["QuestionCard"]


class QuestionCard:
    """``widget`` is what the chat view shows; ``params`` the ``chat/askQuestion`` params (wire dict)."""

    def __init__(self, params: JsonObject, on_answer: Callable[[str | None], None]) -> None:
        import ipywidgets as widgets

        self.params = params
        self.answer: str | None = None
        self.done = False
        self._on_answer = on_answer
        self.title = widgets.HTML(self._title_html())
        self.option_buttons = []
        for option in _options(params):
            label = str(option.get("label") or "")
            button = widgets.Button(description=label, tooltip=str(option.get("description") or label),
                                    layout=widgets.Layout(width="auto"))
            button.add_class("eca-question-option")
            button.on_click(lambda _b, label=label: self.choose(label))
            self.option_buttons.append(button)
        self.options_box = widgets.HBox(self.option_buttons, layout=widgets.Layout(flex_flow="row wrap"))
        self.text = widgets.Textarea(placeholder="Type your answer…", rows=1, layout=widgets.Layout(width="60%"))
        self.send_button = widgets.Button(description="Answer", icon="reply", layout=widgets.Layout(width="auto"))
        self.send_button.on_click(lambda _b: self.choose(self.text.value))
        self.free_box = widgets.HBox([self.text, self.send_button])
        if params.get("allowFreeform") is False:
            self.free_box.layout.display = "none"
        self.skip_button = widgets.Button(description="Skip", icon="times", layout=widgets.Layout(width="auto"),
                                          tooltip="Do not answer: the assistant is told you skipped the question")
        self.skip_button.on_click(lambda _b: self.skip())
        self.status = widgets.HTML()
        self.widget = widgets.VBox([self.title, self.options_box, self.free_box,
                                    widgets.HBox([self.skip_button, self.status])])
        self.widget.add_class("eca-card")
        self.widget.add_class("eca-question")

    def _title_html(self) -> str:
        question = html.escape(str(self.params.get("question") or ""))
        described = "".join(
            f"<li><b>{html.escape(str(o.get('label') or ''))}</b> — {html.escape(str(o['description']))}</li>"
            for o in _options(self.params) if o.get("description"))
        details = f'<ul class="eca-criteria">{described}</ul>' if described else ""
        return (f'<div><span class="eca-card-kind">Question</span> '
                f'<span class="eca-card-title" style="white-space: pre-wrap">{question}</span>{details}</div>')

    def choose(self, answer: str) -> bool:
        """Answer with an option's label or typed text; False when the card is done or the text is blank."""
        answer = answer.strip()
        if self.done or not answer:
            return False
        self._finish(f"Answered: {answer}", answer)
        return True

    def skip(self) -> bool:
        if self.done:
            return False
        self._finish("Skipped", None)
        return True

    def withdraw(self, reason: str = "No longer waiting for an answer") -> None:
        """The question ended without an answer from this card (Stop, timeout): disable it, say why."""
        if not self.done:
            self._close(reason)

    def _finish(self, status: str, answer: str | None) -> None:
        self.answer = answer
        self._close(status)
        self._on_answer(answer)

    def _close(self, status: str) -> None:
        self.done = True
        for button in (*self.option_buttons, self.send_button, self.skip_button):
            button.disabled = True
        self.text.disabled = True
        self.status.value = f'<span class="eca-note">{html.escape(status)}</span>'


def _options(params: JsonObject) -> list[JsonObject]:
    """The question's options (a peer's params: anything but an object is skipped)."""
    given = params.get("options")
    return [o for o in given if isinstance(o, dict)] if isinstance(given, list) else []
