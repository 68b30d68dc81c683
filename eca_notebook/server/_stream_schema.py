"""Every message of the session stream (``http-websocket-api.md``, "WebSocket streaming"), both directions, as
pydantic models.

Client messages are read tolerantly: a field this server does not know is ignored (a newer client's ``client.hello``
with one field more must still connect to an older server), while every known field is validated — a wrong type, a
missing required field or a value out of range is an error the client hears about (``server.error``
``INVALID_MESSAGE`` with the problems one by one). The documented
extensions of the contract are fields here like any other (``hunks`` of an approval, ``patch_id`` in approval args,
``session_id`` / ``command_mode`` / ``patch_mode`` / ``capabilities`` of the hello, ``id`` of a hunk,
``stop_reason`` of the final message). Server messages are built only through these models, so what we send is what
the spec says; :func:`wire` is their one serialisation (``null`` fields are sent, as the spec shows them).

:func:`parse_client_message` reads one decoded frame: the ``type`` picks the model (an unknown one is
``UNKNOWN_MESSAGE_TYPE``), then the model validates the rest.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..protocol import JsonObject

__all__ = [
    "CLIENT_MESSAGES",
    "ERROR_CODES",
    "ActiveEditor",
    "AgentPlan",
    "AgentRetrieveStatus",
    "AssistantImage",
    "AssistantMessageFinal",
    "AssistantThinking",
    "AssistantToken",
    "ClientApprovalResponse",
    "ClientCancel",
    "ClientCommandResult",
    "ClientContextUpdate",
    "ClientFileChanges",
    "ClientHello",
    "ClientInfo",
    "ClientMessage",
    "ClientPatchApplyResult",
    "ClientUserMessage",
    "CommandRequestApproval",
    "Diagnostic",
    "EditorContext",
    "ErrorBody",
    "FileChange",
    "FileMention",
    "FinalMetadata",
    "GitCommit",
    "GitContext",
    "Hunk",
    "ImageAttachment",
    "MessageError",
    "ModelInfo",
    "OpenEditor",
    "PatchError",
    "PatchProposed",
    "PlanStep",
    "Position",
    "Selection",
    "ServerError",
    "ServerHello",
    "ServerInfo",
    "ServerMessage",
    "SessionState",
    "SessionStateBody",
    "SymbolMention",
    "TerminalOutput",
    "ToolExecute",
    "ToolRequestApproval",
    "VisibleRange",
    "parse_client_message",
    "wire",
]

MAX_TEXT = 1_000_000  # a user message, a command's output: as the REST prompt limit
MAX_ID = 512
MAX_PATH = 4096
MAX_IMAGE_CHARS = 28 * 1024 * 1024  # the base64 of a 20 MB image (the engine's limit; the socket's frame is smaller)

#: ``server.error`` codes: the spec's three, and the contract's for the stream itself.
ERROR_CODES = ("RETRIEVAL_FAILED", "MODEL_ERROR", "POLICY_VIOLATION", "INVALID_MESSAGE", "UNKNOWN_MESSAGE_TYPE",
               "HANDSHAKE_REQUIRED", "SESSION_BUSY", "NOT_FOUND", "MESSAGE_TOO_LARGE")
ErrorCode = Literal["RETRIEVAL_FAILED", "MODEL_ERROR", "POLICY_VIOLATION", "INVALID_MESSAGE", "UNKNOWN_MESSAGE_TYPE",
                    "HANDSHAKE_REQUIRED", "SESSION_BUSY", "NOT_FOUND", "MESSAGE_TOO_LARGE"]

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
RelPath = Annotated[str, Field(min_length=1, max_length=MAX_PATH)]
Line = Annotated[int, Field(ge=0)]


class _In(BaseModel):
    """A client message or a part of one: unknown fields are ignored (a tolerant reader), known ones validated."""

    model_config = ConfigDict(extra="ignore")


class _Out(BaseModel):
    """A server message or a part of one (built by us: forbidding extras keeps the writers to the spec)."""

    model_config = ConfigDict(extra="forbid")


# -- client → server ---------------------------------------------------------------------------------------------


class ClientInfo(_In):
    name: str = Field(min_length=1, max_length=200)
    version: str | None = Field(default=None, max_length=200)
    #: ``terminal_exec`` (runs commands in its own terminal), ``apply_patches`` (applies patches itself); others
    #: (``diff_preview``, ``git_integration``, …) are accepted and ignored.
    capabilities: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=100)


class ClientHello(_In):
    type: Literal["client.hello"]
    client_info: ClientInfo


class Position(_In):
    line: Line
    character: Annotated[int, Field(ge=0)] = 0


class Selection(_In):
    start: Position
    end: Position


class VisibleRange(_In):
    start: Line
    end: Line


class ActiveEditor(_In):
    file_path: RelPath
    language: str | None = Field(default=None, max_length=100)
    selection: Selection | None = None
    visible_range: VisibleRange | None = None
    content_hash: str | None = Field(default=None, max_length=200)


class OpenEditor(_In):
    file_path: RelPath
    is_dirty: bool | None = None
    visible: bool | None = None


class Diagnostic(_In):
    file_path: RelPath
    severity: Literal["error", "warning", "information", "info", "hint"]
    message: str = Field(max_length=10_000)
    line: Line | None = None
    character: Annotated[int, Field(ge=0)] | None = None
    source: str | None = Field(default=None, max_length=200)


class TerminalOutput(_In):
    command: str | None = Field(default=None, max_length=10_000)
    exit_code: int | None = None
    stdout: str = Field("", max_length=MAX_TEXT)
    stderr: str = Field("", max_length=MAX_TEXT)
    timestamp: str | None = Field(default=None, max_length=100)


class GitCommit(_In):
    sha: str = Field(max_length=100)
    message: str = Field(max_length=10_000)
    author: str | None = Field(default=None, max_length=500)
    timestamp: str | None = Field(default=None, max_length=100)


class GitContext(_In):
    branch: str | None = Field(default=None, max_length=500)
    staged_files: list[RelPath] = Field(default_factory=list, max_length=10_000)
    modified_files: list[RelPath] = Field(default_factory=list, max_length=10_000)
    recent_commits: list[GitCommit] = Field(default_factory=list, max_length=1_000)


class FileMention(_In):
    type: Literal["file"]
    path: RelPath


class SymbolMention(_In):
    type: Literal["symbol"]
    name: str = Field(min_length=1, max_length=1_000)
    file_path: RelPath | None = None
    line: Line | None = None


Mention = Annotated[FileMention | SymbolMention, Field(discriminator="type")]


class EditorContext(_In):
    """The automatic context of ``client.user_message`` (and, partially, of ``client.context_update``)."""

    active_editor: ActiveEditor | None = None
    open_editors: list[OpenEditor] | None = Field(default=None, max_length=1_000)
    diagnostics: list[Diagnostic] | None = Field(default=None, max_length=10_000)
    terminal_output: TerminalOutput | None = None
    git_context: GitContext | None = None
    mentions: list[Mention] | None = Field(default=None, max_length=1_000)
    command: str | None = Field(default=None, max_length=200, pattern=r"^/\S+$")


class ImageAttachment(_In):
    """An image sent with ``client.user_message`` (``images``: an extension — the contract has no place for one): a
    pasted screenshot, a plot. ``data`` is base64 without a ``data:`` prefix; the engine checks it like any image
    (size, media type sniffed, decompression bombs) and a model that cannot see gets its description."""

    media_type: str = Field(min_length=1, max_length=100)
    data: str = Field(min_length=1, max_length=MAX_IMAGE_CHARS)
    name: str | None = Field(default=None, max_length=500)


class ClientUserMessage(_In):
    type: Literal["client.user_message"]
    message: str = Field(max_length=MAX_TEXT)
    context: EditorContext | None = None
    images: list[ImageAttachment] | None = Field(default=None, max_length=20)


class ClientContextUpdate(_In):
    type: Literal["client.context_update"]
    updates: EditorContext


class ClientApprovalResponse(_In):
    type: Literal["client.approval_response"]
    request_id: Id
    approved: bool
    scope: Literal["all", "file", "hunk"]
    file_path: RelPath | None = None
    #: Extension: with scope ``hunk``, the hunk ids (``h1``, ``h2`` … of ``patch.proposed``) to apply.
    hunks: list[Id] | None = Field(default=None, max_length=10_000)


class PatchError(_In):
    message: str = Field(max_length=100_000)
    type: str = Field(max_length=100)


class ClientPatchApplyResult(_In):
    type: Literal["client.patch_apply_result"]
    patch_id: Id
    file_path: RelPath
    success: bool
    error: PatchError | None = None
    applied_hash: str | None = Field(default=None, max_length=200)


class ClientCommandResult(_In):
    type: Literal["client.command_result"]
    command_id: Id
    command: str | None = Field(default=None, max_length=MAX_TEXT)
    exit_code: int
    stdout: str = Field("", max_length=MAX_TEXT)
    stderr: str = Field("", max_length=MAX_TEXT)
    duration_ms: Annotated[int, Field(ge=0)] | None = None


class ClientCancel(_In):
    type: Literal["client.cancel"]
    reason: str | None = Field(default=None, max_length=1_000)


class FileChange(_In):
    type: Literal["created", "modified", "deleted"]
    file_path: RelPath
    content_hash: str | None = Field(default=None, max_length=200)
    timestamp: str | None = Field(default=None, max_length=100)


class ClientFileChanges(_In):
    type: Literal["client.file_changes"]
    changes: list[FileChange] = Field(max_length=100_000)


ClientMessage = (ClientHello | ClientUserMessage | ClientContextUpdate | ClientApprovalResponse
                 | ClientPatchApplyResult | ClientCommandResult | ClientCancel | ClientFileChanges)

#: The model of each client message type.
CLIENT_MESSAGES: dict[str, type[ClientMessage]] = {
    "client.hello": ClientHello,
    "client.user_message": ClientUserMessage,
    "client.context_update": ClientContextUpdate,
    "client.approval_response": ClientApprovalResponse,
    "client.patch_apply_result": ClientPatchApplyResult,
    "client.command_result": ClientCommandResult,
    "client.cancel": ClientCancel,
    "client.file_changes": ClientFileChanges,
}
_ADAPTERS: dict[str, TypeAdapter[ClientMessage]] = {name: TypeAdapter(model) for name, model in CLIENT_MESSAGES.items()}


class MessageError(Exception):
    """A frame that is not a valid client message: the ``server.error`` to answer it with."""

    def __init__(self, code: ErrorCode, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.details = details


def parse_client_message(data: Any) -> ClientMessage:
    """One decoded frame as its model; :class:`MessageError` (``INVALID_MESSAGE`` with pydantic's problems, input
    values left out, or ``UNKNOWN_MESSAGE_TYPE``) when it is not one."""
    if not isinstance(data, dict):
        raise MessageError("INVALID_MESSAGE", "a message must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise MessageError("INVALID_MESSAGE", "a message needs a string 'type'",
                           [{"loc": ["type"], "msg": "Field required" if kind is None else "Input should be a string",
                             "type": "missing" if kind is None else "string_type"}])
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        raise MessageError("UNKNOWN_MESSAGE_TYPE", f"unknown message type {kind[:100]!r}",
                           {"type": kind[:100], "known": sorted(CLIENT_MESSAGES)})
    try:
        message: ClientMessage = adapter.validate_python(data)
    except ValidationError as exc:
        problems = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
                    for e in exc.errors(include_url=False, include_input=False, include_context=False)]
        raise MessageError("INVALID_MESSAGE", f"invalid {kind}: {exc.error_count()} validation error(s)",
                           problems) from None
    return message


# -- server → client ---------------------------------------------------------------------------------------------


class ModelInfo(_Out):
    provider: str
    model_name: str
    capabilities: list[str]


class ServerInfo(_Out):
    version: str
    model: ModelInfo | None
    capabilities: list[str]


class ServerHello(_Out):
    type: Literal["server.hello"] = "server.hello"
    server_info: ServerInfo
    session_id: str
    workspace_id: str
    command_mode: Literal["local_terminal", "server_runner"] | None
    patch_mode: Literal["client", "server"]
    capabilities: list[str]


class AssistantThinking(_Out):
    type: Literal["assistant.thinking"] = "assistant.thinking"
    phase: Literal["analyzing", "planning", "retrieving", "executing"]
    message: str


class PlanStep(_Out):
    step_number: int
    description: str
    files_involved: list[str]


class AgentPlan(_Out):
    type: Literal["agent.plan"] = "agent.plan"
    steps: list[PlanStep]
    rationale: str | None


class AgentRetrieveStatus(_Out):
    type: Literal["agent.retrieve.status"] = "agent.retrieve.status"
    stage: Literal["symbol_search", "text_search", "vector_search", "reranking"]
    results_count: int
    message: str


class ToolExecute(_Out):
    type: Literal["tool.execute"] = "tool.execute"
    tool_name: str
    args: JsonObject
    status: Literal["started", "completed", "failed"]
    result: JsonObject | None


class Hunk(_Out):
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    content: str
    #: Extension: the engine's hunk id, for ``client.approval_response`` with scope ``hunk``.
    id: str


class PatchProposed(_Out):
    type: Literal["patch.proposed"] = "patch.proposed"
    patch_id: str
    file_path: str
    diff: str
    rationale: str | None
    acceptance_criteria: list[str]
    requires_approval: bool
    hunks: list[Hunk]


class ToolRequestApproval(_Out):
    type: Literal["tool.request_approval"] = "tool.request_approval"
    request_id: str
    tool_name: str
    #: ``file_path``, ``reason`` and (extension) ``patch_id`` for a file change; a command's ``command`` and
    #: ``working_directory``; another tool's own arguments.
    args: JsonObject
    risk_level: Literal["low", "medium", "high"]


class CommandRequestApproval(_Out):
    type: Literal["command.request_approval"] = "command.request_approval"
    command_id: str
    command: str
    working_directory: str
    environment: dict[str, str]
    requires_approval: bool
    reason: str


class AssistantToken(_Out):
    type: Literal["assistant.token"] = "assistant.token"
    token: str
    cumulative_text: str


class AssistantImage(_Out):
    """An image in the answer — an MCP tool's picture, a provider's generated image (the engine's ``image`` chat
    content): an extension of the contract, which other clients ignore as an unknown message type."""

    type: Literal["assistant.image"] = "assistant.image"
    media_type: str
    data: str


class FinalMetadata(_Out):
    tokens_used: int
    files_modified: int
    tools_used: list[str]
    success: bool
    stop_reason: Literal["completed", "cancelled", "error"]


class AssistantMessageFinal(_Out):
    type: Literal["assistant.message_final"] = "assistant.message_final"
    message: str
    metadata: FinalMetadata


class ErrorBody(_Out):
    code: ErrorCode
    message: str
    details: Any = None
    recoverable: bool


class ServerError(_Out):
    type: Literal["server.error"] = "server.error"
    error: ErrorBody


class SessionStateBody(_Out):
    pending_patches: list[str]
    applied_patches: list[str]
    pending_approvals: list[str]
    current_step: int | None
    total_steps: int | None


class SessionState(_Out):
    type: Literal["session.state"] = "session.state"
    state: SessionStateBody


ServerMessage = (ServerHello | AssistantThinking | AgentPlan | AgentRetrieveStatus | ToolExecute | PatchProposed
                 | ToolRequestApproval | CommandRequestApproval | AssistantToken | AssistantImage
                 | AssistantMessageFinal | ServerError | SessionState)


def wire(message: ServerMessage) -> JsonObject:
    """A server message as sent: JSON-safe, every field present (``null`` where the spec shows one)."""
    return message.model_dump(mode="json")
