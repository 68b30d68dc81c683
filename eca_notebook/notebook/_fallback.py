"""Plain output where widgets cannot render: nbconvert, papermill, nbclient, a terminal IPython.

Those front-ends never answer a widget's comm and never show a widget's later updates, so instead of a live view
the turn runs to completion inside the cell and its answer is displayed once: the Markdown rendered to sanitised HTML
(model output is untrusted, see ``_untrusted.py``), with ``text/plain`` carrying the Markdown source, so a terminal
shows readable text too. Tool calls, their diffs and outputs, and the
usage line are part of it: an executed notebook keeps a faithful record of what the assistant did.
"""

from __future__ import annotations

from typing import Any

from ..protocol import JsonObject
from ._transcript import Transcript
from ._untrusted import safe_markdown_html

__all__ = ["MarkdownView"]


class MarkdownView:
    """The chat view's interface (``begin_turn``, ``handle``, ``note``, ``finish``) with a single final output."""

    def __init__(self, output_format: str = "markdown", display: Any = None) -> None:
        self.transcript = Transcript()
        self.chat_id: str | None = None
        self.output_format = output_format
        self._display = display
        self.shown: list[str] = []  # what was displayed, for tests and the session

    @property
    def running(self) -> bool:
        return self.transcript.status == "running"

    @property
    def text(self) -> str:
        return self.transcript.answer()

    def begin_turn(self, chat_id: str, prompt: str) -> None:
        self.chat_id = chat_id
        self.transcript.begin_turn(prompt)

    def handle(self, method: str, params: JsonObject) -> None:
        if self.chat_id is None or params.get("chatId") != self.chat_id:
            return
        self.transcript.apply(method, params)

    def queued(self) -> None:
        """Nothing to show: the final output comes when the turn is done."""

    def note(self, text: str, error: bool = False) -> None:
        self.transcript.note(text, error)

    def finish(self) -> None:
        self.transcript.status = "idle"
        self.transcript.progress = ""
        self.transcript._close_open_blocks()
        if self.output_format == "text":
            body = self.transcript.answer() or self.transcript.to_markdown()
            bundle = {"text/plain": body}
        else:
            body = self.transcript.to_markdown()
            # rendered and sanitised here: a kernel's own output is trusted, so markdown would reach the page as
            # it is (raw HTML, scripts and remote images included); ``text/plain`` keeps the markdown source
            bundle = {"text/html": safe_markdown_html(body), "text/plain": body}
        self.shown.append(body)
        if not body.strip():
            return
        show = self._display
        if show is None:
            from IPython.display import display as show
        show(bundle, raw=True)
