"""editor_diagnostics: the editor's own findings (LSP errors, warnings) via the ``editor/getDiagnostics`` request.

Only clients that advertise ``capabilities.codeAssistant.editor.diagnostics`` can answer; the engine passes a
``request_diagnostics`` callable in the tool context only for them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import Field

from ._args import ToolArgs
from ._paths import display, is_inside, resolve
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["EditorDiagnosticsArgs", "EditorDiagnosticsTool", "format_diagnostics"]


class EditorDiagnosticsArgs(ToolArgs):
    path: str | None = Field(
        None, description="File to get diagnostics for (absolute or workspace-relative); omit for the whole workspace."
    )


def _uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _as_dict(d: Any) -> dict[str, Any]:
    if isinstance(d, dict):
        return d
    dump = getattr(d, "model_dump", None)
    return dump(by_alias=True) if callable(dump) else {}


def format_diagnostics(diagnostics: list[Any], ctx: ToolContext) -> str:
    """One line per diagnostic, sorted by file and position: ``path:line:col: severity [code] message (source)``."""
    rows: list[tuple[str, int, int, str]] = []
    for raw in diagnostics:
        d = _as_dict(raw)
        uri = str(d.get("uri") or "")
        path = _uri_to_path(uri)
        shown = display(path, ctx) if path is not None else uri or "?"
        start = (d.get("range") or {}).get("start") or {}
        line, col = int(start.get("line") or 0), int(start.get("character") or 0)
        code = f" [{d['code']}]" if d.get("code") not in (None, "") else ""
        source = f" ({d['source']})" if d.get("source") else ""
        text = f"{shown}:{line}:{col}: {d.get('severity', 'info')}{code} {d.get('message', '')}{source}"
        rows.append((shown, line, col, text))
    rows.sort(key=lambda r: (tuple(r[0].split("/")), r[1], r[2]))
    return "\n".join(r[3] for r in rows)


class EditorDiagnosticsTool(NativeTool[EditorDiagnosticsArgs]):
    name = "editor_diagnostics"
    description = (
        "Get the editor's diagnostics (errors, warnings and hints from language servers and linters).\n\n"
        "- `path`: a file to check (absolute or workspace-relative); omit it for every file of the workspace.\n"
        "- Use it after editing to see whether you introduced errors. Positions are line:column as reported by the "
        "editor."
    )
    Args = EditorDiagnosticsArgs
    path_args = ("path",)
    generic_summary = "Checking diagnostics"

    def __init__(self, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.timeout = timeout

    def _prepare(self, args: EditorDiagnosticsArgs, ctx: ToolContext) -> Prepared:
        if ctx.request_diagnostics is None:
            raise self.fail("the editor did not offer diagnostics (this client does not support them)")
        if args.path is None or not args.path.strip():
            return Prepared(args=args.model_dump(), summary="Checking all diagnostics", state={"uri": None})
        path = resolve(args.path, ctx)
        if path.is_dir():
            raise self.fail(f"{display(path, ctx)} is a directory; pass a file, or omit path for all diagnostics")
        return Prepared(
            args=args.model_dump(),
            summary=f'Checking diagnostics "{display(path, ctx)}"',
            paths=[path],
            outside_workspace=not is_inside(path, ctx.workspace_folders),
            state={"uri": path.as_uri()},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        if ctx.request_diagnostics is None:
            raise self.fail("the editor did not offer diagnostics (this client does not support them)")
        try:
            got = await asyncio.wait_for(ctx.request_diagnostics(prepared.state["uri"]), self.timeout)
        except TimeoutError:
            raise self.fail(f"the editor did not answer within {self.timeout:g} s") from None
        diagnostics = got.get("diagnostics", []) if isinstance(got, dict) else list(got or [])
        where = f" for {display(prepared.paths[0], ctx)}" if prepared.paths else ""
        if not diagnostics:
            return ToolResult(output=f"No diagnostics found{where}")
        return ToolResult(output=format_diagnostics(diagnostics, ctx))
