"""The layered loader: defaults → ``initializationOptions`` → ``ECA_CONFIG`` → the global file → each workspace's.

Layers are deep-merged (later wins, dicts merged, arrays replaced, ``null`` kept for the schema to read). A layer that
breaks the config (bad JSON, a known key with a wrong type) is skipped as a whole and reported in ``problems``, so
one typo in a workspace file never takes the whole server down — and the report says which file and which dotted
key. When the only broken parts are independent entries (one provider, one model, one MCP server), just those
entries are skipped and named, and the rest of the layer applies: one provider with an unknown ``api`` must not drop
the others.

Secrets never reach ``problems`` or logs: messages carry key paths, env var *names* and pydantic's messages, never
input values. ``LoadedConfig.config``/``raw`` do hold keys — don't log them.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from ..._merge import deep_merge
from ...protocol import JsonObject
from ._hold import held_view
from ._paths import xdg_config_home
from ._schema import Config
from ._syntax import DynamicSource, interpolate_env, parse_jsonc, resolve_dynamic, trusted_by_user

__all__ = ["DEFAULTS", "ConfigSource", "LoadedConfig", "global_config_path", "load_config"]

logger = logging.getLogger(__name__)

# The first layer. Mirrors the reference where it has an opinion.

PLAN_DENIED_SHELL = [
    r".*[12&]?>>?\s*(?!/dev/null($|\s))(?!&\d+($|\s))\S+.*",
    r".*\|\s*(tee|dd|xargs).*",
    r".*\b(sed|awk|perl)\s+.*-i.*",
    r".*\b(rm|mv|cp|touch|mkdir)\b.*",
    r".*git\s+(add|commit|push).*",
    r".*npm\s+install.*",
    r".*-c\s+[\"'].*open.*[\"']w[\"'].*",
    r".*bash.*-c.*[12&]?>>?\s*(?!/dev/null($|\s))(?!&\d+($|\s))\S+.*",
]

DEFAULTS: JsonObject = {
    "providers": {},
    "defaultModel": None,
    "defaultBehavior": "code",
    "behavior": {
        "code": {},
        "plan": {
            "disabledTools": ["edit_file", "write_file", "move_file", "delete_file"],
            "toolCall": {
                "approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": [*PLAN_DENIED_SHELL]}}}}
            },
        },
    },
    "mcpServers": {},
    "disabledTools": [],
    "toolCall": {
        "approval": {
            "byDefault": "ask",
            "allow": {"eca__read_file": {}, "eca__directory_tree": {}, "eca__grep": {},
                      "eca__editor_diagnostics": {}, "eca__update_plan": {}, "eca__notebook_read": {},
                      "eca__search_symbols": {}, "eca__search_text": {}, "eca__vector_search": {},
                      "eca__skill": {}, "eca__ask_user": {}, "eca__editor_definition": {},
                      "eca__editor_references": {}, "eca__spawn_agent": {},
                      "eca__list_variables": {}, "eca__inspect_variable": {}},
            "ask": {},
            "deny": {},
        },
        "maxRounds": 40,
    },
    "mcpTimeoutSeconds": 60,
    "streamIdleTimeoutSeconds": 120,
    "chatRetentionDays": 14,
    "welcomeMessage": "Welcome to ECA in Jupyter!\n\nType '/' for commands.\n\n",
}


@dataclass
class ConfigSource:
    """One layer, for ``/doctor``. ``name``: defaults, initializationOptions, ECA_CONFIG, global, config-file or
    ``workspace:<folder>``. ``problem`` says why an existing layer was rejected; ``note`` why one was not read."""

    name: str
    path: str | None
    applied: bool
    problem: str | None
    note: str | None = None


@dataclass
class LoadedConfig:
    """``raw`` is the merged, interpolated dict (unknown keys included; holds secrets — never log it)."""

    config: Config
    raw: JsonObject
    sources: list[ConfigSource] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: each workspace folder's own layer as read (before merging), for workspace trust (engine/workspace/_trust.py)
    workspace_layers: dict[str, JsonObject] = field(default_factory=dict)
    #: the config of the user's own layers (every layer before the workspace files): the approvals an untrusted
    #: workspace may tighten but not loosen (engine/workspace/_trust.py)
    user_config: Config | None = None
    #: the user's own layers merged and interpolated (the ``below`` of engine/config/_hold.py)
    user_raw: JsonObject = field(default_factory=dict)
    #: each workspace folder's own layer as written (before its dynamic strings are resolved)
    workspace_written: dict[str, JsonObject] = field(default_factory=dict)
    #: the config with each workspace layer's held parts left out (engine/config/_hold.py): what applies while a
    #: workspace is untrusted. None when no workspace file was applied (then it is ``config``)
    held_config: Config | None = None
    held_raw: JsonObject | None = None


def global_config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/eca/config.json`` (default ``~/.config/eca/config.json``)."""
    return xdg_config_home(os.environ if env is None else env) / "eca" / "config.json"


def _normalize_layer(layer: Mapping[str, Any]) -> JsonObject:
    """Map other spellings onto our keys, per layer (so "later wins" still holds across spellings).

    ``chatBehavior``/``chatAgent`` (early clients' initializationOptions) and ``defaultAgent`` → ``defaultBehavior``;
    the reference's ``agent`` map and our older ``behavior`` map are one map (kept under ``behavior``), and the
    deprecated id ``agent`` of the built-in ``code`` agent is read as ``code`` (in the map and the default).
    """
    out = dict(layer)
    for alias in ("defaultAgent", "chatAgent", "chatBehavior"):
        if alias in out:
            value = out.pop(alias)
            if value is not None and "defaultBehavior" not in out:
                out["defaultBehavior"] = value
    if out.get("defaultBehavior") == "agent":
        out["defaultBehavior"] = "code"
    if "agent" in out:
        agents = out.pop("agent")
        if isinstance(agents, Mapping):
            behavior = out.get("behavior")
            out["behavior"] = deep_merge(behavior, agents) if isinstance(behavior, Mapping) else agents
        elif "behavior" not in out:
            out["behavior"] = agents  # let validation report the wrong type under our name
    behavior = out.get("behavior")
    if isinstance(behavior, Mapping) and "agent" in behavior:
        renamed = {k: v for k, v in behavior.items() if k != "agent"}
        old = behavior["agent"]
        code = renamed.get("code")
        renamed["code"] = deep_merge(old, code) if isinstance(old, Mapping) and isinstance(code, Mapping) else (
            code if code is not None else old)
        out["behavior"] = renamed
    return out


def _describe(exc: ValidationError, label: str) -> list[str]:
    msgs = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        msgs.append(f"{label}: {loc}: {msg}" if loc else f"{label}: {msg}")
    return msgs


def _independent_entry(loc: tuple[Any, ...]) -> tuple[tuple[str, ...], str] | None:
    """The entry a validation error belongs to when that entry stands alone: ``providers.<id>``,
    ``providers.<id>.models.<name>`` or ``mcpServers.<name>`` (with how to name it to the user).

    Behaviours and approval rules are deliberately not independent: skipping one ``deny`` rule while the rest of the
    layer (say ``byDefault: "allow"``) applied would loosen what the user asked for, so those still reject the layer.
    """
    if len(loc) < 2 or not isinstance(loc[1], str):
        return None
    if loc[0] == "providers":
        if len(loc) >= 4 and loc[2] == "models" and isinstance(loc[3], str):
            return ("providers", loc[1], "models", loc[3]), f"model '{loc[1]}/{loc[3]}'"
        return ("providers", loc[1]), f"provider '{loc[1]}'"
    if loc[0] in ("mcpServers", "mcp_servers"):
        return (loc[0], loc[1]), f"MCP server '{loc[1]}'"
    return None


def _broken_entries(
    exc: ValidationError, layer: Mapping[str, Any], label: str
) -> dict[tuple[str, ...], tuple[str, list[str]]] | None:
    """Every error grouped by the independent entry of *layer* it is in, or None when any error is elsewhere (or in
    an entry this layer doesn't set, so dropping it from the layer would change nothing)."""
    bad: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    messages = _describe(exc, label)
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    for err, message in zip(errors, messages, strict=True):
        found = _independent_entry(tuple(err["loc"]))
        if found is None or not _has_entry(layer, found[0]):
            return None
        entry, what = found
        bad.setdefault(entry, (what, []))[1].append(message)
    # A model inside a provider that is skipped as a whole needs no removal of its own.
    return {e: v for e, v in bad.items() if not (len(e) == 4 and e[:2] in bad)} or None


def _has_entry(layer: Mapping[str, Any], entry: tuple[str, ...]) -> bool:
    node: Any = layer
    for key in entry:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def _remove_entry(layer: JsonObject, entry: tuple[str, ...]) -> None:
    """Remove *entry* from *layer* without mutating the caller's data (each dict on the way is copied)."""
    node = layer
    for key in entry[:-1]:
        # each step is an object: _broken_entries found the entry through them
        node[key] = node = dict(cast(JsonObject, node[key]))
    del node[entry[-1]]


def _read_file_layer(path: Path) -> tuple[Any, str | None, bool]:
    """(data, problem, exists). Never includes file content in the problem."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, None, False
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return None, f"{path}: cannot read: {reason}", True
    try:
        return parse_jsonc(text), None, True
    except json.JSONDecodeError as exc:
        return None, f"{path}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", True


class _Loader:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.merged: JsonObject = copy.deepcopy(DEFAULTS)
        self.config = Config.model_validate(interpolate_env(self.merged, env))
        self.sources = [ConfigSource("defaults", None, True, None)]
        self.problems: list[str] = []
        self.workspace_layers: dict[str, JsonObject] = {}
        self.workspace_written: dict[str, JsonObject] = {}
        self.held_merged: JsonObject = self.merged  # the same, but each workspace layer's held view
        self.user_merged: JsonObject | None = None  # the user's own layers, before any workspace file
        self.cmd_cache: dict[str, str | None] = {}  # each ${cmd:} runs once per load

    def dynamic(self, data: Any, label: str, path: Path | None = None, workspace: Path | None = None) -> Any:
        """*data* with its ``${file:}``/``${cmd:}``/``${netrc:}``/``${classpath:}`` resolved, per layer because what a
        string may do depends on the file it is in (engine/config/_syntax.py); ``${env:}`` is left for after the
        merge. A workspace layer's commands run only when the user's own layers trust that folder."""
        netrc_file = data.get("netrcFile") if isinstance(data, Mapping) else None
        if not isinstance(netrc_file, str):
            merged_netrc = self.merged.get("netrcFile")
            netrc_file = merged_netrc if isinstance(merged_netrc, str) else None
        trusted = interpolate_env(self.merged.get("trustedWorkspaces"), self.env)
        source = DynamicSource(label=label, env=self.env, base_dir=path.parent if path is not None else None,
                               workspace=workspace,
                               cmd_allowed=workspace is None or trusted_by_user(workspace, trusted),
                               netrc_file=netrc_file, cmd_cache=self.cmd_cache)
        return resolve_dynamic(data, source, self.problems)

    def reject(self, name: str, path: str | None, problems: list[str]) -> None:
        self.problems.extend(problems)
        self.sources.append(ConfigSource(name, path, False, "; ".join(problems)))
        for p in problems:
            logger.warning("config layer skipped: %s", p)

    def merge(self, merged: JsonObject, layer: JsonObject,
              label: str) -> tuple[JsonObject, Config, list[str]] | list[str]:
        """*layer* merged over *merged* and validated: (merged, config, entries skipped), or why it is rejected."""
        skipped: list[str] = []
        while True:
            candidate = deep_merge(merged, layer)
            try:
                # Validate what the merge would produce, so a layer is judged together with what it overrides
                # (e.g. adding ``url`` to an MCP server that already has ``command`` elsewhere).
                return candidate, Config.model_validate(interpolate_env(candidate, self.env)), skipped
            except ValidationError as exc:
                bad = _broken_entries(exc, layer, label)
                if bad is None:
                    return skipped + _describe(exc, label)
                # Only independent entries are broken: drop them from this layer (what earlier layers said about
                # them stays) and judge the rest again.
                for entry, (what, messages) in bad.items():
                    _remove_entry(layer, entry)
                    skipped.append(f"{'; '.join(messages)} — {what} skipped, the rest of this layer applies")

    def apply(self, name: str, path: str | None, data: Any, label: str, held: Any = None) -> None:
        """Apply one layer. *held*: a workspace layer's held view (engine/config/_hold.py), applied to the held
        config instead (every other layer applies to both)."""
        if not isinstance(data, Mapping):
            self.reject(name, path, [f"{label}: expected a JSON object, got {_json_type(data)}"])
            return
        merged = self.merge(self.merged, _normalize_layer(data), label)
        if isinstance(merged, list):
            self.reject(name, path, merged)
            return
        candidate, config, skipped = merged
        if held is None:
            self.held_merged = candidate
        elif isinstance(held, Mapping):
            view = self.merge(self.held_merged, _normalize_layer(held), label)
            if not isinstance(view, list):  # (a subset of a layer that applied: rejected only if broken alone)
                self.held_merged = view[0]
        self.merged, self.config = candidate, config
        for problem in skipped:
            logger.warning("config entry skipped: %s", problem)
        self.problems.extend(skipped)
        self.sources.append(ConfigSource(name, path, True, "; ".join(skipped) or None))

    def apply_file(self, name: str, path: Path, *, required: bool = False) -> None:
        data, problem, exists = _read_file_layer(path)
        if not exists:
            if required:
                self.reject(name, str(path), [f"{path}: config file not found"])
            else:
                self.sources.append(ConfigSource(name, str(path), False, None, note="not found"))
            return
        if problem is not None:
            self.reject(name, str(path), [problem])
            return
        workspace = Path(name.removeprefix("workspace:")) if name.startswith("workspace:") else None
        held = None
        if workspace is not None and isinstance(data, Mapping):
            # A repository never trusts itself: `trustedWorkspaces` counts only from the user's own layers.
            data = {key: value for key, value in data.items() if key != "trustedWorkspaces"}
            self.workspace_written[name.removeprefix("workspace:")] = dict(data)
            # what applies until the folder is trusted (engine/config/_hold.py; engine/workspace/_trust.py decides)
            below = interpolate_env(self.user_merged if self.user_merged is not None else self.merged, self.env)
            held = self.dynamic(held_view(data, below, workspace), str(path), path, workspace)
        data = self.dynamic(data, str(path), path, workspace)
        if workspace is not None and isinstance(data, Mapping):
            self.workspace_layers[name.removeprefix("workspace:")] = dict(data)
        self.apply(name, str(path), data, str(path), held)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, (int, float)) else type(value).__name__


def load_config(
    *,
    workspace_folders: Sequence[Path] = (),
    initialization_options: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Build the configuration from every layer, later wins:

    defaults → ``initializationOptions`` → env ``ECA_CONFIG`` (JSON) → the global file (or *config_file* instead) →
    ``<folder>/.eca/config.json`` for each workspace folder. ``pureConfig: true`` in a layer before the files skips
    all of them. ``${file:…}``, ``${cmd:…}``, ``${netrc:…}`` are resolved per layer as it is read (a workspace's
    commands only when the user trusts it: engine/config/_syntax.py), ``${env:…}`` after merging. Never raises for
    bad user input: see ``problems``.
    """
    env = os.environ if env is None else env
    loader = _Loader(env)

    if initialization_options is not None:
        loader.apply("initializationOptions", None,
                     loader.dynamic(initialization_options, "initializationOptions"), "initializationOptions")
    else:
        loader.sources.append(ConfigSource("initializationOptions", None, False, None, note="not given"))

    eca_config = env.get("ECA_CONFIG")
    if eca_config is not None and eca_config.strip():
        try:
            data = parse_jsonc(eca_config)
        except json.JSONDecodeError as exc:
            loader.reject("ECA_CONFIG", None, [f"ECA_CONFIG: invalid JSON: {exc.msg} (column {exc.colno})"])
        else:
            loader.apply("ECA_CONFIG", None, loader.dynamic(data, "ECA_CONFIG"), "ECA_CONFIG")
    else:
        loader.sources.append(ConfigSource("ECA_CONFIG", None, False, None, note="not set"))

    files: list[tuple[str, Path, bool]] = []
    if config_file is not None:
        files.append(("config-file", Path(config_file).expanduser(), True))
    else:
        files.append(("global", global_config_path(env), False))
    for folder in workspace_folders:
        files.append((f"workspace:{folder}", Path(folder) / ".eca" / "config.json", False))

    pure = loader.config.pure_config
    user_config: Config | None = None
    for name, path, required in files:
        if name.startswith("workspace:") and user_config is None:
            user_config = loader.config  # the user's own layers, before any workspace file
            loader.user_merged = loader.merged
        if pure:
            loader.sources.append(ConfigSource(name, str(path), False, None, note="skipped: pureConfig"))
        else:
            loader.apply_file(name, path, required=required)

    problems = list(loader.problems)
    raw = interpolate_env(loader.merged, env, problems)
    config = Config.model_validate(raw)
    held_config, held_raw = None, None
    if loader.held_merged is not loader.merged:
        held_raw = interpolate_env(loader.held_merged, env)
        try:
            held_config = Config.model_validate(held_raw)
        except ValidationError:  # (cannot happen for a subset of valid layers; the user's own layers then)
            held_raw = interpolate_env(loader.user_merged or DEFAULTS, env)
            held_config = user_config if user_config is not None else Config.model_validate(held_raw)
    user_merged = loader.user_merged if loader.user_merged is not None else loader.merged
    return LoadedConfig(config=config, raw=raw, sources=loader.sources, problems=problems,
                        workspace_layers=loader.workspace_layers,
                        user_config=user_config if user_config is not None else loader.config,
                        user_raw=interpolate_env(user_merged, env), workspace_written=loader.workspace_written,
                        held_config=held_config, held_raw=held_raw)
