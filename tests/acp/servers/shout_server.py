"""A tiny stdio MCP server for the ACP tests: one tool, ``shout``, prefixed with ``$SHOUT_PREFIX`` (to show that the
env the ACP client gave reaches the server)."""

from __future__ import annotations

import os

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef]

server = _Server("shout", log_level="WARNING")


@server.tool()
def shout(text: str) -> str:
    """Return the text in capitals."""
    return f"{os.environ.get('SHOUT_PREFIX', '')}{text.upper()}"


if __name__ == "__main__":
    server.run()
