"""The ECA server engine: chats, config, models, saved history (layer 3), and the connection that serves it."""

from __future__ import annotations

from ._preload import preload_default_model
from .engine import Engine, EngineOptions, Listener
from .server import ServerConnection, default_engine_factory, serve_stdio

__all__ = [
    "Engine",
    "EngineOptions",
    "Listener",
    "ServerConnection",
    "default_engine_factory",
    "preload_default_model",
    "serve_stdio",
]
