"""``editor/getDiagnostics``: the server asks the editor (or notebook) for its diagnostics, LSP style.

Editors bridge LSP diagnostics, whose ``code`` is often a number and whose ``severity`` is 1–4; both are accepted
and normalised to the spec's strings so one odd client doesn't lose every diagnostic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from ._base import EcaModel
from .context import Range

__all__ = ["EditorDiagnostic", "EditorGetDiagnosticsParams", "EditorGetDiagnosticsResult"]

_LSP_SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


class EditorGetDiagnosticsParams(EcaModel):
    """``editor/getDiagnostics`` (server → client): the diagnostics of a file, or of all."""

    #: ``None``: diagnostics of the whole workspace.
    uri: str | None = None


class EditorDiagnostic(EcaModel):
    """One diagnostic (error, warning, hint) the editor knows about."""

    uri: str
    severity: Literal["error", "warning", "info", "hint"]
    source: str = ""
    #: 1-based, per the spec.
    range: Range
    code: str | None = None
    message: str

    @field_validator("severity", mode="before")
    @classmethod
    def _lsp_severity(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return _LSP_SEVERITIES.get(value, value)
        return value

    @field_validator("code", mode="before")
    @classmethod
    def _numeric_code(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value


class EditorGetDiagnosticsResult(EcaModel):
    """The client's answer to ``editor/getDiagnostics``."""

    diagnostics: list[EditorDiagnostic] = Field(default_factory=list)
