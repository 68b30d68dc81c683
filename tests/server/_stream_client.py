"""A minimal session-stream client for the server's own tests (tornado's websocket_connect): raw JSON in and out,
every server message checked against the server's models of the spec (an off-spec message fails the test)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from eca_notebook.server import _stream_schema as schema

from ._socket import WAIT, ReadingSocket

_SERVER_MODELS = {
    "server.hello": schema.ServerHello, "assistant.thinking": schema.AssistantThinking,
    "agent.plan": schema.AgentPlan, "agent.retrieve.status": schema.AgentRetrieveStatus,
    "tool.execute": schema.ToolExecute, "patch.proposed": schema.PatchProposed,
    "tool.request_approval": schema.ToolRequestApproval, "command.request_approval": schema.CommandRequestApproval,
    "assistant.token": schema.AssistantToken, "assistant.message_final": schema.AssistantMessageFinal,
    "server.error": schema.ServerError, "session.state": schema.SessionState,
    "assistant.image": schema.AssistantImage,  # (an extension: an image in the answer)
}


@dataclass
class Stream(ReadingSocket):
    received: list[dict[str, Any]] = field(default_factory=list)

    def accept(self, message: Any) -> None:
        _SERVER_MODELS[message["type"]].model_validate(message)  # strict: off-spec output fails here
        self.received.append(message)

    @property
    def mark(self) -> int:
        return len(self.received)

    def of(self, kind: str, start: int = 0) -> list[dict[str, Any]]:
        return [m for m in self.received[start:] if m["type"] == kind]

    async def wait_for(self, kind: str, where: Callable[[dict[str, Any]], Any] = lambda m: True, start: int = 0,
                       timeout: float = WAIT) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            return next((m for m in self.received[start:] if m["type"] == kind and where(m)), None)

        return await self._wait(find, timeout, kind)

    async def send(self, message: dict[str, Any] | str) -> None:
        await self.conn.write_message(message if isinstance(message, str) else json.dumps(message))

    async def hello(self, capabilities: list[str] | None = None) -> dict[str, Any]:
        start = self.mark
        await self.send({"type": "client.hello", "client_info": {"name": "test", "version": "1",
                                                                  "capabilities": capabilities or []}})
        hello = await self.wait_for("server.hello", start=start)
        await self.wait_for("session.state", start=start)
        return hello

    async def user_message(self, text: str, context: dict[str, Any] | None = None) -> int:
        start = self.mark
        message: dict[str, Any] = {"type": "client.user_message", "message": text}
        if context is not None:
            message["context"] = context
        await self.send(message)
        return start

    async def approve(self, request_id: str, scope: str, file_path: str | None = None, approved: bool = True,
                      hunks: list[str] | None = None) -> None:
        message: dict[str, Any] = {"type": "client.approval_response", "request_id": request_id,
                                   "approved": approved, "scope": scope}
        if file_path is not None:
            message["file_path"] = file_path
        if hunks is not None:
            message["hunks"] = hunks
        await self.send(message)

    async def final(self, start: int, timeout: float = WAIT) -> dict[str, Any]:
        return await self.wait_for("assistant.message_final", start=start, timeout=timeout)

    async def error(self, code: str, start: int) -> dict[str, Any]:
        message = await self.wait_for("server.error", lambda m: m["error"]["code"] == code, start=start)
        assert message["error"]["recoverable"] is True, message
        return message


def stream_url(port: int, base_url: str, session_id: str, **query: str) -> str:
    tail = f"?{urlencode(query)}" if query else ""
    return f"ws://127.0.0.1:{port}{base_url}api/eca/v1/sessions/{session_id}/stream{tail}"


async def connect(port: int, base_url: str, session_id: str, headers: dict[str, str], **query: str) -> Stream:
    request = HTTPRequest(stream_url(port, base_url, session_id, **query), headers=headers, connect_timeout=20,
                          request_timeout=60)
    return Stream(await websocket_connect(request)).start()
