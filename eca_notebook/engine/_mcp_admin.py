"""MCP servers managed while the engine runs: ``mcp/addServer|removeServer|updateServer|enableServer|disableServer``.

Each change is written to the config file that owns the server — the global ``config.json`` (or ``--config-file``)
or a workspace folder's ``.eca/config.json`` — and then applied to the running servers, so what the user sees now is
what the next start reads. Why these rules:

* **The owning file only, atomically, every other key kept.** A user's config holds their provider keys; we replace
  the file whole through :func:`~eca_notebook._fileio.atomic_write` (a reader never sees half a file) after changing
  only ``mcpServers.<name>``. Values the user passed (``env``, ``headers``) go into that file and nowhere else; they
  are never logged (messages carry names and paths only).
* **Files with comments are refused, not rewritten.** The loader accepts ``//`` comments and trailing commas
  (:func:`._config_syntax.parse_jsonc`), but writing the parsed data back would silently drop the user's comments.
  Such a file gets a clear error naming it, and the user edits it by hand.
* **No double start.** After our own write the engine's loaded config is refreshed at once when only
  ``mcpServers`` changed, so the config watcher's next look finds nothing new (it never starts servers anyway).
* **One start path.** Every start goes through :func:`launch`, so a gate (workspace trust) has one place to sit.

Failures of the requests are results (``error: {code, message}``) as in the reference; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from .._fileio import atomic_write
from .._redact import add_secrets
from ..protocol import JsonObject
from ..protocol.tools import (
    McpAddServerParams,
    McpAddServerResult,
    McpError,
    McpRemoveServerResult,
    McpServerUpdatedParams,
    McpUpdateServerParams,
    McpUpdateServerResult,
)
from ._config_watch import ConfigOptions, config_secrets
from .config import Config, LoadedConfig, McpServerConfig, global_config_path, interpolate_env, load_config, parse_jsonc
from .models import ModelRegistry
from .workspace import WorkspaceTrust

if TYPE_CHECKING:
    from .._tasks import BackgroundTasks
    from ..mcp import McpManager
    from ..plugins import Plugin

__all__ = [
    "ConfigEditError",
    "McpHost",
    "add_server",
    "edit_config_file",
    "launch",
    "remove_server",
    "set_disabled",
    "update_server",
]

log = logging.getLogger(__name__)

#: Keys of ``mcpServers.<name>`` that ``mcp/addServer`` writes (wire name → config key; the same camelCase).
_ADD_KEYS = ("command", "args", "env", "url", "headers", "clientId", "clientSecret", "oauthPort", "authScope",
             "disabled")

_locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


class McpHost(Protocol):
    """The engine as a user's MCP server change sees it: the config files (where they are, as loaded, the config
    that applies — replaced after our own write), the MCP plug-in (created on the first server), the trust (where a
    server runs, which folders stay trusted), and the background tasks a server starts in.

    The attributes without a property are the ones an edit replaces."""

    loaded: LoadedConfig
    config: Config
    mcp: McpManager | None

    @property
    def options(self) -> ConfigOptions: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def registry(self) -> ModelRegistry: ...
    @property
    def trust(self) -> WorkspaceTrust: ...
    @property
    def background(self) -> BackgroundTasks: ...
    def add_plugin(self, plugin: Plugin) -> None: ...


class ConfigEditError(Exception):
    """A change that cannot be made; ``code`` is the result error's code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def result_error(self) -> McpError:
        """The ``error`` of an ``mcp/*`` result (those requests answer failures as results, as the reference)."""
        return McpError(code=self.code, message=self.message)


# -- the config file writer --------------------------------------------------------------------------------------


def _read_for_edit(path: Path) -> JsonObject:
    """The file's JSON object, {} for a missing or empty file; refuses what we could not write back faithfully."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigEditError("config-file", f"{path}: cannot read: {reason}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        try:
            parse_jsonc(text)
        except json.JSONDecodeError:
            raise ConfigEditError("config-file", f"{path}: invalid JSON ({exc.msg}, line {exc.lineno}); fix the "
                                                 "file first") from None
        raise ConfigEditError("config-file", f"{path} has comments or trailing commas, which rewriting it would "
                                             "drop; make this change in the file by hand") from None
    if not isinstance(data, dict):
        raise ConfigEditError("config-file", f"{path}: expected a JSON object")
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise ConfigEditError("config-file", f"{path}: 'mcpServers' is not an object")
    return data


def edit_config_file(path: Path, edit: Callable[[JsonObject], bool]) -> bool:
    """Apply *edit* to the ``mcpServers`` object of the config file at *path* and write the file atomically.

    *edit* gets the (possibly new) ``mcpServers`` dict and returns whether it changed anything; nothing is written
    otherwise. Every other key of the file is kept in its order; a new file (and its folder) is created. Raises
    :class:`ConfigEditError` for a file that cannot be read, parsed or written back without losing comments.
    """
    data = _read_for_edit(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        servers = {}
    if not edit(servers):
        return False
    data["mcpServers"] = servers
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise ConfigEditError("config-file", f"{path}: cannot write: {exc.strerror or type(exc).__name__}") from None
    return True


# -- which file ------------------------------------------------------------------------------------------------


def _global_file(engine: McpHost) -> Path:
    if engine.options.config_file is not None:
        return Path(engine.options.config_file).expanduser()
    return global_config_path(engine.env)


def _config_files(engine: McpHost) -> list[Path]:
    """The files the config is read from, in merge order (the last one wins)."""
    return [_global_file(engine), *(Path(folder) / ".eca" / "config.json" for folder in engine.workspace_folders)]


def _files_defining(engine: McpHost, name: str) -> list[Path]:
    """The config files with an ``mcpServers.<name>`` entry, in merge order (unreadable files are skipped)."""
    found = []
    for path in _config_files(engine):
        try:
            text = path.read_text(encoding="utf-8-sig")
            data = parse_jsonc(text) if text.strip() else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        if isinstance(servers, dict) and isinstance(servers.get(name), dict):
            found.append(path)
    return found


def _workspace_file(engine: McpHost, uri: str | None) -> Path:
    if not uri and len(engine.workspace_folders) == 1:
        # (lenient: a client that does not know the folder — the panel, whose server picks its Jupyter root — may
        # leave it out when there is only one; the reference requires it, and clients that send it are unaffected)
        return Path(engine.workspace_folders[0]) / ".eca" / "config.json"
    if not uri:
        raise ConfigEditError("missing-workspace-uri", "scope 'workspace' needs workspaceUri: the workspace folder "
                                                       "whose .eca/config.json gets the server")
    parsed = urlparse(uri)
    folder = Path(unquote(parsed.path) if parsed.scheme == "file" else uri)
    for known in engine.workspace_folders:
        if _same_dir(folder, Path(known)):
            return Path(known) / ".eca" / "config.json"
    raise ConfigEditError("unknown-workspace", f"{folder} is not one of this server's workspace folders")


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


# -- applying ----------------------------------------------------------------------------------------------------


def _lock(engine: McpHost) -> asyncio.Lock:
    """One change at a time per engine: two edits of one file must not race, nor a remove with its restart."""
    lock = _locks.get(engine)
    if lock is None:
        lock = _locks[engine] = asyncio.Lock()
    return lock


def _manager(engine: McpHost) -> Any:
    """The engine's MCP plug-in, created (empty) when the config had no servers until now."""
    if engine.mcp is None:
        from ..mcp import McpManager  # lazy, as in the engine: the SDK is needed only once a server exists

        engine.mcp = McpManager({}, workspace_folders=engine.workspace_folders,
                                timeout=engine.config.mcp_timeout_seconds)
        engine.mcp.cwd_for = engine.trust.server_cwd  # outside an untrusted workspace (_trust.py)
        engine.add_plugin(engine.mcp)
    return engine.mcp


async def _refresh_loaded(engine: McpHost) -> None:
    """Take the config we just wrote as the engine's, when only ``mcpServers`` changed (see the module doc); any
    other difference is somebody else's edit and is left to the config watcher, which reloads everything."""
    new = await asyncio.to_thread(load_config, workspace_folders=engine.workspace_folders,  # (may run ${cmd:})
                                  initialization_options=engine.options.initialization_options,
                                  config_file=engine.options.config_file, env=engine.env)
    old = engine.loaded

    def rest(raw: Mapping[str, Any]) -> JsonObject:
        return {k: v for k, v in raw.items() if k != "mcpServers"}

    if rest(new.raw) == rest(old.raw):
        trusted = engine.trust.trusted_now()  # the user's own edit keeps a trusted workspace trusted (_trust.py)
        engine.loaded = new
        engine.trust.keep_trusted(trusted)
        engine.config = engine.trust.effective_config()  # (an untrusted workspace's held parts left out)
        add_secrets(config_secrets(engine.registry, engine.config, engine.env))


def _server_config(engine: McpHost, name: str, fallback: Mapping[str, Any]) -> McpServerConfig:
    """The server's merged config as the loader sees it now (other layers and ``${env:…}`` included)."""
    config = engine.config.mcp_servers.get(name)
    if config is not None:
        return config
    return McpServerConfig.model_validate(interpolate_env(dict(fallback), engine.env))


def launch(engine: McpHost, name: str) -> None:
    """Start MCP server *name* in the background (its updates follow as ``tool/serverUpdated``).

    The one start path of every change made here, so a policy (workspace trust) can gate it in one place."""
    manager = engine.mcp
    if manager is not None:
        engine.background.spawn(manager.start_server(name), f"eca-mcp-start-{name}")


def _invalid(exc: ValidationError) -> ConfigEditError:
    messages = [e["msg"].removeprefix("Value error, ")
                for e in exc.errors(include_url=False, include_input=False, include_context=False)]
    return ConfigEditError("invalid-config", "; ".join(messages))


async def add_server(engine: McpHost, params: McpAddServerParams) -> McpAddServerResult:
    """``mcp/addServer``: write the entry to the chosen file, announce the server and start it (unless disabled)."""
    try:
        async with _lock(engine):
            return await _add(engine, params)
    except ConfigEditError as exc:
        return McpAddServerResult(error=exc.result_error())


async def _add(engine: McpHost, params: McpAddServerParams) -> McpAddServerResult:
    name = (params.name or "").strip()
    if not name:
        raise ConfigEditError("invalid-config", "the server needs a name")
    manager = engine.mcp
    if name in engine.config.mcp_servers or (manager is not None and manager.config_of(name) is not None):
        raise ConfigEditError("duplicate-name", f"an MCP server named '{name}' already exists")
    wire = params.dump()
    entry = {key: wire[key] for key in _ADD_KEYS if wire.get(key) is not None}
    if entry.get("disabled") is False:
        del entry["disabled"]
    try:
        McpServerConfig.model_validate(interpolate_env(entry, engine.env))
    except ValidationError as exc:
        raise _invalid(exc) from None
    if params.scope == "workspace":
        path = _workspace_file(engine, params.workspace_uri)
    else:
        if engine.config.pure_config:
            raise ConfigEditError("config-file", "pureConfig is set: no config file is read, so none is written")
        path = _global_file(engine)

    def put(servers: JsonObject) -> bool:
        servers[name] = entry
        return True

    edit_config_file(path, put)
    log.info("MCP server %s added to %s", name, path)
    await _refresh_loaded(engine)
    manager = _manager(engine)
    await manager.put_server(name, _server_config(engine, name, entry))
    status = McpServerUpdatedParams.model_validate(manager.status(name))
    if not entry.get("disabled"):
        launch(engine, name)
        status = status.model_copy(update={"status": "starting"})
    return McpAddServerResult(server=status)


async def remove_server(engine: McpHost, name: str) -> McpRemoveServerResult:
    """``mcp/removeServer``: stop the server, delete its entry from every config file defining it, drop it."""
    try:
        async with _lock(engine):
            manager = engine.mcp
            running = manager is not None and manager.config_of(name) is not None
            files = _files_defining(engine, name)
            if not files and not running:
                raise ConfigEditError("unknown-server", f"no MCP server named '{name}'")
            if not files:
                raise ConfigEditError("not-in-a-file", f"MCP server '{name}' is not defined in a config file "
                                                       "(initializationOptions or ECA_CONFIG); remove it there")

            def drop(servers: JsonObject) -> bool:
                return servers.pop(name, None) is not None

            for path in files:
                edit_config_file(path, drop)
                log.info("MCP server %s removed from %s", name, path)
            await _refresh_loaded(engine)
            if manager is not None:
                await manager.remove_server(name)
            return McpRemoveServerResult(name=name, removed=True)
    except ConfigEditError as exc:
        return McpRemoveServerResult(error=exc.result_error())


async def update_server(engine: McpHost, params: McpUpdateServerParams) -> McpUpdateServerResult:
    """``mcp/updateServer``: new command/args or URL in the owning file; the server restarts with them."""
    name = params.name
    try:
        async with _lock(engine):
            files = _files_defining(engine, name)
            if not files:
                raise ConfigEditError("unknown-server", f"no MCP server named '{name}' in a config file")
            if params.command is None and params.url is None and params.args is None:
                raise ConfigEditError("invalid-config", "give a command (and args) or a url")
            if params.command is not None and params.url is not None:
                raise ConfigEditError("invalid-config", "give either a command or a url, not both")
            current = engine.config.mcp_servers.get(name)
            changes: JsonObject = {}
            drop: tuple[str, ...] = ()
            if params.url is not None:
                changes["url"] = params.url
                drop = ("command", "args", "env")
            else:
                if params.command is not None:
                    changes["command"] = params.command
                    drop = ("url", "headers")
                elif current is not None and current.command is None:
                    raise ConfigEditError("invalid-config", f"MCP server '{name}' is a remote server: args need a "
                                                            "command")
                if params.args is not None:
                    changes["args"] = list(params.args)
            merged = {**(current.model_dump(by_alias=True, exclude_none=True) if current else {}), **changes}
            for key in drop:
                merged.pop(key, None)
            try:
                McpServerConfig.model_validate(interpolate_env(merged, engine.env))
            except ValidationError as exc:
                raise _invalid(exc) from None

            def change(servers: JsonObject) -> bool:
                entry = servers[name]
                if not isinstance(entry, dict):  # (_files_defining found it an object)
                    return False
                for key in drop:
                    entry.pop(key, None)
                entry.update(changes)
                return True

            edit_config_file(files[-1], change)
            log.info("MCP server %s updated in %s", name, files[-1])
            await _refresh_loaded(engine)
            manager = _manager(engine)
            config = _server_config(engine, name, merged)
            await manager.put_server(name, config)
            if not config.disabled:
                launch(engine, name)
            return McpUpdateServerResult()
    except ConfigEditError as exc:
        return McpUpdateServerResult(error=exc.result_error())


async def set_disabled(engine: McpHost, name: str, disabled: bool) -> str | None:
    """``mcp/disableServer`` / ``mcp/enableServer``: persist (or drop) ``disabled: true`` in the owning file, then
    stop the server and report ``disabled``, or start it. Returns a warning for the client, None when all went well.
    A server defined outside the files (initializationOptions) is still stopped/started, for this session only."""
    async with _lock(engine):
        manager = engine.mcp
        known = manager is not None and manager.config_of(name) is not None
        files = _files_defining(engine, name)
        if not files and not known:
            return f"Unknown MCP server '{name}'."
        warning = None
        if files:
            def mark(servers: JsonObject) -> bool:
                entry = servers[name]
                if not isinstance(entry, dict):  # (_files_defining found it an object)
                    return False
                if disabled:
                    if entry.get("disabled") is True:
                        return False
                    entry["disabled"] = True
                    return True
                return entry.pop("disabled", None) is not None

            try:
                # disabling: the last file wins the merge; enabling: every file that disables it
                for path in (files[-1:] if disabled else files):
                    edit_config_file(path, mark)
            except ConfigEditError as exc:
                warning = f"MCP server '{name}': {exc.message}; the change applies until a restart only."
            await _refresh_loaded(engine)
        else:
            warning = (f"MCP server '{name}' is not defined in a config file; it is "
                       f"{'disabled' if disabled else 'enabled'} until a restart only.")
        manager = _manager(engine)
        base = engine.config.mcp_servers.get(name) or manager.config_of(name)
        config = base.model_copy(update={"disabled": disabled})
        await manager.put_server(name, config)
        if not disabled:
            launch(engine, name)
        return warning
