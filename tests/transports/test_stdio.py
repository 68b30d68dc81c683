"""PipeStream over real OS pipes, and a real subprocess serving JSON-RPC on its stdin/stdout via open_stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.protocol.errors import CONNECTION_LOST, INVALID_REQUEST, PARSE_ERROR, RpcError
from eca_notebook.rpc import Endpoint
from eca_notebook.transports import ContentLengthDecoder, MessageStream, PipeStream, dumps, loads
from eca_notebook.transports.framing import encode_content_length, encode_ndjson

REPO = Path(__file__).resolve().parents[2]
GUARD = 60  # seconds: a guard against hangs, never asserted on

# A tiny echo server: what `eca-notebook server` does, minus the engine.
SERVER = r"""
import asyncio, logging, os, sys
from eca_notebook.rpc import Endpoint
from eca_notebook.transports.stdio import open_stdio

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

async def main():
    stream = await open_stdio(codec=sys.argv[1], max_frame_size=int(sys.argv[2]), frame_timeout=float(sys.argv[3]))
    endpoint = Endpoint(stream, name="echo-server")
    endpoint.register("echo", lambda params: params)

    def noisy(params):
        print("stray print from a handler", flush=True)  # must not reach the protocol channel
        os.system("echo stray output from a child process")
        return "quiet"

    async def ask(params):
        return await endpoint.request("client/answer", params)

    async def announce(params):
        await endpoint.notify("server/announced", params)
        return "announced"

    async def sleep(params):
        await asyncio.sleep(params[0])

    endpoint.register("sleep", sleep)
    endpoint.register("noisy", noisy)
    endpoint.register("ask", ask)
    endpoint.register("announce", announce)
    await endpoint.run()
    print("server done", file=sys.stderr)

asyncio.run(main())
"""


async def start_server(codec: str = "content-length", max_frame_size: int = 1 << 20, frame_timeout: float = 30.0,
                       **kwargs: Any) -> asyncio.subprocess.Process:
    pipes = {"stdin": asyncio.subprocess.PIPE, "stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE}
    pipes.update(kwargs)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVER, codec, str(max_frame_size), str(frame_timeout), cwd=REPO, **pipes
    )


async def finish(proc: asyncio.subprocess.Process) -> str:
    """Wait for the server to exit after its stdin closed; returns its stderr."""
    _, err = await asyncio.wait_for(proc.communicate(), GUARD)
    assert proc.returncode == 0, err.decode()
    return err.decode()


class RawClient:
    """Bytes to the server's stdin, decoded frames from its stdout: to see exactly what is on the wire."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.decoder = ContentLengthDecoder()
        self.raw = bytearray()
        self.frames: list[Any] = []

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def recv(self) -> Any:
        assert self.proc.stdout is not None
        while not self.frames:
            chunk = await asyncio.wait_for(self.proc.stdout.read(65536), GUARD)
            assert chunk, "server closed stdout"
            self.raw += chunk
            self.frames += self.decoder.feed(chunk)
        return loads(self.frames.pop(0))


@pytest.fixture
async def served() -> AsyncIterator[tuple[Endpoint, asyncio.subprocess.Process, list[Any]]]:
    proc = await start_server()
    assert proc.stdout is not None and proc.stdin is not None
    client = Endpoint(PipeStream(proc.stdout, proc.stdin, name="client"), name="client")
    client.register("client/answer", lambda params: {"answered": params})
    notes: list[Any] = []
    client.register("server/announced", notes.append)
    runner = asyncio.create_task(client.run())
    yield client, proc, notes
    await client.close()
    await asyncio.wait_for(runner, GUARD)
    await finish(proc)


# -- a real subprocess -------------------------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_requests_both_ways_and_notifications_over_a_subprocess(served):
    client, _, notes = served
    assert await client.request("echo", {"text": "héllo ✓", "n": [1, 2]}) == {"text": "héllo ✓", "n": [1, 2]}
    assert await client.request("ask", {"q": 42}) == {"answered": {"q": 42}}  # server → client → server
    assert await client.request("announce", [1]) == "announced"
    assert notes == [[1]]  # the notification was written before the response


@pytest.mark.e2e
async def test_many_concurrent_large_requests_keep_frames_whole(served):
    client, _, _ = served
    payloads = [{"i": i, "blob": chr(0x41 + i % 26) * (50_000 + i)} for i in range(30)]
    results = await asyncio.wait_for(asyncio.gather(*(client.request("echo", p) for p in payloads)), GUARD)
    assert results == payloads


@pytest.mark.e2e
async def test_stray_prints_and_child_output_go_to_stderr(served):
    client, proc, _ = served
    assert await client.request("noisy") == "quiet"
    assert await client.request("echo", ["still framed"]) == ["still framed"]
    await client.close()
    err = await finish(proc)
    assert "stray print from a handler" in err
    assert "stray output from a child process" in err
    assert "server done" in err  # the server's run() returned at end of input


@pytest.mark.e2e
async def test_a_dying_server_fails_pending_requests_with_connection_lost():
    proc = await start_server()
    assert proc.stdout is not None and proc.stdin is not None
    client = Endpoint(PipeStream(proc.stdout, proc.stdin), name="client")
    runner = asyncio.create_task(client.run())
    assert await client.request("echo", [1]) == [1]
    pending = asyncio.create_task(client.request("sleep", [60]))
    await asyncio.sleep(0.05)
    proc.kill()
    with pytest.raises(RpcError) as info:
        await asyncio.wait_for(pending, GUARD)
    assert info.value.code == CONNECTION_LOST
    await asyncio.wait_for(runner, GUARD)  # run() ended at EOF
    await client.notify("anything")  # dropped: the endpoint is closed
    await proc.wait()


async def test_writing_to_a_dead_process_does_not_raise():
    proc = await start_server()
    assert proc.stdout is not None and proc.stdin is not None
    stream = PipeStream(proc.stdout, proc.stdin)
    client = Endpoint(stream, name="client")  # not running: nobody reads the EOF
    proc.kill()
    await proc.wait()
    for _ in range(3):
        await client.notify("x", {"blob": "y" * 200_000})  # broken pipe: logged and dropped
    with pytest.raises(RpcError) as info:
        await client.request("echo", [1])
    assert info.value.code == CONNECTION_LOST
    await client.close()


@pytest.mark.e2e
async def test_what_real_clients_put_on_the_wire():
    proc = await start_server()
    raw = RawClient(proc)
    body = dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": "é"}})
    # Content-Type with both charsets, a trailing \n counted in N, lower-case header names.
    await raw.send(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(body), body))
    assert await raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"a": "é"}}
    body = dumps({"jsonrpc": "2.0", "id": "uuid-2", "method": "echo", "params": [2]}) + b"\n"
    await raw.send(b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc; charset=utf8\r\n\r\n%s"
                   % (len(body), body))
    assert await raw.recv() == {"jsonrpc": "2.0", "id": "uuid-2", "result": [2]}
    # Several frames in one write.
    frames = b"".join(
        encode_content_length(dumps({"jsonrpc": "2.0", "id": i, "method": "echo", "params": [i]})) for i in range(3, 8)
    )
    await raw.send(frames)
    got = [await raw.recv() for _ in range(5)]
    assert sorted(r["id"] for r in got) == [3, 4, 5, 6, 7]
    # A 300 KB frame split across many writes.
    big = dumps({"jsonrpc": "2.0", "id": 8, "method": "echo", "params": {"blob": "z" * 300_000}})
    framed = encode_content_length(big)
    for i in range(0, len(framed), 7000):
        await raw.send(framed[i : i + 7000])
    assert (await raw.recv())["result"] == {"blob": "z" * 300_000}
    # What we emit: only Content-Length.
    assert b"Content-Type" not in raw.raw and raw.raw.startswith(b"Content-Length: ")
    proc.stdin.close()
    await finish(proc)


@pytest.mark.e2e
async def test_bad_frames_are_answered_and_the_server_keeps_serving():
    proc = await start_server(max_frame_size=10_000)
    raw = RawClient(proc)
    ok = encode_content_length(dumps({"jsonrpc": "2.0", "id": "ok", "method": "echo", "params": [1]}))
    cases = [
        (b"Content-Type: text/plain; charset=latin1\r\nContent-Length: 3\r\n\r\n\xe9\xe9\xe9", PARSE_ERROR),
        (b"Content-Length: 20000\r\n\r\n" + b"x" * 20000, INVALID_REQUEST),
        (b"this is not a header\r\n\r\n", PARSE_ERROR),
        (encode_content_length(b'{"jsonrpc": "2.0", "id": '), PARSE_ERROR),
        (encode_content_length(b"null"), INVALID_REQUEST),
    ]
    for data, code in cases:
        await raw.send(data + ok)
        error = await raw.recv()
        assert error["id"] is None and error["error"]["code"] == code, error
        assert await raw.recv() == {"jsonrpc": "2.0", "id": "ok", "result": [1]}
    proc.stdin.close()
    await finish(proc)


@pytest.mark.e2e
async def test_ndjson_codec_over_a_subprocess():
    proc = await start_server(codec="ndjson")
    assert proc.stdout is not None and proc.stdin is not None
    client = Endpoint(PipeStream(proc.stdout, proc.stdin, codec="ndjson"), name="client")
    client.register("client/answer", lambda params: params)
    runner = asyncio.create_task(client.run())
    assert await client.request("echo", {"text": "line1\nline2"}) == {"text": "line1\nline2"}
    assert await client.request("ask", ["x"]) == ["x"]
    await client.close()
    await asyncio.wait_for(runner, GUARD)
    await finish(proc)


def echo_requests(n: int) -> bytes:
    return b"".join(
        encode_content_length(dumps({"jsonrpc": "2.0", "id": i, "method": "echo", "params": {"i": i}}))
        for i in range(1, n + 1)
    )


@pytest.mark.e2e
async def test_stdin_and_stdout_that_are_files_use_threads(tmp_path):
    requests = tmp_path / "requests.bin"
    requests.write_bytes(echo_requests(40))
    out = tmp_path / "responses.bin"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        proc = await start_server(stdin=stdin, stdout=stdout)
        await finish(proc)
    decoded = [loads(b) for b in ContentLengthDecoder().feed(out.read_bytes())]
    # Quick handlers answered before end of input are all delivered, in order.
    assert [(r["id"], r["result"]["i"]) for r in decoded] == [(i, i) for i in range(1, 41)]


@pytest.mark.e2e
async def test_piped_requests_then_end_of_input_are_all_answered():
    proc = await start_server()
    out, err = await asyncio.wait_for(proc.communicate(echo_requests(40)), GUARD)
    assert proc.returncode == 0, err.decode()
    decoded = [loads(b) for b in ContentLengthDecoder().feed(out)]
    assert [(r["id"], r["result"]["i"]) for r in decoded] == [(i, i) for i in range(1, 41)]


# -- PipeStream over OS pipes in this process -----------------------------------------------------------------------


async def _pipe_reader(fd: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0))
    return reader


async def _pipe_writer(fd: int) -> asyncio.StreamWriter:
    loop = asyncio.get_running_loop()
    idle = asyncio.StreamReader()
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(idle), os.fdopen(fd, "wb", buffering=0)
    )
    return asyncio.StreamWriter(transport, protocol, idle, loop)


@pytest.fixture
async def pipes() -> AsyncIterator[tuple[PipeStream, asyncio.StreamWriter, asyncio.StreamReader]]:
    """A PipeStream plus the raw ends of its two pipes: (stream, raw writer into it, raw reader of its output)."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stream = PipeStream(await _pipe_reader(in_r), await _pipe_writer(out_w))
    raw_in, raw_out = await _pipe_writer(in_w), await _pipe_reader(out_r)
    yield stream, raw_in, raw_out
    await stream.close()
    raw_in.close()
    await raw_in.wait_closed()


async def test_pipe_stream_writes_one_content_length_frame_per_message(pipes):
    stream, _, raw_out = pipes
    await stream.write({"jsonrpc": "2.0", "method": "x", "params": "é"})
    body = dumps({"jsonrpc": "2.0", "method": "x", "params": "é"})
    expected = encode_content_length(body)
    assert await asyncio.wait_for(raw_out.readexactly(len(expected)), GUARD) == expected


async def test_pipe_stream_reads_split_frames_errors_and_eof(pipes):
    stream, raw_in, _ = pipes
    data = encode_content_length(dumps({"a": 1})) + b"garbage\r\n" + encode_content_length(dumps([{"b": 2}]))
    for i in range(len(data)):
        raw_in.write(data[i : i + 1])
    await raw_in.drain()
    assert await stream.read() == {"a": 1}
    error = await stream.read()
    assert isinstance(error, RpcError) and error.code == PARSE_ERROR
    assert await stream.read() == [{"b": 2}]
    raw_in.close()
    assert await asyncio.wait_for(stream.read(), GUARD) is None


async def test_close_interrupts_a_pending_read(pipes):
    stream, _, _ = pipes
    pending = asyncio.create_task(stream.read())
    await asyncio.sleep(0.01)
    await stream.close()
    assert await asyncio.wait_for(pending, GUARD) is None
    assert await stream.read() is None
    await stream.write({"dropped": True})  # after close: dropped, no error


async def test_cancelling_a_read_keeps_the_stream_usable(pipes):
    stream, raw_in, _ = pipes
    pending = asyncio.create_task(stream.read())
    await asyncio.sleep(0.01)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    raw_in.write(encode_content_length(b'{"after":"cancel"}'))
    assert await asyncio.wait_for(stream.read(), GUARD) == {"after": "cancel"}


async def test_ndjson_pipe_stream():
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stream = PipeStream(await _pipe_reader(in_r), await _pipe_writer(out_w), codec="ndjson")
    feed, output = await _pipe_writer(in_w), await _pipe_reader(out_r)
    feed.write(encode_ndjson(b'{"x":1}') + b"\r\n" + b'[2]\r\n')
    assert await stream.read() == {"x": 1}
    assert await stream.read() == [2]
    await stream.write({"y": "a\nb"})
    assert await asyncio.wait_for(output.readline(), GUARD) == b'{"y":"a\\nb"}\n'
    await stream.close()
    feed.close()
    await feed.wait_closed()


async def test_unknown_codec_is_refused():
    with pytest.raises(ValueError):
        PipeStream(asyncio.StreamReader(), None, codec="xml")  # type: ignore[arg-type]


async def test_pipe_stream_is_a_message_stream():
    assert isinstance(PipeStream(asyncio.StreamReader(), None), MessageStream)  # type: ignore[arg-type]


# -- bounds per peer ---------------------------------------------------------------------------------------------------


@pytest.mark.e2e
async def test_a_frame_whose_declared_length_never_arrives_ends_with_an_error_and_serving_goes_on():
    proc = await start_server(frame_timeout=0.3)
    client = RawClient(proc)
    await client.send(b'Content-Length: 5000\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}')
    error = await client.recv()  # without the timeout this waits forever (the client waits for id 1 too)
    assert error["id"] is None and error["error"]["code"] == PARSE_ERROR
    assert "Content-Length 5000" in error["error"]["message"] and "no byte for" in error["error"]["message"]
    await client.send(encode_content_length(dumps({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": [2]})))
    assert await client.recv() == {"jsonrpc": "2.0", "id": 2, "result": [2]}
    assert proc.stdin is not None
    proc.stdin.close()
    await finish(proc)


@pytest.mark.e2e
async def test_an_absurd_content_length_is_refused_at_once_and_the_next_frame_is_answered():
    proc = await start_server()
    client = RawClient(proc)
    await client.send(b"Content-Length: 99999999999999\r\n\r\n{}")
    error = await client.recv()
    assert error["id"] is None and error["error"]["code"] == INVALID_REQUEST
    assert "99999999999999 bytes" in error["error"]["message"]
    await client.send(encode_content_length(dumps({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": [2]})))
    assert await client.recv() == {"jsonrpc": "2.0", "id": 2, "result": [2]}
    assert proc.stdin is not None
    proc.stdin.close()
    await finish(proc)


async def test_reading_pauses_while_unread_output_is_over_the_bound():
    """The transport-level rule behind flat memory: no next message while our output waits for the peer."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    stream = PipeStream(await _pipe_reader(in_r), await _pipe_writer(out_w), name="bounded",
                        max_pending_write=256 * 1024)
    peer_writer, peer_reader = await _pipe_writer(in_w), await _pipe_reader(out_r)
    big = {"blob": "x" * (1024 * 1024)}
    write = asyncio.create_task(stream.write(big))  # the peer reads nothing: most of it stays buffered
    await asyncio.sleep(0)
    assert stream.pending_write > stream.max_pending_write
    peer_writer.write(encode_content_length(dumps({"jsonrpc": "2.0", "method": "n"})))
    await peer_writer.drain()
    read = asyncio.create_task(stream.read())
    done, _ = await asyncio.wait({read}, timeout=0.5)
    assert not done  # a message is there, but we hold it back
    decoder, got = ContentLengthDecoder(), []
    while not got:
        got = decoder.feed(await asyncio.wait_for(peer_reader.read(1 << 20), GUARD))
    assert await asyncio.wait_for(read, GUARD) == {"jsonrpc": "2.0", "method": "n"}
    while not write.done():
        await asyncio.wait_for(peer_reader.read(1 << 20), GUARD)
    await write
    await stream.close()
    peer_writer.close()
    await peer_writer.wait_closed()
