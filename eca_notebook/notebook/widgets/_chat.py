"""The chat widget: one cell's view of a chat, streaming while the user goes on working.

It is fed the engine's notifications (``handle``) and draws a :class:`~eca_notebook.notebook._transcript.Transcript`:
the prompt, streaming markdown, reasoning in a collapsed block, tool calls as cards with approval buttons and diffs,
a progress line, the usage/cost footer, a Stop button and an input box to continue the chat.

Every change only marks the view dirty; a :class:`Coalescer` redraws at most ~20 times a second whatever the token
rate (each redraw is one comm message per changed widget). An answer's markdown is untrusted (the model may have been
steered by a file it read): it is rendered and sanitised here (``_untrusted.safe_markdown_html``) and goes into an
``Output`` widget as ``text/html`` — never as ``text/markdown``, which the front-end would render unsanitised, an
``Output`` area being trusted — so no script, event handler or remote image reaches the page; the front-end still
draws it in its theme and typesets its math.

The view never talks to the engine: clicks go to a controller (the notebook session), so the same widget can sit
on any client.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import Any, Protocol

from ...protocol import JsonObject
from .._transcript import Block, ToolCallState, Transcript
from .._untrusted import safe_markdown_html
from ._coalesce import DEFAULT_INTERVAL, Coalescer
from ._plan import PlanView
from ._question import QuestionCard
from ._style import style_html
from ._tool_card import ToolCard

__all__ = ["ChatView", "ViewController"]

MAX_PROMPT_SHOWN = 600


def _shown(prompt: str) -> str:
    """A prompt as its block shows it: a long one (attached text) is cut."""
    return prompt if len(prompt) <= MAX_PROMPT_SHOWN else prompt[:MAX_PROMPT_SHOWN] + " …"


class ViewController(Protocol):
    def approve(self, view: ChatView, call: ToolCallState, save: str | None,
                hunks: list[str] | None = None) -> None: ...

    def reject(self, view: ChatView, call: ToolCallState) -> None: ...

    def stop(self, view: ChatView) -> None: ...

    def undo(self, view: ChatView, call: ToolCallState, done: Callable[[bool, str], None]) -> None: ...

    def send(self, view: ChatView, text: str) -> None: ...

    # Optional (a controller without them offers no steering): ``chat/promptSteer`` / ``chat/promptSteerRemove``
    # for the view's running prompt.
    # def steer(self, view: ChatView, text: str) -> None: ...
    # def remove_steer(self, view: ChatView) -> None: ...

    # Optional (a controller without them shows no Rewind / Fork): rewind the chat to before the prompt with this
    # ``contentId`` (``chat/rollback``, reverting the file changes made since), or fork it there (``chat/fork``).
    # def rewind(self, view: ChatView, content_id: str) -> None: ...
    # def fork(self, view: ChatView, content_id: str) -> None: ...


class PromptRow:
    """A prompt as shown, with **Rewind** and **Fork** once the engine has named it (its ``contentId``). Rewind asks
    once more before acting: it removes the prompt and everything after it, and reverts the files changed since."""

    def __init__(self, block: Block, on_rewind: Callable[[str], None] | None,
                 on_fork: Callable[[str], None] | None) -> None:
        import ipywidgets as widgets

        self.block = block
        self.html = widgets.HTML()
        self._armed = False
        self._on_rewind, self._on_fork = on_rewind, on_fork
        self.rewind_button = widgets.Button(description="Rewind", icon="undo", layout=widgets.Layout(width="auto"),
                                            tooltip="Remove this prompt and everything after it from the chat")
        self.rewind_button.add_class("eca-rewind")
        self.rewind_button.on_click(lambda _b: self.rewind())
        self.fork_button = widgets.Button(description="Fork", icon="code-fork", layout=widgets.Layout(width="auto"),
                                          tooltip="A new chat with the history up to this prompt and its answer")
        self.fork_button.add_class("eca-fork")
        self.fork_button.on_click(lambda _b: self.fork())
        self.actions = widgets.HBox([self.rewind_button, self.fork_button], layout=widgets.Layout(display="none"))
        self.widget = widgets.VBox([self.html, self.actions])
        self.render()

    def rewind(self) -> bool:
        """First click arms, second acts (what the button does); False when nothing was done."""
        content_id = self.block.id
        if content_id is None or self._on_rewind is None:
            return False
        if not self._armed:
            self._armed = True
            self.rewind_button.description = "Confirm rewind (reverts file changes made since)"
            self.rewind_button.button_style = "danger"
            return False
        self._armed = False
        self.rewind_button.disabled = self.fork_button.disabled = True
        self._on_rewind(content_id)
        return True

    def fork(self) -> bool:
        if self.block.id is None or self._on_fork is None:
            return False
        self.fork_button.disabled = True
        self._on_fork(self.block.id)
        return True

    def render(self) -> None:
        value = f'<div class="eca-user">› {html.escape(self.block.text)}</div>'
        if self.html.value != value:
            self.html.value = value
        display = None if self.block.id and (self._on_rewind or self._on_fork) else "none"
        if self.actions.layout.display != display:
            self.actions.layout.display = display


class ChatView:
    """``widget`` is what is displayed; ``transcript`` what it shows. Display it with ``display(view)``."""

    def __init__(self, controller: ViewController | None = None, *, interval: float = DEFAULT_INTERVAL,
                 output_format: str = "markdown") -> None:
        import ipywidgets as widgets

        self.controller = controller
        self.output_format = output_format  # "text": answers shown as plain text, not rendered Markdown
        self.transcript = Transcript()
        self.chat_id: str | None = None
        self.cards: dict[str, ToolCard] = {}
        # a subagent's chat id → what it did, shown inside the parent's spawn_agent card (its contents carry
        # ``parentChatId``: this chat)
        self.subagents: dict[str, Transcript] = {}
        self.markdown_updates = 0  # markdown redraws sent (what the coalescing bounds)
        self._widgets: dict[int, Any] = {}  # id(block) → its widget
        self._dirty: dict[int, Block] = {}
        self._chrome_dirty = False
        # after ``chat/cleared`` (a rewind): the server replays the kept messages, prompts included
        self._replaying = False
        self.coalescer = Coalescer(self._flush, interval)
        # id(text block) → when its answer may be rendered again while streaming (see _render_text)
        self._text_due: dict[int, float] = {}
        self._text_timer = False  # a redraw skipped for cost has its catch-up timer set

        self.style = widgets.HTML(style_html())
        self.blocks_box = widgets.VBox()
        self.plan = PlanView()  # the chat's latest plan, as a checklist under the blocks
        self.questions = widgets.VBox()  # the model's questions (ask_user) waiting for an answer, and answered
        self.progress = widgets.HTML()
        self.footer = widgets.HTML()
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="warning",
                                          tooltip="Stop this answer", layout=widgets.Layout(width="auto",
                                                                                           display="none"))
        self.stop_button.on_click(lambda _b: self.request_stop())
        self.input = widgets.Textarea(placeholder="Continue this chat…", rows=1,
                                      layout=widgets.Layout(width="60%"))
        self.send_button = widgets.Button(description="Send", icon="paper-plane", layout=widgets.Layout(width="auto"),
                                          tooltip="Send to the same chat")
        self.send_button.on_click(lambda _b: self.submit())
        # while the prompt runs, the box steers it (chat/promptSteer): the text waits here until the engine takes it in
        # at the next round boundary; "Take back" removes it until then
        self.steer_pending: str | None = None
        self.steer_note = widgets.HTML(layout=widgets.Layout(display="none"))
        self.take_back_button = widgets.Button(description="Take back", icon="times", tooltip="Remove this steer",
                                               layout=widgets.Layout(width="auto", display="none"))
        self.take_back_button.on_click(lambda _b: self.take_back_steer())
        self.controls = widgets.HBox([self.stop_button, self.input, self.send_button])
        self.widget = widgets.VBox([self.style, self.blocks_box, self.plan.widget, self.questions, self.progress,
                                    self.footer, widgets.HBox([self.steer_note, self.take_back_button]),
                                    self.controls])
        self.widget.add_class("eca-chat")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]

    # -- feeding -------------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.transcript.status == "running"

    @property
    def text(self) -> str:
        """The assistant's answer in the latest turn."""
        return self.transcript.answer()

    def begin_turn(self, chat_id: str, prompt: str) -> None:
        self.chat_id = chat_id
        self._replaying = False
        self._mark(self.transcript.begin_turn(_shown(prompt)))
        self.stop_button.layout.display = None
        self._steering(self._can_steer())
        self._chrome_dirty = True
        self.coalescer.mark()

    def handle(self, method: str, params: JsonObject) -> None:
        """One engine notification; those of other chats are ignored, except a subagent's of this chat."""
        if self.chat_id is None:
            return
        if params.get("chatId") != self.chat_id:
            if params.get("parentChatId") == self.chat_id and params.get("chatId"):
                self._subagent(str(params["chatId"]), method, params)
            return
        if method == "chat/cleared":
            if params.get("messages"):
                self._clear()
            return
        content = params.get("content")
        if params.get("role") == "user" and isinstance(content, dict) and content.get("type") == "text":
            self._prompt_echo(content)
        before = (self.transcript.progress, self.transcript.usage, self.transcript.plan_content)
        for block in self.transcript.apply(method, params):
            self._mark(block)
        if (self.transcript.progress, self.transcript.usage, self.transcript.plan_content) != before:
            self._chrome_dirty = True
        self.coalescer.mark()

    def _subagent(self, child_id: str, method: str, params: JsonObject) -> None:
        """A subagent's notification: folded into its own transcript; the parent's card that shows it is redrawn."""
        transcript = self.subagents.get(child_id)
        if transcript is None:  # the subagent's fold of the chat's fold: its calls are approved in its chat
            fold = self.transcript.subagents.get(child_id)
            transcript = fold if isinstance(fold, Transcript) else Transcript()
            transcript.chat_id = child_id
            self.subagents[child_id] = self.transcript.subagents[child_id] = transcript
        transcript.apply(method, params)
        parent = self.transcript.subagent_calls.get(child_id)  # the spawn_agent call that runs it, in the fold
        for block in self.transcript.blocks:
            if parent is not None and block.tool is parent:
                self._mark(block)
        self.coalescer.mark()

    def _prompt_echo(self, content: JsonObject) -> None:
        """A prompt's echo: after a rewind, a replayed prompt to draw; else this view's own prompt, whose block gets
        the ``contentId`` the engine gave it (Rewind and Fork point at it)."""
        content_id = content.get("contentId")
        if self._replaying:
            block = self.transcript.replayed_prompt(_shown(str(content.get("text") or "").strip()))
        else:
            start = self.transcript.turn_start
            blocks = self.transcript.blocks
            if start >= len(blocks) or blocks[start].kind != "user":
                return
            if blocks[start].id is not None:  # the turn's prompt is named: a later user text is a steer taken in
                if self.running and content_id:
                    block = Block("user", "➡ " + _shown(str(content.get("text") or "").strip()))
                    block.id = str(content_id)
                    blocks.append(block)
                    self._mark(block)
                    self._set_steer(None)
                return
            block = blocks[start]
        block.id = str(content_id) if content_id else None
        self._mark(block)

    def show_chat(self, chat_id: str, contents: list[JsonObject]) -> None:
        """Show another chat from its replayed contents (a fork): this view follows it from now on."""
        self.chat_id = chat_id
        self._clear()
        for params in contents:
            self.handle("chat/contentReceived", params)

    def _rewind(self, content_id: str) -> None:
        rewind = getattr(self.controller, "rewind", None)
        if rewind is not None:
            rewind(self, content_id)

    def _fork(self, content_id: str) -> None:
        fork = getattr(self.controller, "fork", None)
        if fork is not None:
            fork(self, content_id)

    def _clear(self) -> None:
        """The chat was rewound: drop what is shown; the server's replay of the kept messages draws it again."""
        self.transcript.clear()
        self.cards.clear()
        self.subagents.clear()
        self._widgets.clear()
        self._dirty.clear()
        self._text_due.clear()
        self.blocks_box.children = ()
        self._replaying = True
        self._chrome_dirty = True
        self.coalescer.mark()

    def queued(self) -> None:
        """The turn waits for an earlier prompt of the same chat (shown until the engine reports progress)."""
        self.transcript.progress = "Queued: waiting for the previous prompt of this chat"
        self._chrome_dirty = True
        self.coalescer.mark()

    def note(self, text: str, error: bool = False) -> None:
        self._mark(self.transcript.note(text, error))
        self.coalescer.mark()

    def finish(self) -> None:
        """The turn is over: draw the final state now and re-enable the input."""
        self.transcript.status = "idle"
        self.transcript.progress = ""
        self.transcript._close_open_blocks()
        for block in self.transcript.blocks:
            if block.kind in ("tool", "reasoning", "text"):
                self._mark(block)
        self._chrome_dirty = True
        self.coalescer.mark()
        self.coalescer.close()
        self.stop_button.layout.display = "none"
        self._steering(False)
        self.send_button.disabled = False
        left, self.steer_pending = self.steer_pending, None
        self._set_steer(None)
        if left and self.controller is not None:  # the prompt ended before taking it in: sent as a prompt
            self.controller.send(self, left)

    def _mark(self, block: Block) -> None:
        self._dirty[id(block)] = block

    # -- user actions --------------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        if self.controller is not None and self.running:
            self.controller.stop(self)

    def _can_steer(self) -> bool:
        return self.controller is not None and hasattr(self.controller, "steer")

    def _steering(self, on: bool) -> None:
        """The box and its button steer the running prompt (on) or send a new one (off)."""
        self.send_button.description = "Steer" if on else "Send"
        self.send_button.icon = "share" if on else "paper-plane"
        self.send_button.tooltip = ("Guide the running answer: joins after its current tool calls" if on
                                    else "Send to the same chat")
        self.send_button.disabled = not on and self.running
        self.input.placeholder = "Steer the running answer…" if on else "Continue this chat…"

    def _set_steer(self, text: str | None) -> None:
        self.steer_pending = text
        self.steer_note.value = (f'<span class="eca-steer">➡ waiting for the next round: {html.escape(text)}</span>'
                                 if text else "")
        self.steer_note.layout.display = None if text else "none"
        self.take_back_button.layout.display = None if text else "none"

    def take_back_steer(self) -> None:
        """Remove the pending steer (``chat/promptSteerRemove``) and put its text back in the box."""
        if self.steer_pending is None or self.controller is None:
            return
        remove = getattr(self.controller, "remove_steer", None)
        if remove is not None:
            remove(self)
        self.input.value = self.steer_pending
        self._set_steer(None)

    def submit(self, text: str | None = None) -> None:
        text = (self.input.value if text is None else text).strip()
        if not text or self.controller is None:
            return
        if self.running:
            steer = getattr(self.controller, "steer", None)
            if steer is None:
                return
            self.input.value = ""
            steer(self, text)
            self._set_steer(f"{self.steer_pending}\n{text}" if self.steer_pending else text)
            return
        self.input.value = ""
        self.controller.send(self, text)

    def ask(self, params: JsonObject, on_answer: Callable[[str | None], None]) -> QuestionCard:
        """Show a ``chat/askQuestion`` as a card; ``on_answer`` gets the user's answer (None: skipped)."""
        card = QuestionCard(params, on_answer)
        self.questions.children = (*self.questions.children, card.widget)
        return card

    def _on_decision(self, call: ToolCallState, approved: bool, save: str | None,
                     hunks: list[str] | None = None) -> None:
        if self.controller is None:
            return
        if approved:
            self.controller.approve(self, call, save, hunks)
        else:
            self.controller.reject(self, call)

    def _on_undo(self, card: ToolCard) -> None:
        if self.controller is None:
            card.undo_finished(False, "No session to undo in.")
            return
        self.controller.undo(self, card.state, card.undo_finished)

    # -- drawing -------------------------------------------------------------------------------------------------

    def _flush(self) -> None:
        dirty, self._dirty = list(self._dirty.values()), {}
        new = [b for b in dirty if id(b) not in self._widgets]
        for block in new:
            self._widgets[id(block)] = self._create(block)
        if new:
            self.blocks_box.children = tuple(self._outer(self._widgets[id(b)]) for b in self.transcript.blocks
                                             if id(b) in self._widgets)
        for block in dirty:
            self._render(block)
        if self._chrome_dirty:
            self._chrome_dirty = False
            t = self.transcript
            progress = f'<span class="eca-progress">… {html.escape(t.progress)}</span>' if t.progress else ""
            if self.progress.value != progress:
                self.progress.value = progress
            footer = f'<div class="eca-footer">{html.escape(t.usage)}</div>' if t.usage else ""
            if self.footer.value != footer:
                self.footer.value = footer
            self.plan.show(t.plan_content)

    def _render_text(self, block: Block, item: Any) -> None:
        """An answer as sanitised HTML. Rendering costs time in the kernel (a long, code-heavy answer takes tens of
        ms): while it streams, a block is rendered again only after five times its last render's cost, so it never
        takes more than a sixth of the kernel's time; a skipped redraw is caught up later (the turn's end draws all)."""
        import time

        now = time.monotonic()
        due = self._text_due.get(id(block), 0.0)
        if self.running and now < due:
            self._dirty[id(block)] = block
            if not self._text_timer:
                try:
                    self._text_timer = True
                    asyncio.get_running_loop().call_later(due - now, self._text_timer_fired)
                except RuntimeError:
                    self._text_timer = False  # no loop: the next change or finish() draws it
            return
        data = {"text/plain": block.text}
        if self.output_format != "text":
            data["text/html"] = safe_markdown_html(block.text)
        bundle = {"output_type": "display_data", "metadata": {}, "data": data}
        item.outputs = (bundle,)
        self.markdown_updates += 1
        self._text_due[id(block)] = now + 5 * (time.monotonic() - now)

    def _text_timer_fired(self) -> None:
        self._text_timer = False
        self.coalescer.mark()

    @staticmethod
    def _outer(item: Any) -> Any:
        return item.widget if isinstance(item, ToolCard | PromptRow) else item

    def _create(self, block: Block) -> Any:
        import ipywidgets as widgets

        if block.kind == "text":
            return widgets.Output()
        if block.kind == "reasoning":
            body = widgets.HTML()
            accordion = widgets.Accordion(children=[body], titles=("Reasoning…",))
            accordion.selected_index = None
            return accordion
        if block.kind == "tool" and block.tool is not None:
            card = ToolCard(block.tool, on_decision=self._on_decision, on_undo=self._on_undo)
            self.cards[block.tool.id] = card
            return card
        if block.kind == "user":
            controller = self.controller
            return PromptRow(block, self._rewind if hasattr(controller, "rewind") else None,
                             self._fork if hasattr(controller, "fork") else None)
        return widgets.HTML()

    def _render(self, block: Block) -> None:
        item = self._widgets.get(id(block))
        if item is None:
            return
        if block.kind == "text":
            self._render_text(block, item)
        elif block.kind == "reasoning":
            item.children[0].value = f'<pre class="eca-output">{html.escape(block.text)}</pre>'
            if block.done:
                seconds = f" ({block.total_time_ms / 1000:.1f} s)" if block.total_time_ms else ""
                item.set_title(0, f"Reasoning{seconds}")
        elif block.kind == "tool":
            item.render()
            subagent = block.tool.subagent if block.tool is not None else None
            child = subagent.subagent_chat_id or "" if subagent is not None else ""
            if child:
                transcript = self.subagents.get(child)
                item.show_subagent(transcript.blocks if transcript is not None else [],
                                   transcript.progress if transcript is not None else "")
        elif block.kind == "user":
            item.render()
        elif block.kind == "image":
            if not item.value:  # the transcript let only raster types and base64 characters through
                item.value = (f'<img class="eca-image" src="data:{html.escape(block.id or "")};base64,{block.text}" '
                              'alt="image" style="max-width: 100%; max-height: 480px">')
        else:
            cls = "eca-note eca-error" if block.error else "eca-note"
            item.value = f'<div class="{cls}" style="white-space: pre-wrap">{html.escape(block.text)}</div>'
