"""The configuration's schema: typed models for the keys we use, in the reference server's spelling.

Users keep one ``~/.config/eca/config.json`` for every ECA server, so key names mirror the reference server and
**unknown keys are kept, never rejected** (``extra="allow"``). ``null`` for a key that has a non-null default means
"back to the default"; ``null`` for an entry of a named map (``providers.x``, ``mcpServers.x``, an approval rule)
removes that entry — how a workspace undoes a global setting. The reference's spellings of ``api`` (``openai`` for
``openai-responses``) and its ``cost`` / ``limit`` objects are accepted.

Our additions to the reference's keys: ``toolCall.maxRounds`` (LLM round trips per prompt), ``requestTimeoutSeconds``
(connect / first-byte timeout for LLM HTTP requests; ``None`` = provider default) and ``logLevel``. The stream idle
timeout uses the reference's ``streamIdleTimeoutSeconds`` (default 120; ``null`` disables it).
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..._merge import deep_merge
from ...protocol import JsonObject

__all__ = [
    "ApprovalConfig",
    "ArgsRule",
    "BehaviorConfig",
    "CommandExecutionConfig",
    "CompletionConfig",
    "Config",
    "IndexConfig",
    "LocalModelConfig",
    "McpServerConfig",
    "ModelConfig",
    "ProviderApi",
    "ProviderConfig",
    "RewriteConfig",
    "ToolCallConfig",
]


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
    extra_payload: JsonObject = Field(default_factory=dict)
    extra_headers: dict[str, str] = Field(default_factory=dict)
    reasoning_history: Literal["all", "turn", "off"] | None = None
    input_cost: float | None = Field(default=None, ge=0)
    output_cost: float | None = Field(default=None, ge=0)
    cache_read_cost: float | None = Field(default=None, ge=0)
    cache_write_cost: float | None = Field(default=None, ge=0)
    context_limit: int | None = Field(default=None, gt=0)
    output_limit: int | None = Field(default=None, gt=0)
    reasoning: bool | None = None
    # the reference's ``imageInput``: whether the model takes images (vision); None = the catalog's default by name
    # (engine/config/_catalog.py sees_images). A model that does not get a description of each image instead.
    image_input: bool | None = None
    # ours: treat it as a small model — compact system prompt, tools only when a prompt asks for them (as the
    # embedded model always is); for tiny Ollama / llama.cpp models
    compact: bool = False
    # the reference's: named payload presets (reasoning effort…) merged over the built-in ones; ``{}`` removes one
    variants: dict[str, JsonObject] = Field(default_factory=dict)
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
    # the reference's: Anthropic prompt-cache lifetime, "short" (5 min, the default) or "long" (1 h)
    cache_retention: Literal["short", "long"] | None = None
    # ours: send OpenAI's ``prompt_cache_key`` (default: only to api.openai.com; a compatible server may reject it)
    prompt_cache_key: bool | None = None

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
    """``toolCall.approval``. Precedence (applied by engine/turn/_approval.py): deny → risk deny → outside the workspace
    → session approvals → tool checks → risk ask → ask → allow → risk allow → byDefault. ``byDefault: "deny"`` is
    accepted because the reference's schema allows it."""

    by_default: Literal["ask", "allow", "deny"] = "ask"
    allow: dict[str, ArgsRule] = Field(default_factory=dict)
    ask: dict[str, ArgsRule] = Field(default_factory=dict)
    deny: dict[str, ArgsRule] = Field(default_factory=dict)
    #: Ours: what to do with a call by its risk level (``{"low": "allow", "high": "ask"}``); a level left out only
    #: informs. Where it sits in the precedence: engine/turn/_approval.py.
    risk: dict[Literal["low", "medium", "high"], Literal["allow", "ask", "deny"]] = Field(default_factory=dict)
    # Set while an untrusted workspace's looser approvals are held (workspace/_trust.py): the user's own approvals,
    # which every decision must be at least as strict as (engine/turn/_approval.py). Never serialised.
    _floor: ApprovalConfig | None = PrivateAttr(default=None)

    @field_validator("allow", "ask", "deny", "risk", mode="before")
    @classmethod
    def _rules(cls, value: Any) -> Any:
        return _drop_null_entries(value)

    @property
    def floor(self) -> ApprovalConfig | None:
        """The approvals a decision may not be looser than (the user's own, while a workspace is untrusted)."""
        return self._floor

    def held_to(self, floor: ApprovalConfig) -> ApprovalConfig:
        """A copy whose decisions are never looser than *floor*'s (the workspace's loosening is held)."""
        held = self.model_copy()
        held._floor = floor
        return held


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
    """``agent.<id>`` (the deprecated spelling ``behavior.<id>`` is accepted too): one agent's settings, resolved with
    built-ins, markdown agents and ``inherit`` by workspace/_agents.py. ``mode``: ``primary``, ``subagent`` or both (a
    list; unset means both); ``spawnableBy``: the primary agents that may spawn it (unset: all)."""

    mode: str | list[str] | None = None
    inherit: str | None = None
    description: str | None = None
    spawnable_by: str | list[str] | None = None
    system_prompt: str | None = None
    default_model: str | None = None
    # the reference's: the agent's default model variant (a chat's or prompt's own wins; ignored where the model
    # does not have it)
    variant: str | None = None
    tool_call: ToolCallConfig | None = None
    disabled_tools: list[str] | None = None
    max_steps: int | None = Field(default=None, ge=1)
    # ours: hide every tool that changes files or notebooks (a tool's ``mutates``), whatever its origin; the
    # built-in ``plan`` and ``explorer`` are read-only
    read_only: bool | None = None


class LocalModelConfig(_ConfigModel):
    """``localModel`` as an object (``true`` / ``false`` are shorthands for ``enabled``).

    ``tools`` — when the embedded model is offered tools: ``auto`` (only when the prompt asks to read, change or run
    something in the workspace; see ``engine/turn/_small_model.py``), ``always``, or ``never``.
    """

    enabled: bool = True
    tools: Literal["auto", "always", "never"] = "auto"


class CompletionConfig(_ConfigModel):
    """``completion``: inline completion (``completion/inline``). ``model`` as in the reference; the rest is ours.

    ``model`` unset: a fast model of the chat's provider (``openai/gpt-4.1-mini``, ``anthropic/claude-haiku-4-5``),
    else the chat's default model (Ollama, an OpenAI-compatible server), else the embedded model (offline).
    ``fim`` — fill-in-the-middle: ``auto`` (default) uses it where the API surely has it (Ollama ``/api/generate``,
    the embedded model's raw continuation) and a chat prompt elsewhere; ``true`` also sends OpenAI-compatible
    servers' ``/v1/completions`` with a ``suffix`` (llama.cpp, vLLM, DeepSeek); ``false`` always asks by chat.
    Budgets (``null``: the model's default — smaller for the embedded model): the text before the cursor
    (``prefixChars``/``prefixLines``), after it (``suffixChars``/``suffixLines``), the client's extra ``context``
    (``contextChars``) and the tokens generated (``maxTokens``). ``timeoutSeconds``: a slower suggestion is dropped.
    """

    model: str | None = None
    fim: Literal["auto"] | bool = "auto"
    max_tokens: int | None = Field(default=None, gt=0)
    prefix_chars: int | None = Field(default=None, ge=0)
    prefix_lines: int | None = Field(default=None, ge=0)
    suffix_chars: int | None = Field(default=None, ge=0)
    suffix_lines: int | None = Field(default=None, ge=0)
    context_chars: int | None = Field(default=None, ge=0)
    temperature: float | None = Field(default=None, ge=0)
    timeout_seconds: float = Field(default=20, gt=0)


class RewriteConfig(_ConfigModel):
    """``rewrite``: ``rewrite/prompt``. ``model`` (default: the chat's default model) and ``fullFileMaxLines`` (the
    lines of the file around the selection shown to the model; 0: none) as in the reference; ``timeoutSeconds``
    (ours) ends a rewrite that runs longer."""

    model: str | None = None
    full_file_max_lines: int = Field(default=400, ge=0)
    timeout_seconds: float = Field(default=300, gt=0)


CommandMode = Literal["local_terminal", "server_runner"]
_COMMAND_MODES: tuple[CommandMode, ...] = ("local_terminal", "server_runner")


class CommandExecutionConfig(_ConfigModel):
    """``commandExecution`` (ours, from http-websocket-api.md): where the model's shell commands may run for a client
    of the session stream. ``modes``, in order of preference: ``local_terminal`` (the client runs them in the user's
    own terminal, when it can) and ``server_runner`` (this server runs them, as for every other door); the first
    mode the client supports wins, and none of them means commands are refused on that stream."""

    modes: list[CommandMode] = Field(default_factory=lambda: list(_COMMAND_MODES))


class IndexConfig(_ConfigModel):
    """``index`` (ours): the workspace's content index behind ``search_symbols``, ``search_text`` and
    ``vector_search`` (``eca_notebook.retrieval``). ``content: false`` turns it off (the tools are not offered);
    ``vectors: false`` keeps the model from being loaded even when the ``vectors`` extra is installed.
    ``maxFileBytes``: larger files are not indexed (notebooks may be ten times larger: only their sources count)."""

    content: bool = True
    vectors: bool = True
    max_file_bytes: int = Field(default=1_000_000, gt=0)
    max_files: int = Field(default=200_000, gt=0)


class Config(_ConfigModel):
    """The merged, validated configuration. Unknown keys stay available as extras (``config.model_extra``)."""

    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    default_model: str | None = None
    default_behavior: str = "code"
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
    completion: CompletionConfig = Field(default_factory=CompletionConfig)
    rewrite: RewriteConfig = Field(default_factory=RewriteConfig)
    command_execution: CommandExecutionConfig = Field(default_factory=CommandExecutionConfig)
    # ours: the content index (symbols, text, vectors) of the code-search tools; ``false`` turns it off
    index: IndexConfig = Field(default_factory=IndexConfig)
    # ours: the token budget of the automatic editor context a session-stream client sends with each message
    editor_context_tokens: int = Field(default=6000, ge=0)
    # the reference's: the share of the context window (percent) at which a chat is compacted automatically
    auto_compact_percentage: float = Field(default=75, gt=0, le=100)

    @field_validator("providers", "behavior", "mcp_servers", mode="before")
    @classmethod
    def _named_maps(cls, value: Any) -> Any:
        return _drop_null_entries(value)

    @field_validator("local_model", mode="before")
    @classmethod
    def _local_model_shorthand(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @field_validator("index", mode="before")
    @classmethod
    def _index_shorthand(cls, value: Any) -> Any:
        return {"content": value} if isinstance(value, bool) else value

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
