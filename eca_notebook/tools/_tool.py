"""Shared skeleton of the native tools: validate with the tool's argument model, turn expected failures into
messages for the LLM, and cap whatever output goes back."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ..protocol import JsonObject
from ._args import ToolArgs, json_schema, parse_args
from ._output import truncate_for_llm
from ._paths import display, outside_as_named, resolve
from .base import Approval, Prepared, ToolContext, ToolResult

__all__ = ["AsyncNativeTool", "NativeTool", "ToolBase", "ToolError"]

log = logging.getLogger(__name__)

A = TypeVar("A", bound=ToolArgs)


class ToolError(Exception):
    """An expected failure: its message goes to the LLM as is (already prefixed with the tool name)."""


class ToolBase(Generic[A]):
    """What every native tool shares: its declaration, its failures as messages for the LLM, a capped run."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[ToolArgs]]
    mutates: ClassVar[bool] = False
    default_approval: ClassVar[Approval] = "allow"
    generic_summary: ClassVar[str] = ""
    #: The arguments naming paths the call reads or changes (``("path",)``). A call that cannot be prepared for one
    #: outside the workspace is not refused at once: it is held, asks like any outside call, and fails only once
    #: approved — "file not found" before approval would tell the model what exists outside (see :meth:`_failed`).
    path_args: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.parameters: JsonObject = json_schema(self.Args)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def fail(self, message: str) -> ToolError:
        return ToolError(f"{self.name}: {message}")

    def _message(self, exc: Exception) -> str:
        """An expected failure as the LLM reads it: prefixed with the tool's name (once)."""
        if isinstance(exc, OSError) and not isinstance(exc, ToolError):
            return f"{self.name}: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
        text = str(exc)
        return text if text.startswith(f"{self.name}: ") else f"{self.name}: {text}"

    def _invalid(self, args: Any, error: str | None) -> Prepared:
        raw = args if isinstance(args, dict) else {}
        return Prepared(args=dict(raw), summary=self.generic_summary or self.name, error=error)

    def _failed(self, parsed: ToolArgs, exc: Exception, ctx: ToolContext) -> Prepared:
        message = self._message(exc)
        outside = self._outside_paths(parsed, ctx)
        if outside:  # held: the same answer as for an outside path that could be prepared — a question
            return Prepared(args=parsed.model_dump(), paths=outside, outside_workspace=True,
                            summary=f'{self.generic_summary or self.name}: "{display(outside[0], ctx)}" (outside the '
                                    "workspace)", state={"held_error": message})
        return Prepared(args=parsed.model_dump(), summary=self.generic_summary or self.name, error=message)

    def _outside_paths(self, parsed: ToolArgs, ctx: ToolContext) -> list[Path]:
        found = []
        for name in self.path_args:
            written = getattr(parsed, name, None)
            if not isinstance(written, str) or not written.strip():
                continue
            try:
                path = resolve(written, ctx)
            except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: nothing to learn from
                continue
            if outside_as_named(written, path, ctx, ctx.read_roots):
                found.append(path)
        return found

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        if prepared.error:
            return ToolResult(output=prepared.error, error=True, details=prepared.details)
        held = prepared.state.get("held_error") if isinstance(prepared.state, dict) else None
        if held:  # a failure held until the user approved (see _failed)
            return ToolResult(output=held, error=True)
        try:
            result = await self._run(prepared, ctx)
        except (ToolError, OSError) as exc:
            return ToolResult(output=self._message(exc), error=True, details=prepared.details)
        # Safety net; tools cut their own output with a specific hint, leaving room for their note.
        result.output = truncate_for_llm(result.output, ctx.max_output_lines + 4, ctx.max_output_bytes + 1024)
        return result

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


class NativeTool(ToolBase[A]):
    """A tool whose ``prepare`` needs nothing but the arguments and the disk."""

    def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared:
        parsed, error = parse_args(self.name, self.Args, args)
        if parsed is None:
            return self._invalid(args, error)
        try:
            return self._prepare(parsed, ctx)  # type: ignore[arg-type]
        except (ToolError, OSError) as exc:
            return self._failed(parsed, exc, ctx)

    def _prepare(self, args: A, ctx: ToolContext) -> Prepared:
        raise NotImplementedError


class AsyncNativeTool(ToolBase[A]):
    """A tool whose ``prepare`` must ask a client (the notebook tools read the cells from the front end)."""

    async def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared:
        parsed, error = parse_args(self.name, self.Args, args)
        if parsed is None:
            return self._invalid(args, error)
        try:
            return await self._prepare(parsed, ctx)  # type: ignore[arg-type]
        except (ToolError, OSError) as exc:
            return self._failed(parsed, exc, ctx)

    async def _prepare(self, args: A, ctx: ToolContext) -> Prepared:
        raise NotImplementedError
