"""What ``chat/contentReceived`` carries: text, progress, usage, reasoning and the tool-call lifecycle.

Two revisions of the protocol are alive in the wild (see ``shared/specs/eca-protocol-early.md``). Where a field was
renamed we carry *both* names so that clients of either revision read what they expect: usage has
``messageInputTokens``/``messageOutputTokens``/``messageCost`` next to ``lastMessageCost``; a tool output has both
``text`` and ``content``; ``toolCallPrepare`` may carry the early ``manualApproval``.

``ChatContent`` is discriminated on ``type``; a content type this module does not know (a newer server talking to
our client) becomes :class:`UnknownContent` rather than failing the whole notification.

The three contents streamed a chunk at a time — assistant text, reasoning text, a tool call's argument text — also
have a :class:`~typing.TypedDict` of their wire form (:class:`TextChunk`, :class:`ReasonTextChunk`,
:class:`ToolCallPrepareChunk`): the engine sends thousands of them a second, and building a model per chunk would
cost more than everything else the engine does for it (``benchmarks/bench_stream.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, Discriminator, Field, Tag, model_validator

from ._base import EcaModel, JsonObject, NoneAsEmptyList

__all__ = [
    "CONTENT_TYPES",
    "ChatContent",
    "ContentModel",
    "ContextBreakdown",
    "ContextCategory",
    "FileChangeDetails",
    "FileChangeHunk",
    "ImageContent",
    "MetadataContent",
    "PlanContent",
    "PlanStep",
    "PlanStepStatus",
    "ProgressContent",
    "ReasonFinishedContent",
    "ReasonStartedContent",
    "ReasonTextChunk",
    "ReasonTextContent",
    "RetrievalDetails",
    "ShellCommandBreakdown",
    "ShellCommandDetails",
    "SubagentDetails",
    "TextChunk",
    "TextContent",
    "ToolCallDetails",
    "ToolCallOrigin",
    "ToolCallOutput",
    "ToolCallPrepareChunk",
    "ToolCallPrepareContent",
    "ToolCallRejectedContent",
    "ToolCallRisk",
    "ToolCallRunContent",
    "ToolCallRunningContent",
    "ToolCalledContent",
    "UnknownContent",
    "UrlContent",
    "UsageContent",
    "UsageLimit",
    "WireContent",
]

ToolCallOrigin = Literal["mcp", "native"]


class TextContent(EcaModel):
    """Text: a chunk of the assistant's answer, the user's prompt echoed, or a system note."""

    type: Literal["text"] = "text"
    text: str
    #: Lets clients point at a message for ``chat/rollback`` / ``chat/fork`` (newer reference server).
    content_id: str | None = None


class TextChunk(TypedDict):
    """The wire form of a streamed :class:`TextContent` chunk."""

    type: Literal["text"]
    text: str


class UrlContent(EcaModel):
    """A link to show in the chat."""

    type: Literal["url"] = "url"
    title: str
    url: str


class ProgressContent(EcaModel):
    """What the chat is doing (``running``), or that the prompt is over (``finished``)."""

    type: Literal["progress"] = "progress"
    state: Literal["running", "finished"]
    text: str = ""


class UsageLimit(EcaModel):
    """The model's context and output limits, in tokens."""

    context: int
    output: int


class ContextCategory(EcaModel):
    """One part of what fills the context window (the reference's ``contextBreakdown.categories``)."""

    name: str
    tokens: int
    color: str  #: canonical hex colour of the category, so every client draws the same bar
    emoji: str  #: the same as an emoji swatch, for plain-text legends


class ContextBreakdown(EcaModel):
    """How the context window is occupied, by category (estimates at ~4 characters per token, scaled to the input
    tokens the provider reported for the last request)."""

    categories: list[ContextCategory]
    used_tokens: int
    free_tokens: int | None = None
    context_limit: int | None = None
    free_color: str | None = None
    free_emoji: str | None = None


class UsageContent(EcaModel):
    """Token usage and cost of the chat so far, sent after each model response."""

    type: Literal["usage"] = "usage"
    session_tokens: int
    last_message_cost: str | None = None
    session_cost: str | None = None
    limit: UsageLimit | None = None
    #: The share of the context window (percent) at which the chat is compacted automatically; absent when the
    #: model is never compacted (a small model). Clients draw it as a mark on the context meter.
    auto_compact_percentage: float | None = None
    context_breakdown: ContextBreakdown | None = None
    # Early revision's fields, still read by older clients.
    message_input_tokens: int | None = None
    message_output_tokens: int | None = None
    message_cost: str | None = None


class ReasonStartedContent(EcaModel):
    """The start of a reasoning block (the model's thinking, shown apart from the answer)."""

    type: Literal["reasonStarted"] = "reasonStarted"
    id: str


class ReasonTextContent(EcaModel):
    """A chunk of a reasoning block's text."""

    type: Literal["reasonText"] = "reasonText"
    id: str
    text: str


class ReasonTextChunk(TypedDict):
    """The wire form of a streamed :class:`ReasonTextContent` chunk."""

    type: Literal["reasonText"]
    id: str
    text: str


class ReasonFinishedContent(EcaModel):
    """The end of a reasoning block, with how long the model reasoned."""

    type: Literal["reasonFinished"] = "reasonFinished"
    id: str
    total_time_ms: int = 0


class FileChangeHunk(EcaModel):
    """One ``@@`` block of a :class:`FileChangeDetails` diff, so a client can offer it on its own (an eca-notebook
    extension: clients that ignore it approve the whole change, as before). ``chat/toolCallApprove`` names the ids
    of the hunks to apply."""

    #: Stable for the life of the call: ``h1``, ``h2``… in the order of the diff.
    id: str
    #: 1-based start and length in the old and new file, as in the ``@@ -oldStart,oldLines +newStart,newLines @@``
    #: header.
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    #: The hunk as it appears in ``diff``: its header line and body.
    text: str
    lines_added: int
    lines_removed: int
    #: Set on the finished call: whether this hunk was written (False: the user left it out).
    applied: bool | None = None


class FileChangeDetails(EcaModel):
    """Attached to file-changing tool calls so a client can show the diff *before* approving."""

    type: Literal["fileChange"] = "fileChange"
    path: str
    diff: str
    lines_added: int
    lines_removed: int
    #: A notebook cell change: the cell's id (``path`` is the notebook).
    cell_id: str | None = None
    #: Set on the finished call when ``chat/toolCallUndo`` can revert it.
    undoable: bool | None = None
    #: The diff's hunks, when the tool can apply a subset of them (see :class:`FileChangeHunk`). On the finished
    #: call ``diff`` is what was written and each hunk says whether it was ``applied``.
    hunks: list[FileChangeHunk] | None = None
    #: Why the change is made, in the model's words (the write tools' optional ``rationale`` argument).
    rationale: str | None = None
    #: How to verify the change, in the model's words (the write tools' optional ``acceptance_criteria``).
    acceptance_criteria: list[str] | None = None


class RetrievalDetails(EcaModel):
    """Attached to the code-search tool calls (``search_symbols``, ``search_text``, ``vector_search``): what was
    searched and what came of it (an eca-notebook extension: clients that ignore it show the call as any other).
    The session stream's ``agent.retrieve.status`` is made from it."""

    type: Literal["retrieval"] = "retrieval"
    #: ``reranking``: a ``vector_search`` whose results were fused with the text search's ranking.
    stage: Literal["symbol_search", "text_search", "vector_search", "reranking"]
    query: str
    #: Set on the finished call.
    results_count: int | None = None
    #: One line for the user, e.g. "Found 12 symbols" or "Indexing 1,234 of 5,000 files…".
    message: str | None = None


class SubagentDetails(EcaModel):
    """Attached to a ``spawn_agent`` call (the reference's ``SubagentDetails``): which subagent runs the task, in
    which chat — every ``chat/contentReceived`` of that chat carries ``parentChatId`` — and how far it got. Sent
    again on ``toolCallRunning`` each time the subagent starts a step."""

    type: Literal["subagent"] = "subagent"
    #: The subagent's chat (``subagent-…``): links its contents to this call.
    subagent_chat_id: str | None = None
    model: str
    variant: str | None = None
    agent_name: str
    #: None: no step limit.
    max_steps: int | None = None
    step: int = 0


class ShellCommandBreakdown(EcaModel):
    """One command of a shell call (the reference's ``ShellCommandBreakdown``): ``git`` with ``["status", "-s"]``."""

    command: str
    args: list[str] = Field(default_factory=list)
    #: What "approve & remember" would remember for it (``git status``); absent when it can never be remembered
    #: but exactly (chained, redirected, wrapped, dynamic, or not a subcommand-style program).
    approval_key: str | None = None
    #: Whether ``approvalKey`` is remembered this session; only with ``approvalKey``.
    remembered: bool | None = None


class ShellCommandDetails(EcaModel):
    """Attached to ``shell_command`` calls (the reference's ``ShellCommandDetails``): the commands the line runs —
    chains and pipes split — so a client can show what approving would remember."""

    type: Literal["shellCommand"] = "shellCommand"
    commands: list[ShellCommandBreakdown] = Field(default_factory=list)
    background: bool | None = None


def _details_type(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind in ("retrieval", "subagent", "shellCommand"):
        return str(kind)
    return "fileChange"  # details without a type are the original kind


#: What a tool call's ``details`` may be: a file change (the diff to approve), a code search's outcome, a subagent or
#: a shell command's breakdown.
ToolCallDetails = Annotated[
    Annotated[FileChangeDetails, Tag("fileChange")] | Annotated[RetrievalDetails, Tag("retrieval")]
    | Annotated[SubagentDetails, Tag("subagent")] | Annotated[ShellCommandDetails, Tag("shellCommand")],
    Discriminator(_details_type),
]


class ToolCallRisk(EcaModel):
    """How much harm a call could do, computed by the engine before it runs (an eca-notebook extension: clients that
    ignore it ask as before). ``reason`` is one line naming the decisive thing ("deletes recursively: build"), so
    the user sees *why* without reading the whole command. Config may act on ``level``
    (``toolCall.approval.risk``)."""

    level: Literal["low", "medium", "high"]
    reason: str


class ToolCallPrepareContent(EcaModel):
    """Sent repeatedly while the model streams a call's arguments; clients append ``argumentsText``."""

    type: Literal["toolCallPrepare"] = "toolCallPrepare"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments_text: str
    summary: str | None = None
    details: ToolCallDetails | None = None
    manual_approval: bool | None = None  # early revision only


class ToolCallPrepareChunk(TypedDict):
    """The wire form of a streamed :class:`ToolCallPrepareContent` chunk."""

    type: Literal["toolCallPrepare"]
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    argumentsText: str
    manualApproval: NotRequired[bool]  # early revision only


class ToolCallRunContent(EcaModel):
    """Sent once per call id; ``manualApproval`` tells the client to ask the user."""

    type: Literal["toolCallRun"] = "toolCallRun"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: JsonObject
    manual_approval: bool
    summary: str | None = None
    details: ToolCallDetails | None = None
    #: The engine's risk assessment of the call (see :class:`ToolCallRisk`); kept on every content of the call.
    risk: ToolCallRisk | None = None


class ToolCallRunningContent(EcaModel):
    """A tool call is running (approved, or needing no approval)."""

    type: Literal["toolCallRunning"] = "toolCallRunning"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: JsonObject
    summary: str | None = None
    details: ToolCallDetails | None = None
    #: The engine's risk assessment of the call (see :class:`ToolCallRisk`); kept on every content of the call.
    risk: ToolCallRisk | None = None


class ToolCallOutput(EcaModel):
    """One output of a finished call. The newer revision names the payload ``text``, the early one ``content``;
    whichever is missing is filled from the other so both are always sent."""

    type: Literal["text"] = "text"
    text: str
    content: str

    @model_validator(mode="before")
    @classmethod
    def _fill_text_and_content(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "text" not in data and "content" in data:
                data = {**data, "text": data["content"]}
            elif "content" not in data and "text" in data:
                data = {**data, "content": data["text"]}
        return data


class ToolCalledContent(EcaModel):
    """A tool call finished: its outputs, whether it failed, and how long it took."""

    type: Literal["toolCalled"] = "toolCalled"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    #: The spec says ``string[]`` in one place and an object elsewhere: any JSON is accepted.
    arguments: Any = None
    error: bool
    outputs: Annotated[list[ToolCallOutput], NoneAsEmptyList]
    total_time_ms: int = 0
    summary: str | None = None
    details: ToolCallDetails | None = None
    #: The engine's risk assessment of the call (see :class:`ToolCallRisk`); kept on every content of the call.
    risk: ToolCallRisk | None = None


class ToolCallRejectedContent(EcaModel):
    """A tool call that was not run: rejected by the user or denied by the configuration."""

    type: Literal["toolCallRejected"] = "toolCallRejected"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: JsonObject
    #: ``"user-choice"`` (the user clicked reject) or ``"user-config"`` (a deny rule); the early revision sent
    #: ``"user"``.
    reason: str
    summary: str | None = None
    details: ToolCallDetails | None = None
    #: The engine's risk assessment of the call (see :class:`ToolCallRisk`); kept on every content of the call.
    risk: ToolCallRisk | None = None


class MetadataContent(EcaModel):
    """The chat's metadata, e.g. the title derived from its first prompt."""

    type: Literal["metadata"] = "metadata"
    title: str


PlanStepStatus = Literal["pending", "in_progress", "completed"]


class PlanStep(EcaModel):
    """One step of a :class:`PlanContent`: what it does, how far it is, and the files it involves."""

    description: str
    status: PlanStepStatus = "pending"
    #: The files the step reads or changes, as the model named them (workspace-relative when it could).
    files: list[str] | None = None
    #: ``high`` / ``medium`` / ``low`` (ACP's plan entries carry it).
    priority: Literal["high", "medium", "low"] | None = None


class PlanContent(EcaModel):
    """The agent's plan (an eca-notebook extension, from the ``update_plan`` tool): the whole list of steps each
    time, so a client replaces the plan it shows with the latest one. Clients that do not know the type ignore it;
    they read the same plan as the ``update_plan`` call's output, a Markdown checklist."""

    type: Literal["plan"] = "plan"
    steps: list[PlanStep]
    #: Why the plan is what it is, or what changed since the last one.
    explanation: str | None = None


class ImageContent(EcaModel):
    """An image in the chat (the reference's ``ChatImageContent``): one an MCP tool returned, sent as the assistant's
    right after the call's ``toolCalled``. ``base64`` is the raw bytes, no ``data:`` prefix; clients wrap it in a
    data URL to show it."""

    type: Literal["image"] = "image"
    media_type: str
    base64: str


class UnknownContent(EcaModel):
    """Any content whose ``type`` is not one of :data:`CONTENT_TYPES`; its other keys are kept as extras."""

    type: str


_CONTENT_MODELS: dict[str, type[EcaModel]] = {
    "text": TextContent,
    "url": UrlContent,
    "progress": ProgressContent,
    "usage": UsageContent,
    "reasonStarted": ReasonStartedContent,
    "reasonText": ReasonTextContent,
    "reasonFinished": ReasonFinishedContent,
    "toolCallPrepare": ToolCallPrepareContent,
    "toolCallRun": ToolCallRunContent,
    "toolCallRunning": ToolCallRunningContent,
    "toolCalled": ToolCalledContent,
    "toolCallRejected": ToolCallRejectedContent,
    "metadata": MetadataContent,
    "plan": PlanContent,
    "image": ImageContent,
}

#: A content built by a server: one of the models above (the engine dumps it to the wire form).
ContentModel = (
    TextContent | UrlContent | ProgressContent | UsageContent | ReasonStartedContent | ReasonTextContent
    | ReasonFinishedContent | ToolCallPrepareContent | ToolCallRunContent | ToolCallRunningContent
    | ToolCalledContent | ToolCallRejectedContent | MetadataContent | PlanContent | ImageContent
)

#: A content as sent: a model, or the wire form of a streamed chunk.
WireContent = ContentModel | TextChunk | ReasonTextChunk | ToolCallPrepareChunk

#: The content tags this revision of the protocol defines.
CONTENT_TYPES: frozenset[str] = frozenset(_CONTENT_MODELS)


def _content_tag(value: Any) -> str | None:
    if isinstance(value, UnknownContent):
        return "unknown"
    tag = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if isinstance(tag, str) and tag in CONTENT_TYPES:
        return tag
    return "unknown" if isinstance(value, (dict, BaseModel)) else None


ChatContent = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[UrlContent, Tag("url")]
    | Annotated[ProgressContent, Tag("progress")]
    | Annotated[UsageContent, Tag("usage")]
    | Annotated[ReasonStartedContent, Tag("reasonStarted")]
    | Annotated[ReasonTextContent, Tag("reasonText")]
    | Annotated[ReasonFinishedContent, Tag("reasonFinished")]
    | Annotated[ToolCallPrepareContent, Tag("toolCallPrepare")]
    | Annotated[ToolCallRunContent, Tag("toolCallRun")]
    | Annotated[ToolCallRunningContent, Tag("toolCallRunning")]
    | Annotated[ToolCalledContent, Tag("toolCalled")]
    | Annotated[ToolCallRejectedContent, Tag("toolCallRejected")]
    | Annotated[MetadataContent, Tag("metadata")]
    | Annotated[PlanContent, Tag("plan")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[UnknownContent, Tag("unknown")],
    Discriminator(_content_tag),
]
