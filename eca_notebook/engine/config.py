"""Configuration: typed models for the keys we use, and the layered loader that users of ECA already know.

Why it looks like this:
- Users keep one ``~/.config/eca/config.json`` for every ECA server, so key names mirror the reference server and
  **unknown keys are kept, never rejected** (``extra="allow"``; they are also in :attr:`LoadedConfig.raw`).
- Layers are deep-merged (later wins, dicts merged, arrays replaced, ``null`` overrides). A layer that breaks the
  config (bad JSON, a known key with a wrong type) is skipped as a whole and reported in ``problems``, so one typo in a
  workspace file never takes the whole server down — and the report says which file and which dotted key. When the
  only broken parts are independent entries (one provider, one model, one MCP server), just those entries are
  skipped and named, and the rest of the layer applies: one provider with an unknown ``api`` must not drop the
  others. The reference's spellings of ``api`` (``openai`` for ``openai-responses``) are accepted.
- ``null`` for a key that has a non-null default means "back to the default"; ``null`` for an entry of a named map
  (``providers.x``, ``mcpServers.x``, an approval rule) removes that entry. This lets a workspace undo a global setting.
- Secrets never reach ``problems`` or logs: messages carry key paths, env var *names* and pydantic's messages, never
  input values. ``LoadedConfig.config``/``raw`` do hold keys — don't log them.

Our additions to the reference's keys: ``toolCall.maxRounds`` (LLM round trips per prompt), ``requestTimeoutSeconds``
(connect / first-byte timeout for LLM HTTP requests; ``None`` = provider default) and ``logLevel``. The stream idle
timeout uses the reference's ``streamIdleTimeoutSeconds`` (default 120; ``null`` disables it).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ._paths import xdg_config_home
from ._providers_config import ModelInfo, ResolvedProvider, mask_secret, resolve_providers

__all__ = [
    "ModelConfig",
    "ProviderConfig",
    "ArgsRule",
    "ApprovalConfig",
    "ToolCallConfig",
    "McpServerConfig",
    "BehaviorConfig",
    "Config",
    "ConfigSource",
    "LoadedConfig",
    "DEFAULTS",
    "load_config",
    "deep_merge",
    "interpolate_env",
    "global_config_path",
    "parse_jsonc",
    "ModelInfo",
    "ResolvedProvider",
    "resolve_providers",
    "mask_secret",
]

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class _ConfigModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        # JSON ``null`` for a field with a non-null default resets it to that default instead of failing validation
        # (clients send e.g. ``"chatBehavior": null``; a workspace may null out a global value).
        if not isinstance(data, dict):
            return data
        drop = []
        for key, value in data.items():
            if value is not None:
                continue
            name = _field_name(cls, key)
            if name is None:
                continue
            info = cls.model_fields[name]
            if info.default_factory is not None or (info.default is not None and not info.is_required()):
                drop.append(key)
        if drop:
            data = {k: v for k, v in data.items() if k not in drop}
        return data


def _field_name(cls: type[BaseModel], key: str) -> str | None:
    fields = cls.model_fields
    if key in fields:
        return key
    for name, info in fields.items():
        if info.alias == key:
            return name
    return None


def _drop_null_entries(value: Any) -> Any:
    """In a named map (``providers``, ``mcpServers``, approval rules…) a ``null`` entry removes that entry."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


class _CostConfig(_ConfigModel):
    """The reference's ``cost`` object (USD per 1M tokens)."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


class _LimitConfig(_ConfigModel):
    """The reference's ``limit`` object (tokens)."""

    context: int | None = None
    output: int | None = None


class ModelConfig(_ConfigModel):
    """``providers.<id>.models.<name>``. Costs are USD per 1M tokens.

    Accepts both our flat keys (``inputCost``, ``contextLimit`` …) and the reference's ``cost: {input, output,
    cacheRead, cacheWrite}`` / ``limit: {context, output}``; flat keys win when both are given.
    """

    model_name: str | None = None
    extra_payload: dict[str, Any] = Field(default_factory=dict)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    reasoning_history: Literal["all", "turn", "off"] | None = None
    input_cost: float | None = Field(default=None, ge=0)
    output_cost: float | None = Field(default=None, ge=0)
    cache_read_cost: float | None = Field(default=None, ge=0)
    cache_write_cost: float | None = Field(default=None, ge=0)
    context_limit: int | None = Field(default=None, gt=0)
    output_limit: int | None = Field(default=None, gt=0)
    reasoning: bool | None = None
    # ours: treat it as a small model — compact system prompt, tools only when a prompt asks for them (as the
    # embedded model always is); for tiny Ollama / llama.cpp models
    compact: bool = False
    cost: _CostConfig | None = None
    limit: _LimitConfig | None = None

    @model_validator(mode="after")
    def _from_reference_objects(self) -> ModelConfig:
        if self.cost is not None:
            for ours, theirs in (
                ("input_cost", "input"),
                ("output_cost", "output"),
                ("cache_read_cost", "cache_read"),
                ("cache_write_cost", "cache_write"),
            ):
                if getattr(self, ours) is None:
                    setattr(self, ours, getattr(self.cost, theirs))
        if self.limit is not None:
            if self.context_limit is None:
                self.context_limit = self.limit.context
            if self.output_limit is None:
                self.output_limit = self.limit.output
        return self


ProviderApi = Literal["openai-responses", "openai-chat", "anthropic", "ollama"]
_PROVIDER_APIS: tuple[str, ...] = get_args(ProviderApi)
# Other spellings the reference server accepts for the same wire API (its ``provider->api-handler``).
_API_ALIASES = {"openai": "openai-responses"}


class ProviderConfig(_ConfigModel):
    """``providers.<id>``. ``url``/``key`` fall back to ``<ID>_API_URL`` / ``<ID>_API_KEY`` (see resolve_providers)."""

    api: ProviderApi | None = None
    url: str | None = None
    key: str | None = None
    completion_url_relative_path: str | None = None
    think_tag_start: str | None = None
    think_tag_end: str | None = None
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    fetch_models: bool | None = None
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        # ``"models": {"gpt-5": null}`` removes a model; ``{"my-model": {}}`` adds one with no settings.
        return _drop_null_entries(value)

    @field_validator("api", mode="before")
    @classmethod
    def _api(cls, value: Any) -> Any:
        # The reference's spellings map onto ours; anything else gets a message naming what is supported (the value
        # is an API name, never a secret, so it is shown).
        if not isinstance(value, str):
            return value
        value = _API_ALIASES.get(value, value)
        if value not in _PROVIDER_APIS:
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise ValueError(f"unsupported api {shown!r} (supported: openai-responses (or openai), openai-chat, "
                             "anthropic, ollama)")
        return value


class ArgsRule(_ConfigModel):
    """One approval rule: ``{argsMatchers: {<arg>: [<regex>, ...]}}``; ``{}`` matches any call of the tool.

    Regexes are anchored by whoever matches them (full match); they are compiled here so a broken one is reported at
    load time with its key path instead of failing at the first tool call.
    """

    args_matchers: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("args_matchers")
    @classmethod
    def _compile(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for arg, patterns in value.items():
            for i, pattern in enumerate(patterns):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"invalid regular expression for argument {arg!r} (#{i + 1}): {exc}") from None
        return value


class ApprovalConfig(_ConfigModel):
    """``toolCall.approval``. Precedence (applied by the tools layer): deny → session approvals → tool checks → ask
    → allow → byDefault. ``byDefault: "deny"`` is accepted because the reference's schema allows it."""

    by_default: Literal["ask", "allow", "deny"] = "ask"
    allow: dict[str, ArgsRule] = Field(default_factory=dict)
    ask: dict[str, ArgsRule] = Field(default_factory=dict)
    deny: dict[str, ArgsRule] = Field(default_factory=dict)

    @field_validator("allow", "ask", "deny", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        return _drop_null_entries(value)


class ToolCallConfig(_ConfigModel):
    """``toolCall``: approvals, our ``maxRounds`` cap, and the reference's per-tool keys (kept as extras)."""

    approval: ApprovalConfig = Field(default_factory=ApprovalConfig)
    max_rounds: int = Field(default=40, ge=1)


class McpServerConfig(_ConfigModel):
    """``mcpServers.<name>``: a stdio server (``command``/``args``/``env``) or a remote one (``url``/``headers``)."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    disabled: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of 'command' (stdio server) or 'url' (remote server)")
        return self


class BehaviorConfig(_ConfigModel):
    """``behavior.<name>`` (the reference's newer spelling ``agent.<name>`` is accepted too)."""

    system_prompt: str | None = None
    default_model: str | None = None
    tool_call: ToolCallConfig | None = None
    disabled_tools: list[str] | None = None
    max_steps: int | None = Field(default=None, ge=1)


class LocalModelConfig(_ConfigModel):
    """``localModel`` as an object (``true`` / ``false`` are shorthands for ``enabled``).

    ``tools`` — when the embedded model is offered tools: ``auto`` (only when the prompt asks to read, change or run
    something in the workspace; see ``engine/_small_model.py``), ``always``, or ``never``.
    """

    enabled: bool = True
    tools: Literal["auto", "always", "never"] = "auto"


class Config(_ConfigModel):
    """The merged, validated configuration. Unknown keys stay available as extras (``config.model_extra``)."""

    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    default_model: str | None = None
    default_behavior: str = "agent"
    behavior: dict[str, BehaviorConfig] = Field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    tool_call: ToolCallConfig = Field(default_factory=ToolCallConfig)
    disabled_tools: list[str] = Field(default_factory=list)
    pure_config: bool = False
    welcome_message: str | None = None
    mcp_timeout_seconds: float = Field(default=60, gt=0)
    stream_idle_timeout_seconds: float | None = Field(default=None, gt=0)
    request_timeout_seconds: float | None = Field(default=None, gt=0)
    chat_retention_days: float = Field(default=14, ge=0)  # 0 disables pruning, as in the reference
    # ours: the embedded offline model (local/smollm2-135m), offered when installed; ``false`` turns it off
    local_model: LocalModelConfig = Field(default_factory=LocalModelConfig)
    log_level: str | None = None

    @field_validator("providers", "behavior", "mcp_servers", mode="before")
    @classmethod
    def _named_maps(cls, value: Any) -> Any:
        return _drop_null_entries(value)

    @field_validator("local_model", mode="before")
    @classmethod
    def _local_model_shorthand(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _legacy_welcome(self) -> Config:
        # Older reference versions kept it under ``chat.welcomeMessage``.
        if self.welcome_message is None:
            chat = (self.model_extra or {}).get("chat")
            if isinstance(chat, dict) and isinstance(chat.get("welcomeMessage"), str):
                self.welcome_message = chat["welcomeMessage"]
        return self

    def tool_call_for(self, behavior: str | None) -> ToolCallConfig:
        """``toolCall`` with ``behavior.<name>.toolCall`` deep-merged over it (only keys the behaviour sets)."""
        b = self.behavior.get(behavior) if behavior else None
        if b is None or b.tool_call is None:
            return self.tool_call
        base = self.tool_call.model_dump(by_alias=True)
        override = b.tool_call.model_dump(by_alias=True, exclude_unset=True)
        return ToolCallConfig.model_validate(deep_merge(base, override))

    def disabled_tools_for(self, behavior: str | None) -> list[str]:
        """Global ``disabledTools`` plus the behaviour's own."""
        b = self.behavior.get(behavior) if behavior else None
        extra = (b.disabled_tools or []) if b is not None else []
        return list(dict.fromkeys([*self.disabled_tools, *extra]))


# ---------------------------------------------------------------------------------------------------------------
# Defaults (the first layer). Mirrors the reference where it has an opinion.
# ---------------------------------------------------------------------------------------------------------------

_PLAN_DENIED_SHELL = [
    r".*[12&]?>>?\s*(?!/dev/null($|\s))(?!&\d+($|\s))\S+.*",
    r".*\|\s*(tee|dd|xargs).*",
    r".*\b(sed|awk|perl)\s+.*-i.*",
    r".*\b(rm|mv|cp|touch|mkdir)\b.*",
    r".*git\s+(add|commit|push).*",
    r".*npm\s+install.*",
    r".*-c\s+[\"'].*open.*[\"']w[\"'].*",
    r".*bash.*-c.*[12&]?>>?\s*(?!/dev/null($|\s))(?!&\d+($|\s))\S+.*",
]

DEFAULTS: dict[str, Any] = {
    "providers": {},
    "defaultModel": None,
    "defaultBehavior": "agent",
    "behavior": {
        "agent": {},
        "plan": {
            "disabledTools": ["edit_file", "write_file", "move_file"],
            "toolCall": {
                "approval": {"deny": {"eca__shell_command": {"argsMatchers": {"command": _PLAN_DENIED_SHELL}}}}
            },
        },
    },
    "mcpServers": {},
    "disabledTools": [],
    "toolCall": {
        "approval": {
            "byDefault": "ask",
            "allow": {"eca__read_file": {}, "eca__directory_tree": {}, "eca__grep": {},
                      "eca__editor_diagnostics": {}, "eca__update_plan": {}},
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

# ---------------------------------------------------------------------------------------------------------------
# Merging, interpolation, JSON with comments
# ---------------------------------------------------------------------------------------------------------------


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: *override* over *base*. Dicts merge recursively; anything else (arrays, scalars, ``None``) replaces.

    Inputs are never mutated and the result shares no mutable values with them.
    """
    result: dict[str, Any] = {k: copy.deepcopy(v) for k, v in base.items()}
    for key, value in override.items():
        current = result.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            result[key] = deep_merge(current, value)
        else:
            result[key] = copy.deepcopy(dict(value) if isinstance(value, Mapping) else value)
    return result


_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def interpolate_env(value: Any, env: Mapping[str, str], problems: list[str] | None = None) -> Any:
    """Replace ``${env:NAME}`` / ``${env:NAME:default}`` in every string of *value* (recursively; keys untouched).

    The default applies when NAME is unset or empty. An unset NAME without a default becomes ``""`` and, when
    *problems* is given, a message naming the variable (never a value) is appended once.
    """
    if isinstance(value, str):
        if "${env:" not in value:
            return value

        def replace(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            current = env.get(name)
            if current:
                return current
            if default is not None:
                return default
            if current is None and problems is not None:
                msg = f"environment variable {name} is not set (referenced as ${{env:{name}}}); using an empty string"
                if msg not in problems:
                    problems.append(msg)
            return ""

        return _ENV_REF.sub(replace, value)
    if isinstance(value, Mapping):
        return {k: interpolate_env(v, env, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, env, problems) for v in value]
    return value


def parse_jsonc(text: str) -> Any:
    """``json.loads`` that also accepts ``//`` and ``/* */`` comments and trailing commas.

    The reference's docs show commented config files and its schema declares ``allowComments``; rejecting them would
    drop a user's whole file. Comments become spaces so line/column numbers in error messages stay right.
    """
    if not text.strip():
        return {}
    return json.loads(_strip_jsonc(text))


def _strip_jsonc(text: str) -> str:
    out = list(text)
    n = len(text)
    i = 0
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
            continue
        elif c == ",":
            j = i + 1
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    nl = text.find("\n", j)
                    j = n if nl < 0 else nl
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    break
            if j < n and text[j] in "}]":
                out[i] = " "
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------------------------


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
    raw: dict[str, Any]
    sources: list[ConfigSource] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def global_config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/eca/config.json`` (default ``~/.config/eca/config.json``)."""
    return xdg_config_home(os.environ if env is None else env) / "eca" / "config.json"


def _normalize_layer(layer: Mapping[str, Any]) -> dict[str, Any]:
    """Map other spellings onto our keys, per layer (so "later wins" still holds across spellings).

    ``chatBehavior``/``chatAgent`` (early clients' initializationOptions) and ``defaultAgent`` → ``defaultBehavior``;
    the reference's newer ``agent`` map → ``behavior``, with its ``code`` agent being our ``agent`` behaviour.
    """
    out = dict(layer)
    for alias in ("chatBehavior", "chatAgent", "defaultAgent"):
        if alias in out:
            value = out.pop(alias)
            if alias == "defaultAgent" and value == "code":
                value = "agent"
            if value is not None and "defaultBehavior" not in layer:
                out["defaultBehavior"] = value
    if "agent" in out:
        agents = out.pop("agent")
        if isinstance(agents, Mapping):
            agents = {("agent" if k == "code" else k): v for k, v in agents.items()}
            behavior = out.get("behavior")
            out["behavior"] = deep_merge(behavior, agents) if isinstance(behavior, Mapping) else agents
        elif "behavior" not in out:
            out["behavior"] = agents  # let validation report the wrong type under our name
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
    for err, message in zip(exc.errors(include_url=False, include_input=False, include_context=False), messages):
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


def _remove_entry(layer: dict[str, Any], entry: tuple[str, ...]) -> None:
    """Remove *entry* from *layer* without mutating the caller's data (each dict on the way is copied)."""
    node = layer
    for key in entry[:-1]:
        node[key] = dict(node[key])
        node = node[key]
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
        self.merged: dict[str, Any] = copy.deepcopy(DEFAULTS)
        self.config = Config.model_validate(interpolate_env(self.merged, env))
        self.sources = [ConfigSource("defaults", None, True, None)]
        self.problems: list[str] = []

    def reject(self, name: str, path: str | None, problems: list[str]) -> None:
        self.problems.extend(problems)
        self.sources.append(ConfigSource(name, path, False, "; ".join(problems)))
        for p in problems:
            logger.warning("config layer skipped: %s", p)

    def apply(self, name: str, path: str | None, data: Any, label: str) -> None:
        if not isinstance(data, Mapping):
            self.reject(name, path, [f"{label}: expected a JSON object, got {_json_type(data)}"])
            return
        layer = _normalize_layer(data)
        skipped: list[str] = []
        while True:
            candidate = deep_merge(self.merged, layer)
            try:
                # Validate what the merge would produce, so a layer is judged together with what it overrides
                # (e.g. adding ``url`` to an MCP server that already has ``command`` elsewhere).
                config = Config.model_validate(interpolate_env(candidate, self.env))
                break
            except ValidationError as exc:
                bad = _broken_entries(exc, layer, label)
                if bad is None:
                    self.reject(name, path, skipped + _describe(exc, label))
                    return
                # Only independent entries are broken: drop them from this layer (what earlier layers said about
                # them stays) and judge the rest again.
                for entry, (what, messages) in bad.items():
                    _remove_entry(layer, entry)
                    skipped.append(f"{'; '.join(messages)} — {what} skipped, the rest of this layer applies")
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
        self.apply(name, str(path), data, str(path))


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
    all of them. ``${env:…}`` is interpolated after merging. Never raises for bad user input: see ``problems``.
    """
    env = os.environ if env is None else env
    loader = _Loader(env)

    if initialization_options is not None:
        loader.apply("initializationOptions", None, initialization_options, "initializationOptions")
    else:
        loader.sources.append(ConfigSource("initializationOptions", None, False, None, note="not given"))

    eca_config = env.get("ECA_CONFIG")
    if eca_config is not None and eca_config.strip():
        try:
            data = parse_jsonc(eca_config)
        except json.JSONDecodeError as exc:
            loader.reject("ECA_CONFIG", None, [f"ECA_CONFIG: invalid JSON: {exc.msg} (column {exc.colno})"])
        else:
            loader.apply("ECA_CONFIG", None, data, "ECA_CONFIG")
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
    for name, path, required in files:
        if pure:
            loader.sources.append(ConfigSource(name, str(path), False, None, note="skipped: pureConfig"))
        else:
            loader.apply_file(name, path, required=required)

    problems = list(loader.problems)
    raw = interpolate_env(loader.merged, env, problems)
    config = Config.model_validate(raw)
    return LoadedConfig(config=config, raw=raw, sources=loader.sources, problems=problems)
