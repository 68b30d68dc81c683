"""eca-notebook: an AI code assistant for Jupyter that speaks the ECA protocol.

Importing this package is cheap on purpose: every door (stdio server, notebook magics, jupyter-server extension,
JupyterLab panel) is imported lazily by the function that opens it, so ``import eca_notebook`` pulls in neither
pydantic models nor httpx nor anything from Jupyter.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = [
    "EcaClient",
    "SyncEcaClient",
    "__version__",
    "_jupyter_labextension_paths",
    "_jupyter_server_extension_points",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    """``from eca_notebook import EcaClient`` without importing the client (or the engine) at package import."""
    if name in ("EcaClient", "SyncEcaClient"):
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'eca_notebook' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext eca_notebook``: registers the ``%eca`` / ``%%eca`` magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The jupyter-server extension (ECA over WebSocket + REST), enabled on install through jupyter-config."""
    from .server import extension_points

    return extension_points()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab side panel shipped inside the package."""
    from .server import labextension_paths

    # JupyterLab resolves `src` against this module's folder; the build lives under eca_notebook/server/.
    return [{**p, "src": f"server/{p['src']}"} for p in labextension_paths()]
