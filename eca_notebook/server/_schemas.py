"""Request and response bodies of the REST API (pydantic v2), and the source of its OpenAPI schemas.

Requests are read tolerantly, like every inbound message of every door: a field this server does not know is ignored
(a newer client must work with an older server) while every known field is validated (a wrong type is a 400 with the
problems one by one). The exceptions are the bodies written into the user's config file — the approval policy and a
provider — which stay strict: a misspelt ``deny`` ignored would leave a tool the user meant to forbid allowed, a
misspelt provider setting would save a config other than the one asked for, so an unknown key there is a 400.
Responses are what the handlers
send, validated in the tests. Keys are snake_case like the API this follows (``workspace_id``), except inside the
two kinds of embedded ECA data, which keep their own camelCase wire form: the approval policy (it *is* the
``toolCall.approval`` config object) and a session's ``history`` (``chat/contentReceived`` params as replayed by
``chat/open``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..protocol import JsonObject

__all__ = [
    "ApiError",
    "ApprovalPolicy",
    "ApprovalRule",
    "ConnectionTest",
    "ContentIndexStatus",
    "CreateSession",
    "CurrentModel",
    "Health",
    "HistoryItem",
    "IndexChange",
    "IndexIncremental",
    "IndexResult",
    "IndexStatus",
    "ModelEntry",
    "ModelList",
    "Policy",
    "PolicyUpdate",
    "ProviderCheck",
    "ProviderInfo",
    "ProviderInput",
    "ProviderModels",
    "ProviderSetup",
    "RegisterWorkspace",
    "SaveProvider",
    "Session",
    "SessionDetail",
    "SessionList",
    "SetCurrentModel",
    "ValidationDetail",
    "WorkspaceInfo",
    "WorkspaceList",
]

MAX_CHAT_ID_LENGTH = 256  # as the engine's chat store
MAX_PROMPT_CHARS = 1_000_000


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _StrictRequest(BaseModel):
    """What is written into the user's config (the approval policy, a provider): an unknown key is refused (a typo
    must not silently loosen what is allowed, nor save another config than the one asked for)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# -- errors ------------------------------------------------------------------------------------------------------


class ValidationDetail(_Response):
    loc: list[str | int] = Field(description="Where in the body (or query) the problem is.")
    msg: str
    type: str


class ApiError(_Response):
    """Every error: the status code, a message for people, and for validation errors the problems one by one.
    ``message``/``reason`` are the fields jupyter_server's own API errors carry, so Jupyter clients show them."""

    status: int
    message: str
    reason: str | None = None
    details: list[ValidationDetail] | None = None


# -- health and workspaces ---------------------------------------------------------------------------------------


class Health(_Response):
    status: Literal["ok"] = "ok"
    version: str
    workspaces: int = Field(description="Registered workspaces.")
    engines: int = Field(description="Workspaces whose engine is running (created on first use).")
    connections: int = Field(description="Open ECA WebSockets.")


class WorkspaceInfo(_Response):
    id: str = Field(description="Stable id (16 hex): a hash of the workspace's absolute folder paths.")
    path: str = Field(description="The first folder relative to the server root; '' is the root itself.")
    name: str
    folders: list[str] = Field(description="Every folder, relative to the server root.")
    default: bool = Field(description="The server root: the workspace of a WebSocket opened without ?workspace=.")
    engine: Literal["stopped", "starting", "running"]
    connections: int = Field(description="ECA WebSockets attached to this workspace's engine.")


class WorkspaceList(_Response):
    workspaces: list[WorkspaceInfo]


class RegisterWorkspace(_Request):
    path: str = Field("", max_length=4096,
                      description="A folder under the server root, relative to it ('' = the root).")
    start: bool = Field(True, description="Start the workspace's engine now (model discovery, file index).")


# -- approval policy ---------------------------------------------------------------------------------------------


class ApprovalRule(_StrictRequest):
    """``{"argsMatchers": {<argument>: [<regex>, ...]}}``; ``{}`` matches every call of the tool."""

    argsMatchers: dict[str, list[str]] = Field(default_factory=dict)  # noqa: N815 - the config file's key

    @field_validator("argsMatchers")
    @classmethod
    def _regexes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for argument, patterns in value.items():
            for pattern in patterns:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"invalid regular expression for argument {argument!r}: {exc}") from None
        return value


class ApprovalPolicy(_StrictRequest):
    """Exactly the ``toolCall.approval`` config object. Tool keys are ``<server>__<tool>`` (``eca__shell_command``)
    or a bare tool name. Precedence: deny → session approvals → ask → allow → byDefault; ``risk`` acts on the
    engine's risk level of a call (README "Risk levels")."""

    byDefault: Literal["ask", "allow", "deny"] = "ask"  # noqa: N815
    allow: dict[str, ApprovalRule] = Field(default_factory=dict)
    ask: dict[str, ApprovalRule] = Field(default_factory=dict)
    deny: dict[str, ApprovalRule] = Field(default_factory=dict)
    risk: dict[Literal["low", "medium", "high"], Literal["allow", "ask", "deny"]] = Field(
        default_factory=dict, description="What to do with a call by its risk level, e.g. {\"low\": \"allow\"}.")


class PolicyUpdate(_Request):
    approval: ApprovalPolicy


class Policy(_Response):
    workspace_id: str
    approval: JsonObject = Field(description="The workspace engine's toolCall.approval (ApprovalPolicy shape).")
    config_file: str = Field(description="Where PUT persists it, relative to the server root.")
    persisted: bool | None = Field(None, description="PUT only: whether the config file was written "
                                                     "(false when the engine runs with pureConfig).")


# -- index -------------------------------------------------------------------------------------------------------


class ContentIndexStatus(_Response):
    """The content index behind search_symbols / search_text / vector_search (built on first use)."""

    state: Literal["empty", "building", "ready"]
    files: int = Field(description="Files whose content is indexed.")
    symbols: int
    chunks: int = Field(description="Text chunks in the full-text index.")
    vectors: int = Field(description="Chunks with an embedding (computed by the first vector_search).")
    disk_bytes: int
    vectors_available: bool = Field(description="The vectors extra (embedding model) is installed.")
    built_at: float | None = Field(None, description="Epoch seconds of the first scan in this process.")
    refreshed_at: float | None = Field(None, description="Epoch seconds of the last scan or applied events.")


class IndexStatus(_Response):
    workspace_id: str
    state: Literal["empty", "building", "ready"]
    files: int
    dirs: int
    built_at: float | None = Field(None, description="Epoch seconds of the last full build.")
    duration_ms: float | None = None
    refreshed_at: float | None = Field(None, description="Epoch seconds of the last refresh.")
    truncated: bool = Field(description="The file limit was reached: some files are not indexed.")
    content: ContentIndexStatus | None = Field(None, description="The content index; absent when it is turned off "
                                                                 "(index.content: false).")


class IndexResult(IndexStatus):
    changed: int | None = Field(None, description="Entries added or removed by a refresh.")
    accepted: int | None = Field(None, description="incremental: file events accepted.")
    reindexed: int | None = Field(None, description="Content files re-indexed or removed by this call (a "
                                                    "content_hash equal to the indexed one skips the file).")


class IndexChange(_Request):
    type: Literal["created", "modified", "deleted"]
    file_path: str = Field(min_length=1, max_length=4096, description="Relative to the workspace folder.")
    content_hash: str | None = None
    timestamp: str | None = None


class IndexIncremental(_Request):
    changes: list[IndexChange] = Field(max_length=100_000)


# -- sessions ----------------------------------------------------------------------------------------------------


def _check_chat_id(value: str | None) -> str | None:
    if value is None:
        return value
    if not value.strip() or any(ch.isspace() for ch in value):
        raise ValueError("a session id must be non-blank and contain no whitespace")
    return value


class CreateSession(_Request):
    workspace_id: str | None = Field(None, description="Default: the server root's workspace.")
    session_id: str | None = Field(None, max_length=MAX_CHAT_ID_LENGTH, description="Default: a new UUID.")
    title: str | None = Field(None, max_length=200)
    message: str | None = Field(None, min_length=1, max_length=MAX_PROMPT_CHARS,
                                description="A first prompt: the turn starts at once and streams to the "
                                            "workspace's WebSockets (as chat/prompt does).")
    model: str | None = Field(None, max_length=512)
    behavior: str | None = Field(None, max_length=200)

    @field_validator("session_id")
    @classmethod
    def _session_id(cls, value: str | None) -> str | None:
        return _check_chat_id(value)


class Session(_Response):
    id: str = Field(description="The ECA chatId.")
    workspace_id: str
    title: str | None = None
    status: Literal["idle", "running"]
    created_at: int | None = Field(None, description="Epoch milliseconds.")
    updated_at: int | None = Field(None, description="Epoch milliseconds.")
    model: str | None = None
    message_count: int | None = None
    prompt_status: str | None = Field(None, description="POST with a message: chat/prompt's status "
                                                        "(prompting, error, login).")


class SessionList(_Response):
    workspace_id: str
    sessions: list[Session]


class HistoryItem(_Response):
    role: Literal["user", "assistant", "system"]
    content: JsonObject = Field(description="An ECA ChatContent (text, toolCallRun, usage, …).")


class SessionDetail(Session):
    behavior: str | None = None
    history: list[HistoryItem] = Field(description="What clients were shown, as chat/open replays it "
                                                   "(consecutive text chunks merged).")


# -- models ------------------------------------------------------------------------------------------------------


class ModelEntry(_Response):
    id: str = Field(description="provider/model, as in ECA's config/updated.")
    provider: str
    name: str
    context_limit: int | None = None
    output_limit: int | None = None
    input_cost: float | None = Field(None, description="USD per 1M input tokens.")
    output_cost: float | None = Field(None, description="USD per 1M output tokens.")
    reasoning: bool = False


class ModelList(_Response):
    workspace_id: str
    models: list[ModelEntry]
    default: str | None = None
    current: str | None = None


class CurrentModel(_Response):
    workspace_id: str
    model: str | None
    default: str | None = None
    behavior: str
    behaviors: list[str]


class SetCurrentModel(_Request):
    model: str | None = Field(None, min_length=1, max_length=512)
    behavior: str | None = Field(None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _something(self) -> SetCurrentModel:
        if self.model is None and self.behavior is None:
            raise ValueError("set 'model', 'behavior' or both")
        return self


# -- providers (connect a model) ---------------------------------------------------------------------------------

ProviderKind = Literal["openai", "anthropic", "openai-compatible", "ollama"]


class ProviderInput(_StrictRequest):
    """A provider as the "Connect a model" form sends it. ``key`` is written to the user's config file and never
    sent back; ``key_env`` names an environment variable instead (written as ``${env:NAME}``); neither keeps the
    key already saved."""

    kind: ProviderKind
    url: str | None = Field(None, min_length=1, max_length=2048,
                            description="http(s) base URL; default: the provider's own (Ollama: 127.0.0.1:11434).")
    key: str | None = Field(None, min_length=1, max_length=4096, description="The API key (write-only).")
    key_env: str | None = Field(None, min_length=1, max_length=100,
                                description="The name of an environment variable holding the key.")
    models: list[str] = Field(default_factory=list, max_length=200,
                              description="Model names to offer (OpenAI-compatible servers; others list their own).")
    allow_insecure: bool = Field(False, description="Confirm sending a key over plain http:// to another machine.")


class SaveProvider(ProviderInput):
    default_model: str | None = Field(None, min_length=1, max_length=512,
                                      description="provider/model to make the default (and select).")


class ProviderCheck(ProviderInput):
    model: str = Field(min_length=1, max_length=200, description="The model name to send the one-token request to.")


class ProviderInfo(_Response):
    id: str
    kind: ProviderKind
    url: str | None = None
    key_source: Literal["config", "env"] | None = Field(
        None, description="config: saved in the file; env: from an environment variable; null: no key.")
    key_env: str | None = None
    key_hint: str | None = Field(None, description="The key masked (a known prefix and at most its last 4).")
    models: list[str]


class ProviderSetup(_Response):
    workspace_id: str
    config_file: str = Field(description="The user's config file providers are saved to.")
    providers: list[ProviderInfo]
    models: list[str]
    default: str | None = None
    current: str | None = None


class ConnectionTest(_Response):
    ok: bool
    message: str = Field(description="The provider's own words on failure (HTTP status and message).")
    status: int | None = None


class ProviderModels(_Response):
    provider_id: str
    kind: ProviderKind
    url: str
    reachable: bool
    models: list[str]
    message: str
