"""Shared helpers for provider tests."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from eca_notebook.providers import (
    ProviderError,
    ProviderRequest,
    ProviderSettings,
    StreamEvent,
    Timeouts,
    UserMessage,
    create_provider,
)
from eca_notebook.testing import ScriptedLLMServer

APIS = ["openai-responses", "openai-chat", "anthropic", "ollama"]
PATHS = {
    "openai-responses": "/v1/responses",
    "openai-chat": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
}


def settings(api: str, url: str, **overrides: Any) -> ProviderSettings:
    """Settings with tiny retry delays so retry tests stay fast."""
    values: dict[str, Any] = dict(
        id="test", api=api, url=url, retry_base_delay=0.01, retry_max_delay=5.0, timeouts=Timeouts(read=10.0)
    )
    values.update(overrides)
    return ProviderSettings(**values)


def make(api: str, server_or_url: ScriptedLLMServer | str, client: httpx.AsyncClient, **overrides: Any):
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.url
    return create_provider(settings(api, url, **overrides), client)


def request(text: str = "hi", **kw: Any) -> ProviderRequest:
    return ProviderRequest(model=kw.pop("model", "test-model"), messages=kw.pop("messages", [UserMessage(text)]), **kw)


async def collect(provider: Any, req: ProviderRequest | None = None) -> list[StreamEvent]:
    return [event async for event in provider.stream(req or request())]


async def collect_until_error(
    provider: Any, req: ProviderRequest | None = None
) -> tuple[list[StreamEvent], ProviderError]:
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in provider.stream(req or request()):
            events.append(event)
    return events, info.value


def completions(server: ScriptedLLMServer, api: str) -> list[Any]:
    return [r for r in server.requests if r.path == PATHS[api]]


def free_port() -> int:
    """A port nothing listens on (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FixedServer:
    """A real HTTP server that answers every POST with one fixed body — for wire shapes the scripted server
    deliberately doesn't produce (other vendors' variants, rare events)."""

    def __init__(self, body: str | bytes, content_type: str = "text/event-stream", status: int = 200) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        payload = body.encode() if isinstance(body, str) else body
        outer = self
        self.bodies: list[bytes] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.bodies.append(self.rfile.read(length) if length else b"")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = _answer
            do_GET = _answer

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FixedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def sse(*events: tuple[str | None, Any]) -> str:
    """SSE text from (event name or None, JSON-able data or raw string) pairs."""
    import json

    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out)
