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

This module is the public face; the parts live in ``_schema`` (the models), ``_layers`` (the defaults
and the loader), ``_syntax`` (JSON with comments, ``${env:…}``) and ``_providers`` (resolving
providers and their models from the config and the environment).
"""

from __future__ import annotations

from ..._merge import deep_merge
from ._catalog import BUILTIN_PROVIDERS, DEFAULT_MODELS, sees_images
from ._hold import held_providers, hook_changes, outside_skills, provider_items, ref_items, secret_refs, secret_words
from ._layers import DEFAULTS, PLAN_DENIED_SHELL, ConfigSource, LoadedConfig, global_config_path, load_config
from ._paths import commit_temp, ensure_private_dir, sync_dir, write_temp, xdg_cache_home
from ._providers import ModelInfo, ResolvedProvider, mask_secret, resolve_providers
from ._schema import (
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
from ._syntax import DynamicSource, expand, interpolate_env, netrc_passwords, parse_jsonc, trusted_by_user, workspace_of
from ._variants import builtin_variants, selectable, variant_payload

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULTS",
    "DEFAULT_MODELS",
    "PLAN_DENIED_SHELL",
    "ApprovalConfig",
    "ArgsRule",
    "BehaviorConfig",
    "Config",
    "ConfigSource",
    "DynamicSource",
    "LoadedConfig",
    "LocalModelConfig",
    "McpServerConfig",
    "ModelConfig",
    "ModelInfo",
    "ProviderConfig",
    "ResolvedProvider",
    "ToolCallConfig",
    "builtin_variants",
    "commit_temp",
    "deep_merge",
    "ensure_private_dir",
    "expand",
    "global_config_path",
    "held_providers",
    "hook_changes",
    "interpolate_env",
    "load_config",
    "mask_secret",
    "netrc_passwords",
    "outside_skills",
    "parse_jsonc",
    "provider_items",
    "ref_items",
    "resolve_providers",
    "secret_refs",
    "secret_words",
    "sees_images",
    "selectable",
    "sync_dir",
    "trusted_by_user",
    "variant_payload",
    "workspace_of",
    "write_temp",
    "xdg_cache_home",
]
