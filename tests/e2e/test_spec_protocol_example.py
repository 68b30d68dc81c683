"""eca-protocol.md's example message — the ``initialize`` frame of "Base Protocol" / "Example" — sent as the spec
lays it out (a ``Content-Length`` header, CRLF, the JSON pretty-printed with four spaces; its ``...`` params are the
spec's required ``InitializeParams`` fields), then the lifecycle the spec gives it: ``initialized``, ``shutdown``
answered ``result: null``, ``exit`` ending the process. Also with the spec's default ``Content-Type`` header
written out. (The spec's other messages are TypeScript interfaces, driven by the rest of tests/e2e.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from .test_compat_wire import raw  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

# eca-protocol.md "Example", verbatim but for ``...`` (the params, below).
EXAMPLE = """Content-Length: ...\\r\\n
\\r\\n
{
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        ...
    }
}"""


def example_frame(workspace: Path, content_type: str | None = None) -> bytes:
    header, body = EXAMPLE.split("\\r\\n\n\\r\\n\n")
    params = ('"processId": null,\n        "capabilities": {},\n        "workspaceFolders": [{"uri": "'
              + workspace.as_uri() + '", "name": "project"}]')
    data = body.replace("...", params).encode("utf-8")
    head = header.replace("...", str(len(data))) + "\r\n"
    if content_type is not None:  # "Defaults to application/vscode-jsonrpc; charset=utf-8"
        head += f"Content-Type: {content_type}\r\n"
    return head.encode("ascii") + b"\r\n" + data


@pytest.mark.parametrize("content_type", [None, "application/vscode-jsonrpc; charset=utf-8"])
async def test_the_initialize_example_then_the_lifecycle(raw, workspace, content_type):  # noqa: F811
    client = await raw()
    await client.write(example_frame(workspace, content_type))
    answer = await client.response(1)
    assert "error" not in answer and isinstance(answer["result"], dict), answer  # InitializeResponse
    await client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    await client.next(lambda m: m.get("method") == "config/updated")  # what follows initialized
    await client.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})  # params: none
    assert (await client.response(2)) == {"jsonrpc": "2.0", "id": 2, "result": None}
    await client.send({"jsonrpc": "2.0", "method": "exit"})  # params: none
    assert await asyncio.wait_for(client.proc.wait(), 60) == 0
