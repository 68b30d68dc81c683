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
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ._kernel_tools import CellWriter, KernelToolsPlugin, approval_config
from ._mentions import attach_mentions, interpolate
from ._parse import USAGE, MagicRequest
from ._transcript import ToolCallState, code_blocks

__all__ = ["NotebookSession", "Plan", "display_mode_for"]

log = logging.getLogger(__name__)

DISPLAY_ENV = "ECA_NOTEBOOK_DISPLAY"  # "widget" | "markdown": overrides the detection below
FIX_PROMPT = ("The code in my notebook raised the exception below. Explain briefly what went wrong and propose a "
              "fix (corrected code in a fenced block).")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_PLANS = 200  # prompts remembered for `%eca stop` and inspection (each holds its result)


def _ipykernel_major() -> int:
    try:
        import ipykernel

        return int(ipykernel.__version__.split(".")[0])
    except Exception:
        return 0


def _widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except Exception:
        return False
    return True


def display_mode_for(shell: Any) -> str:
    """``widget`` where a front-end can show live widgets, ``markdown`` elsewhere.

    Headless executors (nbclient, and so nbconvert and papermill) send ``execute_request`` with
    ``allow_stdin: false``, while every interactive front-end (JupyterLab, Notebook 7, VS Code) allows stdin;
    that is the signal. ``ECA_NOTEBOOK_DISPLAY`` overrides it."""
    forced = os.environ.get(DISPLAY_ENV, "").strip().lower()
    if forced in ("widget", "markdown"):
        return forced
    kernel = getattr(shell, "kernel", None)
    if kernel is None:  # terminal IPython: nothing renders widgets
        return "markdown"
    if not getattr(kernel, "_allow_stdin", True):
        return "markdown"
    return "widget" if _widgets_available() else "markdown"


@dataclass
class Plan:
    """One prompt, resolved synchronously at magic time (so the view is in the cell before the cell ends)."""

    request: MagicRequest
    chat_id: str
    message: str
    shown: str
    view: Any
    contexts: list[dict[str, Any]] = field(default_factory=list)
    wait: bool = False
    approval: Any = None
    result: Any = None
    task: asyncio.Task[Any] | None = None


class NotebookSession:
    """The state behind ``%eca`` in one kernel (see the module docstring). Also the views' controller."""

    def __init__(self, shell: Any, *, workspace: Path | None = None, config: dict[str, Any] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.shell = shell
        self.workspace = workspace
        self.config = config
        self.env = env
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._starting: asyncio.Future[Any] | None = None
        self.chat_id: str | None = None  # the chat `%eca` continues
        self.display_mode: str | None = None  # None: detect per prompt (display_mode_for)
        self.approval: Any = None  # policy where nobody can click (None: the client's unattended default)
        self.mcp_servers: dict[str, dict[str, Any]] = {}
        self.views: dict[str, list[Any]] = {}  # chat id → views currently showing a turn of it
        self.plans: list[Plan] = []  # every prompt started (the latest last)
        self._locks: dict[str, asyncio.Lock] = {}
        self._pending: dict[str, int] = {}  # prompts planned and not finished, per chat
        self._tasks: set[asyncio.Task[Any]] = set()
        self._waiting = 0  # > 0 while a cell waits for a turn: cell edits can target it
        self.writer = CellWriter(shell, executing=lambda: self._waiting > 0)
        self.plugin = KernelToolsPlugin(shell, self.writer)
        self._unsubscribe: Callable[[], None] | None = None

    # -- the client and its loop ---------------------------------------------------------------------------------

    def _kernel_loop(self) -> asyncio.AbstractEventLoop | None:
        io_loop = getattr(getattr(self.shell, "kernel", None), "io_loop", None)
        return getattr(io_loop, "asyncio_loop", None)

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` from now on; a client living on another (finished) loop is dropped."""
        if self.loop is loop:
            return
        old, old_loop = self.client, self.loop
        self.client, self.loop, self._starting, self._locks, self._pending = None, loop, None, {}, {}
        self._unsubscribe = None
        self.mcp_servers = {}
        if old is not None and old_loop is not None and not old_loop.is_closed() and not old_loop.is_running():
            try:
                old_loop.run_until_complete(old.aclose())
            except Exception:
                log.debug("closing the previous client failed", exc_info=True)

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
                                           approval=MANUAL, client_name="eca-notebook")
        except BaseException:
            self._starting = None
            raise
        self._unsubscribe = client.subscribe(self._on_notification)
        client.add_plugin(self.plugin)
        client.engine.tools_changed()  # the kernel's tools join the native list clients were sent
        self.client = client
        return client

    def _on_notification(self, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if method == "tool/serverUpdated" and params.get("type") == "mcp":
            self.mcp_servers[str(params.get("name"))] = params
            return
        chat_id = params.get("chatId")
        for view in list(self.views.get(chat_id, ())) if isinstance(chat_id, str) else ():
            try:
                view.handle(method, params)
            except Exception:
                log.exception("chat view failed on %s", method)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def submit(self, coro: Any) -> None:
        """Run ``coro`` on the session's loop from wherever we are (a widget callback, a thread)."""
        loop = self.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is not None and running is loop:
            self._spawn(coro)
        elif loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(coro, loop)
        elif loop is not None and not loop.is_closed():
            loop.run_until_complete(coro)
        else:
            coro.close()

    # -- entry points --------------------------------------------------------------------------------------------

    def run(self, request: MagicRequest) -> Any:
        """The synchronous magic: wait for the turn where no loop runs here, schedule it where one does."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None:
            self._bind(running)
            if request.command != "prompt":
                self._spawn(self.arun(request))
                return None
            plan = self.plan(request, can_wait=False)
            if plan is not None:
                plan.task = self._spawn(self.execute(plan))
            return None
        target = self.loop if self.loop is not None and self.loop.is_running() else self._kernel_loop()
        if target is not None and target.is_running() and threading.current_thread() is not threading.main_thread():
            self._bind(target)
            future = asyncio.run_coroutine_threadsafe(self.arun(request, force_wait=True), target)
            return future.result()
        loop = self._own()
        self._bind(loop)
        return loop.run_until_complete(self.arun(request, force_wait=True))

    def _own(self) -> asyncio.AbstractEventLoop:
        if self._own_loop is None or self._own_loop.is_closed():
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop

    async def arun(self, request: MagicRequest, *, force_wait: bool = False) -> Any:
        """The magic as a coroutine on the running loop: subcommands complete; prompts start (and maybe wait)."""
        self._bind(asyncio.get_running_loop())
        if request.command != "prompt":
            return await self.subcommand(request)
        plan = self.plan(request, can_wait=True, force_wait=force_wait)
        if plan is None:
            return None
        if plan.wait:
            self._waiting += 1
            try:
                await self.execute(plan)
            finally:
                self._waiting -= 1
            return None
        plan.task = self._spawn(self.execute(plan))
        return None

    # -- prompts -------------------------------------------------------------------------------------------------

    def _mode(self) -> str:
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

    def _contexts(self, request: MagicRequest) -> list[dict[str, Any]]:
        base = Path(self.workspace or Path.cwd())
        contexts = [{"type": "file", "path": str((base / Path(f).expanduser()).resolve())} for f in request.files]
        contexts += [{"type": "directory", "path": str((base / Path(d).expanduser()).resolve())} for d in request.dirs]
        return contexts

    def plan(self, request: MagicRequest, *, can_wait: bool, force_wait: bool = False, view: Any = None,
             raw: bool = False, shown: str | None = None) -> Plan | None:
        """Resolve a prompt and put its view in the cell; None (with a message shown) when there is nothing to do.

        ``raw``: send the prompt as it is (no interpolation or mentions: ``%eca fix`` sends code and tracebacks)."""
        text = request.prompt
        if not text.strip():
            print(USAGE)
            return None
        mode = self._mode()
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
        if request.yes:
            approval: Any = lambda content: True  # noqa: E731
        elif mode == "widget" and not force_wait and (not wait or _ipykernel_major() >= 7):
            from ..client import MANUAL

            approval = MANUAL  # the buttons answer (clicks are processed: the loop is free, or comms run concurrently)
        else:
            from ..client import DEFAULT_UNATTENDED_POLICY

            approval = self.approval or DEFAULT_UNATTENDED_POLICY  # nobody can click: a policy answers
        plan = Plan(request, chat_id, message, shown or text.strip(), view, self._contexts(request), wait, approval)
        view.begin_turn(chat_id, plan.shown)
        if self._pending.get(chat_id):
            view.queued()
        self._pending[chat_id] = self._pending.get(chat_id, 0) + 1
        self.plans.append(plan)
        del self.plans[:-MAX_PLANS]
        return plan

    def _new_view(self, mode: str, output_format: str) -> Any:
        if mode == "widget":
            from IPython.display import display

            from .widgets import ChatView

            view = ChatView(controller=self, output_format=output_format)
            display(view.widget)
            return view
        from ._fallback import MarkdownView

        return MarkdownView(output_format)

    async def execute(self, plan: Plan) -> Any:
        """Run one planned prompt to its end; its view shows it all along."""
        view = plan.view
        lock = self._locks.setdefault(plan.chat_id, asyncio.Lock())
        try:
            async with lock:
                self.views.setdefault(plan.chat_id, []).append(view)
                try:
                    client = await self.ensure_client()
                    request = plan.request
                    plan.result = await client.prompt(plan.message, chat_id=plan.chat_id, model=request.model,
                                                      behavior=request.behavior, contexts=plan.contexts or None,
                                                      approval=plan.approval)
                    if plan.result.error and not _shown(view, plan.result.error):
                        view.note(f"Error: {plan.result.error}", error=True)
                finally:
                    views = self.views.get(plan.chat_id, [])
                    if view in views:
                        views.remove(view)
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

    # -- the views' controller -----------------------------------------------------------------------------------

    def approve(self, view: Any, call: ToolCallState, save: str | None) -> None:
        if self.client is not None and view.chat_id:
            self.submit(self.client.approve(view.chat_id, call.id, save=save))

    def reject(self, view: Any, call: ToolCallState) -> None:
        if self.client is not None and view.chat_id:
            self.submit(self.client.reject(view.chat_id, call.id))

    def stop(self, view: Any) -> None:
        if self.client is not None and view.chat_id:
            self.submit(self.client.stop(view.chat_id))

    def send(self, view: Any, text: str) -> None:
        """The view's input box: a new turn in the same chat, shown in the same view."""
        plan = self.plan(MagicRequest(prompt=text), can_wait=False, view=view)
        if plan is not None:
            self.submit(self._launch(plan))

    async def _launch(self, plan: Plan) -> None:
        plan.task = self._spawn(self.execute(plan))

    # -- subcommands ---------------------------------------------------------------------------------------------

    async def subcommand(self, request: MagicRequest) -> Any:
        name, arg = request.command, request.argument
        if name == "help":
            print(USAGE)
            return None
        if name == "new":
            self.chat_id = str(uuid.uuid4())
            print("Started a new chat: the next %eca prompt begins it.")
            return None
        if name == "fix":
            return await self._fix(request)
        try:
            client = await self.ensure_client()
        except Exception as exc:
            print(f"%eca: could not start the assistant: {exc}", file=sys.stderr)
            return None
        if name == "stop":
            running = [p for p in self.plans if p.task is not None and not p.task.done() or p.view.running]
            chats = sorted({p.chat_id for p in running})
            for chat_id in chats:
                await client.stop(chat_id)
            print(f"Stopped {len(chats)} running prompt(s)." if chats else "Nothing is running.")
            return None
        if name == "chats":
            chats = await client.list_chats()
            if not chats:
                print("No chats yet.")
                return None
            lines = ["| | chat | title | messages | model |", "|---|---|---|---|---|"]
            for chat in chats:
                mark = "▶" if chat.get("id") == self.chat_id else ""
                lines.append(f"| {mark} | `{chat.get('id')}` | {_cell(chat.get('title'))} | "
                             f"{chat.get('messageCount', '')} | {chat.get('model') or ''} |")
            _show_markdown(("\n".join(lines)))
            return None
        if name == "model":
            if arg:
                try:
                    await client.select_model(arg, self.chat_id)
                except ValueError as exc:
                    print(f"%eca: {exc}", file=sys.stderr)
                    return None
                print(f"Model: {arg}")
                return None
            _show_markdown(("\n".join(f"- {'**' + m + '** (selected)' if m == client.default_model else m}"
                                       for m in client.models) or "No models available."))
            return None
        if name == "behavior":
            if arg:
                try:
                    await client.select_behavior(arg, self.chat_id)
                except ValueError as exc:
                    print(f"%eca: {exc}", file=sys.stderr)
                    return None
                print(f"Behavior: {arg}")
                return None
            _show_markdown(("\n".join(f"- {'**' + b + '** (selected)' if b == client.default_behavior else b}"
                                       for b in client.behaviors)))
            return None
        if name == "config":
            _show_markdown((self.describe_config()))
            return None
        if name == "mcp":
            _show_markdown((self.describe_mcp()))
            return None
        raise AssertionError(name)

    def describe_config(self) -> str:
        client = self.client
        engine = getattr(client, "engine", None)
        lines = ["**eca-notebook**", ""]
        if engine is not None:
            lines.append(f"- workspace: `{', '.join(str(p) for p in engine.workspace_folders)}`")
            for source in engine.loaded.sources:
                state = "applied" if source.applied else "not applied"
                where = f" `{source.path}`" if source.path else ""
                problem = f" — {source.problem}" if source.problem else ""
                lines.append(f"- config {source.name}{where}: {state}{problem}")
        lines.append(f"- model: `{client.default_model or '(none)'}` of {len(client.models)} available "
                     "(`%eca model` lists them)")
        lines.append(f"- behavior: `{client.default_behavior}` (of {', '.join(client.behaviors)})")
        lines.append(f"- current chat: `{self.chat_id or '(new on the next prompt)'}`")
        lines.append(f"- output: {self._mode()}")
        tools = [t.get("name") for t in client.tools if not t.get("disabled")]
        lines.append(f"- tools: {', '.join(f'`{t}`' for t in tools)}")
        if self.mcp_servers:
            lines.append(f"- MCP servers: {len(self.mcp_servers)} (`%eca mcp`)")
        for message in client.messages:
            lines.append(f"- ⚠ {message.get('message')}")
        return "\n".join(lines)

    def describe_mcp(self) -> str:
        engine = getattr(self.client, "engine", None)
        for plugin in getattr(engine, "plugins", ()):  # statuses sent before we subscribed: ask the MCP plug-in
            statuses = getattr(plugin, "statuses", None)
            if callable(statuses):
                try:
                    for status in statuses():
                        self.mcp_servers.setdefault(str(status.get("name")), status)
                except Exception:
                    log.debug("MCP statuses unavailable", exc_info=True)
        if not self.mcp_servers:
            return "No MCP servers (configure them under `mcpServers` in the ECA config)."
        lines = ["| server | status | tools | command / url |", "|---|---|---|---|"]
        for name, status in sorted(self.mcp_servers.items()):
            tools = status.get("tools") or []
            where = status.get("url") or " ".join([status.get("command") or "", *(status.get("args") or [])]).strip()
            lines.append(f"| {name} | {status.get('status')} | {len(tools)} | `{where}` |")
        return "\n".join(lines)

    async def _fix(self, request: MagicRequest) -> Any:
        error = last_exception(self.shell)
        if error is None:
            print("No exception to fix yet: run the failing cell first, then %eca fix.")
            return None
        summary, details = error
        prompt = FIX_PROMPT + (f"\n\nNote from the user: {request.argument}" if request.argument else "")
        fix_request = MagicRequest(prompt=f"{prompt}\n\n{details}", model=request.model, behavior=request.behavior,
                                   chat=request.chat, new=request.new, format=request.format, wait=request.wait,
                                   yes=request.yes)
        plan = self.plan(fix_request, can_wait=True, raw=True,
                         shown=f"fix: {summary}" + (f" — {request.argument}" if request.argument else ""))
        if plan is None:
            return None
        if plan.wait:
            self._waiting += 1
            try:
                await self.execute(plan)
            finally:
                self._waiting -= 1
        else:
            plan.task = self._spawn(self.execute(plan))
        return None

    # -- shutdown ------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    def close(self) -> None:
        """Stop everything (``%unload_ext``): from sync code, on whichever loop the client lives."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                self._spawn(self.aclose())
            elif loop.is_running():
                asyncio.run_coroutine_threadsafe(self.aclose(), loop)
            else:
                loop.run_until_complete(self.aclose())
        if self._own_loop is not None and not self._own_loop.is_closed() and not self._own_loop.is_running():
            self._own_loop.close()


def _show_markdown(text: str) -> None:
    """Markdown for the notebook; the same source as plain text for a terminal."""
    from IPython.display import display

    display({"text/markdown": text, "text/plain": text}, raw=True)


def _shown(view: Any, error: str) -> bool:
    return any(error in b.text for b in view.transcript.blocks if b.kind == "note")


def _cell(value: Any) -> str:
    return str(value or "").replace("|", "\\|").replace("\n", " ")


def last_exception(shell: Any) -> tuple[str, str] | None:
    """The last exception the user saw: ``(one-line summary, traceback + the source of the cell that raised it)``."""
    value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if value is None:
        return None
    tb = value.__traceback__
    while tb is not None and _is_ipython_frame(tb.tb_frame.f_code.co_filename) and tb.tb_next is not None:
        tb = tb.tb_next  # IPython's own frames (run_code's exec) say nothing about the user's error
    text = _ANSI.sub("", "".join(traceback.format_exception(type(value), value, tb))).strip()
    parts = [f"Traceback:\n```\n{text}\n```"]
    cell = _failing_cell(shell, tb)
    if cell is not None:
        number, source = cell
        parts.append(f"The cell In[{number}] that raised it:\n```python\n{source.rstrip()}\n```")
    summary = "".join(traceback.format_exception_only(type(value), value)).strip().splitlines()[-1]
    return summary, "\n\n".join(parts)


def _is_ipython_frame(filename: str) -> bool:
    return f"{os.sep}IPython{os.sep}core{os.sep}" in filename


def _failing_cell(shell: Any, tb: Any) -> tuple[int, str] | None:
    """The notebook cell the traceback went through last (IPython maps its cell file names to execution counts)."""
    mapping = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    history = shell.user_ns.get("In") or []
    found = None
    while tb is not None:
        number = mapping.get(tb.tb_frame.f_code.co_filename)
        if isinstance(number, int) and 0 < number < len(history):
            found = (number, history[number])
        tb = tb.tb_next
    return found
