"""The ACP door: ``eca-notebook acp`` serves the Agent Client Protocol (JSON-RPC over NDJSON stdio) for ACP clients
— Zed-style editors, Jupyter AI, ``acpx`` — mapped onto the same engine as every other door.

Layer 5 (a door): imports the engine, tools, rpc and transports, never Jupyter.
"""

from __future__ import annotations

from ._connection import (
    PERMISSION_OPTIONS,
    AcpConnection,
    EngineFactory,
    Session,
    default_engine_factory,
    serve_acp_stdio,
)
from ._diff import diff_contents, reverse_apply
from ._files import CURRENT_SESSION, ClientFiles
from ._schema import PROTOCOL_VERSION, SESSION_LOCKED, SESSION_NOT_FOUND, SIZE_LIMITS, UPDATE_LIMIT
from ._updates import PermissionAsk, SessionUpdates, tool_kind

__all__ = [
    "AcpConnection",
    "ClientFiles",
    "CURRENT_SESSION",
    "EngineFactory",
    "PERMISSION_OPTIONS",
    "PROTOCOL_VERSION",
    "PermissionAsk",
    "SESSION_LOCKED",
    "SESSION_NOT_FOUND",
    "SIZE_LIMITS",
    "Session",
    "SessionUpdates",
    "UPDATE_LIMIT",
    "default_engine_factory",
    "diff_contents",
    "reverse_apply",
    "serve_acp_stdio",
    "tool_kind",
]
