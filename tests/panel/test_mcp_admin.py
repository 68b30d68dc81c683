"""Managing MCP servers from the panel (issue #20 item 7): add from the form, disable, enable, edit, remove — each
through the panel's ECA WebSocket, the row following tool/serverUpdated / tool/serverRemoved, and the config file on
disk checked after every step. Its own lab: the workspace config file is the one under test."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ._lab import Lab, lab_env, open_panel, screenshot

DEMO = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"


def wait_file(path: Path, predicate, timeout: float = 60.0) -> dict:
    """The config file once *predicate* holds for its JSON (the write happens before the answer, but the browser
    sees the notification first: wait on the condition rather than assume an order)."""
    deadline = time.monotonic() + timeout
    data: dict = {}
    while time.monotonic() < deadline:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        if predicate(data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"{path} never matched; last: {data}")


def test_add_disable_enable_edit_remove_from_the_panel(page, llm, tmp_path: Path):
    root = tmp_path / "mcp-admin-root"
    root.mkdir()
    ws_file = root / ".eca" / "config.json"
    ws_file.parent.mkdir()
    ws_file.write_text(json.dumps({"welcomeMessage": "Managed MCP test"}))
    own = Lab(root=root, env=lab_env(tmp_path / "home", llm.url))
    own.start()
    try:
        open_panel(page, own)
        servers = page.locator(".eca-McpServers")
        servers.locator("summary").wait_for(timeout=60_000)
        if not servers.evaluate("el => el.open"):
            servers.locator("summary").click()

        # Add, workspace scope
        page.get_by_role("button", name="Add MCP server").click()
        form = page.get_by_role("form", name="Add MCP server")
        form.get_by_label("Name", exact=True).fill("demo")
        form.get_by_label("Command", exact=True).fill(sys.executable)
        form.get_by_label("Arguments", exact=True).fill(str(DEMO))
        env_field = form.get_by_label("Environment (KEY=value, one per line)")
        env_field.fill("DEMO_TOKEN\n")  # not KEY=value: refused in the form, nothing sent
        form.get_by_label("Scope").select_option("workspace")
        form.get_by_role("button", name="Add server").click()
        assert "line 1 is not KEY=value" in form.get_by_role("alert").inner_text()
        env_field.fill("DEMO_TOKEN=s3cret-demo-value\n\nDEMO_MODE = a=b\n")
        form.get_by_role("button", name="Add server").click()
        row = page.locator(".eca-McpServer", has_text="demo")
        page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(timeout=90_000)
        data = wait_file(ws_file, lambda d: "demo" in d.get("mcpServers", {}))
        assert data["welcomeMessage"] == "Managed MCP test"
        assert data["mcpServers"]["demo"] == {"command": sys.executable, "args": [str(DEMO)],
                                              "env": {"DEMO_TOKEN": "s3cret-demo-value", "DEMO_MODE": "a=b"}}
        assert "s3cret-demo-value" not in page.content()  # a secret: never shown back in the list
        screenshot(page, "20-mcp-added")

        # a duplicate is refused inline, next to the form
        page.get_by_role("button", name="Add MCP server").click()
        form = page.get_by_role("form", name="Add MCP server")
        form.get_by_label("Name", exact=True).fill("demo")
        form.get_by_label("Command", exact=True).fill("whatever")
        form.get_by_role("button", name="Add server").click()
        assert "already exists" in form.get_by_role("alert").inner_text()
        form.get_by_role("button", name="Cancel").click()

        # Disable / Enable
        row.get_by_role("button", name="Disable demo").click()
        page.locator('.eca-McpServer[data-status="disabled"]', has_text="demo").wait_for(timeout=60_000)
        wait_file(ws_file, lambda d: d["mcpServers"]["demo"].get("disabled") is True)
        row.get_by_role("button", name="Enable demo").click()
        page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(timeout=90_000)
        wait_file(ws_file, lambda d: "disabled" not in d["mcpServers"]["demo"])

        # Edit: new arguments, written and restarted with them
        row.get_by_role("button", name="Edit demo").click()
        edit = page.get_by_role("form", name="Edit MCP server demo")
        assert edit.get_by_label("Command", exact=True).input_value() == sys.executable
        edit.get_by_label("Arguments", exact=True).fill(f"{DEMO} --edited")
        edit.get_by_role("button", name="Save").click()
        data = wait_file(ws_file, lambda d: d["mcpServers"]["demo"]["args"] == [str(DEMO), "--edited"])
        assert data["mcpServers"]["demo"]["env"]["DEMO_TOKEN"] == "s3cret-demo-value"  # an edit keeps the env
        page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(timeout=90_000)

        # Add a URL server with headers: written to the file, never shown (nothing listens: it just fails)
        page.get_by_role("button", name="Add MCP server").click()
        form = page.get_by_role("form", name="Add MCP server")
        form.get_by_label("Name", exact=True).fill("remote")
        form.get_by_label("Transport").select_option("url")
        form.get_by_label("URL", exact=True).fill("http://127.0.0.1:9/mcp")
        form.get_by_label("Headers (Name: value, one per line)").fill(
            "Authorization: Bearer hdr-s3cret-token\nX-Team: a:b\n")
        form.get_by_label("Scope").select_option("workspace")
        form.get_by_role("button", name="Add server").click()
        remote = page.locator(".eca-McpServer", has_text="remote")
        remote.wait_for(timeout=60_000)
        data = wait_file(ws_file, lambda d: "remote" in d.get("mcpServers", {}))
        assert data["mcpServers"]["remote"] == {"url": "http://127.0.0.1:9/mcp", "headers": {
            "Authorization": "Bearer hdr-s3cret-token", "X-Team": "a:b"}}
        assert "hdr-s3cret-token" not in page.content()
        remote.get_by_role("button", name="Remove remote").click()
        page.get_by_role("group", name="Confirm removing remote").get_by_role("button", name="Yes, remove").click()
        remote.wait_for(state="detached", timeout=60_000)
        wait_file(ws_file, lambda d: "remote" not in d.get("mcpServers", {}))

        # Remove, after confirming
        row.get_by_role("button", name="Remove demo").click()
        page.get_by_role("group", name="Confirm removing demo").get_by_role("button", name="Yes, remove").click()
        row.wait_for(state="detached", timeout=60_000)
        data = wait_file(ws_file, lambda d: "demo" not in d.get("mcpServers", {}))
        assert data == {"welcomeMessage": "Managed MCP test", "mcpServers": {}}
        assert "0/0 running" in servers.locator("summary").inner_text()
        assert not page.eca_errors, page.eca_errors
    finally:
        own.stop()
