"""``config/updated``: the models/behaviours the client should offer, pushed by the server.

Every field is optional on purpose: per the spec a missing field means "unchanged since the last update", so
:meth:`EcaModel.dump` dropping ``None`` fields is exactly the wire semantics.
"""

from __future__ import annotations

from ._base import EcaModel, JsonObject

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
    #: The selected model's variant names (sorted; ``[]``: none — clients show "-"), the reference's field.
    variants: list[str] | None = None
    #: The variant clients select; ``null`` clears it (the model has none, or not the one selected). Sent only
    #: together with ``variants`` (an absent key means unchanged, so a ``None`` here is written out as ``null``).
    select_variant: str | None = None
    welcome_message: str | None = None


class ConfigUpdatedParams(EcaModel):
    """``config/updated``: the server's config as the client needs it."""

    #: When present, the per-chat fields (``selectTrust``) apply to this chat only.
    chat_id: str | None = None
    chat: ConfigUpdatedChat | None = None

    def dump(self) -> JsonObject:
        """The wire form; ``selectVariant`` goes with ``variants`` even when null (null clears the selection)."""
        data = super().dump()
        if self.chat is not None and self.chat.variants is not None:
            chat = data.setdefault("chat", {})
            if isinstance(chat, dict):  # (the dump of a ConfigUpdatedChat)
                chat["selectVariant"] = self.chat.select_variant
        return data
