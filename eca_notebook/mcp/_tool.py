"""An MCP server's tool as an engine :class:`~eca_notebook.tools.base.Tool`.

The model sees it as ``<server>__<tool>`` (made provider-safe by ``tools.base.llm_name``); approval selectors
match the server name or ``server__tool`` with the server's own names; every tool content carries ``origin: "mcp"``
and ``server: <name>``. Whether an MCP tool changes anything is unknown, so ``mutates`` is False (the ``plan``
behavior keeps it; a deny rule hides it) and it asks by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import JsonObject
from ..tools.base import Approval, Prepared, ToolContext, ToolResult

if TYPE_CHECKING:
    from ._connection import McpToolSpec
    from ._manager import McpManager

__all__ = ["McpTool"]


def _object_schema(schema: Any) -> JsonObject:
    """The tool's input schema as the providers expect it: a JSON Schema object with ``properties``."""
    result: JsonObject = dict(schema) if isinstance(schema, dict) else {}
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


class McpTool:
    origin = "mcp"
    mutates = False
    default_approval: Approval = "ask"

    def __init__(self, manager: McpManager, server: str, spec: McpToolSpec) -> None:
        self._manager = manager
        self.server = server
        self.mcp_name: str = spec["name"]  # what the server calls it
        # what users and the approval rules call it: the server's own name (the model is offered a provider-safe
        # form of ``server__name``, tools.base.llm_name)
        self.name: str = self.mcp_name
        self.description: str = (spec.get("description") or spec.get("title")
                                 or f"Tool {self.name} of MCP server {server}")
        self.parameters: JsonObject = _object_schema(spec.get("inputSchema"))
        # The server's hints (readOnlyHint, destructiveHint, openWorldHint…), None when it gave none: the engine's
        # risk level of a call reads them (engine/turn/_risk.py).
        annotations = spec.get("annotations")
        self.annotations: JsonObject | None = annotations if isinstance(annotations, dict) else None
        self.spec = spec

    def __repr__(self) -> str:
        return f"McpTool({self.server}__{self.name})"

    def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared:
        summary = f"Calling {self.server} tool {self.name}"
        if not isinstance(args, dict):
            return Prepared(args={}, summary=summary, error=f"the arguments of {self.name} must be a JSON object")
        return Prepared(args=args, summary=summary)

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        return await self._manager.call_tool(self.server, self.mcp_name, prepared.args, ctx)
