"""The in-process pair behaves like a wire: JSON on the way, EOF on close."""

from __future__ import annotations

import asyncio

import pytest

from eca_notebook.protocol.errors import PARSE_ERROR, RpcError
from eca_notebook.transports import MessageStream, memory_pair


async def test_messages_flow_both_ways_in_order():
    a, b = memory_pair()
    for i in range(5):
        await a.write({"i": i})
    await b.write([{"batch": True}])
    assert [await b.read() for _ in range(5)] == [{"i": i} for i in range(5)]
    assert await a.read() == [{"batch": True}]


async def test_messages_are_json_encoded_on_the_way():
    a, b = memory_pair()
    sent = {"t": (1, 2), "nested": {"k": "é"}}
    await a.write(sent)
    got = await b.read()
    assert got == {"t": [1, 2], "nested": {"k": "é"}}
    got["nested"]["k"] = "changed"
    assert sent["nested"]["k"] == "é"  # no shared objects


async def test_values_a_wire_cannot_carry_fail_loudly():
    a, _ = memory_pair()
    with pytest.raises(TypeError):
        await a.write({"x": {1, 2}})
    with pytest.raises(ValueError):
        await a.write({"x": float("inf")})


async def test_raw_invalid_json_reads_as_a_parse_error():
    a, b = memory_pair()
    a.write_raw(b'{"jsonrpc": ')
    await a.write({"ok": 1})
    err = await b.read()
    assert isinstance(err, RpcError) and err.code == PARSE_ERROR
    assert await b.read() == {"ok": 1}


async def test_closing_one_side_ends_the_other_after_queued_messages():
    a, b = memory_pair()
    await a.write({"last": True})
    await a.close()
    assert await b.read() == {"last": True}
    assert await b.read() is None
    assert await b.read() is None
    assert await a.read() is None


async def test_close_wakes_a_pending_read_on_both_sides():
    a, b = memory_pair()
    reads = [asyncio.create_task(a.read()), asyncio.create_task(b.read())]
    await asyncio.sleep(0)
    await b.close()
    assert await asyncio.gather(*reads) == [None, None]


async def test_writes_after_close_are_dropped():
    a, b = memory_pair()
    await b.close()
    await a.write({"dropped": 1})  # peer closed: no error
    await a.close()
    await a.write({"dropped": 2})
    assert await b.read() is None


def test_memory_stream_is_a_message_stream():
    a, _ = memory_pair()
    assert isinstance(a, MessageStream)
