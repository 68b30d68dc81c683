"""Params and results of the ``chat/*`` methods (except the streamed content, see :mod:`.content`).

Covers the spec's methods plus the newer reference-server ones (``chat/list``, ``chat/open``, ``chat/opened``,
``chat/deleted``, ``chat/cleared``, ``chat/statusChanged``, ``chat/selectedModelChanged``, ``chat/rollback``,
``chat/fork``) described in ``shared/specs/eca-compat-notes.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ._base import ChatId, EcaModel, JsonObject, NoneAsEmptyList
from .content import ChatContent
from .context import ChatContext

__all__ = [
    "ChatClearParams",
    "ChatClearResult",
    "ChatClearedParams",
    "ChatCommand",
    "ChatCommandArgument",
    "ChatContentReceivedParams",
    "ChatDeleteParams",
    "ChatDeleteResult",
    "ChatDeletedParams",
    "ChatForkParams",
    "ChatForkResult",
    "ChatHistoryError",
    "ChatHistoryMeta",
    "ChatHistoryParams",
    "ChatHistoryResult",
    "ChatListParams",
    "ChatListResult",
    "ChatOpenParams",
    "ChatOpenResult",
    "ChatOpenSelection",
    "ChatOpenedParams",
    "ChatPromptParams",
    "ChatPromptResult",
    "ChatPromptSteerParams",
    "ChatPromptSteerRemoveParams",
    "ChatPromptStopParams",
    "ChatQueryCommandsParams",
    "ChatQueryCommandsResult",
    "ChatQueryContextParams",
    "ChatQueryContextResult",
    "ChatQueryFilesParams",
    "ChatQueryFilesResult",
    "ChatRollbackParams",
    "ChatRollbackResult",
    "ChatSelectedAgentChangedParams",
    "ChatSelectedBehaviorChangedParams",
    "ChatSelectedModelChangedParams",
    "ChatStatusChangedParams",
    "ChatSummary",
    "ChatToolCallApproveParams",
    "ChatToolCallRejectParams",
    "ChatUpdateParams",
    "ChatUpdateResult",
]

_Contexts = Annotated[list[ChatContext], NoneAsEmptyList]


class ChatPromptParams(EcaModel):
    """A user message. An unknown ``chatId`` starts a new chat with that id (clients generate ids)."""

    chat_id: ChatId | None = None
    message: str
    model: str | None = None
    behavior: str | None = None
    #: Newer clients call the behaviour an agent.
    agent: str | None = None
    #: Early revision's ``requestId``. Some clients spell it ``"request-id"``: that key is kept as an extra *and*
    #: copied here so the engine has one place to look.
    request_id: str | int | None = None
    contexts: _Contexts = Field(default_factory=list)
    #: Trust mode for this chat (the reference's): tool calls that would ask are auto-approved — never a ``deny``,
    #: and here never a call outside the workspace. Kept on the chat; absent leaves it as it was.
    trust: bool | None = None
    #: The model variant (named payload preset, e.g. "high" reasoning effort) for this prompt; kept as the chat's.
    #: An empty string clears it; a variant the model does not have is ignored (the reference's rule).
    variant: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _dashed_request_id(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and data.get("requestId") is None
            and data.get("request_id") is None
            and data.get("request-id") is not None
        ):
            data = {**data, "requestId": data["request-id"]}
        return data


class ChatPromptResult(EcaModel):
    """The answer to ``chat/prompt``: the turn is under way (``prompting``) or could not start."""

    chat_id: ChatId
    model: str | None = None
    #: ``"prompting"``, ``"login"`` or ``"error"`` (invalid chat id, reported in the result by the reference server;
    #: also a chat that is still running a prompt, or an unknown model).
    status: str
    #: Why the prompt was refused (an invalid chat id, a busy chat, an unknown model, no model at all).
    message: str | None = None

    def dump(self) -> JsonObject:
        """The wire form; ``model`` is always present (``null`` when no model is known, e.g. status ``login``)."""
        wire = super().dump()
        return {"chatId": wire.pop("chatId"), "model": wire.pop("model", None), **wire}


class ChatContentReceivedParams(EcaModel):
    """``chat/contentReceived``: one content of a chat, streamed by the server."""

    chat_id: ChatId
    content: ChatContent
    role: Literal["user", "system", "assistant"]
    #: Set when the chat is a sub-chat (e.g. of an agent delegating work).
    parent_chat_id: ChatId | None = None


class ChatToolCallApproveParams(EcaModel):
    """``chat/toolCallApprove``: the user approved a tool call waiting for approval."""

    chat_id: ChatId
    tool_call_id: str
    #: ``"session"``: remember this approval for the rest of the session.
    save: Literal["session"] | None = None
    #: Apply only these hunks of the call's file change (ids from ``details.hunks``; an eca-notebook extension).
    #: Absent: the whole change. Empty: nothing is applied — the same as a rejection.
    hunks: list[str] | None = None


class ChatToolCallRejectParams(EcaModel):
    """``chat/toolCallReject``: the user rejected a tool call waiting for approval."""

    chat_id: ChatId
    tool_call_id: str


class ChatQueryContextParams(EcaModel):
    """``chat/queryContext``: the contexts (files, folders, resources) matching ``@query``."""

    chat_id: ChatId | None = None
    query: str = ""
    contexts: _Contexts = Field(default_factory=list)


class ChatQueryContextResult(EcaModel):
    """The answer to ``chat/queryContext``."""

    chat_id: ChatId | None = None
    contexts: list[ChatContext]


class ChatClearParams(EcaModel):
    """``chat/clear`` (reference server): clear parts of a chat while keeping the chat itself — with ``messages``,
    its messages and tool calls. Answered ``{}`` after ``chat/cleared`` went to every client."""

    chat_id: ChatId
    messages: bool = False


class ChatClearResult(EcaModel):
    """The (empty) answer to ``chat/clear``."""


class ChatQueryFilesParams(EcaModel):
    """``chat/queryFiles`` (reference server): the workspace files matching ``query`` (blank: all), for a client's
    file picker — the file part of ``chat/queryContext``."""

    chat_id: ChatId | None = None
    query: str = ""


class ChatQueryFilesResult(EcaModel):
    """The answer to ``chat/queryFiles``: ``file`` contexts, best first."""

    chat_id: ChatId | None = None
    files: list[ChatContext]


class ChatQueryCommandsParams(EcaModel):
    """``chat/queryCommands``: the commands matching what the user typed after ``/``."""

    chat_id: ChatId | None = None
    query: str = ""


class ChatCommandArgument(EcaModel):
    """One argument of a :class:`ChatCommand`."""

    name: str
    description: str | None = None
    required: bool = False


class ChatCommand(EcaModel):
    """One command offered by ``chat/queryCommands`` (``/name``), with its arguments."""

    name: str
    description: str
    #: ``"mcpPrompt"``, ``"native"``, ``"customPrompt"`` or ``"skill"`` (reference names; older servers sent
    #: ``"mcp-prompt"`` / ``"custom-prompt"``); a plain ``str`` so newer kinds don't break a client.
    type: str
    arguments: Annotated[list[ChatCommandArgument], NoneAsEmptyList] = Field(default_factory=list)


class ChatQueryCommandsResult(EcaModel):
    """The answer to ``chat/queryCommands``."""

    chat_id: ChatId | None = None
    commands: list[ChatCommand]


class ChatPromptStopParams(EcaModel):
    """``chat/promptStop``: stop the running prompt of a chat."""

    chat_id: ChatId


class ChatPromptSteerParams(EcaModel):
    """``chat/promptSteer`` (reference server): guidance for the running prompt. It joins the model's input as a
    user message at the next round boundary (after the current response and its tool calls, before the next model
    request), shown then as a user content with its ``contentId``. A prompt that ends first drops it: the client
    sends it as a regular prompt. Ignored when the chat runs nothing."""

    chat_id: ChatId
    message: str


class ChatPromptSteerRemoveParams(EcaModel):
    """``chat/promptSteerRemove`` (reference server): drop the pending steer text (idempotent; one already taken in
    at a round boundary stays)."""

    chat_id: ChatId


class ChatDeleteParams(EcaModel):
    """``chat/delete``: forget a chat (and its saved history)."""

    chat_id: ChatId | None = None


class ChatDeleteResult(EcaModel):
    """Empty object."""


class ChatUpdateParams(EcaModel):
    """``chat/update``: change a chat's title or its trust mode (applies at once, to the running prompt too)."""

    chat_id: ChatId
    title: str | None = None
    trust: bool | None = None


class ChatUpdateResult(EcaModel):
    """Empty object."""


class ChatSelectedAgentChangedParams(EcaModel):
    """``chat/selectedAgentChanged``: the user picked another agent (the reference's newer name of
    ``chat/selectedBehaviorChanged``, which stays)."""

    agent: str
    chat_id: ChatId | None = None


class ChatSelectedBehaviorChangedParams(EcaModel):
    """``chat/selectedBehaviorChanged``: the user picked another behavior."""

    behavior: str
    chat_id: ChatId | None = None


class ChatSelectedModelChangedParams(EcaModel):
    """``chat/selectedModelChanged``: the user picked another model (and maybe a variant of it). The server answers
    with ``config/updated`` carrying the model's ``variants`` and the ``selectVariant`` (null when the model has no
    such variant)."""

    model: str
    chat_id: ChatId | None = None
    variant: str | None = None


class ChatListParams(EcaModel):
    """``chat/list``: the chats of the workspace, newest first, optionally limited."""

    limit: int | None = None
    sort_by: Literal["updatedAt", "createdAt"] | None = None


class ChatSummary(EcaModel):
    """One chat as listed by ``chat/list``."""

    id: ChatId
    title: str | None = None
    status: Literal["idle", "running"]
    #: Epoch milliseconds.
    created_at: int | None = None
    #: Epoch milliseconds.
    updated_at: int | None = None
    model: str | None = None
    message_count: int = 0


class ChatListResult(EcaModel):
    """The answer to ``chat/list``."""

    chats: list[ChatSummary]


class ChatOpenParams(EcaModel):
    """``chat/open``: replay a saved chat to this client — all of it, or (any of ``limit``, ``before``, ``after``
    given, the reference's window, same cursors as ``chat/history``) only that page, preceded by ``chat/cleared``,
    with ``meta`` in the answer to page older through ``chat/history``."""

    chat_id: ChatId
    limit: int | None = None
    before: str | None = None
    after: str | None = None


class ChatHistoryMeta(EcaModel):
    """Where a page of history lies: ``total`` contents, ``returned`` in the page, the opaque cursors to page older
    (``beforeCursor``) and newer (``afterCursor``), null at the ends, and the last compaction's (null: never)."""

    total: int
    returned: int
    before_cursor: str | None = None
    after_cursor: str | None = None
    compaction_cursor: str | None = None

    def dump(self) -> JsonObject:
        """The wire form: the cursors are written out even when null (null is the value: the end of the history,
        never compacted)."""
        return {"total": self.total, "returned": self.returned, "beforeCursor": self.before_cursor,
                "afterCursor": self.after_cursor, "compactionCursor": self.compaction_cursor} | super().dump()


class ChatHistoryError(EcaModel):
    """Why no page: ``chat_not_found`` or ``cursor_expired`` (the cursor's content is gone: refetch the newest)."""

    code: str
    message: str


class ChatOpenSelection(EcaModel):
    """What the opened chat's next prompt uses (the reference's one ``selection`` snapshot): its model (null: none
    stored, or no longer offered), agent, variant and the model's variants, trust mode."""

    model: str | None
    agent: str
    variant: str | None
    variants: list[str]
    trust: bool

    def dump(self) -> JsonObject:
        """The wire form: ``model`` and ``variant`` are written out even when null (null is the value), in their
        places."""
        wire = super().dump()
        wire.pop("model", None)
        wire.pop("variant", None)
        return {"model": self.model, "agent": wire.pop("agent"), "variant": self.variant, **wire}


class ChatOpenResult(EcaModel):
    """The chat itself is replayed as ``chat/opened`` + ``chat/contentReceived`` notifications before this answer
    (and a chat-scoped ``config/updated`` with its stored model, another with its trust). ``found`` is false for an
    unknown chat and for a subagent's (it opens inside its parent's)."""

    found: bool
    chat_id: ChatId | None = None
    title: str | None = None
    selection: ChatOpenSelection | None = None
    #: With window params only.
    meta: ChatHistoryMeta | None = None
    #: Instead of the replay, when a cursor is expired.
    error: ChatHistoryError | None = None

    def dump(self) -> JsonObject:
        """The wire form, with the nulls :class:`ChatOpenSelection` and :class:`ChatHistoryMeta` write out (a nested
        model is dumped by the parent's rules, which omit every null)."""
        wire = super().dump()
        if self.selection is not None:
            wire["selection"] = self.selection.dump()
        if self.meta is not None:
            wire["meta"] = self.meta.dump()
        return wire


class ChatHistoryParams(EcaModel):
    """``chat/history`` (reference server): a page of a saved chat's contents in one answer — the newest ``limit``
    of the window, ``before`` / ``after`` opaque cursors (or ``"lastCompaction"``) bounding it."""

    chat_id: ChatId
    limit: int | None = None
    before: str | None = None
    after: str | None = None


class ChatHistoryResult(EcaModel):
    """A page (``contents``: ``chat/contentReceived`` params, oldest first) and its ``meta``, or ``error``."""

    contents: list[ChatContentReceivedParams] | None = None
    meta: ChatHistoryMeta | None = None
    error: ChatHistoryError | None = None


class ChatOpenedParams(EcaModel):
    """``chat/opened``: a chat was created or opened; a replay of its contents may follow."""

    chat_id: ChatId
    title: str | None = None


class ChatDeletedParams(EcaModel):
    """``chat/deleted``: a chat was deleted (by any client of the workspace)."""

    chat_id: ChatId


class ChatClearedParams(EcaModel):
    """``chat/cleared``: the server cleared a chat's history (and maybe its rendered messages)."""

    chat_id: ChatId
    #: Whether the client should drop the chat's rendered messages.
    messages: bool


class ChatStatusChangedParams(EcaModel):
    """``chat/statusChanged``: a chat started or stopped running a prompt."""

    chat_id: ChatId
    status: Literal["running", "idle", "stopping"]


class ChatRollbackParams(EcaModel):
    """``chat/rollback``: drop the user message with ``contentId`` (see :attr:`TextContent.content_id`) and
    everything after it. The server then sends ``chat/cleared {messages: true}`` and the kept contents again. A chat
    running a prompt is refused (stop it first); an unknown chat or ``contentId`` is a JSON-RPC error."""

    chat_id: ChatId
    content_id: str
    #: What to roll back: ``messages`` (the history and what clients show) and/or ``tools`` (revert the file
    #: changes of the removed turns, newest first). Absent or empty: both, as the reference server does.
    include: list[Literal["messages", "tools"]] | None = None


class ChatRollbackResult(EcaModel):
    """Empty object (reference server)."""


class ChatForkParams(EcaModel):
    """``chat/fork``: a new chat holding the chat up to and including the message ``contentId`` names — a user
    message's ``contentId`` (its answer included) or a tool call's ``id`` (its result included). The server sends
    ``chat/opened`` for it and its contents, and a "Chat forked to: …" text in the original chat."""

    chat_id: ChatId
    content_id: str


class ChatForkResult(EcaModel):
    """The new chat's id (an eca-notebook addition: the reference server answers ``{}``)."""

    chat_id: ChatId | None = None
