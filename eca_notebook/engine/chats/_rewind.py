"""Rewinding a chat to one of its messages (``chat/rollback``) and forking it there (``chat/fork``).

A chat keeps two records (``_chat.py``): ``messages``, the history the model sees, and ``contents``, what clients
were shown. Each prompt's user echo in ``contents`` carries a ``contentId`` and the :class:`UserMessage` it put in
``messages`` the same ``content_id``, so one id names a point in both. Cutting at a prompt keeps the contents before
its echo and the messages before the first message of it or of any later prompt (a ``/doctor`` prompt put no message
in the history; the next one did).

Rollback follows the reference server: the chat is cut, every client gets ``chat/cleared {messages: true}`` and the
kept contents again (``chat/contentReceived``), and with ``include: ["tools"]`` the file changes of the removed turns
are reverted, newest first, through the undo each call left in the engine's :class:`~._notebooks.UndoLog` (the one
``chat/toolCallUndo`` uses). A change that cannot be reverted — the file was changed since, or the undo is gone with a
restart — is said in a system note, never raised: the chat is rewound either way.

Fork copies the chat up to and including a message into a new chat (``chat/opened`` + its contents replayed, then a
note in the original). At a user message the copy ends with the answer that prompt got — a question without its
answer is not a point anyone continues from; at a tool call it ends with that call's result.

Refusals are JSON-RPC errors the door passes on (the server keeps serving): an unknown chat or id, a chat running a
prompt (rollback: stop it first — a turn appending to a history being cut would corrupt both), and a point older
than the chat's last ``/compact`` (its history was replaced by a summary, so there is nothing to cut back to).
"""

from __future__ import annotations

import copy
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from ...protocol import ChatClearedParams, ChatOpenedParams, JsonObject, MetadataContent, TextContent
from ...protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ...providers.base import AssistantMessage, Message, ToolResultMessage, UserMessage
from ._chat import COMPACT_PREFIX, Chat, ContentRecord, Usage
from ._host import ChatHost

__all__ = ["RewindHost", "Undos", "fork", "fork_title", "last_prompt_id", "rollback"]

log = logging.getLogger(__name__)

_TOOL_CONTENTS = ("toolCallPrepare", "toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected")
_NUMBERED = re.compile(r"(.+?)\s*\((\d+)\)\s*$")


class Undos(Protocol):
    """The undos finished tool calls left, by chat and call (the engine's ``UndoLog``, engine/turn/_notebooks.py)."""

    def pop(self, chat_id: str, call_id: str) -> Callable[[], Awaitable[str]] | None:
        """Take a call's undo out (None when there is none)."""
        ...

    def put_back(self, chat_id: str, call_id: str, undo: Callable[[], Awaitable[str]]) -> None:
        """Return an undo whose run failed, so the user can try again."""
        ...


class RewindHost(ChatHost, Protocol):
    """The chats, and the undos that revert the file changes of the turns a rollback removes."""

    @property
    def undo_log(self) -> Undos:
        """The tool calls' undos."""
        ...


# -- finding points in a chat ------------------------------------------------------------------------------------


def _prompt_id(item: ContentRecord) -> str | None:
    """The ``contentId`` of a recorded content when it is a prompt's user echo."""
    content = item.get("content") or {}
    if item.get("role") != "user" or content.get("type") != "text":
        return None
    value = content.get("contentId")
    return value if isinstance(value, str) and value else None


def _is_prompt(item: ContentRecord) -> bool:
    content = item.get("content") or {}
    return item.get("role") == "user" and content.get("type") == "text"


def last_prompt_id(chat: Chat) -> str | None:
    """The ``contentId`` of the chat's latest prompt echo (a command's own messages belong to that prompt)."""
    for item in reversed(chat.contents):
        if _is_prompt(item):
            return _prompt_id(item)
    return None


def _find_prompt(chat: Chat, content_id: str) -> int | None:
    return next((i for i, item in enumerate(chat.contents) if _prompt_id(item) == content_id), None)


def _message_cut(chat: Chat, contents_from: int) -> int:
    """Where ``messages`` is cut when ``contents`` is cut at *contents_from*: at the first message of a prompt whose
    echo is removed."""
    removed = {pid for item in chat.contents[contents_from:] if (pid := _prompt_id(item)) is not None}
    for index, message in enumerate(chat.messages):
        if isinstance(message, UserMessage) and message.content_id in removed:
            return index
    return len(chat.messages)


def _refuse_compacted(messages: Iterable[Message]) -> None:
    """A cut that removes a ``/compact`` summary would lose the history the summary replaced: refused."""
    if any(isinstance(m, UserMessage) and m.text.startswith(COMPACT_PREFIX) for m in messages):
        raise RpcError(INVALID_PARAMS, "this message is older than the chat's last /compact: the history before the "
                                       "compaction was replaced by its summary, so the chat cannot go back there")


def _chat(engine: ChatHost, chat_id: str) -> Chat:
    chat = engine.get_chat(chat_id)
    if chat is None:
        raise RpcError(INVALID_PARAMS, f"unknown chat '{chat_id}'")
    return chat


def _unknown_point(chat: Chat, content_id: str, what: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"no {what} with contentId '{content_id}' in chat '{chat.id}'")


# -- telling clients -----------------------------------------------------------------------------------------------


def _replay(engine: ChatHost, chat: Chat) -> None:
    """Every client is sent the chat's contents again, as ``chat/open`` would (they are recorded wire contents)."""
    for item in chat.contents:
        engine.broadcast("chat/contentReceived", {"chatId": chat.id, "role": item["role"], "content": item["content"]})


# -- rollback ------------------------------------------------------------------------------------------------------


async def rollback(engine: RewindHost, chat_id: str, content_id: str, include: Iterable[str] | None = None) -> None:
    """``chat/rollback``: remove the prompt *content_id* and everything after it (``messages``) and revert the file
    changes those turns made (``tools``); both when *include* is empty or None, as the reference does."""
    wanted = set(include or ()) or {"messages", "tools"}
    chat = _chat(engine, chat_id)
    if chat.running:
        raise RpcError(INVALID_REQUEST, f"chat '{chat.id}' is running a prompt: stop it (chat/promptStop) before "
                                        "rewinding it")
    start = _find_prompt(chat, content_id)
    if start is None:
        raise _unknown_point(chat, content_id, "user message")
    cut = _message_cut(chat, start)
    if "messages" in wanted:
        _refuse_compacted(chat.messages[cut:])
    # the calls to revert, newest first: what clients were shown as finished after the point
    calls = [item["content"] for item in chat.contents[start:]
             if item.get("role") == "assistant" and (item.get("content") or {}).get("type") == "toolCalled"]
    calls.reverse()

    if "messages" in wanted:  # no await before this: nothing can slip in between the check and the cut
        chat.contents = chat.contents[:start]
        chat.messages = chat.messages[:cut]
        engine.chat_book.save(chat)  # a rewind is a recovery: it survives a restart at once
        engine.broadcast("chat/cleared", ChatClearedParams(chat_id=chat.id, messages=True).dump())
        _replay(engine, chat)
    if "tools" in wanted:
        note = await _revert(engine, chat, calls, kept="messages" not in wanted)
        if note:
            engine.emit_content(chat, "system", TextContent(text=note))
            engine.chat_book.save(chat)


async def _revert(engine: RewindHost, chat: Chat, calls: list[JsonObject], *, kept: bool) -> str | None:
    """Undo what *calls* changed, in order; a sentence for the user, None when none of them changed anything.

    *kept*: the calls stay in the chat (``include: ["tools"]`` alone), so they are marked undone the way
    ``chat/toolCallUndo`` marks them — the model is told, and no Undo is offered again."""
    reverted: list[str] = []
    failed: list[str] = []
    for content in calls:
        call_id = str(content.get("id") or "")
        raw = content.get("details")
        details: JsonObject = raw if isinstance(raw, dict) else {}
        label = _label(content, details)
        undo = engine.undo_log.pop(chat.id, call_id)
        if undo is None:
            if details.get("undoable"):  # it could be undone, but the engine that could is gone (a restart)
                failed.append(f"{label}: its undo is no longer available (the server was restarted since)")
            continue
        try:
            message = await undo()
        except (ValueError, OSError) as exc:
            engine.undo_log.put_back(chat.id, call_id, undo)
            failed.append(f"{label}: {exc}")
            continue
        except Exception as exc:  # a tool's undo bug must not leave the rewind half done
            log.exception("reverting %s of chat %s failed", call_id, chat.id)
            engine.undo_log.put_back(chat.id, call_id, undo)
            failed.append(f"{label}: internal error ({type(exc).__name__})")
            continue
        reverted.append(message or label)
        if kept:
            _mark_undone(chat, call_id, message)
    parts = []
    if reverted:
        parts.append(f"Reverted {_count(len(reverted), 'file change')} of the removed messages:\n"
                     + "\n".join(f"- {line}" for line in reverted))
    if failed:
        parts.append(f"Could not revert {_count(len(failed), 'change')}:\n" + "\n".join(f"- {line}" for line in failed))
    return "\n\n".join(parts) or None


def _label(content: JsonObject, details: JsonObject) -> str:
    name = str(content.get("name") or "tool call")
    path = details.get("path")
    return f"{name} ({path})" if path else name


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _mark_undone(chat: Chat, call_id: str, message: str) -> None:
    for item in chat.messages:
        if isinstance(item, ToolResultMessage) and item.tool_call_id == call_id:
            item.output += f"\n[Afterwards the user undid this change. {message}]"
    for record in chat.contents:
        content = record.get("content") or {}
        details = content.get("details")
        if content.get("type") == "toolCalled" and content.get("id") == call_id and isinstance(details, dict):
            details["undoable"] = False


# -- clear ---------------------------------------------------------------------------------------------------------


def clear(engine: ChatHost, chat_id: str, messages: bool) -> bool:
    """``chat/clear`` (reference server): with *messages*, the chat's messages, tool calls, usage and task go — the
    next prompt starts a fresh conversation — while the chat itself stays (id, title, model, agent, trust). Every
    client is told with ``chat/cleared``. False for an unknown chat (the reference ignores it); a chat running a
    prompt is refused, as rollback is (a turn appending to a history being emptied would corrupt it)."""
    chat = engine.get_chat(chat_id)
    if chat is None:
        return False
    if chat.running:
        raise RpcError(INVALID_REQUEST, f"chat '{chat.id}' is running a prompt: stop it (chat/promptStop) before "
                                        "clearing it")
    if messages:
        chat.messages = []
        chat.contents = []
        chat.subagent_contents = {}
        chat.usage = Usage()
        chat.job_notes = []
        chat.last_stop_reason = None
        chat.context_window = None
        engine.chat_book.save(chat)
    engine.broadcast("chat/cleared", ChatClearedParams(chat_id=chat.id, messages=messages).dump())
    return True


# -- fork ----------------------------------------------------------------------------------------------------------


def fork_title(title: str | None) -> str:
    """The reference server's fork title: ``Title (2)``, and ``Title (3)`` for a fork of that."""
    title = title or "Untitled"
    numbered = _NUMBERED.fullmatch(title)
    if numbered is not None:
        return f"{numbered.group(1)} ({int(numbered.group(2)) + 1})"
    return f"{title} (2)"


def fork(engine: ChatHost, chat_id: str, content_id: str) -> Chat:
    """``chat/fork``: a new chat holding the chat up to and including the message *content_id* names — a prompt's
    ``contentId`` (with the answer it got) or a tool call's ``id`` (with its result). Announced with ``chat/opened``
    and replayed to every client; the original gets a note. Returns the new chat."""
    chat = _chat(engine, chat_id)
    start = _find_prompt(chat, content_id)
    if start is not None:
        contents, messages = _upto_prompt(chat, start)
    else:
        contents, messages = _upto_tool_call(chat, content_id)
    calls = {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    title = fork_title(chat.title)
    new = Chat(id=str(uuid.uuid4()), title=title, model=chat.model, behavior=chat.behavior,
               messages=copy.deepcopy(messages),
               contents=[_forked(item, title) for item in contents if _kept(item, calls)])
    engine.chats[new.id] = new
    engine.chat_book.save(new)
    engine.broadcast("chat/opened", ChatOpenedParams(chat_id=new.id, title=title).dump())
    _replay(engine, new)
    engine.emit_content(new, "system", MetadataContent(title=title))
    engine.emit_content(chat, "system", TextContent(text=f"Chat forked to: {title}"))
    engine.chat_book.save(chat)
    return new


def _upto_prompt(chat: Chat, start: int) -> tuple[list[ContentRecord], list[Message]]:
    """The contents and messages up to the end of the turn the prompt at *start* began."""
    end = next((i for i in range(start + 1, len(chat.contents)) if _is_prompt(chat.contents[i])),
               len(chat.contents))
    if end == len(chat.contents) and chat.running:
        raise RpcError(INVALID_REQUEST, "this prompt is still running: fork from it once it has finished, or from an "
                                        "earlier message")
    cut = _message_cut(chat, end)
    _refuse_compacted(chat.messages[cut:])  # (a fork at the /compact prompt itself keeps its summary: fine)
    return chat.contents[:end], chat.messages[:cut]


def _upto_tool_call(chat: Chat, call_id: str) -> tuple[list[ContentRecord], list[Message]]:
    """The contents up to the call's last content and the messages up to its result (the round's later calls left
    out: a call the model made must have its result in the history, and they never happened in the fork)."""
    last = next((i for i in range(len(chat.contents) - 1, -1, -1)
                 if (chat.contents[i].get("content") or {}).get("id") == call_id
                 and (chat.contents[i].get("content") or {}).get("type") in _TOOL_CONTENTS), None)
    if last is None:
        raise _unknown_point(chat, call_id, "user message or tool call")
    if chat.contents[last]["content"]["type"] not in ("toolCalled", "toolCallRejected"):
        raise RpcError(INVALID_REQUEST, "this tool call has not finished: fork from it once it has")
    at = next((i for i, m in enumerate(chat.messages)
               if isinstance(m, AssistantMessage) and any(c.id == call_id for c in m.tool_calls)), None)
    if at is None:
        _refuse_compacted(chat.messages)
        raise _unknown_point(chat, call_id, "tool call in the history")
    assistant = chat.messages[at]
    assert isinstance(assistant, AssistantMessage)
    upto = next(i for i, c in enumerate(assistant.tool_calls) if c.id == call_id) + 1
    kept_calls = assistant.tool_calls[:upto]
    results = {m.tool_call_id: m for m in chat.messages[at + 1:] if isinstance(m, ToolResultMessage)}
    if any(c.id not in results for c in kept_calls):
        raise RpcError(INVALID_REQUEST, "this tool call has not finished: fork from it once it has")
    trimmed = AssistantMessage(text=assistant.text, reasoning=list(assistant.reasoning), tool_calls=list(kept_calls))
    return chat.contents[:last + 1], [*chat.messages[:at], trimmed, *(results[c.id] for c in kept_calls)]


def _kept(item: ContentRecord, calls: set[str]) -> bool:
    """A tool call's contents go with the fork only when the call is in its history (not a later call of the same
    round, whose arguments had streamed before the fork point)."""
    content = item.get("content") or {}
    return content.get("type") not in _TOOL_CONTENTS or content.get("id") in calls


def _forked(item: ContentRecord, title: str) -> ContentRecord:
    """A content as the fork records it: the fork's title, and no Undo — the undo stays with the original chat's
    call, which made the change."""
    copied: ContentRecord = copy.deepcopy(item)
    content = copied.get("content") or {}
    if content.get("type") == "metadata":
        content["title"] = title
    details = content.get("details")
    if content.get("type") == "toolCalled" and isinstance(details, dict) and details.get("undoable"):
        details["undoable"] = False
    return copied
