"""The engine's chat book: the chats of the workspace — created, found (in memory or in the store), saved, listed,
replayed to a client, stopped and deleted — and the running of a turn inside one.

Every chat-level notification (``chat/opened``, ``chat/statusChanged``, ``chat/deleted``) is sent from here; what a
turn streams inside a chat comes from ``_turn.py`` through :meth:`Engine.emit_content`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from .._redact import redact_json
from ..protocol import (
    ChatHistoryError,
    ChatListParams,
    ChatOpenResult,
    ChatOpenSelection,
    ChatSummary,
    JsonObject,
)
from .chats import Chat, ContentRecord, history_page, now_ms
from .chats.store import snapshot
from .models import redact_content, variant_selection
from .turn import Turn

if TYPE_CHECKING:
    from .chats.store import ChatStore
    from .models import ModelRegistry
    from .turn import Listener
    from .workspace import Agents, Hooks

log = logging.getLogger(__name__)

_CURSOR_EXPIRED = ChatHistoryError(
    code="cursor_expired", message="Cursor no longer points to an existing message; refetch the latest page")


class SubagentChats(Protocol):
    """The subagents' chats still in memory, by their parent chat (the engine's ``Subagents``)."""

    @property
    def children(self) -> Mapping[str, Sequence[str]]: ...


class ChatBookHost(Protocol):
    """What the chat book uses of its owner (the engine): the chats in memory and the store, the subagents' chats
    (saved and replayed inside their parent's), the agent and models a chat starts with or reopens to, the
    chatStatusChanged hooks, and the clients told."""

    @property
    def chats(self) -> dict[str, Chat]: ...
    @property
    def store(self) -> ChatStore | None: ...
    @property
    def subagents(self) -> SubagentChats: ...
    @property
    def hooks(self) -> Hooks: ...
    @property
    def selected_behavior(self) -> str: ...
    @property
    def registry(self) -> ModelRegistry: ...
    @property
    def agents(self) -> Agents: ...
    def behaviors(self) -> list[str]: ...
    def broadcast(self, method: str, params: JsonObject) -> None: ...


class ChatBook:
    """The chats of one engine (``engine.chats`` holds the ones in memory)."""

    def __init__(self, engine: ChatBookHost) -> None:
        self.engine = engine

    def get(self, chat_id: str) -> Chat | None:
        """The chat with this id, loaded from the store when it is not in memory."""
        engine = self.engine
        chat = engine.chats.get(chat_id)
        if chat is None and engine.store is not None:
            record = engine.store.load(chat_id)
            if record is not None:
                chat = Chat.from_record(record)
                engine.chats[chat.id] = chat
        return chat

    def save(self, chat: Chat) -> None:
        """Queue a save: the record is snapshotted here, encoded and written by the store's writer thread, so a
        50 MB chat never stalls the loop (every other chat and client) while it is written."""
        store = self.engine.store
        if chat.parent_chat_id is not None:  # a subagent's chat: saved inside its parent's
            return
        chat.kept = True
        if store is None:
            return
        chat.updated_at = now_ms()
        try:
            for child_id in self.engine.subagents.children.get(chat.id, ()):  # its subagents go in its record
                child = self.engine.chats.get(child_id)
                if child is not None:
                    chat.subagent_contents[child_id] = child.contents
            record = chat.to_record()  # (its messages are converted to fresh dicts: only contents are live)
            record["contents"] = snapshot(record["contents"])
            if "subagents" in record:
                record["subagents"] = snapshot(record["subagents"])
            store.save_in_background(record, copy=False)
        except Exception:  # saving must never break a chat; the next save retries
            log.exception("could not save chat %s", chat.id)

    def create(self, chat_id: str | None = None, *, title: str | None = None, model: str | None = None,
               behavior: str | None = None) -> Chat:
        """An empty chat (REST ``POST /sessions``): saved and announced, ready for its first prompt."""
        engine = self.engine
        chat = Chat(id=chat_id or str(uuid.uuid4()), title=title, model=model,
                    behavior=behavior or engine.selected_behavior)
        engine.chats[chat.id] = chat
        self.save(chat)
        engine.broadcast("chat/opened", {"chatId": chat.id, **({"title": title} if title else {})})
        return chat

    def open_for_prompt(self, chat_id: str | None) -> Chat:
        """The chat a prompt goes to: an existing one, or a new one (announced) with the given or a fresh id."""
        engine = self.engine
        chat = self.get(chat_id) if chat_id else None
        if chat is None:
            chat = Chat(id=chat_id or str(uuid.uuid4()), behavior=engine.selected_behavior)
            engine.chats[chat.id] = chat
            engine.broadcast("chat/opened", {"chatId": chat.id})
        return chat

    def set_status(self, chat: Chat, status: Literal["running", "idle", "stopping"]) -> None:
        chat.status = status
        self.engine.broadcast("chat/statusChanged", {"chatId": chat.id, "status": status})
        self.engine.hooks.status.status(chat)  # the user's chatStatusChanged hooks (_chat_status.py)

    def start(self, chat: Chat, turn: Turn) -> None:
        """Run the turn in the chat's task (``chat/promptStop`` cancels it)."""
        chat.task = asyncio.create_task(self._run(chat, turn), name=f"eca-turn-{chat.id}")

    async def _run(self, chat: Chat, turn: Turn) -> None:
        self.set_status(chat, "running")
        try:
            await turn.run()
        except asyncio.CancelledError:
            pass
        finally:
            chat.task = None
            chat.steer = None  # not taken in: the turn ended first (the client sends it as a prompt)
            self.save(chat)  # written by the store's thread; aclose() waits for it (clients read "idle" at once)
            self.set_status(chat, "idle")

    async def stop(self, chat_id: str) -> bool:
        """Stop the chat's running prompt; False when nothing was running."""
        chat = self.engine.chats.get(chat_id)
        if chat is None or not chat.running:
            return False
        task = chat.task
        assert task is not None
        self.set_status(chat, "stopping")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return True

    async def delete(self, chat_id: str | None) -> bool:
        """Stop and forget a chat, saved history included; tells every client when it existed."""
        if not chat_id:
            return False
        engine = self.engine
        chat = engine.chats.get(chat_id)
        if chat is not None and chat.running:
            await self.stop(chat_id)
        existed = engine.chats.pop(chat_id, None) is not None
        if engine.store is not None:
            existed = engine.store.delete(chat_id) or existed
        engine.hooks.status.forget(chat_id)
        if existed:
            engine.broadcast("chat/deleted", {"chatId": chat_id})
        return existed

    def list(self, params: ChatListParams | None = None) -> list[ChatSummary]:
        """``chat/list``: saved and in-memory chats, newest first. A new chat never saved is not listed; one saved is,
        empty or not, even before the store's writer thread has written it (``Chat.kept``)."""
        engine = self.engine
        summaries: dict[str, ChatSummary] = {}
        if engine.store is not None:
            for saved in engine.store.list():
                summaries[saved["id"]] = ChatSummary(
                    id=saved["id"], title=saved["title"], status="idle", created_at=saved["createdAt"],
                    updated_at=saved["updatedAt"], model=saved["model"], message_count=saved["messageCount"])
        for chat in engine.chats.values():
            if chat.parent_chat_id is not None:
                continue
            if chat.message_count == 0 and not chat.kept and chat.id not in summaries:
                continue
            summaries[chat.id] = ChatSummary(
                id=chat.id, title=chat.title, status="running" if chat.running else "idle",
                created_at=chat.created_at, updated_at=chat.updated_at, model=chat.model,
                message_count=chat.message_count)
        by_created = params is not None and params.sort_by == "createdAt"
        chats = sorted(summaries.values(), key=lambda s: (s.created_at if by_created else s.updated_at) or 0,
                       reverse=True)
        if params is not None and params.limit is not None and params.limit >= 0:
            chats = chats[: params.limit]
        return chats

    def replay(self, chat_id: str, listener: Listener, limit: int | None = None, before: str | None = None,
               after: str | None = None, windowed: bool = False) -> ChatOpenResult:
        """``chat/open``: send one client the chat as it was shown (``chat/cleared``, ``chat/opened``, its contents,
        a chat-scoped ``config/updated`` with its stored model, another with its trust), then answer whether it was
        found, with the chat's ``selection``. *windowed* (the reference's ``limit``/``before``/``after`` were given):
        only that page of the contents (``_history.py``), and ``meta`` in the answer for paging older with
        ``chat/history``."""
        chat = self.get(chat_id)
        if chat is None or chat.parent_chat_id is not None:  # a subagent's chat opens inside its parent's
            return ChatOpenResult(found=False)
        records = chat.contents
        window = None
        if windowed:
            window = history_page(records, limit, before, after)
            if window is None:
                return ChatOpenResult(found=True, chat_id=chat.id, error=_CURSOR_EXPIRED)
            records = records[window.start:window.end]
        # as the reference replays: what the client shows of the chat is cleared first (a client that still shows
        # it does not show it twice)
        listener.send("chat/cleared", {"chatId": chat.id, "messages": True})
        opened: JsonObject = {"chatId": chat.id}
        if chat.title:
            opened["title"] = chat.title
        listener.send("chat/opened", opened)
        for item in self._wire_items(chat, records):
            listener.send("chat/contentReceived", item)
        selection = self._selection(chat)
        if selection.model is not None:  # the chat's stored model (and its variants), for this chat only
            listener.send("config/updated", {"chatId": chat.id, "chat": {
                "selectModel": selection.model, "variants": list(selection.variants),
                "selectVariant": selection.variant}})
        # the reopened chat's trust mode, so the client's indicator matches what the server will auto-approve
        listener.send("config/updated", {"chatId": chat.id, "chat": {"selectTrust": chat.trust}})
        return ChatOpenResult(found=True, chat_id=chat.id, title=chat.title or None, selection=selection,
                              meta=window.meta(chat.contents) if window is not None else None)

    def _selection(self, chat: Chat) -> ChatOpenSelection:
        """What the reopened chat's next prompt uses, as the reference's ``chat/open`` answers it in one snapshot:
        its stored model (null when it has none or the model is no longer offered, then no variant), the variant
        and the model's variants, the effective agent, the trust mode."""
        engine = self.engine
        model = chat.model if chat.model in engine.registry.models() else None
        variants = variant_selection(engine.registry, model, chat.variant)
        agent = engine.agents.canonical(chat.behavior) if chat.behavior else None
        return ChatOpenSelection(model=model, agent=agent if agent in engine.behaviors() else engine.selected_behavior,
                                 variant=variants["select_variant"], variants=variants["variants"], trust=chat.trust)

    def history(self, chat_id: str, limit: int | None, before: str | None, after: str | None) -> JsonObject:
        """``chat/history`` (reference server): one page of the chat's contents as ``chat/contentReceived`` params,
        with the cursors to page on, in one answer; ``error`` for an unknown chat or an expired cursor.

        The wire answer, not a :class:`~eca_notebook.protocol.ChatHistoryResult`: its contents are the recorded
        wire dicts, which stay dicts as every streamed content does (a model each would be validated and dumped
        again for nothing, and its dump would drop the nulls they carry)."""
        chat = self.get(chat_id)
        if chat is None or chat.parent_chat_id is not None:
            return {"error": ChatHistoryError(code="chat_not_found", message=f"Chat {chat_id} not found").dump()}
        window = history_page(chat.contents, limit, before, after)
        if window is None:
            return {"error": _CURSOR_EXPIRED.dump()}
        records = chat.contents[window.start:window.end]
        return {"contents": list(self._wire_items(chat, records)), "meta": window.meta(chat.contents).dump()}

    def _wire_items(self, chat: Chat, records: Sequence[ContentRecord]) -> Iterator[JsonObject]:
        """``chat/contentReceived`` params for *records*, each subagent's contents right after the call that
        spawned it."""
        children = dict(chat.subagent_contents)
        for child_id in self.engine.subagents.children.get(chat.id, ()):  # still in memory: as they are now
            child = self.engine.chats.get(child_id)
            if child is not None:
                children[child_id] = child.contents
        for item in records:  # redacted again: a chat saved by an older version may hold a secret
            yield {**redact_json({"chatId": chat.id, "role": item["role"]}), "content": redact_content(item["content"])}
            details = item["content"].get("details") if isinstance(item.get("content"), dict) else None
            named = details.get("subagentChatId") if isinstance(details, dict) else None
            # a subagent's contents right after its spawn_agent call first names it (once), as the clients nest them
            for child_item in children.pop(named, ()) if isinstance(named, str) else ():
                yield {**redact_json({"chatId": named, "parentChatId": chat.id, "role": child_item["role"]}),
                       "content": redact_content(child_item["content"])}
