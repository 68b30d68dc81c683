"""editor_diagnostics against a real async callable standing in for the client round trip."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.editor import EditorDiagnosticsTool

from .conftest import call, write


class FakeEditor:
    """Answers `editor/getDiagnostics` like a client would, remembering the uris it was asked about."""

    def __init__(self, diagnostics: list[dict[str, Any]], delay: float = 0.0) -> None:
        self.diagnostics = diagnostics
        self.delay = delay
        self.asked: list[str | None] = []

    async def __call__(self, uri: str | None) -> list[dict[str, Any]]:
        self.asked.append(uri)
        if self.delay:
            await asyncio.sleep(self.delay)
        return [d for d in self.diagnostics if uri is None or d["uri"] == uri]


def diag(uri: str, line: int, col: int, severity: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"uri": uri, "severity": severity, "message": message, "source": extra.pop("source", "pyright"),
            "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 1}},
            **extra}  # fmt: skip


async def test_without_client_support_it_is_a_clear_error(ws: Path, ctx: ToolContext) -> None:
    prepared, result = await call(EditorDiagnosticsTool(), {}, ctx)
    assert prepared.error == ("editor_diagnostics: the editor did not offer diagnostics "
                              "(this client does not support them)")
    assert result.error


async def test_all_diagnostics_formatted_and_sorted(ws: Path) -> None:
    a = (ws / "src/a.py").resolve()
    b = (ws / "b.py").resolve()
    editor = FakeEditor([
        diag(a.as_uri(), 10, 4, "warning", "unused import", code="W0611"),
        diag(b.as_uri(), 3, 1, "error", "undefined name 'x'", code=None, source=""),
        diag(a.as_uri(), 2, 0, "error", "syntax error"),
    ])  # fmt: skip
    ctx = ToolContext(workspace_folders=[ws], request_diagnostics=editor)
    prepared, result = await call(EditorDiagnosticsTool(), {}, ctx)
    assert prepared.summary == "Checking all diagnostics"
    assert editor.asked == [None]
    assert result.output == (
        "b.py:3:1: error undefined name 'x'\n"
        "src/a.py:2:0: error syntax error (pyright)\n"
        "src/a.py:10:4: warning [W0611] unused import (pyright)"
    )


async def test_one_file_by_uri(ws: Path) -> None:
    write(ws / "m.py", "x\n")
    uri = (ws / "m.py").resolve().as_uri()
    editor = FakeEditor([diag(uri, 1, 1, "info", "note")])
    ctx = ToolContext(workspace_folders=[ws], request_diagnostics=editor)
    prepared, result = await call(EditorDiagnosticsTool(), {"path": "m.py"}, ctx)
    assert prepared.summary == 'Checking diagnostics "m.py"'
    assert editor.asked == [uri]
    assert result.output == "m.py:1:1: info note (pyright)"
    _, clean = await call(EditorDiagnosticsTool(), {"path": "other.py"}, ctx)
    assert clean.output == "No diagnostics found for other.py"


async def test_directory_and_timeout(ws: Path) -> None:
    (ws / "d").mkdir()
    ctx = ToolContext(workspace_folders=[ws], request_diagnostics=FakeEditor([], delay=5))
    assert EditorDiagnosticsTool().prepare({"path": "d"}, ctx).error == (
        "editor_diagnostics: d is a directory; pass a file, or omit path for all diagnostics"
    )
    _, result = await call(EditorDiagnosticsTool(timeout=0.05), {}, ctx)
    assert result.error and result.output == "editor_diagnostics: the editor did not answer within 0.05 s"


async def test_response_object_shape_is_accepted(ws: Path) -> None:
    async def answer(uri: str | None) -> Any:
        return {"diagnostics": [diag("file:///elsewhere/x.py", 1, 2, "hint", "consider this")]}

    ctx = ToolContext(workspace_folders=[ws], request_diagnostics=answer)
    _, result = await call(EditorDiagnosticsTool(), {}, ctx)
    assert result.output == "/elsewhere/x.py:1:2: hint consider this (pyright)"
