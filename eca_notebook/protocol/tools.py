"""Tool servers as the client sees them: ``tool/serverUpdated`` and the MCP start/stop notifications.

One ``tool/serverUpdated`` is sent for the built-in tools (``type: "native"``) and one per MCP server
(``type: "mcp"``); :data:`ToolServerUpdatedParams` is the union of the two, discriminated on ``type``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._base import EcaModel, JsonObject

__all__ = [
    "McpAddServerParams",
    "McpAddServerResult",
    "McpDisableServerParams",
    "McpEnableServerParams",
    "McpError",
    "McpRemoveServerParams",
    "McpRemoveServerResult",
    "McpServerUpdatedParams",
    "McpStartServerParams",
    "McpStopServerParams",
    "McpUpdateServerParams",
    "McpUpdateServerResult",
    "NativeServerUpdatedParams",
    "ServerTool",
    "ToolServerRemovedParams",
    "ToolServerUpdatedParams",
]


class ServerTool(EcaModel):
    """One tool of a tool server, as listed by ``tool/serverUpdated``."""

    name: str
    description: str = ""
    #: The tool's JSON Schema for its arguments.
    parameters: JsonObject = Field(default_factory=dict)
    disabled: bool | None = None
    #: Ours: a tool the user declared in config (``customTools``: a command line) among the native ones, so a client
    #: can list them apart; other clients ignore it.
    custom: bool | None = None


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
    #: Whether the config marks the server ``disabled`` (the reference's field; absent from older servers).
    disabled: bool | None = None
    #: Why the server does not run, when it is held back: ``pending-trust: …`` for a server from a workspace's own
    #: config that the user has not trusted yet (``/trust``). Ours; absent otherwise.
    reason: str | None = None
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


class ToolServerRemovedParams(EcaModel):
    """``tool/serverRemoved``: an MCP server was removed (``mcp/removeServer``); clients drop its row."""

    name: str


class McpEnableServerParams(EcaModel):
    """``mcp/enableServer``: drop ``disabled`` from the server's config entry and start it."""

    name: str


class McpDisableServerParams(EcaModel):
    """``mcp/disableServer``: write ``disabled: true`` into the server's config entry and stop it."""

    name: str


class McpError(EcaModel):
    """Why an ``mcp/addServer`` / ``mcp/removeServer`` failed: answered in the result (as the reference does), so a
    client shows it next to its form instead of treating it as a transport error."""

    #: ``duplicate-name``, ``unknown-server``, ``invalid-config``, ``missing-workspace-uri``, ``unknown-workspace``,
    #: ``not-in-a-file``, ``config-file`` (the file cannot be read or written safely).
    code: str
    message: str
    data: Any = None


class McpAddServerParams(EcaModel):
    """``mcp/addServer``: a new ``mcpServers`` entry, written to the global config (default) or to a workspace
    folder's ``.eca/config.json`` (``scope: "workspace"`` with ``workspaceUri``), then started."""

    name: str
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    client_id: str | None = None
    client_secret: str | None = None
    oauth_port: int | None = None
    auth_scope: str | None = None
    disabled: bool | None = None
    scope: Literal["global", "workspace"] | None = None
    workspace_uri: str | None = None


class McpAddServerResult(EcaModel):
    """``server`` on success (what ``tool/serverUpdated`` says next), else ``error``."""

    server: McpServerUpdatedParams | None = None
    error: McpError | None = None


class McpRemoveServerParams(EcaModel):
    """``mcp/removeServer``: stop the server and delete its entry from the config file that defines it."""

    name: str


class McpRemoveServerResult(EcaModel):
    """``name`` and ``removed`` on success, else ``error``."""

    name: str | None = None
    removed: bool | None = None
    error: McpError | None = None


class McpUpdateServerParams(EcaModel):
    """``mcp/updateServer``: a new command/args or URL for a server, written to its config file; it restarts."""

    name: str
    command: str | None = None
    args: list[str] | None = None
    url: str | None = None


class McpUpdateServerResult(EcaModel):
    """``{}`` on success as in the reference; ``error`` (our addition, optional) says why an update was refused."""

    error: McpError | None = None
