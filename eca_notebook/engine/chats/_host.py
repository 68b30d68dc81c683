"""What the chat operations (rewind, fork, clear, import, rename) need of the chats' owner — the engine — by role.

Why protocols and not the engine: an operation on one chat reads and writes the workspace's chats and tells the
clients; it has no business with models, tools or the config. Naming that much keeps each part readable on its own
and lets the rooms above pass the engine (which satisfies these structurally) without this room knowing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...protocol import JsonObject

if TYPE_CHECKING:
    from ...protocol import WireContent
    from ._chat import Chat

__all__ = ["ChatHost", "ChatSaver"]


class ChatSaver(Protocol):
    """Where a changed chat is saved (the engine's chat book: the store, with its subagents' chats)."""

    def save(self, chat: Chat) -> None:
        """Save the chat (its latest state reaches the disk)."""
        ...


class ChatHost(Protocol):
    """The workspace's chats as one operation on a chat sees them: find one, add one, save one, tell every client."""

    @property
    def chats(self) -> dict[str, Chat]:
        """The chats in memory, by id (a new chat is added here)."""
        ...

    @property
    def chat_book(self) -> ChatSaver:
        """Saves a chat."""
        ...

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat with this id, loaded from the store when it is not in memory."""
        ...

    def broadcast(self, method: str, params: JsonObject) -> None:
        """One notification to every client, redacted."""
        ...

    def emit_content(self, chat: Chat, role: str, content: WireContent) -> None:
        """One ``chat/contentReceived`` of a chat: redacted, recorded in the chat, sent to every client."""
        ...
