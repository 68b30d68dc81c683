"""MCP servers as an engine plug-in: their tools, prompts (``mcp-prompt`` commands) and resources (``mcpResource``
contexts), over the official ``mcp`` SDK (stdio subprocesses and streamable HTTP).

Importing this package imports the SDK lazily (on the first connection), so the engine can import it only when
``mcpServers`` is configured and pay nothing otherwise.
"""

from __future__ import annotations

from ._manager import CALL_ERROR, CALL_UNAVAILABLE, McpManager
from ._tool import McpTool

__all__ = ["CALL_ERROR", "CALL_UNAVAILABLE", "McpManager", "McpTool"]
