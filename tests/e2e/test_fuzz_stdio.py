"""Bounded fuzzing of the stdio door: thousands of hostile frames into ``eca-notebook server``, then a valid request
must still be answered (and the process must still be alive)."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import pytest

from eca_notebook.protocol import METHODS
from eca_notebook.transports.framing import ContentLengthDecoder, encode_content_length

from ..fuzzing import body
from .conftest import server_env

pytestmark = pytest.mark.e2e

GUARD = 60  # seconds: a guard against hangs, never asserted on
METHOD_NAMES = [m for m, spec in METHODS.items()
                if spec.direction != "server->client" and m not in ("shutdown", "exit")]


def frame(rng: random.Random) -> bytes:
    data = body(rng, METHOD_NAMES)
    roll = rng.random()
    if roll < 0.9:
        return encode_content_length(data)
    if roll < 0.94:  # a wrong length, either way
        return b"Content-Length: %d\r\n\r\n%s" % (max(0, len(data) + rng.randrange(-5, 30)), data)
    if roll < 0.97:  # odd headers
        return b"content-type: text/plain; charset=latin1\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
    return data + b"\r\n"  # no header at all


async def test_the_stdio_server_survives_fuzzed_frames_and_still_answers(home: Path, workspace: Path):
    env = server_env(home, None, ECA_CONFIG=json.dumps({"localModel": False}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "server", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    decoder, answers = ContentLengthDecoder(), {}

    async def read() -> None:  # always drain: a client that does not read is throttled (by design)
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            for item in decoder.feed(chunk):
                message = json.loads(item)
                if isinstance(message, dict) and "id" in message and "method" not in message:
                    answers[json.dumps(message["id"])] = message

    reader = asyncio.create_task(read())
    try:
        init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "processId": None, "capabilities": {}, "workspaceFolders": [{"uri": workspace.as_uri(), "name": "w"}]}}
        proc.stdin.write(encode_content_length(json.dumps(init).encode()))
        proc.stdin.write(encode_content_length(b'{"jsonrpc":"2.0","method":"initialized","params":{}}'))
        rng = random.Random(20261123)
        for _ in range(20):
            proc.stdin.write(b"".join(frame(rng) for _ in range(150)))
            await asyncio.wait_for(proc.stdin.drain(), GUARD)
        # A frame cut short by garbage may have swallowed the next bytes: a blank line and two valid requests
        # (the first may be eaten by a pending body; the second is then found).
        final = {"jsonrpc": "2.0", "id": "still-serving", "method": "chat/list", "params": {}}
        proc.stdin.write(b"\r\n\r\n" + encode_content_length(json.dumps(final).encode()) * 2)
        await proc.stdin.drain()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GUARD
        while '"still-serving"' not in answers and loop.time() < deadline and proc.returncode is None:
            await asyncio.sleep(0.05)
        assert proc.returncode is None, "the server died"
        assert "result" in answers['"still-serving"'], answers.get('"still-serving"')
        assert "result" in answers['"init"']
    finally:
        proc.kill()
        await proc.wait()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
