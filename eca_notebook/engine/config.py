"""Configuration: typed models for the keys we use, and the layered loader that users of ECA already know.

Why it looks like this:
- Users keep one ``~/.config/eca/config.json`` for every ECA server, so key names mirror the reference server and
  **unknown keys are kept, never rejected** (``extra="allow"``; they are also in :attr:`LoadedConfig.raw`).
- Layers are deep-merged (later wins, dicts merged, arrays replaced, ``null`` overrides). A layer that breaks the
  config (bad JSON, a known key with a wrong type) is skipped as a whole and reported in ``problems``, so one typo in a
  workspace file never takes the whole server down — and the report says which file and which dotted key. When the
  only broken parts are independent entries (one provider, one model, one MCP server), just those entries are
  skipped and named, and the rest of the layer applies.
- ``null`` for a key that has a non-null default means "back to the default"; ``null`` for an entry of a named map
  (``providers.x``, ``mcpServers.x``, an approval rule) removes that entry. This lets a workspace undo a global setting.
- Secrets never reach ``problems`` or logs: messages carry key paths, env var *names* and pydantic's messages, never
  input values. ``LoadedConfig.config``/``raw`` do hold keys — don't log them.

This module is the public face; the parts live in ``_config_schema`` (the models), ``_config_layers`` (the defaults
and the loader), ``_config_syntax`` (JSON with comments, ``${env:…}``) and ``_providers_config`` (resolving
providers and their models from the config and the environment).
"""

from __future__ import annotations

from .._merge import deep_merge
from ._config_layers import DEFAULTS, ConfigSource, LoadedConfig, global_config_path, load_config
from ._config_schema import (
    ApprovalConfig,
    ArgsRule,
    BehaviorConfig,
    Config,
    LocalModelConfig,
    McpServerConfig,
    ModelConfig,
    ProviderConfig,
    ToolCallConfig,
)
from ._config_syntax import interpolate_env, parse_jsonc
from ._providers_config import ModelInfo, ResolvedProvider, mask_secret, resolve_providers

__all__ = [
    "DEFAULTS",
    "ApprovalConfig",
    "ArgsRule",
    "BehaviorConfig",
    "Config",
    "ConfigSource",
    "LoadedConfig",
    "LocalModelConfig",
    "McpServerConfig",
    "ModelConfig",
    "ModelInfo",
    "ProviderConfig",
    "ResolvedProvider",
    "ToolCallConfig",
    "deep_merge",
    "global_config_path",
    "interpolate_env",
    "load_config",
    "mask_secret",
    "parse_jsonc",
    "resolve_providers",
]
