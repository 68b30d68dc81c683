"""The client side of one ECA connection: handshake, notifications, prompt tracking, automatic approvals, close.

:class:`ClientConnection` is the machinery under :class:`~eca_notebook.client.EcaClient`, which adds the public
methods. It talks ECA JSON-RPC through an :class:`~eca_notebook.rpc.Endpoint` over any message stream and never
reaches into an engine.

Chat ids are chosen here (uuid4) rather than by the engine: the engine streams a prompt's first contents (the user
echo, the title) *before* it answers ``chat/prompt``, and a client that learnt the id only from that answer could
not tell whose contents they were. A prompt ends with its ``progress finished`` content — sent after the engine has
marked the chat idle, so the next prompt to the same chat is accepted at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._tasks import BackgroundTasks
from ..protocol import (
    ChatContentReceivedParams,
    ChatContext,
    ChatToolCallApproveParams,
    ChatToolCallUndoResult,
    JsonObject,
    JsonValue,
    server_to_client,
)
from ..protocol.errors import RpcError
from ..protocol.turn import Change
from ..rpc import Endpoint
from ._approval import DEFAULT_UNATTENDED_POLICY, MANUAL, ApprovalPolicy, decide
from ._executor import StartOptions
from ._result import PromptResult, TurnCollector

if TYPE_CHECKING:
    from ..engine import Engine
    from ..transports import MessageStream

__all__ = ["CLOSE_WAIT", "START_TIMEOUT", "STOP_WAIT", "ClientConnection", "new_chat_id"]

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0  # initialize → config/updated; model discovery has its own, shorter timeouts
STOP_WAIT = 10.0  # how long a stop waits for a tracked turn to end before giving up on it
CLOSE_WAIT = 15.0
TOOLS_WAIT = 5.0  # after config/updated, for the native tool/serverUpdated


def new_chat_id() -> str:
    return str(uuid.uuid4())


def _object(value: JsonValue) -> JsonObject:
    """A JSON object a peer sent, or an empty one for anything else (absent, null, malformed)."""
    return value if isinstance(value, dict) else {}


def _strings(value: JsonValue) -> list[str]:
    """The strings of a JSON list a peer sent (model and agent names)."""
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


class ClientConnection:
    """State and plumbing of one client connection; see :class:`~eca_notebook.client.EcaClient` for the API."""

    def __init__(self, stream: MessageStream, *, approval: ApprovalPolicy | None = None,
                 client_name: str = "eca-notebook-client") -> None:
        """Low level: use ``EcaClient.start`` or ``EcaClient.connect``, which also perform the handshake."""
        self.client_name = client_name
        self.approval = approval if approval is not None else DEFAULT_UNATTENDED_POLICY
        self.engine: Engine | None = None
        #: the workspace, config and env :meth:`EcaClient.start` built the engine from (None for ``connect``)
        self.start_options: StartOptions | None = None
        self.models: list[str] = []
        self.default_model: str | None = None
        self.behaviors: list[str] = []
        self.default_behavior: str | None = None
        self.welcome_message: str | None = None
        self.tools: list[JsonObject] = []
        self.messages: list[JsonObject] = []
        self._endpoint = Endpoint(stream, name=client_name)
        self._turns: dict[str, TurnCollector] = {}
        self._openers: dict[str, list[ChatContentReceivedParams]] = {}
        self._subscribers: list[Callable[[str, Any], None]] = []
        # (an RpcError ending a task is an outcome the peer already reported, not a failure of ours)
        self._tasks = BackgroundTasks(client_name, logger=log, ignore=(RpcError,))
        self._config_seen = asyncio.Event()
        self._tools_seen = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._server_task: asyncio.Task[Any] | None = None
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        #: answers ``chat/askQuestion`` (params dict → result dict); set before the handshake, it is declared as
        #: ``chatCapabilities.askQuestion`` so the model's ``ask_user`` asks here (see ``EcaClient.start``)
        self.ask_question: Callable[[JsonObject], Any] | None = None
        for spec in server_to_client("notification"):
            method = spec.name
            if method != "$/cancelRequest":
                self._endpoint.register(method, functools.partial(self._on_notification, method))

    async def _handshake(self, folders: list[Path], config: JsonObject | None, timeout: float) -> None:
        self._runner = asyncio.create_task(self._endpoint.run(), name=f"{self.client_name}-reader")
        code_assistant: JsonObject = {"chat": True}
        params: JsonObject = {
            "processId": None,
            "clientInfo": {"name": self.client_name, "version": _version()},
            "capabilities": {"codeAssistant": code_assistant},
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name or str(f)} for f in folders],
        }
        if self.ask_question is not None:
            code_assistant["chatCapabilities"] = {"askQuestion": True}
            self._endpoint.register("chat/askQuestion", self.ask_question)
        if config is not None:
            params["initializationOptions"] = config
        result = await self._endpoint.request("initialize", params, timeout=timeout) or {}
        self.models = list(result.get("models") or [])
        self.default_model = result.get("chatDefaultModel")
        self.behaviors = list(result.get("chatBehaviors") or [])
        self.default_behavior = result.get("chatDefaultBehavior")
        self.welcome_message = result.get("chatWelcomeMessage")
        await self._endpoint.notify("initialized", {})
        async with asyncio.timeout(timeout):
            await self._config_seen.wait()
        # ours sends the native tool list right after config/updated; a server that never does must not fail start
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(timeout, TOOLS_WAIT)):
                await self._tools_seen.wait()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- notifications -------------------------------------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        """Runs inline in the endpoint's read loop, in arrival order: keep it quick, spawn anything that awaits."""
        if not isinstance(params, dict):
            params = {}
        try:
            self._route(method, params)
        except Exception:
            log.exception("%s: handling %s failed", self.client_name, method)
        for callback in list(self._subscribers):
            try:
                callback(method, params)
            except Exception:
                log.exception("%s: subscriber failed on %s", self.client_name, method)

    def _route(self, method: str, params: JsonObject) -> None:
        if method == "chat/contentReceived":
            chat_id = params.get("chatId")
            opener = self._openers.get(chat_id) if isinstance(chat_id, str) else None
            if opener is not None:
                opener.append(ChatContentReceivedParams.model_validate(params))
            turn = self._turns.get(chat_id) if isinstance(chat_id, str) else None
            content = _object(params.get("content"))
            if turn is None:
                # A subagent's chat (``parentChatId``) is part of its parent's turn: its content is not the turn's
                # answer, but its approvals are asked of this client under the parent turn's policy.
                parent = self._turns.get(params.get("parentChatId"))  # type: ignore[arg-type]
                if parent is not None and isinstance(chat_id, str):
                    change = parent.add_subagent(chat_id, params)
                    if _asks(change):
                        self._answer_approval(parent, content, chat_id)
                return
            if _asks(turn.add(params)):
                self._answer_approval(turn, content, turn.chat_id)
        elif method == "chat/statusChanged":
            turn = self._turns.get(params.get("chatId"))  # type: ignore[arg-type]
            if turn is not None:
                status = params.get("status")
                if status == "stopping":
                    turn.stopped = True
                elif status == "running":
                    turn.running = True
        elif method == "config/updated":
            chat = _object(params.get("chat"))
            if "models" in chat:
                self.models = _strings(chat.get("models"))
            agents_key = "agents" if "agents" in chat else "behaviors"  # (the newer name wins when both are sent)
            if agents_key in chat:
                self.behaviors = _strings(chat.get(agents_key))
            model = chat.get("selectModel")
            if isinstance(model, str) and not params.get("chatId"):
                # (a chat-scoped one, chat/open realigning a reopened chat's model, is that chat's alone)
                self.default_model = model
            selected = chat.get("selectAgent") or chat.get("selectBehavior")
            if isinstance(selected, str):
                self.default_behavior = selected
            welcome = chat.get("welcomeMessage")
            if isinstance(welcome, str):
                self.welcome_message = welcome
            self._config_seen.set()
        elif method == "tool/serverUpdated":
            if params.get("type") == "native":
                tools = params.get("tools")
                self.tools = [tool for tool in tools if isinstance(tool, dict)] if isinstance(tools, list) else []
                self._tools_seen.set()
        elif method == "$/showMessage":
            self.messages.append(params)

    def _answer_approval(self, turn: TurnCollector, content: JsonObject, chat_id: str) -> None:
        policy = turn.policy
        if policy == MANUAL or self._closed:
            return
        call_id = str(content.get("id") or "")

        async def answer() -> None:
            approved, save = await decide(policy, content)
            if approved:
                await self.approve(chat_id, call_id, save=save)
            else:
                await self.reject(chat_id, call_id)

        self._spawn(answer(), f"{self.client_name}-approval-{call_id}")

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any] | None:
        if self._closed:
            coro.close()
            return None
        return self._tasks.spawn(coro, name)

    def subscribe(self, callback: Callable[[str, Any], None]) -> Callable[[], None]:
        """Call ``callback(method, params)`` for every notification from the engine, as it arrives (on the client's
        event loop; keep it quick). Returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    async def approve(self, chat_id: str, tool_call_id: str, *, save: str | None = None,
                      hunks: list[str] | None = None) -> None:
        """Approve a tool call waiting for approval; ``save="session"`` also approves similar calls for the rest of
        the session; ``hunks`` applies only those hunks of its file change (ids from ``details.hunks``)."""
        params = ChatToolCallApproveParams(chat_id=chat_id, tool_call_id=tool_call_id,
                                           save="session" if save == "session" else None, hunks=hunks)
        await self._endpoint.notify("chat/toolCallApprove", params.dump())

    async def reject(self, chat_id: str, tool_call_id: str) -> None:
        """Refuse a tool call waiting for approval (the model is told the user rejected it)."""
        await self._endpoint.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": tool_call_id})

    async def undo_tool_call(self, chat_id: str, tool_call_id: str) -> ChatToolCallUndoResult:
        """Revert what a finished tool call changed (its details said ``undoable``); ``undone`` is False with the
        reason when it cannot be (undone already, or the cell changed since)."""
        raw = await self._endpoint.request("chat/toolCallUndo", {"chatId": chat_id, "toolCallId": tool_call_id})
        return ChatToolCallUndoResult.model_validate(raw or {})

    # -- prompts -------------------------------------------------------------------------------------------------

    def _open_turn(self, message: str, chat_id: str | None, approval: Any, *, streaming: bool) -> TurnCollector:
        if self._closing is not None:
            raise RuntimeError("the client is closed")
        if not isinstance(message, str):
            raise TypeError(f"message must be a string, not {type(message).__name__}")
        chat_id = chat_id or new_chat_id()
        if chat_id in self._turns:
            raise RuntimeError(f"a prompt is already running in chat {chat_id}: stop it or wait for it first")
        if chat_id in self._openers:
            raise RuntimeError(f"chat {chat_id} is being opened: prompt it once open_chat() has returned")
        policy = approval if approval is not None else self.approval
        turn = TurnCollector(chat_id, message, policy, streaming=streaming)
        self._turns[chat_id] = turn
        return turn

    def _forget(self, turn: TurnCollector) -> None:
        if self._turns.get(turn.chat_id) is turn:
            del self._turns[turn.chat_id]

    async def _run_turn(self, turn: TurnCollector, params: JsonObject, timeout: float | None) -> PromptResult:
        """Send the prompt and wait for its end (``progress finished``); stop it on timeout or cancellation."""
        try:
            try:
                async with asyncio.timeout(timeout):
                    result = await self._endpoint.request("chat/prompt", params) or {}
                    turn.accepted = True
                    turn.model = result.get("model")
                    status = result.get("status")
                    if status in ("error", "login"):
                        reason = result.get("message") or (turn.system[-1] if turn.system else None)
                        turn.finish(error=reason or f"the prompt was refused (status {status!r})")
                    await turn.done.wait()
            except TimeoutError:
                if not turn.done.is_set():
                    turn.error = turn.error or f"Timed out after {timeout:g} s; the prompt was stopped"
                    await self._stop_turn(turn)
            return turn.result()
        except asyncio.CancelledError:
            if not turn.done.is_set() and not self._closed:
                # stop the engine's turn and let it end, so the chat can take the next prompt right away
                turn.error = turn.error or "Cancelled; the prompt was stopped"
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(self._stop_turn(turn))
            turn.finish(error="Cancelled; the prompt was stopped")
            raise
        except BaseException as exc:
            turn.finish(error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self._forget(turn)

    async def _stop_turn(self, turn: TurnCollector) -> None:
        await self._quiet_stop(turn.chat_id)
        if turn.accepted or turn.running:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT):
                    await turn.done.wait()
        turn.stopped = True
        turn.finish()

    async def _quiet_stop(self, chat_id: str) -> None:
        with contextlib.suppress(Exception):
            await self._endpoint.notify("chat/promptStop", {"chatId": chat_id})

    @staticmethod
    def _prompt_params(chat_id: str, message: str, model: str | None, behavior: str | None,
                       contexts: Sequence[ChatContext | JsonObject] | None, variant: str | None = None) -> JsonObject:
        params: JsonObject = {"chatId": chat_id, "message": message}
        if variant is not None:  # the model's variant (reasoning effort…): kept by the chat
            params["variant"] = variant
        if model is not None:
            params["model"] = model
        if behavior is not None:
            params["behavior"] = behavior
        if contexts:
            params["contexts"] = [c if isinstance(c, dict) else c.dump() for c in contexts]
        return params

    # -- shutdown ------------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop this client: pending prompts end with an error, the connection shuts down, an engine started by
        :meth:`start` is closed (a shared ``engine=`` is left running). Idempotent."""
        if self._closing is not None:  # closed, or another caller is closing it: wait for that
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        try:
            await self._close()
        finally:
            self._closing.set_result(None)

    async def _close(self) -> None:
        for turn in list(self._turns.values()):  # the shutdown below ends them: say why
            if not turn.done.is_set():
                turn.error = turn.error or "The client was closed while the prompt was running"
                turn.stopped = True
        if self._runner is not None and not self._endpoint.closed:
            with contextlib.suppress(Exception):
                await self._endpoint.request("shutdown", None, timeout=CLOSE_WAIT)
            with contextlib.suppress(Exception):
                await self._endpoint.notify("exit", None)
        self._closed = True
        for turn in list(self._turns.values()):
            turn.finish(error="The client was closed")
        self._turns.clear()
        await self._tasks.aclose()
        if self._server_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._server_task), CLOSE_WAIT)
            except (TimeoutError, Exception):
                self._server_task.cancel()
                await asyncio.gather(self._server_task, return_exceptions=True)
        await self._endpoint.close()
        if self._runner is not None:
            await asyncio.gather(self._runner, return_exceptions=True)


def _asks(change: Change | None) -> bool:
    """The content folded was a call that now waits for the user (a ``toolCallRun`` with manual approval)."""
    return change is not None and change.kind == "toolCallRun" and change.tool is not None \
        and change.tool.status == "pending"


def _version() -> str:
    from .._version import __version__

    return __version__
