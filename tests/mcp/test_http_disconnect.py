"""A streamable HTTP server that dies in the middle of a call: the call ends at once with "closed the connection"
(not at the MCP timeout), the server is marked failed, and once a server is back at its URL a restart works — on
mcp 2.x (.venv) and on mcp 1.x (.venv-jupyter-ai, whose HTTP client never answers such a request by itself)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from eca_notebook.engine.config import McpServerConfig
from eca_notebook.mcp._connection import _WatchedBody

from .conftest import DEMO
from .test_connection import Recorder, manager_for

#: far longer than the call may take: reaching it would mean the disconnect went unnoticed
LONG_TIMEOUT = 120


class HttpProcesses:
    """Demo servers over HTTP, each on the port asked for (0: any); all killed at teardown."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, port: int = 0) -> tuple[int, subprocess.Popen[str]]:
        proc = subprocess.Popen([sys.executable, str(DEMO), "--http", "--port", str(port)], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.procs.append(proc)
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"the HTTP demo server did not start: {line!r}")
        return int(line.split()[1]), proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            if proc.stdout:
                proc.stdout.close()


@pytest.fixture
def http_servers() -> Iterator[HttpProcesses]:
    servers = HttpProcesses()
    try:
        yield servers
    finally:
        servers.close()


async def until_status(recorder: Recorder, name: str, status: str, within: float = 60) -> None:
    async def wait() -> None:
        while not recorder.statuses(name) or recorder.statuses(name)[-1] != status:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), within)


async def test_a_server_dying_during_a_call_fails_it_at_once_and_can_be_restarted(workspace: Path,
                                                                                  http_servers: HttpProcesses):
    port, proc = http_servers.start()
    url = f"http://127.0.0.1:{port}/mcp"
    manager, recorder = manager_for({"web": McpServerConfig(url=url)}, workspace, timeout=LONG_TIMEOUT)
    try:
        await manager.start()
        assert recorder.statuses("web") == ["starting", "running"]

        result = await manager.call_tool("web", "crash", {})  # the server process exits while answering

        assert result.error is True
        assert result.output.startswith("MCP server 'web' closed the connection during the call to tool crash"), \
            result.output
        assert "did not answer" not in result.output  # not the timeout
        assert proc.wait(timeout=30) == 3
        await until_status(recorder, "web", "failed")
        assert manager.tools() == []
        failed = [p["message"] for m, p in recorder.sent if m == "$/showMessage" and p["type"] == "error"]
        assert len(failed) == 1 and failed[0].startswith("MCP server 'web' failed: "), failed
        # a call now says why, without waiting either
        later = await manager.call_tool("web", "echo", {"text": "x"})
        assert later.error is True and "MCP server 'web' is not running (status: failed" in later.output

        # the server is back at the same URL: a restart (mcp/startServer) connects again and calls work
        http_servers.start(port)
        assert await manager.start_server("web") is True
        assert recorder.statuses("web")[-2:] == ["starting", "running"]
        again = await manager.call_tool("web", "echo", {"text": "back"})
        assert (again.error, again.output) == (False, "echo: back")
    finally:
        await manager.aclose()
    assert recorder.statuses("web")[-1] == "stopped"


async def test_other_calls_waiting_on_the_server_end_too(workspace: Path, http_servers: HttpProcesses):
    """A call in flight when another one kills the server ends with the same error, not at the timeout."""
    port, _ = http_servers.start()
    manager, recorder = manager_for({"web": McpServerConfig(url=f"http://127.0.0.1:{port}/mcp")}, workspace,
                                    timeout=LONG_TIMEOUT)
    try:
        await manager.start()
        hanging = asyncio.create_task(manager.call_tool("web", "hang", {}))
        crashed = await manager.call_tool("web", "crash", {})
        waiting = await asyncio.wait_for(hanging, 60)
        for result in (crashed, waiting):
            assert result.error is True and "MCP server 'web' closed the connection during" in result.output, \
                result.output
        await until_status(recorder, "web", "failed")
    finally:
        await manager.aclose()


class _Body(httpx.AsyncByteStream):
    """A response body that yields `chunks`, then breaks as a dropped connection does."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


@pytest.mark.parametrize(("chunks", "resumable"), [
    ((b"event: message\r\ndata: {}\r\n\r\n",), False),
    ((b"id: 7\nevent: message\n\n",), True),  # an SSE event id: mcp 1.x reconnects with Last-Event-ID itself
    ((b"event: message\ni", b"d: 7\n\n"), True),  # the field split across chunks
    ((b"data: {\"id\": 1}\n\n",), False),  # "id" inside the data is no event id
])
async def test_a_broken_body_is_reported_unless_the_sdk_can_resume_it(chunks: tuple[bytes, ...], resumable: bool):
    broken: list[BaseException] = []
    body = _WatchedBody(_Body(*chunks), broken.append)
    with pytest.raises(httpx.RemoteProtocolError):
        async for _ in body:
            pass
    assert (broken == []) is resumable
