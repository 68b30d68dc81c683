"""``%eca mcp add|enable|disable|remove``: the MCP management requests from a notebook, written to the config file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests._waiting import until

from .conftest import run_cell

DEMO = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"


def entry(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text()).get("mcpServers", {}).get("demo")
    except (OSError, ValueError):
        return None


async def test_add_disable_enable_remove(shell, closing, workspace: Path, capsys):
    session = closing
    ws_file = workspace / ".eca" / "config.json"
    await run_cell(shell, f"%eca mcp add --workspace demo {sys.executable} {DEMO}")
    assert "MCP server demo: added" in capsys.readouterr().out
    assert entry(ws_file) == {"command": sys.executable, "args": [str(DEMO)]}
    await until(lambda: session.mcp_servers.get("demo", {}).get("status") == "running", timeout=90)
    assert "| demo | running |" in session.describe_mcp()

    await run_cell(shell, f"%eca mcp add --workspace demo {sys.executable}")
    assert "already exists" in capsys.readouterr().err

    await run_cell(shell, "%eca mcp disable demo")
    await until(lambda: session.mcp_servers["demo"]["status"] == "disabled")
    assert entry(ws_file) == {"command": sys.executable, "args": [str(DEMO)], "disabled": True}
    await run_cell(shell, "%eca mcp enable demo")
    await until(lambda: session.mcp_servers["demo"]["status"] == "running")
    assert entry(ws_file) == {"command": sys.executable, "args": [str(DEMO)]}

    await run_cell(shell, "%eca mcp remove demo")
    assert "MCP server demo: removed" in capsys.readouterr().out
    await until(lambda: "demo" not in session.mcp_servers)
    assert entry(ws_file) is None
    await run_cell(shell, "%eca mcp remove demo")
    assert "no MCP server named 'demo'" in capsys.readouterr().err
