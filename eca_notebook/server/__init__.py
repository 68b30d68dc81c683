"""The jupyter-server door (layer 5): ECA over an authenticated WebSocket, a REST API, the prebuilt lab extension.

Importing this package is cheap: jupyter_server and tornado are imported by :func:`extension_points`, which only
the Jupyter server calls. The JupyterLab panel is built into ``labextension/`` next to this file.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "_jupyter_labextension_paths",
    "_jupyter_server_extension_points",
    "extension_points",
    "labextension_paths",
]


def extension_points() -> list[dict[str, Any]]:
    """What ``_jupyter_server_extension_points`` returns: the :class:`~.app.EcaExtensionApp`."""
    from .app import EcaExtensionApp

    return [{"module": "eca_notebook", "app": EcaExtensionApp}]


def labextension_paths() -> list[dict[str, str]]:
    """The prebuilt panel: ``src`` is relative to this folder (``eca_notebook/server/``)."""
    return [{"src": "labextension", "dest": "eca-notebook"}]


# Also discoverable as ``eca_notebook.server`` itself (``src`` above is relative to *this* module's folder).
_jupyter_server_extension_points = extension_points
_jupyter_labextension_paths = labextension_paths
