"""Chats: a chat's state (messages for the model, contents for clients), where it is saved, and going back in it.

``_chat`` holds one chat's record and its usage; ``store`` saves chats atomically under the user's data directory
(public: the REST door and the benchmarks use it); ``_history`` keeps the prompt history a client recalls with Up;
``_rewind`` cuts a chat back to an earlier message and restores the files the turns changed; ``_commands`` runs the
chat-level slash commands (``/fork``, ``/export`` …). ``_host`` names what these operations need of the chats' owner
(:class:`ChatHost`): they are handed that, not the engine. Nothing here calls a model: the turn does (``engine.turn``).
"""

from __future__ import annotations

from ._chat import (
    COMPACT_PREFIX,
    SUBAGENT_PREFIX,
    Chat,
    ChatRecord,
    ContentRecord,
    SubagentRecord,
    invalid_chat_id,
    now_ms,
    title_from,
)
from ._commands import export as export_chat
from ._commands import fork as fork_command
from ._commands import import_chat, init_prompt
from ._commands import model as model_command
from ._history import page as history_page
from ._host import ChatHost, ChatSaver
from ._rewind import clear as clear_chat
from ._rewind import fork as fork_chat
from ._rewind import last_prompt_id, rollback

__all__ = [
    "COMPACT_PREFIX",
    "SUBAGENT_PREFIX",
    "Chat",
    "ChatHost",
    "ChatRecord",
    "ChatSaver",
    "ContentRecord",
    "SubagentRecord",
    "clear_chat",
    "export_chat",
    "fork_chat",
    "fork_command",
    "history_page",
    "import_chat",
    "init_prompt",
    "invalid_chat_id",
    "last_prompt_id",
    "model_command",
    "now_ms",
    "rollback",
    "title_from",
]
