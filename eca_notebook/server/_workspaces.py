"""Workspaces of the Jupyter server: which folders a client may use, and one shared engine per workspace.

Why one engine per workspace, shared: chats belong to a workspace, not to a browser tab. Every WebSocket of the same
workspace (two tabs, two users, a reload) attaches to the same :class:`~eca_notebook.engine.Engine`, so they all see
the same chats and a reload finds them again. Engines are created on first use (a WebSocket ``initialize`` or a REST
call) and closed when the server stops — or, so a long-running Jupyter server does not keep every workspace's chats
in memory, once idle for ``idle_timeout`` seconds: no connection, no chat running, no call for that long. The
engine's last saves are flushed when it closes; the next use creates a new one, which finds the saved chats on disk.

Why the root check: the server may only hand out folders under its ``root_dir`` (what the user chose to serve).
Every path a client names — the ``?workspace=`` query, ``workspaceFolders`` in ``initialize``, a REST body — is
resolved (``..`` and symlinks included) and refused when it leaves the root.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..engine import Engine, EngineOptions
from ..protocol import JsonObject

__all__ = ["Workspace", "WorkspaceError", "WorkspaceManager", "workspace_id_for"]

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT = 30 * 60.0  # seconds an engine may sit unused before it is released


class WorkspaceError(ValueError):
    """A client named a folder it may not use (outside the root, missing, not a directory)."""


def workspace_id_for(folders: Iterable[Path]) -> str:
    """A stable id for a set of folders (order-free): the same scheme as the saved-chats directory, 16 hex chars."""
    joined = "\n".join(sorted(str(p) for p in folders))
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(eq=False)
class Workspace:
    """One registered workspace: its folders (absolute, resolved) and, once used, its engine."""

    id: str
    folders: list[Path]
    root: Path
    engine: Engine | None = None
    connections: int = 0
    last_used: float = field(default_factory=time.monotonic)  # the last call, or the last connection's end
    _start: asyncio.Task[None] | None = field(default=None, repr=False)

    def busy(self) -> bool:
        """Anything that must outlive a release: a client attached, a start under way, a chat running or waiting, a
        background job running (a training run must not die because its tab was closed)."""
        engine = self.engine
        if engine is None:
            return False
        if self.connections > 0 or (self._start is not None and not self._start.done()):
            return True
        return (any(chat.running for chat in engine.chats.values()) or bool(engine.pending_approvals)
                or engine.jobs.running_count() > 0)

    @property
    def path(self) -> str:
        """The first folder relative to the server root (``""`` for the root itself)."""
        return _relative(self.folders[0], self.root)

    @property
    def name(self) -> str:
        return self.folders[0].name or "root"

    @property
    def state(self) -> str:
        if self.engine is None:
            return "stopped"
        if self._start is None or not self._start.done():
            return "starting"
        return "running"

    def describe(self, *, default: bool) -> JsonObject:
        return {
            "id": self.id,
            "path": self.path,
            "name": self.name,
            "folders": [_relative(f, self.root) for f in self.folders],
            "default": default,
            "engine": self.state,
            "connections": self.connections,
        }


def _relative(path: Path, root: Path) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else Path(rel).as_posix()


class WorkspaceManager:
    """Registered workspaces of one server process, each with at most one engine.

    ``engine_options`` lets the extension pass server-side settings (``config_file``) to every engine it creates;
    ``engine_class`` exists for tests that need to count or observe engine creation; ``engine_setup`` is called with
    every engine created (the server extension adds the live-kernel plug-in there).
    """

    def __init__(
        self,
        root_dir: Path | str,
        *,
        config_file: Path | None = None,
        engine_factory: Callable[[EngineOptions], Engine] = Engine,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        engine_setup: Callable[[Engine], None] | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(os.path.expanduser(str(root_dir))))
        self.config_file = config_file
        self._engine_factory = engine_factory
        self._engine_setup = engine_setup  # e.g. the live-kernel plug-in, added to every new engine
        self._workspaces: dict[str, Workspace] = {}
        self._closed = False
        self.idle_timeout = idle_timeout if idle_timeout and idle_timeout > 0 else None
        self._reaper: asyncio.Task[None] | None = None
        self.default = self.register([self.root])

    # -- paths -----------------------------------------------------------------------------------------------------

    def resolve(self, path: str | os.PathLike[str] | None) -> Path:
        """A client-named folder as an absolute, resolved path under the root.

        Accepts a path relative to the root (``""``/``None`` = the root), an absolute path, or a ``file://`` URI.
        Raises :class:`WorkspaceError` when it leaves the root (after ``..`` and symlinks) or is not a directory.
        """
        text = "" if path is None else os.fspath(path)
        if "\x00" in text:
            raise WorkspaceError("a workspace path cannot contain NUL characters")
        if text.startswith("file:"):
            parsed = urlparse(text)
            if parsed.netloc not in ("", "localhost"):
                raise WorkspaceError(f"workspace URI with a remote host is not supported: {parsed.netloc}")
            text = unquote(parsed.path)
        candidate = Path(text) if text else self.root
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = Path(os.path.realpath(candidate))
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"workspace folder {text!r} is outside the server root")
        if not resolved.is_dir():
            raise WorkspaceError(f"workspace folder {_relative(resolved, self.root) or '.'!r} is not a directory")
        return resolved

    # -- registry --------------------------------------------------------------------------------------------------

    def register(self, folders: Iterable[Path]) -> Workspace:
        """The workspace of these (already resolved) folders, registering it on first sight. Order is kept: the
        first folder names the workspace; the id does not depend on the order."""
        unique = list(dict.fromkeys(Path(f) for f in folders))
        if not unique:
            raise WorkspaceError("a workspace needs at least one folder")
        wid = workspace_id_for(unique)
        workspace = self._workspaces.get(wid)
        if workspace is None:
            workspace = Workspace(id=wid, folders=unique, root=self.root)
            self._workspaces[wid] = workspace
            log.info("registered workspace %s (%s)", wid, workspace.path or ".")
        return workspace

    def register_path(self, path: str | None) -> Workspace:
        return self.register([self.resolve(path)])

    def get(self, workspace_id: str) -> Workspace | None:
        return self._workspaces.get(workspace_id)

    def list(self) -> builtins.list[Workspace]:
        return [*self._workspaces.values()]

    def started(self) -> builtins.list[Workspace]:
        return [w for w in self._workspaces.values() if w.engine is not None]

    # -- engines ---------------------------------------------------------------------------------------------------

    def engine_for(self, workspace: Workspace) -> Engine:
        """The workspace's engine, created (not yet started) on first use. Synchronous: the WebSocket's engine
        factory is called synchronously by :class:`~eca_notebook.serving.ServerConnection`."""
        if self._closed:
            raise RuntimeError("the server is stopping")
        workspace.last_used = time.monotonic()
        if workspace.engine is None:
            workspace.engine = self._engine_factory(
                EngineOptions(workspace_folders=list(workspace.folders), config_file=self.config_file)
            )
            if self._engine_setup is not None:
                self._engine_setup(workspace.engine)
            log.info("engine created for workspace %s", workspace.id)
            self._watch_idle()
        return workspace.engine

    def detached(self, workspace: Workspace) -> None:
        """A connection of *workspace* ended: its idle time starts now."""
        workspace.last_used = time.monotonic()

    # -- idle engines ------------------------------------------------------------------------------------------------

    def _watch_idle(self) -> None:
        if self.idle_timeout is None or (self._reaper is not None and not self._reaper.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # created outside a loop (a test): the next call from inside one starts the watch
            return
        self._reaper = loop.create_task(self._reap(), name="eca-idle-engines")

    async def _reap(self) -> None:
        """Release idle engines; checks a few times per timeout, and stops when no engine is left."""
        assert self.idle_timeout is not None
        period = min(60.0, max(0.05, self.idle_timeout / 4))
        while not self._closed and self.started():
            await asyncio.sleep(period)
            await self.release_idle()

    async def release_idle(self) -> builtins.list[Workspace]:
        """Close the engines idle for ``idle_timeout`` seconds (their chats are saved; they come back on use)."""
        if self.idle_timeout is None:
            return []
        now = time.monotonic()
        released = []
        for workspace in list(self._workspaces.values()):
            if workspace.engine is None or workspace.busy() or now - workspace.last_used < self.idle_timeout:
                continue
            engine, workspace.engine, workspace._start = workspace.engine, None, None
            released.append(workspace)
            log.info("releasing the idle engine of workspace %s (unused for %.0f s)", workspace.id,
                     now - workspace.last_used)
            try:
                await engine.aclose()
            except Exception:
                log.exception("closing the idle engine of workspace %s failed", workspace.id)
        return released

    async def ready(self, workspace: Workspace) -> Engine:
        """The workspace's engine, created and started (model discovery, index). Concurrent callers share one start,
        so nobody sees a half-discovered model list."""
        engine = self.engine_for(workspace)
        if workspace._start is None:
            workspace._start = asyncio.ensure_future(self._start_engine(workspace, engine))
        await asyncio.shield(workspace._start)
        return engine

    @staticmethod
    async def _start_engine(workspace: Workspace, engine: Engine) -> None:
        try:
            await engine.start()
        except Exception:  # a failed discovery must not make the workspace unusable
            log.exception("starting the engine of workspace %s failed", workspace.id)

    async def aclose(self) -> None:
        """Close every engine (server stop). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        for workspace in self._workspaces.values():
            engine, workspace.engine = workspace.engine, None
            start, workspace._start = workspace._start, None
            if start is not None and not start.done():
                start.cancel()
                with contextlib.suppress(BaseException):
                    await start
            if engine is not None:
                try:
                    await engine.aclose()
                except Exception:
                    log.exception("closing the engine of workspace %s failed", workspace.id)
