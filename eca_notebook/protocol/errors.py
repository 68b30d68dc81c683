"""JSON-RPC 2.0 error codes and the exception that carries one across layers.

Any layer may raise :class:`RpcError`; the JSON-RPC endpoint turns it into an error response. Keeping the codes in
layer 0 means the engine (which decides *that* something is invalid) and the endpoint (which decides *how* to say it)
agree without importing each other.
"""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict

from .._redact import redact
from ._base import JsonValue

__all__ = [
    "CONNECTION_LOST",
    "CONTENT_MODIFIED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SERVER_NOT_INITIALIZED",
    "TIMEOUT",
    "UNKNOWN_ERROR",
    "ErrorObject",
    "RpcError",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
#: The reference ECA server's meaning of -32001 (its JSON-RPC library's LSP ``UnknownErrorCode``).
UNKNOWN_ERROR = -32001
REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801

# Used by our transports: the ACP spec's -32000 (shared/specs/acp-messages.md) for a connection that ended.
CONNECTION_LOST = -32000
#: A request of ours got no answer in time. Not -32001: on the ECA wire that is the reference's "Unknown error"
#: (the ACP door answers its own timeouts with the ACP spec's -32001, ``eca_notebook.acp._schema.TIMEOUT``).
TIMEOUT = -32003
_DESCRIBE_LIMIT = 4000  # characters of a peer's error data quoted by RpcError.describe



class ErrorObject(TypedDict):
    """A JSON-RPC response's ``error`` member (JSON-RPC 2.0 §5.1)."""

    code: int
    message: str
    #: What the peer adds: any JSON (a reason, a path, a retry delay).
    data: NotRequired[JsonValue]


_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    SERVER_NOT_INITIALIZED: "Server not initialized",
    UNKNOWN_ERROR: "Unknown error",
    REQUEST_CANCELLED: "Request cancelled",
    CONTENT_MODIFIED: "Content modified",
    CONNECTION_LOST: "Connection lost",
    TIMEOUT: "Request timed out",
}


class RpcError(Exception):
    """A JSON-RPC error: raise it from a handler and the peer receives ``{"code", "message", "data"}``."""

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message or _MESSAGES.get(code, "Error")
        self.data = data
        super().__init__(f"{self.code}: {self.message}")

    def describe(self) -> str:
        """The error for a person or a model: message, code and the peer's ``data`` — often the reason itself (Jupyter
        AI refuses a raw ``.ipynb`` write with ``data: {"path": "…use the Jupyter notebook MCP tools…"}``) — with
        secrets redacted, at most a few thousand characters."""
        text = f"{self.message} ({self.code})"
        if self.data is not None:
            detail = self.data if isinstance(self.data, str) else json.dumps(self.data, ensure_ascii=False, default=str)
            text += f": {detail[:_DESCRIBE_LIMIT]}{'…' if len(detail) > _DESCRIBE_LIMIT else ''}"
        return redact(text)

    def to_dict(self) -> ErrorObject:
        """The JSON-RPC ``error`` object (``code``, ``message``, ``data`` when set)."""
        err: ErrorObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    @classmethod
    def from_dict(cls, err: Any) -> RpcError:
        """The error a peer sent; a malformed error object becomes an internal error that says so."""
        if not isinstance(err, dict):
            return cls(INTERNAL_ERROR, f"malformed error object: {err!r}")
        code = err.get("code")
        return cls(code if isinstance(code, int) else INTERNAL_ERROR, str(err.get("message", "")), err.get("data"))
