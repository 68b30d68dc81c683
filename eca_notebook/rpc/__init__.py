"""JSON-RPC 2.0 over any :class:`~eca_notebook.transports.MessageStream` — layer 1, protocol-agnostic.

The same :class:`Endpoint` carries ECA (stdio, WebSocket, in-memory) and ACP: it knows ``$/cancelRequest`` and the
JSON-RPC rules, never what a method means.
"""

from __future__ import annotations

from ._endpoint import CANCEL_METHOD, Endpoint, Handler, to_json

__all__ = ["CANCEL_METHOD", "Endpoint", "Handler", "to_json"]
