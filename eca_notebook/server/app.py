"""The jupyter-server extension app: ECA over WebSocket plus the REST API, one shared engine per workspace.

Enabled on install by ``jupyter-config/jupyter_server_config.d/eca_notebook.json`` (shared data of the wheel).
Settings (``c.EcaExtensionApp.<name>`` in a Jupyter config file, or ``--EcaExtensionApp.<name>=`` on the command
line) are the limits of each WebSocket and the ECA config file shared by every workspace engine.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Integer, Unicode

from .._redact import protect_log_handlers
from ..tools.live_kernel import LiveKernelPlugin
from ._kernels import JupyterKernels
from ._workspaces import DEFAULT_IDLE_TIMEOUT, WorkspaceManager
from .handlers import route_table
from .ws import Limits, ServerState

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

    preload_local_model = Bool(
        True,
        help="Load the embedded model in the background as the server starts when it is the default model (no "
             "provider configured), so the first question doesn't wait for it. Never delays startup; loads nothing "
             "when a real provider is the default or localModel is false.",
    ).tag(config=True)

    idle_engine_timeout = Float(
        DEFAULT_IDLE_TIMEOUT,
        help="Seconds a workspace engine may sit unused (no connection, no chat running, no request) before it is "
             "released to free its memory; its chats are saved and come back on the next use. 0 keeps engines "
             "until the server stops.",
    ).tag(config=True)

    state: ServerState | None = None
    _kernels: JupyterKernels | None = None
    _preload: asyncio.Task[object] | None = None

    def initialize_settings(self) -> None:
        assert self.serverapp is not None
        protect_log_handlers(self.log)  # Jupyter owns logging here: redact on its handlers
        # the notebooks' kernels, for the panel's list_variables / inspect_variable / run_python and @ variables
        self._kernels = JupyterKernels(self.serverapp.session_manager, self.serverapp.kernel_manager,
                                       self.serverapp.root_dir)
        kernels = self._kernels
        manager = WorkspaceManager(
            self.serverapp.root_dir,
            config_file=Path(self.config_file).expanduser() if self.config_file else None,
            idle_timeout=self.idle_engine_timeout,
            engine_setup=lambda engine: engine.add_plugin(LiveKernelPlugin(kernels)),
        )
        limits = Limits(max_message_size=self.max_message_size, max_pending_bytes=self.max_pending_bytes,
                        write_timeout=self.write_timeout, inbox_size=self.inbox_size)
        self.state = ServerState(manager=manager, limits=limits)
        self.settings["eca_notebook_state"] = self.state

    def initialize_handlers(self) -> None:
        assert self.state is not None
        self.handlers.extend(route_table(self.state))

    async def _start_jupyter_server_extension(self, serverapp: object) -> None:
        """Runs once the server's event loop is running: start the preload as a task and return at once."""
        if self.preload_local_model and self.state is not None:
            from ..engine import preload_default_model

            manager = self.state.manager
            self._preload = asyncio.ensure_future(
                preload_default_model([manager.root], config_file=manager.config_file)
            )
            self._preload.add_done_callback(_log_preload_failure)

    async def stop_extension(self) -> None:
        if self._preload is not None and not self._preload.done():
            self._preload.cancel()
        if self._preload is not None:
            from ..providers.local import shutdown_local_runtimes

            await shutdown_local_runtimes()  # the preloaded runtime, even if no engine ever used it
        if self.state is not None:
            log.info("stopping the ECA engines")
            await self.state.aclose()
        if self._kernels is not None:
            self._kernels.close()


def _log_preload_failure(task: asyncio.Task[object]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("preloading the local model failed", exc_info=task.exception())
