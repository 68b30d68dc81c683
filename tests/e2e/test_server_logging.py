"""Logging through a real ``eca-notebook server`` process (issue #12, item 4): a stderr nobody reads can't stop the
server, and a peer's bad input is logged once per kind, as a warning without a traceback, rate-limited."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from eca_notebook._logging import QUEUE_SIZE
from eca_notebook.rpc import Endpoint
from eca_notebook.transports.stdio import PipeStream

from .conftest import server_env, start_server

pytestmark = pytest.mark.e2e

PIPE_BUFFER = 64 * 1024  # Linux's default pipe capacity


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _initialize(workspace: Path) -> dict:
    return {"processId": os.getpid(), "clientInfo": {"name": "e2e", "version": "1"}, "capabilities": {},
            "workspaceFolders": [{"uri": workspace.as_uri(), "name": workspace.name}]}


async def test_a_stderr_nobody_reads_never_stops_the_server(home, workspace):
    env = server_env(home, None, ECA_CONFIG='{"localModel": false}', OLLAMA_API_URL="http://127.0.0.1:9")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "server", "--log-level", "debug",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    endpoint = Endpoint(PipeStream(proc.stdout, proc.stdin, codec="content-length"), name="e2e-client")
    runner = asyncio.create_task(endpoint.run())
    try:
        # One ceiling for the whole exchange, below pytest-timeout's: a hang then fails with a traceback that shows
        # the step it hung in (pytest-timeout's own report shows only the idle event loop).
        async with asyncio.timeout(100):
            # Each cancel of an unknown request id logs one debug line naming the id: 40 × 16 KB of log output, far
            # more than the pipe holds, while nobody reads stderr; then more records than the log queue holds.
            # (Malformed frames, the reproduction, are rate-limited now and can no longer fill the pipe.)
            big = _frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "x" * 16_000}}) * 40
            small = _frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "y"}}) * (QUEUE_SIZE + 500)
            proc.stdin.write(big + small)
            await asyncio.wait_for(proc.stdin.drain(), 60)  # the server keeps reading its input
            assert len(big) > 8 * PIPE_BUFFER

            result = await endpoint.request("initialize", _initialize(workspace), timeout=60)
            assert "models" in result  # answered, with stderr still full
            assert await endpoint.request("chat/list", {}, timeout=60) == {"chats": []}

            # Once stderr is read again the writer catches up and says how much it had to drop.
            seen = bytearray()

            async def drain_until_dropped_is_reported() -> None:
                while b"log message(s) dropped" not in seen:
                    await endpoint.notify("$/cancelRequest", {"id": "nudge"})  # a record that triggers the report
                    try:
                        seen.extend(await asyncio.wait_for(proc.stderr.read(1 << 20), 1))
                    except TimeoutError:
                        pass

            await asyncio.wait_for(drain_until_dropped_is_reported(), 60)
    finally:
        async with asyncio.timeout(15):  # the clean-up is bounded too (and says so if it is not)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await endpoint.close()
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)


async def test_bad_input_is_one_warning_without_traceback(home, workspace):
    eca = await start_server(server_env(home, None, ECA_CONFIG='{"localModel": false}',
                                        OLLAMA_API_URL="http://127.0.0.1:9"))
    try:
        await eca.initialize(workspace)
        assert eca.proc.stdin is not None
        # 300 frames that are not JSON, and 50 notifications whose params are invalid
        eca.proc.stdin.write(b"Content-Length: 5\r\n\r\n{bad}" * 300)
        for _ in range(50):
            await eca.notify("chat/promptStop", {"chatId": {"not": "a string"}})
        assert await eca.request("chat/list", {}) == {"chats": []}  # still answering
        assert await eca.shutdown() == 0
        await asyncio.wait_for(eca._runner, 30)  # stderr read to its end
    finally:
        await eca.kill()

    lines = eca.stderr.splitlines()
    undecodable = [line for line in lines if "undecodable frame" in line]
    bad_params = [line for line in lines if "chat/promptStop" in line]
    # once each (a slow machine may cross the rate limit's interval and log a second line, never hundreds)
    assert 1 <= len(undecodable) <= 3, lines
    assert 1 <= len(bad_params) <= 3, lines
    assert all(" WARNING " in line for line in undecodable + bad_params), lines
    assert "Traceback" not in eca.stderr and " ERROR " not in eca.stderr, eca.stderr
