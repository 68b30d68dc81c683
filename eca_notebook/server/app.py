"""The jupyter-server extension app: ECA over WebSocket plus the REST API, one shared engine per workspace.

Enabled on install by ``jupyter-config/jupyter_server_config.d/eca_notebook.json`` (shared data of the wheel).
Settings (``c.EcaExtensionApp.<name>`` in a Jupyter config file, or ``--EcaExtensionApp.<name>=`` on the command
line) are the limits of each WebSocket and the ECA config file shared by every workspace engine.
"""

from __future__ import annotations

import logging
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, Integer, Unicode

from .._redact import protect_log_handlers
from .handlers import route_table
from .ws import Limits, ServerState
from ._workspaces import WorkspaceManager

__all__ = ["EcaExtensionApp"]

log = logging.getLogger(__name__)


class EcaExtensionApp(ExtensionApp):
    name = "eca_notebook"
    description = "ECA (Editor Code Assistant) for Jupyter: WebSocket + REST API"
    load_other_extensions = True

    config_file = Unicode(
        "",
        help="An ECA config file replacing ~/.config/eca/config.json for every workspace engine ('' = the default).",
    ).tag(config=True)

    max_message_size = Integer(
        Limits.max_message_size,
        help="Largest WebSocket message accepted, in bytes. Larger ones are answered with a JSON-RPC -32600 error "
             "(up to twice this size; beyond, the socket is closed with 1009).",
    ).tag(config=True)

    max_pending_bytes = Integer(
        Limits.max_pending_bytes,
        help="Outgoing bytes queued for one WebSocket before its client is disconnected (a memory cap).",
    ).tag(config=True)

    write_timeout = Float(
        Limits.write_timeout,
        help="Seconds one outgoing frame may wait for a WebSocket client that does not read before it is disconnected.",
    ).tag(config=True)

    inbox_size = Integer(
        Limits.inbox_size,
        help="Incoming messages queued per WebSocket before the server stops reading from it (backpressure).",
    ).tag(config=True)

    state: ServerState | None = None

    def initialize_settings(self) -> None:
        assert self.serverapp is not None
        protect_log_handlers(self.log)  # Jupyter owns logging here: redact on its handlers
        manager = WorkspaceManager(
            self.serverapp.root_dir,
            config_file=Path(self.config_file).expanduser() if self.config_file else None,
        )
        limits = Limits(max_message_size=self.max_message_size, max_pending_bytes=self.max_pending_bytes,
                        write_timeout=self.write_timeout, inbox_size=self.inbox_size)
        self.state = ServerState(manager=manager, limits=limits)
        self.settings["eca_notebook_state"] = self.state

    def initialize_handlers(self) -> None:
        assert self.state is not None
        self.handlers.extend(route_table(self.state))

    async def stop_extension(self) -> None:
        if self.state is not None:
            log.info("stopping the ECA engines")
            await self.state.aclose()
