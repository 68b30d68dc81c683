"""The notebook door: ``%eca`` magics, chat widgets with approvals and diffs, and the kernel's own tools.

``%load_ext eca_notebook`` calls :func:`load_ipython_extension`; everything heavy (the engine, httpx, ipywidgets) is
imported on the first ``%eca``. See ``%eca help``.
"""

from __future__ import annotations

from typing import Any

from ._magics import EcaMagics, arun_magic, current_session
from ._magics import load as _load
from ._magics import unload as _unload

__all__ = [
    "EcaMagics",
    "arun_magic",
    "current_session",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%eca`` / ``%%eca`` (and the transformer that lets a ``%eca`` cell return without blocking)."""
    from .._redact import protect_log_handlers

    protect_log_handlers()  # the kernel owns logging: our records still never show a secret
    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Stop running prompts, close the engine and remove the magics."""
    _unload(ipython)
