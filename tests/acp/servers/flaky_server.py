"""A stdio MCP server whose tools fail on the server's side, for the ACP MCP error codes: ``hang`` never answers
(past the timeout the server is "not responding"), ``crash`` ends the process during the call (the communication
breaks off)."""

from __future__ import annotations

import os

import anyio

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef]

server = _Server("flaky", log_level="WARNING")


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep(3600)
    return "late"


@server.tool()
async def crash() -> str:
    """Ends the server during the call."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
