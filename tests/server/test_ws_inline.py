"""``completion/inline`` and ``rewrite/prompt`` over the JupyterLab server extension's WebSocket (the door the
inline completer and "Rewrite with ECA…" use): answers, supersession, cancellation, a slow model never holding up
the server, rewrites streaming to the socket that asked only."""

from __future__ import annotations

import asyncio
import json

from eca_notebook.protocol.errors import REQUEST_CANCELLED
from eca_notebook.testing.llm_server import Reply, Stall, Text
from tests._waiting import until

DOC = "import pandas as pd\n\ndf = pd.read_csv('data.csv')\ndf.\n"
AT = {"line": 4, "character": 4}


def inline(version: int = 1, **extra) -> dict:
    return {"docText": DOC, "docVersion": version, "position": AT, **extra}


def posts(llm) -> list:
    return [r for r in llm.requests if r.method == "POST"]


async def test_completion_over_the_websocket(connect, llm):
    llm.enqueue(Reply([Text("head"), Text("()")]))
    sock = await connect()
    await sock.initialize()

    result = await sock.request("completion/inline", inline(path="analysis.ipynb#cell-3",
                                                            context="# kernel: df is a DataFrame (a, b)"))

    assert result["items"][0]["text"] == "head()"
    assert result["items"][0]["docVersion"] == 1
    [request] = posts(llm)
    assert request.body["model"] == "gpt-4.1-mini"  # the openai provider's fast model by default
    sent = json.dumps(request.body)
    assert "df.<ECA_TAG>" in sent and "df is a DataFrame (a, b)" in sent


async def test_a_slow_completion_never_holds_up_the_server(connect, llm):
    llm.enqueue(Reply([Stall(30), Text("late")]))
    sock = await connect()
    await sock.initialize()

    pending = asyncio.ensure_future(sock.call("completion/inline", inline(path="a.py")))
    await until(lambda: len(posts(llm)) == 1)
    listed = await sock.request("chat/list", {}, timeout=10)  # answered while the model is still silent

    assert listed == {"chats": []}
    assert not pending.done()
    llm.enqueue(Reply.text("shape"))
    newer = await sock.request("completion/inline", inline(version=2, path="a.py"))
    assert newer["items"][0]["text"] == "shape"
    assert (await pending)["result"] == {"error": {"type": "info", "message": "superseded"}}


async def test_cancel_request_over_the_websocket(connect, llm):
    llm.enqueue(Reply([Stall(30), Text("late")]))
    sock = await connect()
    await sock.initialize()

    pending = asyncio.ensure_future(sock.call("completion/inline", inline()))
    await until(lambda: len(posts(llm)) == 1)
    await sock.notify("$/cancelRequest", {"id": sock._next_id})

    response = await pending
    assert response["error"]["code"] == REQUEST_CANCELLED
    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)  # the model's stream was closed


async def test_rewrite_streams_to_the_socket_that_asked(connect, llm):
    llm.enqueue(Reply([Text("df = df.dropna()"), Text("\n")]))
    asker, other = await connect(), await connect()
    await asker.initialize()
    await other.initialize()

    result = await asker.request("rewrite/prompt", {
        "id": "r1", "text": "df = df[df.a.notna()]", "prompt": "simpler",
        "range": {"start": {"line": 4, "character": 1}, "end": {"line": 4, "character": 22}},
    })
    finished = await asker.wait_for("rewrite/contentReceived", lambda p: p["content"]["type"] == "finished")

    assert result == {"status": "prompting", "model": "openai/gpt-4.1"}
    assert finished["rewriteId"] == "r1"
    kinds = [p["content"]["type"] for p in asker.of("rewrite/contentReceived")]
    assert kinds == ["started", "text", "text", "replace", "finished"]
    assert asker.of("rewrite/contentReceived")[3]["content"]["text"] == "df = df.dropna()"
    await other.request("chat/list", {})  # anything queued for it before this answer has arrived
    assert other.of("rewrite/contentReceived") == []


async def test_closing_the_socket_stops_its_rewrite(connect, llm):
    llm.enqueue(Reply([Text("partial"), Stall(30), Text(" rest")]))
    sock = await connect()
    await sock.initialize()

    await sock.request("rewrite/prompt", {"id": "r2", "text": "x", "prompt": "y",
                                          "range": {"start": {"line": 1, "character": 1},
                                                    "end": {"line": 1, "character": 2}}})
    await sock.wait_for("rewrite/contentReceived", lambda p: p["content"]["type"] == "text")
    await sock.close()

    assert await asyncio.to_thread(llm.wait_for_disconnect, 20)  # nobody to stream to: the model call ended


async def test_two_sockets_on_one_document_never_supersede_each_other(connect, llm):
    llm.enqueue(Reply([Stall(1), Text("first")]), Reply.text("second"))
    one, two = await connect(), await connect()
    await one.initialize()
    await two.initialize()

    pending = asyncio.ensure_future(one.request("completion/inline", inline(path="shared.ipynb#c1")))
    await until(lambda: len(posts(llm)) == 1)
    answer = await two.request("completion/inline", inline(path="shared.ipynb#c1"))

    assert answer["items"][0]["text"] == "second"
    assert (await pending)["items"][0]["text"] == "first"
