"""Numeric chat ids, scoped to one connection: a Neovim client sends its tab number as ``chatId``.

A client that numbers its chats (tab ``1``, ``2``…) reuses those numbers in every session, while saved chats
persist per workspace: mapping ``1`` to a saved chat ``"1"`` would make a new session's first tab continue whatever
an old session said there. So a number is this connection's alias of an engine chat with a fresh id
(``n1-<uuid>``): ``chat/prompt`` with a number it has not seen starts a new chat, and only ``chat/open`` with a
number binds it to the most recent chat created under that number before (an explicit resume). Everything sent
back to this client carries the number again, so it keeps the JSON type it sent; other clients of the same engine
see the string id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ChatAliases"]


class ChatAliases:
    """One connection's numbers ↔ engine chat ids."""

    def __init__(self) -> None:
        self._by_number: dict[int, str] = {}
        self._by_id: dict[str, int] = {}

    @staticmethod
    def prefix(number: int) -> str:
        return f"n{number}-"

    def bind(self, number: int, chat_id: str) -> str:
        old = self._by_number.get(number)
        if old is not None:
            self._by_id.pop(old, None)
        self._by_number[number] = chat_id
        self._by_id[chat_id] = number
        return chat_id

    def internal(self, number: int) -> str:
        """The engine chat id of *number* (a new one when the number is new to this connection)."""
        chat_id = self._by_number.get(number)
        return chat_id if chat_id is not None else self.bind(number, f"{self.prefix(number)}{uuid.uuid4()}")

    def known(self, number: int) -> bool:
        return number in self._by_number

    def incoming(self, method: str, params: Any, chat_ids: Callable[[], Iterable[str]]) -> Any:
        """*params* of a ``chat/*`` method with a numeric ``chatId`` replaced by its engine chat id (a copy).

        ``chat/open`` with a number new to this connection resumes the latest chat made under it: *chat_ids*
        lists the engine's chats, most recent first."""
        if not isinstance(params, dict) or not method.startswith("chat/"):
            return params
        number = params.get("chatId")
        if not isinstance(number, int) or isinstance(number, bool):
            return params
        if method == "chat/open" and not self.known(number):
            prefix = self.prefix(number)
            earlier = next((chat_id for chat_id in chat_ids() if chat_id.startswith(prefix)), None)
            if earlier is not None:
                self.bind(number, earlier)
        return {**params, "chatId": self.internal(number)}

    def external(self, chat_id: Any) -> Any:
        return self._by_id.get(chat_id, chat_id) if isinstance(chat_id, str) else chat_id

    def outgoing(self, params: Any) -> Any:
        """*params* with this client's numbers in place of aliased chat ids (a copy; the engine's dict is shared)."""
        if not self._by_id or not isinstance(params, dict):
            return params
        changed = {k: self._by_id[v] for k in ("chatId", "parentChatId")
                   if isinstance(v := params.get(k), str) and v in self._by_id}
        return {**params, **changed} if changed else params
