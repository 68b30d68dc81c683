"""MCP servers from the engine's own config (``mcpServers``) and ``mcp/startServer`` / ``mcp/stopServer`` over ECA.

Skipped until the engine creates its :class:`McpManager` from the config (the lead wires it in issue 7)."""

from __future__ import annotations

import re
import sys

from .conftest import DEMO, wait_gone


async def test_config_servers_and_start_stop_over_eca(eca, workspace):
    h = await eca(None, mcp_config={"demo": {"command": sys.executable, "args": [str(DEMO)],
                                             "env": {"DEMO_TOKEN": "from-config"}},
                                    "off": {"command": sys.executable, "args": [str(DEMO)], "disabled": True}},
                  trustedWorkspaces=[str(workspace)])  # (a trusted workspace: the servers run in it)
    assert h.statuses("demo")[-1]["status"] == "running"
    assert h.statuses("off")[-1]["status"] == "disabled"
    # after the handshake's native tool list, every MCP server's status follows
    methods = [(m, p.get("type")) for m, p in h.log if m == "tool/serverUpdated"]
    native = methods.index(("tool/serverUpdated", "native"))
    assert ("tool/serverUpdated", "mcp") in methods[native + 1:]

    where = h.engine.all_tools()["demo__where"]
    ctx = h.engine.tool_context()
    output = (await where.run(where.prepare({}, ctx), ctx)).output
    assert f"cwd={workspace}" in output and "token=from-config" in output
    pid = int(re.search(r"pid=(\d+)", output).group(1))

    count = len(h.statuses("demo"))
    await h.client.notify("mcp/stopServer", {"name": "demo"})
    assert (await h.settled("demo", after=count))["status"] == "stopped"
    assert await wait_gone(pid)
    count = len(h.statuses("demo"))
    await h.client.notify("mcp/startServer", {"name": "demo"})
    assert (await h.settled("demo", after=count))["status"] == "running"
    assert "demo__echo" in h.engine.all_tools()
    await h.client.notify("mcp/startServer", {"name": "nope"})
    await h.until(lambda m, p: m == "$/showMessage" and "Unknown MCP server 'nope'" in p["message"])


async def test_the_users_own_server_starts_outside_an_untrusted_workspace(eca, workspace, tmp_path):
    """``python3 -m some_server`` in the user's config, a ``some_server.py`` in the repository: until the user trusts
    the workspace the server starts in the home directory (the repository's file is never imported); trusting moves
    it into the workspace (the user's choice)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    launcher = f"import runpy\nrunpy.run_path({str(DEMO)!r}, run_name='__main__')\n"
    (home / "some_server.py").write_text(launcher)
    marker = tmp_path / "imported-from-the-workspace"
    (workspace / "some_server.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + launcher)

    h = await eca(None, mcp_config={"some": {"command": sys.executable, "args": ["-m", "some_server"]}})
    assert h.statuses("some")[-1]["status"] == "running"
    ctx = h.engine.tool_context()

    async def where() -> str:
        tool = h.engine.all_tools()["some__where"]
        return (await tool.run(tool.prepare({}, ctx), ctx)).output

    assert f"cwd={home}" in await where()
    assert not marker.exists()

    count = len(h.statuses("some"))
    await h.prompt("/trust")
    await h.until(lambda m, p: any(s["status"] == "running" for s in h.statuses("some")[count:]))
    assert f"cwd={workspace}" in await where()
    assert marker.exists()  # trusted: the workspace's file is the user's choice now

    count = len(h.statuses("some"))
    await h.prompt("/trust off")  # taken back: the server returns to the home directory
    await h.until(lambda m, p: any(s["status"] == "running" for s in h.statuses("some")[count:]))
    assert f"cwd={home}" in await where()
