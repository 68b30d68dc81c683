"""Tool servers as the client sees them: ``tool/serverUpdated`` and the MCP start/stop notifications.

One ``tool/serverUpdated`` is sent for the built-in tools (``type: "native"``) and one per MCP server
(``type: "mcp"``); :data:`ToolServerUpdatedParams` is the union of the two, discriminated on ``type``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from ._base import EcaModel

__all__ = [
    "ServerTool",
    "NativeServerUpdatedParams",
    "McpServerUpdatedParams",
    "ToolServerUpdatedParams",
    "McpStopServerParams",
    "McpStartServerParams",
]


class ServerTool(EcaModel):
    name: str
    description: str = ""
    #: The tool's JSON Schema for its arguments.
    parameters: dict[str, Any] = Field(default_factory=dict)
    disabled: bool | None = None


class NativeServerUpdatedParams(EcaModel):
    type: Literal["native"] = "native"
    name: str = "ECA"
    status: str = "running"
    tools: list[ServerTool] = Field(default_factory=list)


class McpServerUpdatedParams(EcaModel):
    type: Literal["mcp"] = "mcp"
    name: str
    #: stdio servers have a command, HTTP servers a URL.
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    url: str | None = None
    status: Literal["running", "starting", "stopped", "failed", "disabled"]
    tools: list[ServerTool] | None = None


ToolServerUpdatedParams = Annotated[
    Union[NativeServerUpdatedParams, McpServerUpdatedParams], Field(discriminator="type")
]


class McpStopServerParams(EcaModel):
    name: str


class McpStartServerParams(EcaModel):
    name: str
