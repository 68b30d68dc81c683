"""One test per bullet of eca-compat-notes.md "What real clients put on the wire", against the real process.

These write raw bytes to the server's stdin — exactly what those clients put on the wire — and read frames back
with our decoder. (The pure decoder has its own, finer-grained tests in tests/transports/test_framing.py.)
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text
from eca_notebook.transports.framing import ContentLengthDecoder

from .conftest import server_env
from .test_server_chat import sent_texts

pytestmark = pytest.mark.e2e


class RawClient:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.decoder = ContentLengthDecoder()
        self.inbox: list[dict] = []

    @classmethod
    async def start(cls, env: dict[str, str], *argv: str) -> RawClient:
        args = argv or ("server",)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "eca_notebook", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env,
        )
        return cls(proc)

    async def write(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self.proc.stdin.write(chunk)
            await self.proc.stdin.drain()

    async def send(self, message: dict, *, headers: str = "Content-Length: {n}\r\n\r\n", trailing: bytes = b"") -> None:
        body = json.dumps(message).encode() + trailing
        await self.write(headers.format(n=len(body)).encode("ascii") + body)

    async def next(self, predicate, timeout: float = 60) -> dict:
        async def read() -> dict:
            while True:
                for index, message in enumerate(self.inbox):
                    if predicate(message):
                        return self.inbox.pop(index)
                data = await self.proc.stdout.read(65536)
                assert data, "server closed stdout"
                for item in self.decoder.feed(data):
                    assert isinstance(item, bytes), item
                    self.inbox.append(json.loads(item))

        return await asyncio.wait_for(read(), timeout)

    async def response(self, request_id, timeout: float = 60) -> dict:
        return await self.next(lambda m: "method" not in m and m.get("id") == request_id, timeout)

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


def init_message(workspace: Path, request_id=1, **options) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"processId": None, "capabilities": {}, "initializationOptions": options,
                       "workspaceFolders": [{"uri": workspace.as_uri(), "name": "w"}]}}


@pytest.fixture
async def raw(home, llm):
    clients: list[RawClient] = []

    async def start(*argv: str) -> RawClient:
        client = await RawClient.start(server_env(home, llm), *argv)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()


@pytest.mark.parametrize("content_type", [
    "application/vscode-jsonrpc; charset=utf-8",
    "application/vscode-jsonrpc; charset=utf8",
    "application/json; charset=UTF-8",
])
async def test_content_type_header_with_utf8_charset_spellings(raw, workspace, content_type):
    eca = await raw()
    await eca.send(init_message(workspace), headers="Content-Length: {n}\r\nContent-Type: " + content_type + "\r\n\r\n")
    assert "result" in await eca.response(1)


async def test_other_charset_gets_a_clear_error_and_the_server_keeps_serving(raw, workspace):
    eca = await raw()
    await eca.send(init_message(workspace),
                   headers="Content-Length: {n}\r\nContent-Type: text/plain; charset=latin1\r\n\r\n")
    error = await eca.next(lambda m: "error" in m)
    assert error["id"] is None and error["error"]["code"] == -32700 and "latin1" in error["error"]["message"]
    await eca.send(init_message(workspace, request_id=2))
    assert "result" in await eca.response(2)


async def test_trailing_newline_counted_in_content_length(raw, workspace):
    eca = await raw()
    await eca.send(init_message(workspace), trailing=b"\n")
    assert "result" in await eca.response(1)


async def test_header_names_are_case_insensitive(raw, workspace):
    eca = await raw()
    await eca.send(init_message(workspace), headers="content-length: {n}\r\n\r\n")
    assert "result" in await eca.response(1)
    await eca.send({"jsonrpc": "2.0", "id": 2, "method": "chat/list", "params": {}},
                   headers="CONTENT-LENGTH: {n}\r\n\r\n")
    assert (await eca.response(2))["result"] == {"chats": []}


async def test_large_frames_split_across_reads_and_several_frames_in_one_write(raw, workspace, llm):
    eca = await raw()
    await eca.send(init_message(workspace))
    await eca.response(1)
    await eca.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    llm.enqueue(Reply([Text("got it")]))
    big = "x" * 300_000 + " é ✓"  # multi-byte characters: Content-Length counts bytes
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "chat/prompt",
                       "params": {"message": big, "model": "openai/gpt-4.1"}}, ensure_ascii=False).encode()
    frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
    for start in range(0, len(frame), 4096):  # many small writes
        await eca.write(frame[start:start + 4096])
    assert (await eca.response(2))["result"]["status"] == "prompting"

    both = b"".join(
        b"Content-Length: %d\r\n\r\n" % len(b) + b
        for b in (json.dumps({"jsonrpc": "2.0", "id": i, "method": "chat/list", "params": {}}).encode() for i in (3, 4))
    )
    await eca.write(both)
    assert "result" in await eca.response(3) and "result" in await eca.response(4)
    # the provider received the whole message, multi-byte characters intact
    await eca.next(lambda m: m.get("method") == "chat/statusChanged" and m["params"]["status"] == "idle")
    posted = [r for r in llm.requests if r.method == "POST"]
    assert sent_texts("openai-responses", posted[0].body) == [("user", big)]


@pytest.mark.parametrize("params", ["absent", None, {}, []], ids=["absent", "null", "object", "array"])
async def test_lifecycle_params_absent_null_empty_object_or_array(raw, workspace, params):
    eca = await raw()
    await eca.send(init_message(workspace))
    await eca.response(1)

    def msg(method: str, request_id=None) -> dict:
        m = {"jsonrpc": "2.0", "method": method}
        if request_id is not None:
            m["id"] = request_id
        if params != "absent":
            m["params"] = params
        return m

    await eca.send(msg("initialized"))
    await eca.next(lambda m: m.get("method") == "tool/serverUpdated")
    await eca.send(msg("shutdown", 2))
    assert (await eca.response(2)) == {"jsonrpc": "2.0", "id": 2, "result": None}
    await eca.send(msg("exit"))
    assert await asyncio.wait_for(eca.proc.wait(), 60) == 0


async def test_request_ids_zero_uuid_strings_and_non_consecutive(raw, workspace):
    eca = await raw()
    await eca.send(init_message(workspace, request_id=0))
    assert "result" in await eca.response(0)
    ids = [str(uuid.uuid4()), 917, "7", 3]
    for request_id in ids:
        await eca.send({"jsonrpc": "2.0", "id": request_id, "method": "chat/list", "params": {}})
    for request_id in ids:
        response = await eca.response(request_id)
        assert response["id"] == request_id and type(response["id"]) is type(request_id)


async def test_started_as_cmd_server_with_args_or_as_is(raw, workspace):
    with_args = await raw("server", "--log-level", "info", "--some-client-flag")
    await with_args.send(init_message(workspace))
    assert "result" in await with_args.response(1)
    as_is = await raw("--log-level", "info")  # no subcommand, stdin is a pipe: serve
    await as_is.send(init_message(workspace))
    assert "result" in await as_is.response(1)
