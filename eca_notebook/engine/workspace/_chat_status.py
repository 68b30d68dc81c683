"""The ``chatStatusChanged`` hook: a chat's aggregate status, sent to the user's hooks each time it changes.

Why a tracker of its own: the reference server's hook receives more than ``chat/statusChanged`` carries — whether
the chat waits on the user, and which tool calls wait for approval, wait for an answer (``ask_user``) or run. Those
are known only from the tool-call contents a turn streams, so :meth:`ChatStatusHooks.content` follows them as
:meth:`Engine.emit_content` sends them and :meth:`ChatStatusHooks.status` follows ``chat/statusChanged``; each
change of the snapshot (never a duplicate of the previous one) runs the hooks in the background, in order per chat.

Payload (``docs/config/hooks.md`` of the reference): the chat fields plus ``status``, ``awaiting_user_input``,
``pending_approval_tool_call_ids``, ``pending_question_tool_call_ids``, ``running_tool_call_ids``, and — only while
the chat waits on the user — ``waiting_reason`` (``toolApproval`` or ``userQuestion``); a subagent's chat adds
``parent_chat_id``. The hook is advisory: what it answers changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...protocol import JsonObject

if TYPE_CHECKING:
    from ..chats import Chat
    from ._hooks import Hooks

__all__ = ["ChatStatusHooks"]

log = logging.getLogger(__name__)

EVENT = "chatStatusChanged"
QUESTION_TOOL = "ask_user"  # a running ask_user call waits on the user's answer, not on a program
_WAITING, _RUNNING = "waiting", "running"


class ChatStatusHooks:
    """Follows each chat's status and tool calls; runs ``chatStatusChanged`` hooks when the snapshot changes."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self._calls: dict[str, dict[str, tuple[str, str]]] = {}  # chat id → call id → (state, tool name)
        self._last: dict[str, JsonObject] = {}  # chat id → the snapshot the hooks last saw
        self._tail: dict[str, asyncio.Task[None]] = {}  # chat id → its latest hook run (the next one waits on it)

    def content(self, chat: Chat, content: Mapping[str, Any]) -> None:
        """A content the chat streamed: tool-call states are followed (always, so a hook configured mid-turn sees
        the right calls); other contents are ignored."""
        kind = content.get("type")
        if kind not in ("toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected"):
            return
        call_id = str(content.get("id", ""))
        calls = self._calls.setdefault(chat.id, {})
        if kind in ("toolCalled", "toolCallRejected"):
            if calls.pop(call_id, None) is None:
                return
        elif kind == "toolCallRun":
            if not content.get("manualApproval"):
                return  # runs at once: its toolCallRunning follows
            calls[call_id] = (_WAITING, str(content.get("name", "")))
        else:
            calls[call_id] = (_RUNNING, str(content.get("name", "")))
        self._changed(chat)

    def status(self, chat: Chat) -> None:
        """The chat's status changed (``chat/statusChanged``); a chat gone idle has no calls left."""
        if chat.status == "idle":
            self._calls.pop(chat.id, None)
        self._changed(chat)

    def forget(self, chat_id: str) -> None:
        """A deleted chat: drop what is kept for it."""
        self._calls.pop(chat_id, None)
        self._last.pop(chat_id, None)

    def snapshot(self, chat: Chat) -> JsonObject:
        """The reference's aggregate status of the chat."""
        calls = self._calls.get(chat.id, {})
        approval = sorted(i for i, (state, _) in calls.items() if state == _WAITING)
        question = sorted(i for i, (state, name) in calls.items() if state == _RUNNING and name == QUESTION_TOOL)
        running = sorted(i for i, (state, name) in calls.items() if state == _RUNNING and name != QUESTION_TOOL)
        awaiting = bool(approval or question)
        snap: JsonObject = {"status": chat.status or "idle", "awaiting_user_input": awaiting,
                            "pending_approval_tool_call_ids": [*approval],
                            "pending_question_tool_call_ids": [*question], "running_tool_call_ids": [*running]}
        if awaiting:
            snap["waiting_reason"] = "toolApproval" if approval else "userQuestion"
        return snap

    def _changed(self, chat: Chat) -> None:
        hooks = self.hooks
        if not hooks.has(EVENT):
            return
        snap = self.snapshot(chat)
        if self._last.get(chat.id) == snap:
            return
        self._last[chat.id] = snap
        data = {**hooks.base_data(chat), **snap}
        parent = getattr(chat, "parent_chat_id", None)
        if parent:
            data["parent_chat_id"] = parent
        previous = self._tail.get(chat.id)
        task = hooks.host.background.spawn(self._run(previous, data), f"eca-hook-{EVENT}")
        self._tail[chat.id] = task
        key = chat.id

        def done(finished: asyncio.Task[None]) -> None:
            if self._tail.get(key) is finished:
                del self._tail[key]

        task.add_done_callback(done)

    async def _run(self, previous: asyncio.Task[None] | None, data: JsonObject) -> None:
        if previous is not None:  # the hooks see the snapshots in the order they happened
            await asyncio.gather(previous, return_exceptions=True)
        # no chat given: an advisory hook has no UI (its systemMessage is not shown), the chat fields are in data
        await self.hooks.run(EVENT, data)
