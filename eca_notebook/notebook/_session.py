"""The notebook session: one in-process engine per kernel, its chats, and the views that show them.

Where the work runs — the heart of "never block the kernel":

* **In a kernel** (ipykernel runs an asyncio loop): the client lives on the kernel's loop. ``%eca`` starts the turn
  as a task on that loop and the cell finishes at once; the widget keeps streaming while the user runs other
  cells, and approval clicks are handled between cells (or during an async cell). A ``%eca`` statement is run as
  an awaited coroutine (see ``_magics.py``), so it can also *wait* when waiting is needed: ``--wait``,
  ``--format code`` (``set_next_input`` only reaches the cell that is executing) and headless runs (nbclient,
  papermill: nobody sees a widget, so the cell keeps the final answer).
* **Without a running loop** (terminal IPython, a plain ``InteractiveShell``): the turn runs to completion on a
  loop the session owns.
* **From another thread**: the turn is handed to the session's loop and the calling thread waits for it.

Two prompts for one chat at once (two ``%eca`` in a row) run one after the other: the second waits for the first.
Approvals: a widget's buttons answer them (``MANUAL``); where nobody can click — markdown output, or a loop that
is blocked by the waiting cell on an old ipykernel — the client's unattended policy answers (reject whatever
changes files or runs code), and ``-y`` approves everything for that prompt.

This module is the session's core: the client's lifecycle and a prompt's way from the magic to its view. The loop
plumbing is in ``_loops.py``, the subcommands in ``_subcommands.py``, ``%eca fix`` in ``_fix.py``, and the
widget-or-markdown decision in ``_display.py``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol import DirectoryContext, FileContext, GitContext, ImageContext, JsonObject
from . import _subcommands
from ._bridge import CommNotebookAccess, KernelCellRunner, notebook_path
from ._display import display_mode_for, ipykernel_major, show
from ._figures import figure_contexts
from ._kernel_tools import CellWriter, KernelToolsPlugin, approval_config
from ._loops import LoopHost, running_loop
from ._mentions import attach_mentions, git_mentions, interpolate
from ._parse import USAGE, MagicRequest
from ._transcript import ToolCallState, code_blocks

__all__ = ["NotebookSession", "Plan", "display_mode_for"]

log = logging.getLogger(__name__)

#: What ``%eca`` attaches to a prompt: ``-f`` files, ``--dir`` folders, ``@git``, ``@fig`` figures.
PromptContext = FileContext | DirectoryContext | GitContext | ImageContext

MAX_PLANS = 200  # prompts remembered for `%eca stop` and inspection (each holds its result)


@dataclass
class Plan:
    """One prompt, resolved synchronously at magic time (so the view is in the cell before the cell ends)."""

    request: MagicRequest
    chat_id: str
    message: str
    shown: str
    view: Any
    contexts: list[PromptContext] = field(default_factory=list)
    wait: bool = False
    approval: Any = None
    result: Any = None
    task: asyncio.Task[Any] | None = None


class NotebookSession:
    """The state behind ``%eca`` in one kernel (see the module docstring). Also the views' controller."""

    def __init__(self, shell: Any, *, workspace: Path | None = None, config: JsonObject | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.shell = shell
        self.workspace = workspace
        self.config = config
        self.env = env
        self.client: Any = None
        self.loops = LoopHost(shell)
        self._starting: asyncio.Future[Any] | None = None
        self.chat_id: str | None = None  # the chat `%eca` continues
        self.display_mode: str | None = None  # None: detect per prompt (display_mode_for)
        self.approval: Any = None  # policy where nobody can click (None: the client's unattended default)
        self.mcp_servers: dict[str, dict[str, Any]] = {}
        self.views: dict[str, list[Any]] = {}  # chat id → views currently showing a turn of it
        self.plans: list[Plan] = []  # every prompt started (the latest last)
        self.undone: set[str] = set()  # tool calls whose change was undone (Undo on a card, %eca undo)
        self._locks: dict[str, asyncio.Lock] = {}
        self._pending: dict[str, int] = {}  # prompts planned and not finished, per chat
        self._waiting = 0  # > 0 while a cell waits for a turn: cell edits can target it
        self.writer = CellWriter(shell, executing=lambda: self._waiting > 0)
        self.plugin = KernelToolsPlugin(shell, self.writer)
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop the client lives on (or will be started on)."""
        return self.loops.loop

    # -- the client ----------------------------------------------------------------------------------------------

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` from now on; a client living on another (finished) loop is dropped."""
        old_loop = self.loops.loop
        if old_loop is loop:
            return
        old = self.client
        self.client, self.loops.loop, self._starting, self._locks, self._pending = None, loop, None, {}, {}
        self._unsubscribe = None
        self.mcp_servers = {}
        if old is not None:
            LoopHost.finish_on(old_loop, old.aclose())

    async def ensure_client(self) -> Any:
        """The client, started on first use (concurrent callers share one start)."""
        if self.client is not None:
            return self.client
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        return await asyncio.shield(self._starting)

    async def _start(self) -> Any:
        from ..client import MANUAL, EcaClient
        from ..engine.config import deep_merge

        config = deep_merge(approval_config(), self.config or {})
        try:
            client = await EcaClient.start(workspace=self.workspace or Path.cwd(), config=config, env=self.env,
                                           approval=MANUAL, client_name="eca-notebook",
                                           ask_question=self.ask_question)
        except BaseException:
            self._starting = None
            raise
        self._unsubscribe = client.subscribe(self._on_notification)
        client.add_plugin(self.plugin)
        assert client.engine is not None  # an in-process client always has its engine
        engine = client.engine
        # the notebook tools: this kernel's notebook by default, changed through its page when one answers
        engine.default_notebook = notebook_path(self.shell)
        engine.notebook_access = CommNotebookAccess(waiting=lambda: self._waiting > 0,
                                                    enabled=lambda: self.mode() == "widget",
                                                    own_notebook=lambda: notebook_path(self.shell))
        engine.cell_runner = KernelCellRunner(self.shell, lambda: notebook_path(self.shell), engine.cell_runner)
        self.plugin.cell_writers = engine.default_notebook is None
        engine.tools_changed()  # the kernel's tools join the native list clients were sent
        self.client = client
        return client

    def _on_notification(self, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if method == "tool/serverUpdated" and params.get("type") == "mcp":
            self.mcp_servers[str(params.get("name"))] = params
            return
        if method == "tool/serverRemoved":
            self.mcp_servers.pop(str(params.get("name")), None)
            return
        chat_id = params.get("parentChatId") or params.get("chatId")  # a subagent's: drawn in its parent's views
        for view in list(self.views.get(chat_id, ())) if isinstance(chat_id, str) else ():
            try:
                view.handle(method, params)
            except Exception:
                log.exception("chat view failed on %s", method)

    async def ask_question(self, params: JsonObject) -> JsonObject:
        """``chat/askQuestion``: a question card in the newest widget showing the chat; the answer is the result.
        Where no widget shows the chat (markdown output, a headless run) nobody can answer: cancelled at once. A
        request cancelled by the engine (Stop, the tool's timeout) withdraws the card."""
        chat_id = params.get("chatId")
        views = [v for v in self.views.get(chat_id, ()) if hasattr(v, "ask")] if isinstance(chat_id, str) else []
        if not views:
            return {"answer": None, "cancelled": True}
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[str | None] = loop.create_future()

        def settle(answer: str | None) -> None:
            if not answered.done():
                answered.set_result(answer)

        def on_answer(answer: str | None) -> None:  # a click: on the kernel's thread, maybe not the loop's
            loop.call_soon_threadsafe(settle, answer)

        card = views[-1].ask(params, on_answer)
        try:
            answer = await answered
        finally:
            card.withdraw()
        return {"answer": answer, "cancelled": answer is None}

    def submit(self, coro: Any) -> None:
        """Run ``coro`` on the session's loop from wherever we are (a widget callback, a thread)."""
        self.loops.submit(coro)

    # -- entry points --------------------------------------------------------------------------------------------

    def run(self, request: MagicRequest) -> Any:
        """The synchronous magic: wait for the turn where no loop runs here, schedule it where one does."""
        running = running_loop()
        if running is not None:
            self._bind(running)
            if request.command != "prompt":
                self.loops.spawn(self.arun(request), f"%eca {request.command}")
                return None
            plan = self.plan(request, can_wait=False)
            if plan is not None:
                plan.task = self.loops.spawn(self.execute(plan), "%eca prompt")
            return None
        target = self.loops.threaded_target()
        if target is not None:
            self._bind(target)
            future = asyncio.run_coroutine_threadsafe(self.arun(request, force_wait=True), target)
            return future.result()
        loop = self.loops.own()
        self._bind(loop)
        return loop.run_until_complete(self.arun(request, force_wait=True))

    async def arun(self, request: MagicRequest, *, force_wait: bool = False) -> Any:
        """The magic as a coroutine on the running loop: subcommands complete; prompts start (and maybe wait)."""
        self._bind(asyncio.get_running_loop())
        if request.command != "prompt":
            return await self.subcommand(request)
        plan = self.plan(request, can_wait=True, force_wait=force_wait)
        if plan is not None:
            await self.start(plan)
        return None

    async def start(self, plan: Plan) -> None:
        """Run a planned prompt: to its end when the cell waits for it, as a background task otherwise."""
        if plan.wait:
            self._waiting += 1
            try:
                await self.execute(plan)
            finally:
                self._waiting -= 1
            return
        plan.task = self.loops.spawn(self.execute(plan), "%eca prompt")

    async def subcommand(self, request: MagicRequest) -> Any:
        """``%eca help``, ``new``, ``stop``, ``chats``, ``model``, ``behavior``, ``config``, ``mcp``, ``fix``."""
        return await _subcommands.subcommand(self, request)

    def describe_config(self) -> str:
        return _subcommands.describe_config(self)

    def describe_mcp(self) -> str:
        return _subcommands.describe_mcp(self)

    # -- prompts -------------------------------------------------------------------------------------------------

    def mode(self) -> str:
        """``widget`` or ``markdown``: what the next prompt's view will be."""
        return self.display_mode or display_mode_for(self.shell)

    def _resolve_chat(self, request: MagicRequest) -> str:
        if request.chat:
            if any(ch.isspace() for ch in request.chat):
                raise ValueError("a chat name cannot contain spaces")
            self.chat_id = request.chat
        elif request.new or self.chat_id is None:
            self.chat_id = str(uuid.uuid4())
        return self.chat_id

    def compose(self, text: str) -> str:
        """The message sent for ``text``: ``{expr}`` interpolated, ``@name`` mentions attached."""
        ns = self.shell.user_ns
        text = interpolate(text, ns)
        if text.lstrip().startswith("/"):
            return text  # an ECA command: its arguments are its own
        message, _ = attach_mentions(text, ns)
        return message

    def _contexts(self, request: MagicRequest, mentions: bool = True) -> list[PromptContext]:
        base = Path(self.workspace or Path.cwd())
        contexts: list[PromptContext] = [FileContext(path=str((base / Path(f).expanduser()).resolve()))
                                         for f in request.files]
        contexts += [DirectoryContext(path=str((base / Path(d).expanduser()).resolve())) for d in request.dirs]
        if mentions and not request.prompt.lstrip().startswith("/"):  # `@git`, `@git:diff`: the engine gathers it
            contexts += [GitContext(part=part) for part in git_mentions(request.prompt)]
            images, notes = figure_contexts(request.prompt, self.shell.user_ns)  # `@fig`, `@Out[3]`: as images
            contexts += images
            for note in notes:
                print(f"%eca: {note} (its description is sent)", file=sys.stderr)
        return contexts

    def plan(self, request: MagicRequest, *, can_wait: bool, force_wait: bool = False, view: Any = None,
             raw: bool = False, shown: str | None = None) -> Plan | None:
        """Resolve a prompt and put its view in the cell; None (with a message shown) when there is nothing to do.

        ``raw``: send the prompt as it is (no interpolation or mentions: ``%eca fix`` sends code and tracebacks)."""
        text = request.prompt
        if not text.strip():
            print(USAGE)
            return None
        mode = self.mode()
        headless = mode == "markdown"
        wait = force_wait or (can_wait and (request.wait or request.format == "code" or headless))
        try:
            chat_id = self._resolve_chat(request) if view is None else view.chat_id
            self.chat_id = chat_id  # continuing in a view makes its chat the current one
        except ValueError as exc:
            print(f"%eca: {exc}", file=sys.stderr)
            return None
        message = text if raw else self.compose(text)
        if view is None:
            view = self._new_view(mode, request.format)
        approval: Any
        if request.yes:
            approval = lambda content: True  # noqa: E731
        elif mode == "widget" and not force_wait and (not wait or ipykernel_major() >= 7):
            from ..client import MANUAL

            approval = MANUAL  # the buttons answer (clicks are processed: the loop is free, or comms run concurrently)
        else:
            from ..client import DEFAULT_UNATTENDED_POLICY

            approval = self.approval or DEFAULT_UNATTENDED_POLICY  # nobody can click: a policy answers
        plan = Plan(request, chat_id, message, shown or text.strip(), view, self._contexts(request, not raw), wait,
                    approval)
        view.begin_turn(chat_id, plan.shown)
        if self._pending.get(chat_id):
            view.queued()
        self._pending[chat_id] = self._pending.get(chat_id, 0) + 1
        self.plans.append(plan)
        del self.plans[:-MAX_PLANS]
        return plan

    def _new_view(self, mode: str, output_format: str) -> Any:
        if mode == "widget":
            from .widgets import ChatView

            view = ChatView(controller=self, output_format=output_format)
            show(view.widget)
            return view
        from ._fallback import MarkdownView

        return MarkdownView(output_format)

    async def execute(self, plan: Plan) -> Any:
        """Run one planned prompt to its end; its view shows it all along."""
        view = plan.view
        lock = self._locks.setdefault(plan.chat_id, asyncio.Lock())
        try:
            await self._acquire(lock, plan.chat_id)
            try:
                self.views.setdefault(plan.chat_id, []).append(view)
                try:
                    client = await self.ensure_client()
                    request = plan.request
                    plan.result = await client.prompt(plan.message, chat_id=plan.chat_id, model=request.model,
                                                      behavior=request.behavior,
                                                      contexts=[c.dump() for c in plan.contexts] or None,
                                                      approval=plan.approval, variant=request.variant)
                    if plan.result.error and not _shown(view, plan.result.error):
                        view.note(f"Error: {plan.result.error}", error=True)
                finally:
                    views = self.views.get(plan.chat_id, [])
                    if view in views:
                        views.remove(view)
            finally:
                lock.release()
        except asyncio.CancelledError:
            view.note("Stopped.")
            raise
        except Exception as exc:
            log.exception("%%eca prompt failed")
            view.note(f"Error: {type(exc).__name__}: {exc}", error=True)
        finally:
            self._pending[plan.chat_id] = max(0, self._pending.get(plan.chat_id, 0) - 1)
            view.finish()
        if plan.request.format == "code" and plan.result is not None:
            answer = view.text or getattr(plan.result, "text", "")
            code = "\n\n".join(code_blocks(answer)) or answer.strip()
            if code:
                self.shell.set_next_input(code, replace=False)
        return plan.result

    async def _acquire(self, lock: asyncio.Lock, chat_id: str) -> None:
        """Wait for the chat's earlier prompt — but never for a tool call of it that waits for a click: a diff left
        unanswered never blocks the chat (README), so a new ``%eca`` in the chat rejects it, as the Reject button
        would (the model is told, the earlier answer ends), and runs next. Under Run All the card of a prompt
        without ``-y`` would otherwise hold every later prompt of the chat, and a ``-w`` cell the whole notebook."""
        acquiring = asyncio.ensure_future(lock.acquire())
        try:
            while not acquiring.done():
                await asyncio.wait({acquiring}, timeout=0.2)  # (a call may start waiting while this one queues)
                engine = getattr(self.client, "engine", None)
                if acquiring.done() or engine is None or self.client is None:
                    continue
                for waiting_chat, call_id in list(engine.pending_approvals):
                    if waiting_chat == chat_id:
                        await self.client.reject(chat_id, call_id)
        except BaseException:
            if acquiring.done() and not acquiring.cancelled():
                lock.release()
            acquiring.cancel()
            raise

    # -- the views' controller -----------------------------------------------------------------------------------

    def approve(self, view: Any, call: ToolCallState, save: str | None, hunks: list[str] | None = None) -> None:
        if self.client is not None and view.chat_id:  # (a subagent's call is answered in its own chat)
            self.submit(self.client.approve(call.chat_id or view.chat_id, call.id, save=save, hunks=hunks))

    def reject(self, view: Any, call: ToolCallState) -> None:
        if self.client is not None and view.chat_id:
            self.submit(self.client.reject(call.chat_id or view.chat_id, call.id))

    def undo(self, view: Any, call: ToolCallState, done: Callable[[bool, str], None]) -> None:
        """The card's Undo: ``done(undone, message)`` is called with the engine's answer."""
        if self.client is None or not view.chat_id:
            done(False, "No session to undo in.")
            return

        async def undo() -> None:
            try:
                result = await self.client.undo_tool_call(view.chat_id, call.id)
            except Exception as exc:  # noqa: BLE001 - shown on the card
                done(False, f"Could not undo: {exc}")
            else:
                if result.undone:
                    self.undone.add(call.id)
                done(result.undone, result.message)

        self.submit(undo())

    def rewind(self, view: Any, content_id: str) -> None:
        """A prompt's Rewind: ``chat/rollback`` (files changed since are reverted); the view redraws from the
        engine's ``chat/cleared`` and replay. A refusal (the chat is running) is shown in the view."""
        if self.client is None or not view.chat_id:
            return
        chat_id = view.chat_id

        async def rewind() -> None:
            # the view follows the chat while it is rewound: chat/cleared and the replay (sent before the answer)
            # redraw it; other cells' outputs stay the record they are
            views = self.views.setdefault(chat_id, [])
            views.append(view)
            try:
                await self.client.rollback(chat_id, content_id)
            except Exception as exc:  # noqa: BLE001 - shown in the view
                view.note(f"Could not rewind: {getattr(exc, 'message', None) or exc}", error=True)
            finally:
                views.remove(view)

        self.submit(rewind())

    def fork(self, view: Any, content_id: str) -> None:
        """A prompt's Fork: ``chat/fork``; the view then shows the new chat (from its replay) and goes on in it."""
        if self.client is None or not view.chat_id:
            return
        chat_id = view.chat_id

        async def fork() -> None:
            try:
                new_id = await self.client.fork(chat_id, content_id)
                contents = await self.client.open_chat(new_id)
            except Exception as exc:  # noqa: BLE001 - shown in the view
                view.note(f"Could not fork: {getattr(exc, 'message', None) or exc}", error=True)
                return
            view.show_chat(new_id, [c.dump() for c in contents])

        self.submit(fork())

    def stop(self, view: Any) -> None:
        if self.client is not None and view.chat_id:
            self.submit(self.client.stop(view.chat_id))

    def steer(self, view: Any, text: str) -> None:
        """The view's box while its prompt runs: guidance joining at the next round (``chat/promptSteer``)."""
        if self.client is not None and view.chat_id:
            self.submit(self.client.steer(view.chat_id, text))

    def remove_steer(self, view: Any) -> None:
        """The view's "Take back": the pending steer is dropped (``chat/promptSteerRemove``)."""
        if self.client is not None and view.chat_id:
            self.submit(self.client.remove_steer(view.chat_id))

    def send(self, view: Any, text: str) -> None:
        """The view's input box: a new turn in the same chat, shown in the same view."""
        plan = self.plan(MagicRequest(prompt=text), can_wait=False, view=view)
        if plan is not None:
            self.submit(self._launch(plan))

    async def _launch(self, plan: Plan) -> None:
        plan.task = self.loops.spawn(self.execute(plan), "%eca prompt")

    # -- shutdown ------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self.loops.aclose()
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    def close(self) -> None:
        """Stop everything (``%unload_ext``): from sync code, on whichever loop the client lives."""
        loop = self.loops.loop
        if loop is not None and not loop.is_closed():
            self.loops.submit(self.aclose())
        self.loops.close_own_loop()


def _shown(view: Any, error: str) -> bool:
    return any(error in b.text for b in view.transcript.blocks if b.kind == "note")
