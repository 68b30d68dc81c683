"""What one stdio peer can cost the server: memory stays flat when a client writes without reading, and a frame
whose declared length never arrives ends with an error instead of a wedged connection.

Blocking pipes and threads on purpose: the point is a client that stops reading, which an asyncio client cannot
easily be. Memory is the server's resident set read from /proc; bounds are generous and nothing is timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from eca_notebook.transports.framing import ContentLengthDecoder, encode_content_length

from .conftest import server_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GUARD = 180.0  # seconds: a guard against hangs, never asserted on


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def frame(message: dict) -> bytes:
    return encode_content_length(json.dumps(message).encode())


class RawServer:
    """``eca-notebook server`` over blocking pipes: write bytes, read decoded messages."""

    def __init__(self, home: Path, workspace: Path) -> None:
        env = server_env(home, None, ECA_CONFIG=json.dumps({"localModel": False}))
        self.proc = subprocess.Popen([sys.executable, "-m", "eca_notebook", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.decoder = ContentLengthDecoder()
        self.pending: list = []
        self.write(frame({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "processId": None, "capabilities": {}, "workspaceFolders": [{"uri": workspace.as_uri(), "name": "w"}]}}))
        self.until(lambda m: m.get("id") == "init")
        self.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def read(self) -> dict:
        assert self.proc.stdout is not None
        while not self.pending:
            chunk = self.proc.stdout.read(65536)
            assert chunk, "the server closed stdout"
            self.pending += self.decoder.feed(chunk)
        return json.loads(self.pending.pop(0))

    def until(self, predicate) -> dict:
        while True:
            message = self.read()
            if predicate(message):
                return message

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def server(home: Path, workspace: Path):
    raw = RawServer(home, workspace)
    yield raw
    raw.close()


def test_a_client_that_sends_without_reading_does_not_grow_the_server(server: RawServer):
    """10,000 requests written without reading one answer: a server that reads them all queues ~3 KB per answer
    (83 MB when the bound was lifted to check this test fails); this one stops reading once its unread output
    passes a bound (it grows by about 4 MB), and every request is still answered once the client reads."""
    count = 10_000
    server.write(frame({"jsonrpc": "2.0", "id": "warm", "method": "chat/queryCommands", "params": {"query": ""}}))
    server.until(lambda m: m.get("id") == "warm")
    baseline = rss_mb(server.proc.pid)

    written = 0

    def writer() -> None:
        nonlocal written
        for start in range(0, count, 100):
            server.write(b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "chat/queryCommands",
                                         "params": {"query": ""}}) for i in range(start, start + 100)))
            written = start + 100

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    # Phase 1: nobody reads. Wait until the writer is blocked (no progress over several samples) or done.
    peak, last, still, deadline = baseline, -1, 0, time.monotonic() + GUARD
    while still < 8 and time.monotonic() < deadline:
        time.sleep(0.25)
        peak = max(peak, rss_mb(server.proc.pid))
        still = still + 1 if written == last else 0
        last = written
    # Phase 2: read every answer, sampling memory as we go.
    answered: set[int] = set()
    while len(answered) < count:
        message = server.read()
        if isinstance(message.get("id"), int):
            assert "result" in message, message
            answered.add(message["id"])
            if len(answered) % 5000 == 0:
                peak = max(peak, rss_mb(server.proc.pid))
    thread.join(GUARD)
    assert answered == set(range(count))
    assert peak - baseline < 40, f"server grew from {baseline:.0f} MB to {peak:.0f} MB"
    # And it still answers.
    server.write(frame({"jsonrpc": "2.0", "id": "after", "method": "chat/list", "params": {}}))
    assert "result" in server.until(lambda m: m.get("id") == "after")
