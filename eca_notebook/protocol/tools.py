"""Tool servers as the client sees them: ``tool/serverUpdated`` and the MCP start/stop notifications.

One ``tool/serverUpdated`` is sent for the built-in tools (``type: "native"``) and one per MCP server
(``type: "mcp"``); :data:`ToolServerUpdatedParams` is the union of the two, discriminated on ``type``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import EcaModel

__all__ = [
    "McpServerUpdatedParams",
    "McpStartServerParams",
    "McpStopServerParams",
    "NativeServerUpdatedParams",
    "ServerTool",
    "ToolServerUpdatedParams",
]


class ServerTool(EcaModel):
    """One tool of a tool server, as listed by ``tool/serverUpdated``."""

    name: str
    description: str = ""
    #: The tool's JSON Schema for its arguments.
    parameters: dict[str, Any] = Field(default_factory=dict)
    disabled: bool | None = None


class NativeServerUpdatedParams(EcaModel):
    """``tool/serverUpdated`` for the built-in tools (``type: "native"``)."""

    type: Literal["native"] = "native"
    name: str = "ECA"
    status: str = "running"
    tools: list[ServerTool] = Field(default_factory=list)


class McpServerUpdatedParams(EcaModel):
    """``tool/serverUpdated`` for an MCP server: its status and tools."""

    type: Literal["mcp"] = "mcp"
    name: str
    #: stdio servers have a command, HTTP servers a URL.
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    url: str | None = None
    status: Literal["running", "starting", "stopped", "failed", "disabled"]
    tools: list[ServerTool] | None = None


ToolServerUpdatedParams = Annotated[
    NativeServerUpdatedParams | McpServerUpdatedParams, Field(discriminator="type")
]


class McpStopServerParams(EcaModel):
    """``mcp/stopServer``: stop an MCP server by name."""

    name: str


class McpStartServerParams(EcaModel):
    """``mcp/startServer``: start (or restart) an MCP server by name."""

    name: str
