"""``config/updated``: the models/behaviours the client should offer, pushed by the server.

Every field is optional on purpose: per the spec a missing field means "unchanged since the last update", so
:meth:`EcaModel.dump` dropping ``None`` fields is exactly the wire semantics.
"""

from __future__ import annotations

from ._base import EcaModel

__all__ = ["ConfigUpdatedChat", "ConfigUpdatedParams"]


class ConfigUpdatedChat(EcaModel):
    """The chat part of ``config/updated``: models, behaviors and what is selected."""

    models: list[str] | None = None
    behaviors: list[str] | None = None
    #: The same list under the reference's newer name (the primary agents a chat may select).
    agents: list[str] | None = None
    #: When present, clients force-select this model (start-up, config change).
    select_model: str | None = None
    #: When present, clients force-select this behaviour.
    select_behavior: str | None = None
    #: The same as ``selectBehavior``, under the reference's newer name.
    select_agent: str | None = None
    #: The chat's trust mode, in a chat-scoped update (``chatId``): clients set their trust indicator to it.
    select_trust: bool | None = None
    welcome_message: str | None = None


class ConfigUpdatedParams(EcaModel):
    """``config/updated``: the server's config as the client needs it."""

    #: When present, the per-chat fields (``selectTrust``) apply to this chat only.
    chat_id: str | None = None
    chat: ConfigUpdatedChat | None = None
