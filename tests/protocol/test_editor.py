from __future__ import annotations

import pytest
from pydantic import ValidationError

from eca_notebook.protocol import EditorDiagnostic, EditorGetDiagnosticsParams, EditorGetDiagnosticsResult

_RANGE = {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 9}}


def test_spec_round_trip() -> None:
    wire = {"diagnostics": [{"uri": "file:///p/a.clj", "severity": "error", "source": "clojure-lsp", "range": _RANGE,
                             "code": "wrong-args", "message": "Wrong number of args"}]}
    assert EditorGetDiagnosticsResult.model_validate(wire).dump() == wire
    assert EditorGetDiagnosticsParams.model_validate({}).dump() == {}
    assert EditorGetDiagnosticsResult.model_validate({}).diagnostics == []


def test_lsp_numbers_are_normalised() -> None:
    diag = EditorDiagnostic.model_validate({"uri": "u", "severity": 2, "range": _RANGE, "code": 2304, "message": "m"})
    assert (diag.severity, diag.code, diag.source) == ("warning", "2304", "")


def test_bad_severity() -> None:
    with pytest.raises(ValidationError) as info:
        EditorDiagnostic.model_validate({"uri": "u", "severity": "fatal", "range": _RANGE, "message": "m"})
    assert info.value.errors()[0]["loc"] == ("severity",)
