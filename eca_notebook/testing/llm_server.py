"""A scripted LLM server: a real HTTP server that speaks the four provider wire formats from API-neutral scripts.

(Also the raw-completion endpoints inline completion uses: OpenAI-compatible ``/v1/completions`` — with ``suffix``
for fill-in-the-middle — and Ollama's ``/api/generate``; a script's text steps are the completion's text.)

Tests (and later end-to-end runs that start JupyterLab) script what "the model" answers — text chunks, reasoning,
tool calls, usage, HTTP errors, in-stream errors, a dropped connection, a stall — and point a provider at
:attr:`ScriptedLLMServer.url`. The same script renders as OpenAI Responses SSE, Chat Completions SSE, Anthropic
Messages SSE or Ollama NDJSON depending on which endpoint the client calls, so one script exercises every provider.

Why a real server rather than mocks: the providers' hardest code paths (chunked transfer cut mid-body, idle
timeouts, retry-after headers, cancellation closing the socket) only exist on a real socket.

Stdlib only: ``ThreadingHTTPServer`` on a daemon thread, HTTP/1.1 with chunked transfer encoding so that a
:class:`Cut` is visible to the client as an incomplete body. Output is rendered into few large socket writes, so a
script of tens of thousands of chunks streams at full speed.

Run standalone: ``python -m eca_notebook.testing.llm_server [--port N] [--script file.json]`` prints
``URL <url>`` as its first stdout line and serves until killed; script it over HTTP with
``POST /_scripted/enqueue``, ``GET /_scripted/requests``, ``POST /_scripted/clear``.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import select
import signal
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ._cache import PromptCache
from ._script import (
    STEP_TYPES,
    Citation,
    Cut,
    Delay,
    Error,
    Reasoning,
    RecordedRequest,
    Reply,
    Stall,
    Step,
    StreamError,
    Text,
    ToolCall,
    Usage,
    split_text,
    step_from_json,
    step_to_json,
)
from ._wire import ROUTES, Out, Renderer

__all__ = [
    "Citation",
    "Cut",
    "Delay",
    "Error",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ScriptedLLMServer",
    "Stall",
    "Step",
    "StreamError",
    "Text",
    "ToolCall",
    "Usage",
    "main",
    "split_text",
    "step_from_json",
    "step_to_json",
]

log = logging.getLogger(__name__)



class _ClientGone(Exception):
    """The client closed the connection (or the server is stopping): stop streaming."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedLLM/1.0"
    timeout = 60  # a stuck client must not pin a handler thread forever

    @property
    def owner(self) -> ScriptedLLMServer:
        return self.server.owner  # type: ignore[attr-defined,no-any-return]

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    # -- plumbing ----------------------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as exc:
            self.owner._note_disconnect()
            raise _ClientGone from exc

    def _wait(self, seconds: float) -> None:
        """Sleep, but notice a client hanging up (so tests can assert cancellation) and a stopping server."""
        deadline = time.monotonic() + seconds
        stopping = self.owner._stopping
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if stopping.is_set():
                raise _ClientGone
            readable, _, _ = select.select([self.connection], [], [], min(remaining, 0.05))
            if readable:
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    self.owner._note_disconnect()
                    raise _ClientGone
                time.sleep(min(max(remaining, 0), 0.05))  # a pipelined request waiting: keep sleeping

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- routes ------------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/_scripted/requests":
            self._send_json(200, [r.to_json() for r in self.owner.requests])
            return
        self.owner._record(RecordedRequest("GET", path, self._lower_headers(), None))
        if path == "/api/tags":
            stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            models = [
                {
                    "name": name,
                    "model": name,
                    "modified_at": stamp,
                    "size": 1_000_000,
                    "digest": uuid.uuid5(uuid.NAMESPACE_URL, name).hex,
                    "details": {"format": "gguf", "family": "llama", "parameter_size": "1B",
                                "quantization_level": "Q4_K_M"},
                }
                for name in self.owner.ollama_models
            ]
            self._send_json(200, {"models": models})
        elif path in ("/", "/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": {"message": f"no such endpoint: GET {path}"}})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        raw = self._read_body()
        body = _parse_body(raw)
        if path == "/_scripted/enqueue":
            try:
                items = body if isinstance(body, list) and not _looks_like_steps(body) else [body]
                replies = [Reply.from_json(item) for item in items]
            except (ValueError, TypeError) as exc:
                self._send_json(400, {"error": {"message": f"bad script: {exc}"}})
                return
            self.owner.enqueue(*replies)
            self._send_json(200, {"queued": len(replies)})
            return
        if path == "/_scripted/clear":
            self.owner.clear()
            self._send_json(200, {"cleared": True})
            return
        renderer_cls = ROUTES.get(path)
        if renderer_cls is None:
            self._send_json(404, {"error": {"message": f"no such endpoint: POST {path}"}})
            return
        self.owner._record(RecordedRequest("POST", path, self._lower_headers(), body))
        self.owner._enter()
        try:
            reply = self.owner._next_reply(body)
            if reply is None:
                self._send_json(500, {"error": {"message": "no scripted reply queued"}})
                return
            try:
                self._play(renderer_cls(reply, body, self.owner), reply)
            except _ClientGone:
                self._drop()
        finally:
            self.owner._leave()

    def _lower_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _play(self, renderer: Renderer, reply: Reply) -> None:
        errors = [s for s in reply.steps if isinstance(s, Error)]
        if errors:
            for step in reply.steps:
                if isinstance(step, (Delay, Stall)):
                    self._wait(step.seconds)
                elif isinstance(step, Error):
                    break
            self._send_error(renderer, errors[0])
            return

        self.send_response(200)
        self.send_header("Content-Type", renderer.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        out = Out(self._write_chunk)
        renderer.start(out)
        for step in reply.steps:
            if isinstance(step, (Text, Citation, Reasoning, ToolCall)):
                renderer.step(out, step)
            elif isinstance(step, (Delay, Stall)):
                out.flush()
                self._wait(step.seconds)
            elif isinstance(step, Cut):
                out.flush()
                if step.graceful:  # the body ends properly, so the connection stays usable
                    self._write_chunk(b"")
                    return
                self._drop()
                return
            elif isinstance(step, StreamError):
                renderer.stream_error(out, step)
                out.flush()
                self._write_chunk(b"")  # a zero-length chunk is the end of the body
                return
        renderer.finish(out)
        out.flush()
        self._write_chunk(b"")

    def _send_error(self, renderer: Renderer, step: Error) -> None:
        headers: dict[str, str] = {}
        if step.retry_after is not None:
            if float(step.retry_after).is_integer():
                headers["retry-after"] = str(int(step.retry_after))
            else:
                headers["retry-after-ms"] = str(int(round(step.retry_after * 1000)))
                headers["retry-after"] = str(math.ceil(step.retry_after))
        self._send_json(step.status, renderer.error_body(step.status, step.message, step.code), headers)


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _looks_like_steps(items: list[Any]) -> bool:
    """A bare list of steps (one reply) vs. a list of replies."""
    return bool(items) and all(isinstance(i, dict) and i.get("type") in STEP_TYPES for i in items)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # socketserver's default listen backlog is 5: a batch opening 64 connections at once overflowed it on a busy
    # machine, and a connection the kernel had dropped failed as "closed the connection before answering"
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], owner: ScriptedLLMServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("scripted LLM server: error handling a request from %s", client_address, exc_info=True)


class ScriptedLLMServer:
    """A real HTTP server on 127.0.0.1 answering every completion endpoint from a FIFO of scripted replies."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        ollama_models: list[str] | None = None,
        chat_reasoning_field: str = "reasoning_content",
        prompt_cache: bool = False,
    ) -> None:
        # ``prompt_cache``: report input and cache tokens as the APIs' prompt caches would bill each request
        # (_cache.py) instead of the scripted counts; only the output count stays scripted
        self.prompt_cache = PromptCache() if prompt_cache else None
        self.host = host
        self.port = port
        self.ollama_models = list(ollama_models) if ollama_models is not None else ["llama3.2:1b"]
        self.chat_reasoning_field = chat_reasoning_field  # "reasoning_content" (DeepSeek/vLLM) or "reasoning"
        self._lock = threading.Condition()
        self._queue: deque[Reply] = deque()
        self._kept: list[tuple[str, deque[Reply]]] = []  # replies for requests containing a text (enqueue_when)
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0
        self._responder: Callable[[Any], Reply | None] | None = None
        self._in_flight = 0
        self._peak_in_flight = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedLLMServer is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self.port), self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; interrupts stalls and drops open connections. Never blocks for long."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -----------------------------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def enqueue_when(self, text: str, *replies: Reply) -> None:
        """Keep replies for the requests whose JSON body contains ``text`` — one the engine sends at a moment a test
        cannot count on (a summary request in the middle of a tool loop): those are answered from here, in order,
        and every other request from the FIFO."""
        with self._lock:
            self._kept.append((text, deque(replies)))

    def respond_with(self, responder: Callable[[Any], Reply | None] | None) -> None:
        """Answer every request the queues have no reply for with ``responder(body)`` (the parsed request body):
        for many concurrent requests (a batch on several processes) whose arrival order a FIFO cannot know. A
        responder answering None leaves the request unanswered as before (HTTP 500); ``None`` removes it."""
        with self._lock:
            self._responder = responder

    @property
    def in_flight(self) -> int:
        """Completion requests being answered right now."""
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most completion requests answered at once since the start (or :meth:`clear`)."""
        with self._lock:
            return self._peak_in_flight

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received (except the /_scripted control endpoints), oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def disconnects(self) -> int:
        """How many streams ended because the client hung up mid-stream."""
        with self._lock:
            return self._disconnects

    def clear(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._kept.clear()
            self._requests.clear()
            self._disconnects = 0
            self._peak_in_flight = self._in_flight

    def wait_for_disconnect(self, timeout: float = 5.0, count: int = 1) -> bool:
        """Block until ``count`` streams were abandoned by their client; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._disconnects >= count, timeout)

    # -- called by handlers --------------------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_reply(self, body: Any = None) -> Reply | None:
        with self._lock:
            if self._kept:
                text = json.dumps(body, ensure_ascii=False)
                for needle, replies in self._kept:
                    if replies and needle in text:
                        return replies.popleft()
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
        return responder(body) if responder is not None else None

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _note_disconnect(self) -> None:
        with self._lock:
            self._disconnects += 1
            self._lock.notify_all()

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eca_notebook.testing.llm_server", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file: one reply or a list of replies to enqueue at start")
    args = parser.parse_args(argv)

    replies: list[Reply] = []
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            data = json.load(fh)
        items = data if isinstance(data, list) and not _looks_like_steps(data) else [data]
        replies = [Reply.from_json(item) for item in items]

    server = ScriptedLLMServer(args.host, args.port).start()
    server.enqueue(*replies)
    print(f"URL {server.url}", flush=True)

    done = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while not done.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
