"""The ECA server engine: chats, config, models, saved history (layer 4); :mod:`eca_notebook.serving` serves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .engine import Engine, EngineOptions, Listener

if TYPE_CHECKING:
    from .models import preload_default_model


def __getattr__(name: str) -> Any:
    # Lazy: preloading (the embedded model's runtime, an HTTP client) is for the Jupyter server's start only.
    if name == "preload_default_model":
        from .models import preload_default_model

        return preload_default_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Engine",
    "EngineOptions",
    "Listener",
    "preload_default_model",
]
