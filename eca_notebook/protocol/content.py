"""What ``chat/contentReceived`` carries: text, progress, usage, reasoning and the tool-call lifecycle.

Two revisions of the protocol are alive in the wild (see ``shared/specs/eca-protocol-early.md``). Where a field was
renamed we carry *both* names so that clients of either revision read what they expect: usage has
``messageInputTokens``/``messageOutputTokens``/``messageCost`` next to ``lastMessageCost``; a tool output has both
``text`` and ``content``; ``toolCallPrepare`` may carry the early ``manualApproval``.

``ChatContent`` is discriminated on ``type``; a content type this module does not know (a newer server talking to
our client) becomes :class:`UnknownContent` rather than failing the whole notification.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Discriminator, Tag, model_validator

from ._base import EcaModel, NoneAsEmptyList

__all__ = [
    "ToolCallOrigin",
    "TextContent",
    "UrlContent",
    "ProgressContent",
    "UsageLimit",
    "UsageContent",
    "ReasonStartedContent",
    "ReasonTextContent",
    "ReasonFinishedContent",
    "FileChangeDetails",
    "ToolCallDetails",
    "ToolCallPrepareContent",
    "ToolCallRunContent",
    "ToolCallRunningContent",
    "ToolCallOutput",
    "ToolCalledContent",
    "ToolCallRejectedContent",
    "MetadataContent",
    "UnknownContent",
    "ChatContent",
    "CONTENT_TYPES",
]

ToolCallOrigin = Literal["mcp", "native"]


class TextContent(EcaModel):
    type: Literal["text"] = "text"
    text: str
    #: Lets clients point at a message for ``chat/rollback`` / ``chat/fork`` (newer reference server).
    content_id: str | None = None


class UrlContent(EcaModel):
    type: Literal["url"] = "url"
    title: str
    url: str


class ProgressContent(EcaModel):
    type: Literal["progress"] = "progress"
    state: Literal["running", "finished"]
    text: str = ""


class UsageLimit(EcaModel):
    context: int
    output: int


class UsageContent(EcaModel):
    type: Literal["usage"] = "usage"
    session_tokens: int
    last_message_cost: str | None = None
    session_cost: str | None = None
    limit: UsageLimit | None = None
    # Early revision's fields, still read by older clients.
    message_input_tokens: int | None = None
    message_output_tokens: int | None = None
    message_cost: str | None = None


class ReasonStartedContent(EcaModel):
    type: Literal["reasonStarted"] = "reasonStarted"
    id: str


class ReasonTextContent(EcaModel):
    type: Literal["reasonText"] = "reasonText"
    id: str
    text: str


class ReasonFinishedContent(EcaModel):
    type: Literal["reasonFinished"] = "reasonFinished"
    id: str
    total_time_ms: int = 0


class FileChangeDetails(EcaModel):
    """Attached to file-changing tool calls so a client can show the diff *before* approving."""

    type: Literal["fileChange"] = "fileChange"
    path: str
    diff: str
    lines_added: int
    lines_removed: int


ToolCallDetails = FileChangeDetails


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


class ToolCallRunContent(EcaModel):
    """Sent once per call id; ``manualApproval`` tells the client to ask the user."""

    type: Literal["toolCallRun"] = "toolCallRun"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: dict[str, Any]
    manual_approval: bool
    summary: str | None = None
    details: ToolCallDetails | None = None


class ToolCallRunningContent(EcaModel):
    type: Literal["toolCallRunning"] = "toolCallRunning"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: dict[str, Any]
    summary: str | None = None
    details: ToolCallDetails | None = None


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


class ToolCallRejectedContent(EcaModel):
    type: Literal["toolCallRejected"] = "toolCallRejected"
    origin: ToolCallOrigin
    id: str
    name: str
    server: str
    arguments: dict[str, Any]
    #: ``"user-choice"`` (the user clicked reject) or ``"user-config"`` (a deny rule); the early revision sent ``"user"``.
    reason: str
    summary: str | None = None
    details: ToolCallDetails | None = None


class MetadataContent(EcaModel):
    type: Literal["metadata"] = "metadata"
    title: str


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
}

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
    Union[
        Annotated[TextContent, Tag("text")],
        Annotated[UrlContent, Tag("url")],
        Annotated[ProgressContent, Tag("progress")],
        Annotated[UsageContent, Tag("usage")],
        Annotated[ReasonStartedContent, Tag("reasonStarted")],
        Annotated[ReasonTextContent, Tag("reasonText")],
        Annotated[ReasonFinishedContent, Tag("reasonFinished")],
        Annotated[ToolCallPrepareContent, Tag("toolCallPrepare")],
        Annotated[ToolCallRunContent, Tag("toolCallRun")],
        Annotated[ToolCallRunningContent, Tag("toolCallRunning")],
        Annotated[ToolCalledContent, Tag("toolCalled")],
        Annotated[ToolCallRejectedContent, Tag("toolCallRejected")],
        Annotated[MetadataContent, Tag("metadata")],
        Annotated[UnknownContent, Tag("unknown")],
    ],
    Discriminator(_content_tag),
]
