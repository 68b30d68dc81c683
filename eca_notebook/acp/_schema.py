"""What an ACP client may send us, validated: params models, size limits and the ACP error codes.

Our own pydantic models rather than the ``agent-client-protocol`` package's: the door must not depend on a test
dependency, and we only need the client → agent side. Like the ECA models they tolerate unknown keys (clients add
``_meta`` and newer fields) but check what we rely on: types, required fields, absolute paths, id lengths. What we
send (``session/update`` notifications, our answers, ``session/request_permission``) is typed by TypedDicts:
checked by mypy, free per streamed chunk.

Limits (``shared/specs/acp-messages.md`` "Message Size Limits") are checked on the params of each request before
validation, so an oversized prompt is refused with a clear ``-32602`` instead of being half processed.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..protocol import JsonObject
from ..protocol.errors import INVALID_PARAMS, RpcError
from ..protocol.methods import invalid_params

__all__ = [
    "FILE_NOT_FOUND",
    "FILE_TOO_LARGE",
    "MCP_SERVER_ERROR",
    "MCP_SERVER_UNAVAILABLE",
    "PARAMS",
    "PERMISSION_DENIED",
    "PROMPT_TIMEOUT",
    "PROTOCOL_VERSION",
    "READ_LIMIT",
    "SESSION_EXPIRED",
    "SESSION_LOCKED",
    "SESSION_NOT_FOUND",
    "SIZE_LIMITS",
    "SPEC_MESSAGES",
    "TIMEOUT",
    "TOOL_DISABLED",
    "TOOL_NOT_FOUND",
    "TOOL_TIMEOUT",
    "UPDATE_LIMIT",
    "AcpModel",
    "AvailableCommand",
    "CancelParams",
    "ChunkContent",
    "ClientRequestParams",
    "ConfigOption",
    "ConfigOptionsResult",
    "DiffContent",
    "InitializeParams",
    "ListSessionsParams",
    "LoadSessionParams",
    "MessageChunk",
    "NewSessionParams",
    "NewSessionResult",
    "PermissionOption",
    "PlanEntry",
    "PlanUpdate",
    "PromptParams",
    "PromptResult",
    "ReadTextFileParams",
    "ReadTextFileResult",
    "RequestPermissionParams",
    "SessionInfo",
    "SessionPage",
    "SessionState",
    "SessionUpdate",
    "SetConfigOptionParams",
    "SetModeParams",
    "SetModelParams",
    "TextChunk",
    "ToolCall",
    "ToolCallContent",
    "ToolCallRequest",
    "ToolCallUpdate",
    "UsageUpdate",
    "parse",
]

PROTOCOL_VERSION = 1

# ACP-specific error codes (acp-messages.md "ACP-Specific Errors"). ``TIMEOUT`` is ACP's -32001, which on the ECA
# wire means "Unknown error" (eca_notebook.protocol.errors): the two protocols' codes are kept apart.
TIMEOUT = -32001
SESSION_NOT_FOUND = -31900
SESSION_EXPIRED = -31901  # session/load of a chat past chatRetentionDays (the next start would prune it)
SESSION_LOCKED = -31902
FILE_NOT_FOUND = -31700  # a session's cwd that does not exist
PERMISSION_DENIED = -31701  # a session's cwd the agent may not open
FILE_TOO_LARGE = -31702  # a session/prompt over its size limit because of what it attaches (resources, images)
TOOL_NOT_FOUND = -31800  # the model called a tool no one offers (in a failed tool call's rawOutput.error)
TOOL_TIMEOUT = -31802  # a command in the client's terminal that ran past the tool's timeout (killed)
TOOL_DISABLED = -31801  # a tool that exists but is disabled here (disabledTools, a deny rule, not in the mode)
# An MCP tool call that failed on the server's side (the MCP plug-in's McpManager.call_failure): it broke off — a
# protocol error, a malformed result, the connection closed during the call — or the server was not there to answer
# (not running, no answer within mcpTimeoutSeconds).
MCP_SERVER_ERROR = -31600
MCP_SERVER_UNAVAILABLE = -31601
SPEC_MESSAGES = {TOOL_NOT_FOUND: "Tool not found", TOOL_DISABLED: "Tool disabled", TOOL_TIMEOUT: "Tool timeout",
                 MCP_SERVER_ERROR: "MCP server error", MCP_SERVER_UNAVAILABLE: "MCP server unavailable"}
#: the prompt blocks that attach files: a prompt too large with one of these is "File too large"
_ATTACHMENTS = {"resource", "image", "audio"}

#: How long a ``session/prompt`` may run (acp-messages.md "Timeout Specifications": 300 s), not counting the time a
#: tool call waits for the user's permission. Past it the turn is stopped and the request answers ``TIMEOUT``.
PROMPT_TIMEOUT = 300.0

# Largest params (serialized JSON bytes) accepted per method; the transport's frame cap is the backstop for the rest.
SIZE_LIMITS = {
    "initialize": 10 * 1024,
    "session/new": 50 * 1024,
    "session/load": 50 * 1024,
    "session/prompt": 1024 * 1024,
}
DEFAULT_LIMIT = 64 * 1024  # any other client → agent message (ids, mode names, cancel …)
READ_LIMIT = 10 * 1024 * 1024  # fs/*: "Large file contents", the largest file an fs/read_text_file answers with
UPDATE_LIMIT = 100 * 1024  # what we send as one session/update (text chunks are split, diffs dropped to fit)
MAX_ID_LENGTH = 256


class AcpModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown keys (``_meta``, newer fields) kept, never refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


def _session_id(value: str) -> str:
    if not value or len(value) > MAX_ID_LENGTH or any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError(f"must be 1 to {MAX_ID_LENGTH} characters without whitespace or control characters")
    return value


def _absolute(value: str) -> str:
    if "\0" in value:
        raise ValueError("must not contain NUL bytes")
    if not os.path.isabs(value):
        raise ValueError("must be an absolute path")
    return value


class FsCapabilities(AcpModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientCapabilities(AcpModel):
    fs: FsCapabilities = Field(default_factory=FsCapabilities)
    terminal: bool = False


class Implementation(AcpModel):
    name: str
    version: str | None = None
    title: str | None = None


class InitializeParams(AcpModel):
    protocol_version: int = Field(ge=0, le=65535)
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None


class NameValue(AcpModel):
    name: str
    value: str


class McpServer(AcpModel):
    """Stdio (``command``/``args``/``env``, no ``type``), or ``type: "http"`` / ``"sse"`` with ``url``/``headers``.

    Also the shape acp-messages.md's own ``session/new`` example uses (opencode's config): ``type: "local"`` with
    ``command`` as an array (program then arguments), ``"remote"`` with ``url``, and ``env``/``headers`` as
    objects. They are read as the stdio / http forms: refusing them would fail the whole session.
    """

    name: str = Field(min_length=1)
    type: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: list[NameValue] = Field(default_factory=list)
    url: str | None = None
    headers: list[NameValue] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _other_spellings(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        command = data.get("command")
        if isinstance(command, list):
            if not command or not all(isinstance(part, str) for part in command):
                raise ValueError("command: an array must hold the program and its arguments as strings")
            extra = data.get("args")
            data["command"] = command[0]
            data["args"] = [*command[1:], *(extra if isinstance(extra, list) else [])]
        for key in ("env", "environment", "headers"):
            value = data.get(key)
            if isinstance(value, dict):
                data[key] = [{"name": str(k), "value": v} for k, v in value.items()]
        if "environment" in data and "env" not in data:
            data["env"] = data.pop("environment")
        return data


class _SessionSetup(AcpModel):
    cwd: str
    mcp_servers: list[McpServer] = Field(default_factory=list)
    additional_directories: list[str] = Field(default_factory=list)

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str) -> str:
        return _absolute(value)

    @field_validator("additional_directories")
    @classmethod
    def _dirs(cls, value: list[str]) -> list[str]:
        return [_absolute(v) for v in value]


class NewSessionParams(_SessionSetup):
    pass


class LoadSessionParams(_SessionSetup):
    session_id: str

    @field_validator("session_id")
    @classmethod
    def _sid(cls, value: str) -> str:
        return _session_id(value)


class ListSessionsParams(AcpModel):
    cwd: str | None = None
    cursor: str | None = None

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str | None) -> str | None:
        return None if value is None else _absolute(value)


class TextBlock(AcpModel):
    type: Literal["text"]
    text: str

    @field_validator("text")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\0" in value:
            raise ValueError("text must not contain NUL bytes")
        return value


class ResourceLinkBlock(AcpModel):
    type: Literal["resource_link"]
    uri: str
    name: str = ""
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None


class TextResource(AcpModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResource(AcpModel):
    uri: str
    blob: str
    mime_type: str | None = None


class ResourceBlock(AcpModel):
    type: Literal["resource"]
    resource: TextResource | BlobResource


class MediaBlock(AcpModel):
    """Image (sent to the model as an ``image`` context) and audio (refused: we do not advertise it)."""

    type: Literal["image", "audio"]
    data: str = ""
    mime_type: str = ""
    uri: str | None = None


ContentBlock = TextBlock | ResourceLinkBlock | ResourceBlock | MediaBlock


class PromptParams(AcpModel):
    session_id: str
    prompt: list[Annotated[ContentBlock, Field(discriminator="type")]] = Field(min_length=1)

    @field_validator("session_id")
    @classmethod
    def _sid(cls, value: str) -> str:
        return _session_id(value)


class CancelParams(AcpModel):
    session_id: str


class SetModeParams(AcpModel):
    session_id: str
    mode_id: str


class SetModelParams(AcpModel):
    session_id: str
    model_id: str


class SetConfigOptionParams(AcpModel):
    session_id: str
    config_id: str
    value: str | bool


class ReadTextFileParams(AcpModel):
    """``fs/read_text_file`` sent to the agent (acp-messages.md "Error Scenarios"): a file of a session's folder."""

    session_id: str
    path: str
    line: int | None = Field(default=None, ge=1)
    limit: int | None = Field(default=None, ge=0)

    @field_validator("session_id")
    @classmethod
    def _sid(cls, value: str) -> str:
        return _session_id(value)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _absolute(value)


class PermissionOutcome(AcpModel):
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None


class PermissionResponse(AcpModel):
    outcome: PermissionOutcome


PARAMS: dict[str, type[AcpModel]] = {
    "initialize": InitializeParams,
    "session/new": NewSessionParams,
    "session/load": LoadSessionParams,
    "session/list": ListSessionsParams,
    "session/prompt": PromptParams,
    "session/cancel": CancelParams,
    "session/set_mode": SetModeParams,
    "session/set_model": SetModelParams,
    "session/set_config_option": SetConfigOptionParams,
    "fs/read_text_file": ReadTextFileParams,
}


def _size(params: Any) -> int:
    return len(json.dumps(params, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _attaches(params: Any) -> bool:
    blocks = params.get("prompt") if isinstance(params, dict) else None
    return isinstance(blocks, list) and any(isinstance(b, dict) and b.get("type") in _ATTACHMENTS for b in blocks)


def parse(method: str, params: Any) -> Any:
    """Size check, then validation: the ``params_parser`` of the ACP endpoint. Unknown methods pass through (the
    endpoint answers ``-32601`` for requests and ignores notifications)."""
    model = PARAMS.get(method)
    if model is None:
        return params
    limit = SIZE_LIMITS.get(method, DEFAULT_LIMIT)
    size = _size(params)
    if size > limit and method == "session/prompt" and _attaches(params):
        raise RpcError(FILE_TOO_LARGE, f"File too large: the prompt with its attachments is {size} bytes (the limit "
                                       f"is {limit} bytes); attach less, or link the file (resource_link) instead",
                       {"method": method, "size": size, "limit": limit})
    if size > limit:
        raise RpcError(INVALID_PARAMS, f"{method} params are too large: {size} bytes (the limit is {limit} bytes)",
                       {"method": method, "size": size, "limit": limit})
    try:
        return model.model_validate(params if params is not None else {})
    except ValidationError as exc:
        raise invalid_params(exc, method) from None


# -- what we send: the ``update`` of ``session/update`` -----------------------------------------------------------
# TypedDicts, not models: they are built once per streamed chunk, where a model's validation and dump would cost
# more than the dict itself (they are checked by mypy, and cost nothing at run time).


class TextChunk(TypedDict):
    type: Literal["text"]
    text: str


class ImageChunk(TypedDict):
    type: Literal["image"]
    mimeType: str
    data: str


ChunkContent: TypeAlias = TextChunk | ImageChunk


class WrappedContent(TypedDict):
    """A tool call's content that is a plain content block (its output text)."""

    type: Literal["content"]
    content: ChunkContent


class DiffContent(TypedDict):
    """A tool call's file change: ``oldText`` absent (not null) for a new file."""

    type: Literal["diff"]
    path: str
    oldText: NotRequired[str]
    newText: str


class TerminalContent(TypedDict):
    """A tool call shows the client's terminal its command runs in."""

    type: Literal["terminal"]
    terminalId: str


ToolCallContent: TypeAlias = WrappedContent | DiffContent | TerminalContent


class Location(TypedDict):
    path: str


class Risk(TypedDict):
    level: str
    reason: str


class EcaMeta(TypedDict):
    risk: Risk


class Meta(TypedDict):
    eca: EcaMeta


class MessageChunk(TypedDict):
    sessionUpdate: Literal["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]
    content: ChunkContent


class ToolCallRequest(TypedDict):
    """The ``toolCall`` of a ``session/request_permission``: a ``tool_call`` without ``sessionUpdate``."""

    toolCallId: str
    title: str
    kind: str
    status: Literal["pending"]
    locations: list[Location]
    rawInput: NotRequired[JsonObject]
    content: NotRequired[list[ToolCallContent]]
    _meta: NotRequired[Meta]


class ToolCall(ToolCallRequest):
    sessionUpdate: Literal["tool_call"]


class RawOutputError(TypedDict):
    code: int
    message: str


class RawOutput(TypedDict):
    error: RawOutputError


class ToolCallUpdate(TypedDict):
    sessionUpdate: Literal["tool_call_update"]
    toolCallId: str
    status: Literal["in_progress", "completed", "failed"]
    title: NotRequired[str]
    content: NotRequired[list[ToolCallContent]]
    rawOutput: NotRequired[RawOutput]


class PlanEntry(TypedDict):
    content: str
    priority: str
    status: str


class PlanUpdate(TypedDict):
    sessionUpdate: Literal["plan"]
    entries: list[PlanEntry]


class Cost(TypedDict):
    amount: float
    currency: str


class UsageUpdate(TypedDict):
    sessionUpdate: Literal["usage_update"]
    used: int
    size: int
    cost: NotRequired[Cost]


class SessionInfoUpdate(TypedDict):
    sessionUpdate: Literal["session_info_update"]
    title: str


class CommandInput(TypedDict):
    hint: str


class AvailableCommand(TypedDict):
    name: str
    description: str
    input: NotRequired[CommandInput]


class AvailableCommandsUpdate(TypedDict):
    sessionUpdate: Literal["available_commands_update"]
    availableCommands: list[AvailableCommand]


class SelectOption(TypedDict):
    value: str
    name: str
    description: NotRequired[str]


class ConfigOption(TypedDict):
    """A ``select`` of ``configOptions`` (the session's mode, its model)."""

    id: str
    name: str
    category: str
    type: Literal["select"]
    currentValue: str
    options: list[SelectOption]


class ConfigOptionUpdate(TypedDict):
    sessionUpdate: Literal["config_option_update"]
    configOptions: list[ConfigOption]


class SessionMode(TypedDict):
    id: str
    name: str
    description: str


class ModeState(TypedDict):
    currentModeId: str
    availableModes: list[SessionMode]


class ModelInfo(TypedDict):
    modelId: str
    name: str


class ModelState(TypedDict):
    currentModelId: str
    availableModels: list[ModelInfo]


class SessionState(TypedDict):
    """The modes / models / configOptions block of a ``session/new`` or ``session/load`` answer."""

    modes: ModeState
    models: NotRequired[ModelState]
    configOptions: list[ConfigOption]


class NewSessionResult(SessionState):
    """A ``session/new`` answer."""

    sessionId: str


class ConfigOptionsResult(TypedDict):
    """A ``session/set_config_option`` answer."""

    configOptions: list[ConfigOption]


class PromptResult(TypedDict):
    """A ``session/prompt`` answer."""

    stopReason: str


class ReadTextFileResult(TypedDict):
    """An ``fs/read_text_file`` answer."""

    content: str


class PermissionOption(TypedDict):
    optionId: str
    name: str
    kind: str


class RequestPermissionParams(TypedDict):
    """What we send as ``session/request_permission``."""

    sessionId: str
    toolCall: ToolCallRequest
    options: list[PermissionOption]


#: The params of a request we send the client: a ``session/request_permission``, or an ``fs/*`` / ``terminal/*``
#: request's JSON object.
ClientRequestParams: TypeAlias = JsonObject | RequestPermissionParams


class SessionInfo(TypedDict):
    sessionId: str
    cwd: str
    title: NotRequired[str]
    updatedAt: NotRequired[str]


class SessionPage(TypedDict):
    """A ``session/list`` answer."""

    sessions: list[SessionInfo]
    nextCursor: NotRequired[str]


SessionUpdate: TypeAlias = (MessageChunk | ToolCall | ToolCallUpdate | PlanUpdate | UsageUpdate | SessionInfoUpdate
                            | AvailableCommandsUpdate | ConfigOptionUpdate)
