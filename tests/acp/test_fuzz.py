"""Bounded fuzzing of the ACP door: thousands of hostile NDJSON lines into ``eca-notebook acp``, then a valid request
must still be answered (and the process must still be alive)."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.transports.framing import NdjsonDecoder

from ..e2e.conftest import server_env
from ..fuzzing import body

GUARD = 60  # seconds: a guard against hangs, never asserted on
ACP_METHODS = ["initialize", "authenticate", "session/new", "session/load", "session/list", "session/prompt",
               "session/cancel", "session/set_mode", "session/set_model", "session/set_config_option",
               "$/cancelRequest", "fs/read_text_file"]


def line(rng: random.Random) -> bytes:
    data = body(rng, ACP_METHODS).replace(b"\n", b" ")
    roll = rng.random()
    if roll < 0.95:
        return data + b"\n"
    if roll < 0.98:
        return data + b"\r\n\n\n"
    return data  # glued to the next line


@pytest.mark.e2e
async def test_the_acp_server_survives_fuzzed_lines_and_still_answers(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = server_env(home, None, ECA_CONFIG=json.dumps({"localModel": False}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "acp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env, cwd=str(tmp_path))
    assert proc.stdin is not None and proc.stdout is not None
    decoder, answers = NdjsonDecoder(), {}

    async def read() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            for item in decoder.feed(chunk):
                message = json.loads(item)
                if isinstance(message, dict) and "id" in message and "method" not in message:
                    answers[json.dumps(message["id"])] = message
                elif isinstance(message, dict) and "method" in message and "id" in message:
                    # a request from the agent (permission, fs/*): answer it with an error, as a client may
                    reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
                    proc.stdin.write(json.dumps(reply).encode() + b"\n")

    reader = asyncio.create_task(read())
    try:
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}}
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        rng = random.Random(11)
        for _ in range(20):
            proc.stdin.write(b"".join(line(rng) for _ in range(150)))
            await asyncio.wait_for(proc.stdin.drain(), GUARD)
        final = {"jsonrpc": "2.0", "id": "still-serving", "method": "session/new",
                 "params": {"cwd": str(tmp_path), "mcpServers": []}}
        proc.stdin.write(b"\n" + json.dumps(final).encode() + b"\n")
        await proc.stdin.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GUARD
        while '"still-serving"' not in answers and loop.time() < deadline and proc.returncode is None:
            await asyncio.sleep(0.05)
        assert proc.returncode is None, "the agent died"
        assert "sessionId" in answers['"still-serving"'].get("result", {}), answers.get('"still-serving"')
    finally:
        proc.kill()
        await proc.wait()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


class _NotReading:
    """A MessageStream whose peer reads nothing: every write waits forever."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()

    async def read(self) -> Any:
        await self.closed.wait()
        return None

    async def write(self, message: Any) -> None:
        await asyncio.Event().wait()

    async def close(self) -> None:
        self.closed.set()


async def test_updates_queued_for_a_client_that_does_not_read_are_bounded():
    from eca_notebook.acp._connection import MAX_QUEUED_UPDATES, AcpConnection

    connection = AcpConnection(_NotReading())
    for i in range(MAX_QUEUED_UPDATES + 500):
        connection.notify_update("s", {"i": i})
    # past the cap the client is disconnected, and nothing more is queued
    assert connection.endpoint.queued == MAX_QUEUED_UPDATES + 1
    await asyncio.wait_for(connection.run(), GUARD)
    assert connection.endpoint.closed
