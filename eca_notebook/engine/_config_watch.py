"""Config files watched while the engine runs: an edit takes effect without a restart, and clients are told.

The files are the ones the loader read — the global ``$XDG_CONFIG_HOME/eca/config.json`` (or ``--config-file``
instead) and each workspace's ``.eca/config.json`` — including those that did not exist yet, so creating one counts
too. ``pureConfig`` reads no file, so nothing is watched then.

Why a poll: a ``stat`` of two or three files every :data:`POLL_SECONDS` costs nothing, works on every filesystem and
platform (network mounts, containers), and needs no dependency. A change is the file's (mtime, size, inode): an
editor that saves by renaming a new file into place changes the inode even within one mtime tick. A change is acted
on once the files look the same twice :data:`SETTLE_SECONDS` apart, so a file caught half written is read whole.

What a reload does (:func:`reload_config`): every layer is loaded again as at start-up. When a file that was
readable now is not (invalid JSON, a wrong type that rejects the layer), the previous configuration stays in
effect and the clients are shown why — an edit in progress must not turn approvals back to the defaults. Otherwise
the engine takes the new configuration: models and the default model, behaviours, approval rules, disabled tools,
the welcome message; then every client gets ``config/updated`` and the native ``tool/serverUpdated`` (a deny rule
can hide a tool). MCP servers are started from the config once, at start-up: a change to ``mcpServers`` is reported
as needing a restart (``mcp/startServer`` / ``mcp/stopServer`` still work).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._redact import add_secrets
from .config import LoadedConfig, load_config
from .models import ModelRegistry
from .workspace import agent_dirs, agent_files

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["POLL_SECONDS", "SETTLE_SECONDS", "ConfigWatcher", "reload_config", "watch_config", "watched_files"]

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often the config files are looked at
SETTLE_SECONDS = 0.2  # a changed file must look the same this much later before it is read

Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: the file does not exist


def _stamp(path: Path) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def watched_files(loaded: LoadedConfig) -> list[Path]:
    """The config files behind *loaded* (read or not found); none under ``pureConfig``."""
    if loaded.config.pure_config:
        return []
    return [Path(s.path) for s in loaded.sources
            if s.path is not None and (s.name in ("global", "config-file") or s.name.startswith("workspace:"))]


class ConfigWatcher:
    """Polls *paths* and calls *on_change* (awaited) after they changed and settled."""

    def __init__(self, paths: Sequence[Path], on_change: Callable[[], object], *,
                 interval: float = POLL_SECONDS, settle: float = SETTLE_SECONDS) -> None:
        self.paths = list(paths)
        self.on_change = on_change
        self.interval = interval
        self.settle = settle
        self._stamps = self._look()

    def _look(self) -> list[Stamp]:
        return [_stamp(path) for path in self.paths]

    def changed(self) -> bool:
        """Whether the files differ from the last look (and remember this look)."""
        now = self._look()
        if now == self._stamps:
            return False
        self._stamps = now
        return True

    async def run(self) -> None:
        """Until cancelled: poll, and after a settled change call *on_change* (its failures are logged)."""
        while True:
            await asyncio.sleep(self.interval)
            if not self.changed():
                continue
            await asyncio.sleep(self.settle)
            while self.changed():  # still being written: wait until two looks agree
                await asyncio.sleep(self.settle)
            try:
                result = self.on_change()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # a reload bug must not end the watching
                log.exception("reloading the configuration failed")


def _show(engine: Engine, kind: str, message: str) -> None:
    engine.broadcast("$/showMessage", {"type": kind, "message": message})


def _rejected_files(loaded: LoadedConfig) -> dict[str, str]:
    """File layers skipped as a whole, by layer name → why."""
    return {s.name: s.problem for s in loaded.sources
            if s.path is not None and not s.applied and s.problem and s.note is None}


async def reload_config(engine: Engine) -> bool:
    """Load every layer again and apply it; True when the engine took a new configuration (see the module doc)."""
    # Off the event loop: reading the layers may run ``${cmd:…}`` (up to its time limit) — in a notebook the loop
    # is the kernel's.
    new = await asyncio.to_thread(load_config, workspace_folders=engine.workspace_folders,
                                  initialization_options=engine.options.initialization_options,
                                  config_file=engine.options.config_file, env=engine.env)
    old = engine.loaded
    before = _rejected_files(old)
    broken = {name: why for name, why in _rejected_files(new).items() if before.get(name) != why}
    if broken:
        reasons = "; ".join(broken.values())
        log.warning("config change not applied, the previous configuration stays in effect: %s", reasons)
        _show(engine, "warning", f"Config change not applied: {reasons}. The previous configuration stays in "
                                 "effect until the file is fixed.")
        return False
    if new.raw == old.raw:
        engine.loaded = new  # (e.g. a file fixed back to what it was: its problem is gone)
        return _announce_agents(engine)
    old_default = engine.registry.default_model()
    _apply(engine, new)
    await engine.registry.discover()
    models = engine.registry.models()
    # a model no client chose (the default) follows the file; one a client chose stays while it exists
    if engine.selected_model is None or engine.selected_model == old_default or engine.selected_model not in models:
        engine.selected_model = engine.registry.default_model()
    log.info("configuration reloaded")
    for problem in new.problems:
        if problem not in old.problems:
            _show(engine, "warning", f"Config problem: {problem}")
    if new.config.mcp_servers != old.config.mcp_servers:
        _show(engine, "info", "MCP server changes in the config take effect after a restart.")
    engine.broadcast("config/updated", engine.config_updated().dump())
    engine.broadcast("tool/serverUpdated", engine.native_tools().dump())
    return True


def _apply(engine: Engine, new: LoadedConfig) -> None:
    """Swap the engine's configuration and model registry. A running turn keeps the provider it resolved."""
    old_registry = engine.registry
    old_behavior = engine._initial_behavior()
    engine.loaded = new
    config = engine.trust.effective_config()  # an untrusted workspace's held parts left out (_trust.py)
    registry = ModelRegistry(config, engine.env, engine.http, problems=new.problems)
    registry.local_progress = old_registry.local_progress
    registry.adopt(old_registry)
    engine.config, engine.registry = config, registry
    add_secrets(engine._config_secrets())
    if engine.selected_behavior == old_behavior or engine.selected_behavior not in engine.behaviors():
        engine.selected_behavior = engine._initial_behavior()  # (like the model: the default follows the file)
    if engine.mcp is not None:
        engine.mcp.timeout = new.config.mcp_timeout_seconds


def _announce_agents(engine: Engine) -> bool:
    """A markdown agent was added, removed or edited (the config itself is unchanged): when the agents a client may
    select changed, tell the clients (``config/updated``). The engine's agents rebuild by themselves."""
    if engine.behaviors() == engine.announced_agents:
        return False
    if engine.selected_behavior not in engine.behaviors():
        engine.selected_behavior = engine._initial_behavior()
    for problem in engine.agents.problems:
        _show(engine, "warning", f"Config problem: {problem}")
    engine.broadcast("config/updated", engine.config_updated().dump())
    engine.broadcast("tool/serverUpdated", engine.native_tools().dump())
    return True


def watch_config(engine: Engine) -> ConfigWatcher | None:
    """Start watching the engine's config files in its background tasks (None when there is none to watch); the
    markdown agents' folders and files too, so an agent file added or removed is announced."""
    paths = watched_files(engine.loaded)
    if not paths:
        return None
    extra = [*agent_dirs(engine.workspace_folders, engine.global_config_dir),
             *agent_files(engine.workspace_folders, engine.global_config_dir)]
    paths += [p for p in extra if p not in paths]
    watcher = ConfigWatcher(paths, lambda: reload_config(engine))
    engine.background.spawn(watcher.run(), "eca-config-watch")
    return watcher
