"""Serving ECA: one client connection over any message stream (layer 5, between the engine and the doors).

The stdio server (``eca-notebook server``), the JupyterLab WebSocket and the in-process client all speak ECA through
a :class:`ServerConnection`; it lives above the engine because it creates engines and owns a client's lifecycle,
and below the doors because every door shares it.
"""

from __future__ import annotations

from ._connection import ServerConnection, default_engine_factory, serve_stdio, workspace_paths

__all__ = ["ServerConnection", "default_engine_factory", "serve_stdio", "workspace_paths"]
