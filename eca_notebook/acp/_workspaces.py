"""The connection's working directories: one engine per ``cwd``, its MCP servers, its embedded-resources plug-in.

``session/new`` names a working directory; the connection keeps one :class:`~eca_notebook.engine.engine.Engine`
per directory, shared by that directory's sessions (saved chats, config and the file index are per workspace in
the engine too). A workspace is the engine's listener: it records the status of the MCP servers the client gave
us and hands every notification to the connection (``deliver``), which turns them into ``session/update``.

MCP servers given in ``session/new`` / ``session/load`` (stdio and HTTP) join the workspace's engine through the
MCP plug-in (:mod:`eca_notebook.mcp`); the session is answered once they run (or failed), bounded in time. Servers
are per workspace: a name already connected for the directory is not started twice.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..engine.config import McpServerConfig
from ..engine.engine import Engine, EngineOptions
from ..protocol import JsonObject
from ..protocol.errors import INVALID_PARAMS, RpcError
from ._files import ClientFiles
from ._prompt import EmbeddedResources
from ._schema import FILE_NOT_FOUND, PERMISSION_DENIED, McpServer

__all__ = [
    "MCP_SETTLED",
    "MCP_START_TIMEOUT",
    "Deliver",
    "EngineFactory",
    "Workspace",
    "Workspaces",
    "default_engine_factory",
    "mcp_available",
]

log = logging.getLogger(__name__)

EngineFactory = Callable[[Path], Engine]
#: ``deliver(workspace, method, params, replay)``: one engine notification for the connection; *replay* is the
#: session a chat replay is for (None for live notifications).
Deliver = Callable[["Workspace", str, JsonObject, Any], None]

MCP_SETTLED = ("running", "failed", "stopped", "disabled")
MCP_START_TIMEOUT = 30.0


def default_engine_factory(config_file: Path | None = None) -> EngineFactory:
    def create(cwd: Path) -> Engine:
        return Engine(EngineOptions(workspace_folders=[cwd], config_file=config_file))

    return create


def mcp_available() -> bool:
    """Whether MCP servers can be connected here: our MCP plug-in and the SDK it runs on are installed."""
    try:
        return importlib.util.find_spec("mcp") is not None and importlib.util.find_spec("eca_notebook.mcp") is not None
    except (ImportError, ValueError):
        return False


def _mcp_config(server: McpServer) -> McpServerConfig | None:
    """An ACP ``McpServer`` as the engine's ``mcpServers.<name>`` entry; None for a transport we cannot serve."""
    try:
        if server.type in (None, "stdio", "local") and server.command:  # "local": acp-messages.md's example
            return McpServerConfig(command=server.command, args=list(server.args),
                                   env={e.name: e.value for e in server.env})
        if server.type in ("http", "remote") and server.url:
            return McpServerConfig(url=server.url, headers={h.name: h.value for h in server.headers})
        if server.type == "sse" and server.url:  # the SDK's SSE client (config: "transport": "sse")
            return McpServerConfig.model_validate({"url": server.url, "transport": "sse",
                                                   "headers": {h.name: h.value for h in server.headers}})
    except ValueError:
        return None
    return None


class Workspace:
    """One working directory: its engine, and the listener through which the engine talks to the connection."""

    supports_diagnostics = False  # ACP has no diagnostics request: the engine hides editor_diagnostics

    def __init__(self, cwd: Path, engine: Engine, deliver: Deliver) -> None:
        self.cwd = cwd
        self.engine = engine
        self._deliver = deliver
        self.resources = EmbeddedResources()
        self.mcp_status: dict[str, str] = {}  # MCP servers the client gave us → their last status
        self._mcp_changed = asyncio.Event()
        self.ready = asyncio.Event()  # set once engine.start() returned (models discovered)

    def send(self, method: str, params: JsonObject) -> None:
        name = params.get("name")
        if method == "tool/serverUpdated" and params.get("type") == "mcp" and isinstance(name, str) \
                and name in self.mcp_status:
            self.mcp_status[name] = str(params.get("status"))
            self._mcp_changed.set()
        self._deliver(self, method, params, None)

    async def add_mcp_servers(self, servers: list[McpServer], timeout: float = MCP_START_TIMEOUT) -> None:
        """Connect a session's MCP servers (stdio and HTTP) through the engine's MCP plug-in and wait (bounded)
        until they run or failed."""
        configs: dict[str, McpServerConfig] = {}
        for server in servers:
            if server.name in self.mcp_status or server.name in configs:
                continue
            config = _mcp_config(server)
            if config is None:
                log.warning("MCP server %s: transport %r is not supported (stdio and http are)", server.name,
                            server.type)
                continue
            configs[server.name] = config
        if not configs:
            return
        try:
            from ..mcp import McpManager
        except ImportError:
            log.warning("MCP servers from the client ignored (%s): the MCP support is not installed "
                        "(pip install 'eca-notebook[mcp]')", ", ".join(configs))
            return
        self.mcp_status.update({name: "starting" for name in configs})
        # the config's mcpTimeoutSeconds bounds their start and calls, as it does the config's own servers
        self.engine.add_plugin(McpManager(configs, workspace_folders=[self.cwd],
                                          timeout=self.engine.config.mcp_timeout_seconds))
        await self.mcp_settled(list(configs), timeout)

    async def mcp_settled(self, names: list[str], timeout: float) -> None:
        """Wait (bounded) until the named MCP servers are running or have failed: the session's first prompt
        should see their tools."""
        async def wait() -> None:
            while any(self.mcp_status.get(n) not in MCP_SETTLED for n in names):
                self._mcp_changed.clear()
                await self._mcp_changed.wait()

        try:
            await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            slow = [n for n in names if self.mcp_status.get(n) not in MCP_SETTLED]
            log.warning("MCP servers still starting after %.0f s: %s", timeout, ", ".join(slow))
        for name in names:
            if self.mcp_status.get(name) == "failed":
                log.warning("MCP server %s from the client failed to start", name)


class Workspaces:
    """The connection's workspaces by directory, each created and started on first use.

    ``files()`` gives the engine's file access for a new workspace (the client's ``fs`` methods when it has them,
    else None: the disk)."""

    def __init__(self, engine_factory: EngineFactory, deliver: Deliver,
                 files: Callable[[], ClientFiles | None]) -> None:
        self._engine_factory = engine_factory
        self._deliver = deliver
        self._files = files
        self._by_path: dict[Path, Workspace] = {}
        self._lock = asyncio.Lock()

    def __iter__(self) -> Iterator[Workspace]:
        return iter(list(self._by_path.values()))

    async def get(self, cwd: str) -> Workspace:
        """The workspace (engine) of a directory, created and started on first use."""
        path = Path(os.path.normpath(cwd))
        if not path.exists():
            raise RpcError(FILE_NOT_FOUND, f"File not found: the cwd {path} does not exist", {"cwd": str(path)})
        if not path.is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd is not a directory: {path}", {"cwd": str(path)})
        if not os.access(path, os.R_OK | os.X_OK):
            raise RpcError(PERMISSION_DENIED, f"Permission denied: the agent may not open the cwd {path}",
                           {"cwd": str(path)})
        async with self._lock:  # held only to create: never while an engine starts
            workspace = self._by_path.get(path)
            created = workspace is None
            if workspace is None:
                workspace = self._create(path)
                self._by_path[path] = workspace
        if not created:
            await workspace.ready.wait()  # a concurrent session/new may still be starting it
            return workspace
        try:
            await workspace.engine.start()
        except Exception:
            log.exception("starting the engine for %s failed", path)
        finally:
            workspace.ready.set()
        return workspace

    def _create(self, path: Path) -> Workspace:
        engine = self._engine_factory(path)
        workspace = Workspace(path, engine, self._deliver)
        engine.add_listener(workspace)
        engine.add_plugin(workspace.resources)
        files = self._files()
        if files is not None:
            engine.file_access = files
        return workspace

    async def aclose(self) -> None:
        """Close every engine (the connection is ending)."""
        workspaces, self._by_path = list(self._by_path.values()), {}
        for workspace in workspaces:
            workspace.engine.remove_listener(workspace)
            try:
                await workspace.engine.aclose()
            except Exception:
                log.exception("closing the engine of %s failed", workspace.cwd)
