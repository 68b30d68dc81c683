"""``editor/getDefinition`` and ``editor/getReferences``: the server asks the editor's language server where a symbol
is defined or used.

Same shapes as the reference ECA server: positions are 1-based (``character`` counts UTF-16 code units, the LSP
default), and the answer carries a ``status`` the server can act on instead of hanging — ``starting`` (a language
server is starting for the file: the server asks again within its time budget), ``no-server`` or ``error`` (the
server falls back to its own content index when it has one). A client declares it can answer with
``capabilities.codeAssistant.editor.definition`` / ``.references``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from ._base import EcaModel
from .context import Position, Range

__all__ = [
    "EditorGetDefinitionParams",
    "EditorGetDefinitionResult",
    "EditorGetReferencesParams",
    "EditorGetReferencesResult",
    "EditorLocation",
    "NavigationStatus",
]

NavigationStatus = Literal["success", "starting", "no-server", "error"]
_STATUSES = ("success", "starting", "no-server", "error")


class EditorGetDefinitionParams(EcaModel):
    """``editor/getDefinition`` (server → client): where the symbol at ``position`` of ``uri`` is defined."""

    uri: str
    #: 1-based line and character (not LSP's 0-based).
    position: Position


class EditorGetReferencesParams(EcaModel):
    """``editor/getReferences`` (server → client): where the symbol at ``position`` of ``uri`` is used."""

    uri: str
    #: 1-based line and character (not LSP's 0-based).
    position: Position
    #: Whether the declaration counts as a reference; absent means true.
    include_declaration: bool | None = None


class EditorLocation(EcaModel):
    """A place in a file: its ``uri`` and a 1-based ``range``."""

    uri: str
    range: Range


class _LocationsResult(EcaModel):
    #: ``success``: ``locations`` hold the answer (maybe none); ``starting``: ask again soon; ``no-server`` /
    #: ``error``: the editor cannot answer (``message`` says why).
    status: NavigationStatus = "success"
    locations: list[EditorLocation] | None = None
    message: str | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _unknown_status(cls, value: Any) -> Any:
        """A status from a newer client is read as an error, not a failed answer: the server then falls back."""
        return value if value in _STATUSES else "error"


class EditorGetDefinitionResult(_LocationsResult):
    """The editor's answer to ``editor/getDefinition``."""


class EditorGetReferencesResult(_LocationsResult):
    """The editor's answer to ``editor/getReferences``."""
