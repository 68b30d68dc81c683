"""The ACP door: ``eca-notebook acp`` serves the Agent Client Protocol (JSON-RPC over NDJSON stdio) for ACP clients
— Zed-style editors, Jupyter AI, ``acpx`` — mapped onto the same engine as every other door.

Layer 7 (a door): imports the engine, tools, rpc and transports, never Jupyter. The connection (:mod:`._connection`)
handles the methods; workspaces, sessions, prompt and update translation, approvals and file access each have
their own module beside it.
"""

from __future__ import annotations

from ._connection import AcpConnection, serve_acp_stdio
from ._diff import diff_contents, reverse_apply
from ._files import CURRENT_SESSION, ClientFiles
from ._permissions import PERMISSION_OPTIONS
from ._schema import PROTOCOL_VERSION, SESSION_LOCKED, SESSION_NOT_FOUND, SIZE_LIMITS, UPDATE_LIMIT
from ._sessions import Session
from ._updates import PermissionAsk, SessionUpdates, tool_kind
from ._workspaces import EngineFactory, default_engine_factory

__all__ = [
    "CURRENT_SESSION",
    "PERMISSION_OPTIONS",
    "PROTOCOL_VERSION",
    "SESSION_LOCKED",
    "SESSION_NOT_FOUND",
    "SIZE_LIMITS",
    "UPDATE_LIMIT",
    "AcpConnection",
    "ClientFiles",
    "EngineFactory",
    "PermissionAsk",
    "Session",
    "SessionUpdates",
    "default_engine_factory",
    "diff_contents",
    "reverse_apply",
    "serve_acp_stdio",
    "tool_kind",
]
