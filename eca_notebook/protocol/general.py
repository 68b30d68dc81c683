"""Methods that belong to no feature: messages to show, start-up progress, cancellation, and "no params".

How "no params" works: the method table (:mod:`.methods`) declares ``params=None`` for ``initialized``,
``shutdown`` and ``exit``. :func:`.methods.parse_params` then validates whatever arrived against
:class:`EmptyParams` — absent (passed as ``None``), ``null``, ``{}`` and ``[]`` are all accepted, as real clients
send each of them (any object is tolerated too) — and returns ``None``. A non-empty array or a scalar is rejected.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from ._base import EcaModel

__all__ = ["CancelRequestParams", "EmptyParams", "ProgressParams", "ShowMessageParams"]


class ShowMessageParams(EcaModel):
    """``$/showMessage``: a message the client shows to the user (info, warning or error)."""

    type: Literal["error", "warning", "info"]
    message: str


class ProgressParams(EcaModel):
    """``$/progress``: brackets start-up work (syncing models, starting MCP servers) so clients can show it."""

    type: Literal["start", "finish"]
    task_id: str
    title: str | None = None


class CancelRequestParams(EcaModel):
    """``$/cancelRequest`` (LSP): either peer asks the other to cancel the request with this id."""

    id: int | str


class EmptyParams(EcaModel):
    """Params of a method that takes none: absent, ``null``, ``{}`` and ``[]`` all validate to an empty model."""

    @model_validator(mode="before")
    @classmethod
    def _nothing_is_empty(cls, data: Any) -> Any:
        if data is None or (isinstance(data, list) and not data):
            return {}
        return data
