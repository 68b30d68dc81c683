"""The session stream of ``http-websocket-api.md``: ``WS <base_url>api/eca/v1/sessions/{id}/stream``.

A thin handler, like the ECA socket's (:class:`~.ws.EcaSocketHandler`: Jupyter token or cookie, ``execute`` on
``eca``, same-origin only, the same per-socket limits, backpressure and slow-reader drop). Before the upgrade it
refuses a cross-site ``Origin`` (403) and an unknown session (404: the session is an engine chat, created with
``POST …/sessions``); ``?workspace_id=`` names the workspace, else the server root's and then every running one are
searched. Everything the stream means is :class:`~._stream_session.StreamSession`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from typing import Any
from urllib.parse import urlparse

from tornado import web

from ..engine import Engine
from ._stream_session import StreamSession, too_large
from .ws import EcaSocketHandler, ServerState

__all__ = ["SessionStreamHandler"]

log = logging.getLogger(__name__)


class SessionStreamHandler(EcaSocketHandler):
    """``GET <base_url>api/eca/v1/sessions/{session_id}/stream[?workspace_id=<id>]`` upgraded to a WebSocket."""

    def initialize(self, state: ServerState) -> None:
        super().initialize(state)
        self.engine: Engine | None = None
        self.session_id = ""
        self.session: StreamSession | None = None

    async def pre_get(self) -> None:
        """Authorize, refuse another site's page, find the session — all before the upgrade."""
        await self.authorize()
        origin = self.request.headers.get("Origin") or self.request.headers.get("Sec-Websocket-Origin")
        if origin is not None and not self._same_site(origin):
            raise web.HTTPError(403, "cross-origin WebSocket refused")
        self.session_id = str(self.path_kwargs.get("session_id") or "")
        manager = self.state.manager
        workspace_id = self.get_argument("workspace_id", None)
        if workspace_id:
            workspace = manager.get(workspace_id)
            if workspace is None:
                raise web.HTTPError(404, f"unknown workspace {workspace_id!r}")
            candidates = [workspace]
        else:
            candidates = [manager.default, *(w for w in manager.started() if w is not manager.default)]
        for workspace in candidates:
            try:
                engine = await manager.ready(workspace)
            except RuntimeError as exc:  # the server is stopping
                raise web.HTTPError(503, str(exc)) from None
            if engine.get_chat(self.session_id) is not None:
                self.workspace, self.engine = workspace, engine
                return
        raise web.HTTPError(404, f"unknown session {self.session_id!r}")

    def _same_site(self, origin: str) -> bool:
        """Jupyter's origin rule (the Host, or ``allow_origin`` / ``allow_origin_pat``) *even for a token*: jupyter
        lets a token-authenticated socket skip the check, but an editor client has no page of another site, and the
        contract refuses every cross-site ``Origin``."""
        if self.allow_origin == "*":
            return True
        host = self.request.headers.get("Host")
        if host is None or urlparse(origin.lower()).netloc == host.lower():
            return True
        if self.allow_origin:
            return bool(self.allow_origin == origin)
        if self.allow_origin_pat:
            return bool(re.match(self.allow_origin_pat, origin))
        return False

    def open(self, *args: Any, **kwargs: Any) -> None:
        assert self.workspace is not None and self.engine is not None
        user = getattr(self.current_user, "username", "?")
        name = f"eca-session-stream[{user}@{self.workspace.id}:{self.session_id[:40]}]"
        stream = self.open_stream(name, refuse=too_large)
        self.session = StreamSession(stream, self.state.manager, self.workspace, self.engine, self.session_id)
        self.serve_task = asyncio.get_running_loop().create_task(self._serve(), name=name)

    async def _serve(self) -> None:
        assert self.session is not None
        try:
            await self.session.run()
        except Exception:
            log.exception("session stream failed")
        finally:
            self.state.sockets.discard(self)
            with contextlib.suppress(Exception):
                self.close()
