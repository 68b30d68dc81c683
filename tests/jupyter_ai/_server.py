"""A real Jupyter server with Jupyter AI's extensions (from .venv-jupyter-ai), and a client of its chat the way
Jupyter AI's front end talks to it: the chat WebSocket of jupyterlab-chat (``/api/chat/ws/<path>``, the transport
used when no collaboration package is installed) and Jupyter AI's permission endpoint (``/ai/acp/permissions``).

The server is the panel tests' isolated lab (tests/panel/_lab.py: every Jupyter/XDG dir in a temporary HOME, every
provider aimed at the scripted LLM server), plus the port of Jupyter AI's own MCP server ("Jupyter MCP Server",
jupyter-server-mcp), which Jupyter AI hands to every ACP session it creates.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from websockets.asyncio.client import ClientConnection, connect

from ..panel._lab import Lab, free_port, lab_env

PERSONA_ID = "jupyter-ai-personas::eca_notebook::EcaPersona"
#: What Jupyter AI names its built-in MCP server (jupyter_server_mcp's ``mcp_name`` default)
JUPYTER_MCP_SERVER = "Jupyter MCP Server"


def jupyter_ai_lab(root: Path, home: Path, llm_url: str) -> Lab:
    """An isolated lab whose Jupyter AI runs its MCP server on a free port (not the default 3001, which another
    test or a user's server may hold)."""
    env = lab_env(home, llm_url)
    # a .py file: the lab's .json one is rewritten at every start (install_isolated); Jupyter reads both
    (Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.py").write_text(
        f"c.MCPExtensionApp.mcp_port = {free_port()}\n")
    return Lab(root=root, env=env)


class ChatClient:
    """One connection to a chat over jupyterlab-chat's WebSocket: sends messages to the ECA persona as the chat
    input does (``metadata.to_persona``, stamped by Jupyter AI's persona picker) and keeps every message the server
    broadcasts (a persona's message is re-sent whole on every update while it streams)."""

    def __init__(self, lab: Lab, path: str) -> None:
        self.lab = lab
        self.path = path
        self.messages: dict[str, dict[str, Any]] = {}
        self.metadata: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def __aenter__(self) -> ChatClient:
        url = f"ws://127.0.0.1:{self.lab.port}/api/chat/ws/{quote(self.path)}?token={self.lab.token}"
        self._ws = await connect(url, open_timeout=60, max_size=None)
        first = json.loads(await asyncio.wait_for(self._ws.recv(), 60))
        assert first["action"] == "connection", first
        for message in first["messages"]:
            self.messages[message["id"]] = message
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        assert self._ws is not None
        async for raw in self._ws:
            frame = json.loads(raw)
            if frame.get("action") == "message":
                self.messages[frame["message"]["id"]] = frame["message"]
            elif frame.get("action") == "metadata":
                self.metadata.update(frame["metadata"])
            self._changed.set()

    async def send(self, body: str) -> str:
        """A user's message to the persona; returns its id."""
        assert self._ws is not None
        message_id = str(uuid.uuid4())
        await self._ws.send(json.dumps({"type": "client", "action": "send", "id": message_id, "body": body,
                                        "metadata": {"to_persona": PERSONA_ID}}))
        return message_id

    def replies(self) -> list[dict[str, Any]]:
        return [m for m in self.messages.values() if m.get("sender") == PERSONA_ID]

    def text(self) -> str:
        return "\n".join(m.get("body") or "" for m in self.replies())

    def tool_calls(self) -> list[dict[str, Any]]:
        return [tc for m in self.replies() for tc in (m.get("metadata") or {}).get("tool_calls") or []]

    async def until(self, predicate: Callable[[], Any], what: str, timeout: float = 240) -> Any:
        """Wait for the broadcasts to satisfy `predicate` (generous ceiling: a busy 2-core machine)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (found := predicate()):
            left = deadline - loop.time()
            assert left > 0, f"timed out waiting for {what}; the persona said: {self.text()!r}\n{self.lab.log_tail()}"
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass
        return found

    async def answer_permission(self, kind: str) -> dict[str, Any]:
        """Click the button of `kind` (``allow_once``, ``reject_once``…) on the pending permission request, as
        Jupyter AI's tool call card does: POST to its permission endpoint. Returns that tool call."""
        def pending() -> dict[str, Any] | None:
            return next((tc for tc in self.tool_calls() if tc.get("permission_status") == "pending"), None)

        call = await self.until(pending, "a permission request in the chat")
        option = next(o for o in call["permission_options"] if o["kind"] == kind)
        async with httpx.AsyncClient(timeout=60) as http:
            response = await http.post(f"{self.lab.base}ai/acp/permissions",
                                       headers={"Authorization": f"token {self.lab.token}"},
                                       json={"session_id": call["session_id"], "tool_call_id": call["tool_call_id"],
                                             "option_id": option["option_id"]})
        assert response.status_code == 200, response.text
        await self.until(lambda: all(tc.get("permission_status") != "pending" or tc["tool_call_id"]
                                     != call["tool_call_id"] for tc in self.tool_calls()), "the permission to resolve")
        return call
