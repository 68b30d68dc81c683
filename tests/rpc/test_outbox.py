"""The endpoint's one outgoing queue: notifications, responses and our requests in one FIFO; merging once a peer
falls behind; the cap that disconnects a peer that does not read; what close does with what is queued."""

from __future__ import annotations

import asyncio
from typing import Any

from eca_notebook.rpc import Endpoint
from eca_notebook.transports import ContentLengthDecoder, MemoryStream, PipeStream, loads, memory_pair

GUARD = 5  # seconds: only a guard against hangs, never asserted on


async def recv(stream: MemoryStream) -> Any:
    return await asyncio.wait_for(stream.read(), GUARD)


class GatedStream:
    """A MessageStream whose writes wait for a gate: a peer that is not reading (until the gate opens)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.written: list[Any] = []
        self.closed = asyncio.Event()

    async def read(self) -> Any:
        await self.closed.wait()
        return None

    async def write(self, message: Any) -> None:
        await self.gate.wait()
        self.written.append(message)

    async def close(self) -> None:
        self.closed.set()


async def test_a_response_follows_every_notification_queued_before_it():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="server")

    async def chatty(params: Any) -> str:
        for i in range(500):  # the engine's way: queued without waiting
            endpoint.notify_nowait("progress", {"i": i})
        return "done"

    endpoint.register("work", chatty)
    runner = asyncio.create_task(endpoint.run())
    await peer.write({"jsonrpc": "2.0", "id": 1, "method": "work"})
    got = [await recv(peer) for _ in range(501)]
    assert [m["params"]["i"] for m in got[:500]] == list(range(500))
    assert got[500] == {"jsonrpc": "2.0", "id": 1, "result": "done"}
    await endpoint.close()
    await asyncio.wait_for(runner, GUARD)


async def test_our_request_follows_the_notifications_queued_before_it():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="server")
    endpoint.notify_nowait("tool/running", {"id": "t1"})
    request = asyncio.create_task(endpoint.request("editor/ask", {"id": "t1"}))
    assert (await recv(peer))["method"] == "tool/running"
    assert (await recv(peer))["method"] == "editor/ask"
    request.cancel()
    await endpoint.close()


def _concat(method: str, first: Any, second: Any) -> Any:
    if method != "chunk":
        return None
    return {"text": first["text"] + second["text"]}


async def test_notifications_merge_only_once_the_peer_falls_behind_and_never_across_other_messages():
    stream = GatedStream()
    endpoint = Endpoint(stream, name="server", merge=_concat, merge_backlog=3)
    endpoint.notify_nowait("chunk", {"text": "a"})
    await asyncio.sleep(0)  # the writer takes "a" and waits at the gate
    for text in "bcdef":
        endpoint.notify_nowait("chunk", {"text": text})
    endpoint.notify_nowait("other", {"n": 1})
    endpoint.notify_nowait("chunk", {"text": "g"})
    endpoint.notify_nowait("chunk", {"text": "h"})
    assert endpoint.queued == 5  # b, c, "def", other, "gh": g does not merge across "other"
    stream.gate.set()
    await asyncio.wait_for(endpoint.drain(), GUARD)
    assert [m["params"] for m in stream.written] == [
        {"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "def"}, {"n": 1}, {"text": "gh"}]
    await endpoint.close()


async def test_a_peer_that_does_not_read_is_disconnected_once_the_queue_passes_the_cap():
    stream = GatedStream()
    overflowed: list[int] = []
    endpoint = Endpoint(stream, name="server", max_queued=10, on_overflow=lambda: overflowed.append(1))
    for i in range(50):
        endpoint.notify_nowait("n", {"i": i})
    assert overflowed == [1]  # once
    assert endpoint.queued == 11  # nothing more is queued after the cap
    await endpoint.close()

    default = Endpoint(GatedStream(), name="default", max_queued=10)
    for i in range(20):
        default.notify_nowait("n", {"i": i})
    for _ in range(100):  # by default the endpoint closes itself
        if default.closed:
            break
        await asyncio.sleep(0.01)
    assert default.closed


async def test_close_lets_queued_answers_out_then_drops_whatever_comes_later():
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="server")
    for i in range(3):
        endpoint.notify_nowait("n", {"i": i})
    await endpoint.close()
    endpoint.notify_nowait("late", {})
    assert [m["params"]["i"] for m in [await recv(peer) for _ in range(3)]] == [0, 1, 2]
    assert await recv(peer) is None


async def test_awaited_notify_returns_once_written():
    stream = GatedStream()
    endpoint = Endpoint(stream, name="server")
    sent = asyncio.create_task(endpoint.notify("n", {"i": 1}))
    await asyncio.sleep(0.01)
    assert not sent.done()  # still waiting for the peer
    stream.gate.set()
    await asyncio.wait_for(sent, GUARD)
    assert stream.written == [{"jsonrpc": "2.0", "method": "n", "params": {"i": 1}}]
    await endpoint.close()


async def test_an_unserializable_fire_and_forget_notification_is_logged_and_the_queue_goes_on(caplog):
    stream, peer = memory_pair()
    endpoint = Endpoint(stream, name="server")
    endpoint.notify_nowait("bad", {"x": object()})
    endpoint.notify_nowait("after")
    assert await recv(peer) == {"jsonrpc": "2.0", "method": "after"}
    assert any("could not send bad" in r.getMessage() for r in caplog.records)
    await endpoint.close()


class UnreadStream(GatedStream):
    """A peer that writes requests but reads nothing of ours until the gate opens."""

    def __init__(self, messages: list[Any]) -> None:
        super().__init__()
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        for message in messages:
            self.inbox.put_nowait(message)

    async def read(self) -> Any:
        return await self.inbox.get()


async def test_a_peer_that_leaves_our_answers_unread_stops_being_read_and_every_request_is_answered_later():
    count = 100
    stream = UnreadStream([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(count)])
    endpoint = Endpoint(stream, name="server", max_queued_responses=10)
    endpoint.register("ping", lambda params: "pong")
    runner = asyncio.create_task(endpoint.run())
    for _ in range(50):
        await asyncio.sleep(0)
    assert stream.inbox.qsize() > count - 20  # it stopped reading: ~10 answers queued, one being written
    assert endpoint.queued <= 11
    stream.gate.set()
    for _ in range(200):
        if len(stream.written) == count:
            break
        await asyncio.sleep(0.01)
    assert [m["id"] for m in stream.written] == list(range(count))
    assert all(m["result"] == "pong" for m in stream.written)
    await endpoint.close()
    runner.cancel()
    await asyncio.gather(runner, return_exceptions=True)


class RecordingWriter:
    """The byte side of a pipe: records each write call."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    async def drain(self) -> None:
        pass


async def test_a_pipe_gets_what_queued_in_one_tick_in_one_write_each_message_encoded_alone(caplog):
    """A streamed reply is thousands of notifications: over a pipe they go out a batch per write, in order, and one
    that cannot be serialized is dropped alone (logged), not the batch."""
    writer = RecordingWriter()
    endpoint = Endpoint(PipeStream(asyncio.StreamReader(), writer), name="server")
    for i in range(1000):
        endpoint.notify_nowait("chunk", {"i": i})
        if i == 500:
            endpoint.notify_nowait("chunk", {"bad": object()})
    await asyncio.wait_for(endpoint.notify("last", {"i": 1000}), GUARD)
    bodies = ContentLengthDecoder().feed(b"".join(writer.writes))
    assert [loads(body)["params"]["i"] for body in bodies] == list(range(1001))  # type: ignore[arg-type]
    assert len(writer.writes) <= 2  # not one per message
    assert "could not send chunk" in caplog.text
    await endpoint.close()


async def test_a_door_s_notification_encoder_writes_its_bytes_to_a_pipe_and_leaves_the_rest_to_the_outbox():
    """``encode_notification`` is a door's shortcut for the message it sends most: the body it gives goes on the
    pipe framed as any, in queue order; for what it declines (None) the outbox builds, rewrites and encodes."""
    seen: list[tuple[str, Any]] = []

    def shortcut(method: str, params: Any) -> bytes | None:
        seen.append((method, params))
        return b'{"jsonrpc":"2.0","method":"fast","params":{"n":%d}}' % params["i"] if method == "chunk" else None

    writer = RecordingWriter()
    endpoint = Endpoint(PipeStream(asyncio.StreamReader(), writer), name="server", encode_notification=shortcut,
                        outgoing=lambda message: {**message, "rewritten": True})
    endpoint.notify_nowait("chunk", {"i": 1})
    endpoint.notify_nowait("other", {"i": 2})
    await asyncio.wait_for(endpoint.notify("chunk", {"i": 3}), GUARD)
    bodies = ContentLengthDecoder().feed(b"".join(writer.writes))
    assert [loads(body) for body in bodies] == [  # type: ignore[arg-type]
        {"jsonrpc": "2.0", "method": "fast", "params": {"n": 1}},
        {"jsonrpc": "2.0", "method": "other", "params": {"i": 2}, "rewritten": True},
        {"jsonrpc": "2.0", "method": "fast", "params": {"n": 3}},
    ]
    assert seen == [("chunk", {"i": 1}), ("other", {"i": 2}), ("chunk", {"i": 3})]
    await endpoint.close()
