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
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._redact import add_secrets, secret_env_values, secret_header_values, secrets_of_url
from ..protocol import JsonObject
from .config import Config, LoadedConfig, load_config, netrc_passwords
from .models import ModelRegistry
from .workspace import Agents, WorkspaceTrust, agent_dirs, agent_files

if TYPE_CHECKING:
    import httpx

    from .._tasks import BackgroundTasks
    from ..mcp import McpManager
    from ..protocol import ConfigUpdatedParams, NativeServerUpdatedParams

__all__ = ["POLL_SECONDS", "SETTLE_SECONDS", "ConfigHost", "ConfigOptions", "ConfigWatcher", "config_secrets",
           "default_agent", "reload_config", "use_config", "watch_config", "watched_files"]

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0  # how often the config files are looked at
SETTLE_SECONDS = 0.2  # a changed file must look the same this much later before it is read

Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: the file does not exist

_CREDENTIAL_ENV = re.compile(r"(?i)(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")


class ConfigOptions(Protocol):
    """How the engine's config is loaded (the engine's options): the client's options and a config file instead of
    the global one."""

    @property
    def initialization_options(self) -> JsonObject | None: ...
    @property
    def config_file(self) -> Path | None: ...


class ConfigHost(Protocol):
    """The engine as a config change sees it: what the config is loaded from, the config and what is built from it
    (the model registry, the selections that follow the defaults, the MCP timeout), and the clients told.

    The attributes without a property are the ones a reload replaces."""

    loaded: LoadedConfig
    config: Config
    registry: ModelRegistry
    selected_model: str | None
    selected_behavior: str

    @property
    def options(self) -> ConfigOptions: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def http(self) -> httpx.AsyncClient: ...
    @property
    def trust(self) -> WorkspaceTrust: ...
    @property
    def agents(self) -> Agents: ...
    @property
    def announced_agents(self) -> list[str] | None: ...
    @property
    def mcp(self) -> McpManager | None: ...
    def behaviors(self) -> list[str]: ...
    def broadcast(self, method: str, params: JsonObject) -> None: ...
    def config_updated(self) -> ConfigUpdatedParams: ...
    def native_tools(self) -> NativeServerUpdatedParams: ...


def config_secrets(registry: ModelRegistry, config: Config, env: Mapping[str, str]) -> list[str]:
    """Every value of this workspace's config that is a secret, for the process-wide redaction registry.

    Provider keys (from config, ``<ID>_API_KEY`` or ``${env:…}``), header values (provider and model), URL
    userinfo and credential-like query values, MCP env values and headers, and every environment variable whose
    name says it holds a credential (a shell tool printing ``env`` must not hand them to the model), and every
    password of the user's netrc.
    """
    values: list[str | None] = []
    for provider in registry.providers.values():
        values.append(provider.key)
        values += secret_header_values(provider.headers)
        values += secrets_of_url(provider.url)
        for model in provider.models.values():
            values += secret_header_values(model.extra_headers)
    for server in config.mcp_servers.values():
        values += secret_env_values(server.env)
        values += secret_header_values(server.headers)
        values += secrets_of_url(server.url)
    values += [v for k, v in env.items() if _CREDENTIAL_ENV.search(k) and len(v) >= 8]
    netrc_file = (config.model_extra or {}).get("netrcFile")
    values += netrc_passwords(env, netrc_file if isinstance(netrc_file, str) else None)
    return [v for v in values if v]


def default_agent(agents: Agents, config: Config) -> str:
    """The agent new prompts start with: the config's ``defaultAgent`` when it is a primary agent, else ``code``."""
    agent = agents.get(config.default_behavior)
    return agent.id if agent is not None and agent.primary else "code"


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


def _show(engine: ConfigHost, kind: str, message: str) -> None:
    engine.broadcast("$/showMessage", {"type": kind, "message": message})


def _rejected_files(loaded: LoadedConfig) -> dict[str, str]:
    """File layers skipped as a whole, by layer name → why."""
    return {s.name: s.problem for s in loaded.sources
            if s.path is not None and not s.applied and s.problem and s.note is None}


async def reload_config(engine: ConfigHost) -> bool:
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


def _apply(engine: ConfigHost, new: LoadedConfig) -> None:
    """Swap the engine's configuration and model registry. A running turn keeps the provider it resolved."""
    old_registry = engine.registry
    old_behavior = default_agent(engine.agents, engine.config)
    engine.loaded = new
    config = engine.trust.effective_config()  # an untrusted workspace's held parts left out (_trust.py)
    registry = ModelRegistry(config, engine.env, engine.http, problems=new.problems)
    registry.local_progress = old_registry.local_progress
    registry.adopt(old_registry)
    engine.config, engine.registry = config, registry
    add_secrets(config_secrets(registry, config, engine.env))
    if engine.selected_behavior == old_behavior or engine.selected_behavior not in engine.behaviors():
        # (like the model: the default follows the file)
        engine.selected_behavior = default_agent(engine.agents, engine.config)
    if engine.mcp is not None:
        engine.mcp.timeout = new.config.mcp_timeout_seconds


async def use_config(engine: ConfigHost, config: Config) -> None:
    """Make *config* the engine's when it is not already — the trust's choice after the user trusted or revoked a
    workspace (workspace/_trust.py): a new model registry from it (a running turn keeps the provider it resolved),
    the default model following, every client told."""
    if config is engine.config:
        return
    old = engine.registry
    registry = ModelRegistry(config, engine.env, engine.http, problems=list(engine.loaded.problems))
    registry.local_progress = old.local_progress
    registry.adopt(old)
    old_default = old.default_model()
    engine.config, engine.registry = config, registry
    add_secrets(config_secrets(registry, config, engine.env))
    models = registry.models()
    if engine.selected_model is None or engine.selected_model == old_default or engine.selected_model not in models:
        engine.selected_model = registry.default_model()
    await engine.registry.discover()
    engine.broadcast("config/updated", engine.config_updated().dump())
    engine.broadcast("tool/serverUpdated", engine.native_tools().dump())


def _announce_agents(engine: ConfigHost) -> bool:
    """A markdown agent was added, removed or edited (the config itself is unchanged): when the agents a client may
    select changed, tell the clients (``config/updated``). The engine's agents rebuild by themselves."""
    if engine.behaviors() == engine.announced_agents:
        return False
    if engine.selected_behavior not in engine.behaviors():
        engine.selected_behavior = default_agent(engine.agents, engine.config)
    for problem in engine.agents.problems:
        _show(engine, "warning", f"Config problem: {problem}")
    engine.broadcast("config/updated", engine.config_updated().dump())
    engine.broadcast("tool/serverUpdated", engine.native_tools().dump())
    return True


def watch_config(loaded: LoadedConfig, workspace_folders: Sequence[Path], global_config_dir: Path,
                 background: BackgroundTasks, on_change: Callable[[], object]) -> ConfigWatcher | None:
    """Start watching the config files behind *loaded* in *background* (None when there is none to watch), calling
    *on_change* (the engine's reload) after a change; the markdown agents' folders and files too, so an agent file
    added or removed is announced."""
    paths = watched_files(loaded)
    if not paths:
        return None
    extra = [*agent_dirs(workspace_folders, global_config_dir), *agent_files(workspace_folders, global_config_dir)]
    paths += [p for p in extra if p not in paths]
    watcher = ConfigWatcher(paths, on_change)
    background.spawn(watcher.run(), "eca-config-watch")
    return watcher
