"""Bounded fuzzing of the WebSocket door: thousands of hostile frames on one authenticated socket, then a valid
request must still be answered on it (and by a fresh socket)."""

from __future__ import annotations

import random

from eca_notebook.protocol import METHODS

from ..fuzzing import body

METHOD_NAMES = [m for m, spec in METHODS.items()
                if spec.direction != "server->client" and m not in ("shutdown", "exit")]


async def test_the_websocket_door_survives_fuzzed_frames_and_still_answers(connect, workspace):
    sock = await connect()
    await sock.initialize()
    rng = random.Random(7)
    for _ in range(1500):
        data = body(rng, METHOD_NAMES)
        if rng.random() < 0.8:
            try:
                await sock.send_raw(data.decode("utf-8"))  # a text frame
                continue
            except UnicodeDecodeError:
                pass
        await sock.send_raw(data)  # a binary frame
    assert not sock.closed
    assert "chats" in await sock.request("chat/list", {}, timeout=60)
    result = await sock.request("chat/queryCommands", {"query": "doctor"}, timeout=60)
    assert [c["name"] for c in result["commands"]] == ["doctor"]
    fresh = await connect()
    await fresh.initialize()
    assert "chats" in await fresh.request("chat/list", {}, timeout=60)
