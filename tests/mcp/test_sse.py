"""An MCP server over the SDK's HTTP+SSE transport (``"transport": "sse"``; ACP's ``type: "sse"``): the demo server
served by the SDK's own ``sse_app()`` under uvicorn on 127.0.0.1, reached with the SDK's ``sse_client``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from eca_notebook.engine.config import McpServerConfig

from .conftest import DEMO
from .test_connection import manager_for


@pytest.fixture
def sse_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(DEMO), "--sse"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the SSE demo server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/sse"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()


async def test_sse_server_lists_and_calls_tools(workspace, sse_url):
    config = McpServerConfig.model_validate({"url": sse_url, "transport": "sse"})
    manager, recorder = manager_for({"old": config}, workspace)
    await manager.start()
    try:
        assert recorder.statuses("old")[-1] == "running"
        assert {"echo", "add"} <= {t.name for t in manager.status("old").tools}
        result = await manager.call_tool("old", "echo", {"text": "over sse"})
        assert not result.error and result.output == "echo: over sse"
    finally:
        await manager.aclose()
