"""What a turn's ``chat/contentReceived`` contents add up to: text, reasoning, notes, tool calls, subagents, the plan
and usage, in order — the one fold every door translates from.

Every reader of a turn needs the same fold — the Python client's :class:`~eca_notebook.client.PromptResult`, the
notebook's transcript, the ACP adapter's ``session/update``\\ s and the session stream's messages — and folds that
drift apart each grow their own idea of when a tool call is "done". So the fold lives here, next to the content
models, and each door reads its state: :meth:`TurnFold.step` folds one content and says what it changed (a
:class:`Change`), and a door turns that change into its own messages from the fold's :class:`ToolCallState`, never
from the content's dict.

The fold takes typed contents: :func:`parse_content` parses a wire dict once, at the door's seam, into the model of
its kind (:mod:`eca_notebook.protocol.content`) — except the three kinds streamed a chunk at a time (``text``,
``reasonText``, ``toolCallPrepare``), which stay their :class:`~typing.TypedDict` wire form: a model per chunk would
cost more than the fold itself. A text chunk is appended to a list, joined only when read.

A tool call's status is one of :data:`TOOL_CALL_STATUSES`:

``preparing``  the model is still streaming the call's arguments (``toolCallPrepare``);
``pending``    waiting for the user's approval (``toolCallRun`` with ``manualApproval``);
``running``    approved (or needing no approval) and running;
``done``       finished without error (``toolCalled``);
``failed``     finished with an error, or the turn ended while it was being prepared or run;
``rejected``   rejected by the user, a deny rule (``reason``), or the turn ended while it waited for approval.

A model's call ids repeat across turns (``call_1``): a ``toolCallPrepare`` or ``toolCallRun`` of an id whose call has
ended starts a new call.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ._base import JsonObject, NoneAsEmptyList
from .content import (
    _CONTENT_MODELS,
    ContentModel,
    MetadataContent,
    PlanContent,
    ProgressContent,
    ReasonFinishedContent,
    ReasonStartedContent,
    ReasonTextChunk,
    ReasonTextContent,
    SubagentDetails,
    TextChunk,
    TextContent,
    ToolCallDetails,
    ToolCalledContent,
    ToolCallPrepareChunk,
    ToolCallPrepareContent,
    ToolCallRejectedContent,
    ToolCallRunContent,
    ToolCallRunningContent,
    UnknownContent,
    UrlContent,
    UsageContent,
)

__all__ = [
    "CHUNK_TYPES",
    "TOOL_CALL_STATUSES",
    "TOOL_CONTENT_TYPES",
    "Block",
    "Change",
    "Content",
    "ContentEvent",
    "ToolCallState",
    "ToolCallStatus",
    "TurnFold",
    "parse_content",
]

ToolCallStatus = Literal["preparing", "pending", "running", "done", "failed", "rejected"]

#: Every status a tool call goes through, in the order it can reach them.
TOOL_CALL_STATUSES: tuple[ToolCallStatus, ...] = ("preparing", "pending", "running", "done", "failed", "rejected")

#: The content types of a tool call's lifecycle.
TOOL_CONTENT_TYPES = frozenset({"toolCallPrepare", "toolCallRun", "toolCallRunning", "toolCalled", "toolCallRejected"})

#: The content types streamed a chunk at a time: the fold takes them in their wire form (a TypedDict).
CHUNK_TYPES = frozenset({"text", "reasonText", "toolCallPrepare"})

#: A content as the fold takes it: a model of its kind, or the wire form of a streamed chunk.
Content = ContentModel | UnknownContent | TextChunk | ReasonTextChunk | ToolCallPrepareChunk

ERROR_PREFIX = "Error:"
_TOOL_MODELS = (ToolCallPrepareContent, ToolCallRunContent, ToolCallRunningContent, ToolCalledContent,
                ToolCallRejectedContent)
_ENDED = frozenset({"done", "failed", "rejected"})


# -- parsing at the seam -------------------------------------------------------------------------------------------

def _fallback(annotation: Any) -> Any:
    """A harmless value for a required field an off-spec content left out or got wrong."""
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return typing.get_args(annotation)[0]
    for kind, value in ((bool, False), (int, 0), (str, ""), (dict, {}), (list, [])):
        if annotation is kind or origin is kind:
            return value
    return None


def _lenient(model: type[BaseModel], wire: Mapping[str, Any]) -> Any:
    """The content's model; an off-spec one (a field missing or mistyped — other servers, older revisions) keeps
    what is valid: a bad optional field is dropped, a bad required one gets a harmless value, a bad item of a list
    is repaired so (or dropped). Only a content that still does not fit becomes :class:`UnknownContent` (which the
    fold ignores)."""
    try:
        return model.model_validate(wire)
    except ValidationError as exc:
        try:
            return model.model_validate(_repaired(model, wire, exc))
        except ValidationError:
            return UnknownContent.model_construct(**dict(wire))


def _item_model(annotation: Any) -> type[BaseModel] | None:
    args = typing.get_args(annotation) if typing.get_origin(annotation) is list else ()
    return args[0] if args and isinstance(args[0], type) and issubclass(args[0], BaseModel) else None


def _repaired(model: type[BaseModel], wire: Mapping[str, Any], exc: ValidationError) -> JsonObject:
    data = dict(wire)
    by_alias = {field.alias or name: field for name, field in model.model_fields.items()}
    by_alias.update(model.model_fields)
    bad_items: dict[str, set[int]] = {}
    for error in exc.errors():
        loc = error["loc"]
        key = loc[0] if loc else None
        field = by_alias.get(key) if isinstance(key, str) else None
        if field is None or not isinstance(key, str):
            continue
        if len(loc) > 1 and isinstance(loc[1], int) and isinstance(data.get(key), list):
            bad_items.setdefault(key, set()).add(loc[1])  # one bad item of a list: only it is repaired
            continue
        alias = field.alias or key
        data.pop(key, None)
        data.pop(alias, None)
        if field.is_required() and (_item_model(field.annotation) is None or NoneAsEmptyList in field.metadata):
            data[alias] = _fallback(field.annotation)  # (a plan without its steps is no plan: left to fail)
    for key, bad in bad_items.items():
        item_model = _item_model(by_alias[key].annotation)
        items = []
        for i, item in enumerate(data[key]):
            if i in bad:
                if item_model is None or not isinstance(item, Mapping):
                    continue
                try:
                    item_model.model_validate(item)
                except ValidationError as item_exc:
                    item = _repaired(item_model, item, item_exc)
            items.append(item)
        data[key] = items
    return data


def parse_content(content: Mapping[str, Any] | Content) -> Content:
    """One content as the fold takes it (see the module's docstring): a wire dict of a streamed chunk as it is, any
    other wire dict parsed into its model, a model as it is."""
    if type(content) is not dict and not isinstance(content, Mapping):
        return content
    kind = content.get("type")
    if kind in CHUNK_TYPES:
        return content  # type: ignore[return-value]  # the chunk's TypedDict: its wire form
    model = _CONTENT_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return UnknownContent.model_construct(**{**dict(content), "type": str(kind)})
    return _lenient(model, content)  # type: ignore[no-any-return]


def _wire(model: BaseModel) -> JsonObject:
    """A parsed model back in its wire form, as it arrived (fields it did not carry are not added)."""
    out = model.model_dump(by_alias=True, exclude_unset=True, mode="json")
    kind = getattr(model, "type", None)
    if isinstance(kind, str):
        out.setdefault("type", kind)
    return out


def _outputs_text(outputs: Any) -> str:
    """A finished call's outputs as one text (the newer revision names the payload ``text``, the early one
    ``content``)."""
    parts = []
    for output in outputs or []:
        if isinstance(output, dict):
            parts.append(str(output.get("text") or output.get("content") or ""))
        else:
            parts.append(str(getattr(output, "text", "") or getattr(output, "content", "") or ""))
    return "\n".join(parts)


# -- the state -----------------------------------------------------------------------------------------------------

@dataclass
class ToolCallState:
    """What is known about one tool call, updated by each of its ``toolCall*`` contents."""

    id: str
    name: str
    server: str = "eca"
    status: ToolCallStatus = "preparing"
    summary: str | None = None
    #: The call's arguments once the engine parsed them (``toolCallRun``); None while they stream.
    arguments: Any = None
    #: The arguments as streamed so far by ``toolCallPrepare``.
    arguments_text: str = ""
    #: The latest details, wire form (what views draw); :attr:`detail` is the same, typed.
    details: JsonObject | None = None
    manual_approval: bool = False
    output: str | None = None
    error: bool = False
    #: For ``rejected``: ``"user-choice"`` (the user or the approval policy) or ``"user-config"`` (a deny rule).
    reason: str | None = None
    total_time_ms: int | None = None
    #: The user (or an approval policy) answered the approval: a late ``toolCallRun`` must not ask again.
    decided: bool = False
    #: The change was undone (``chat/toolCallUndo``); a card offers Undo while ``details.undoable`` and not this.
    undone: bool = False
    #: The engine's risk assessment (wire form ``{"level", "reason"}``), from the first content that carries it.
    risk: JsonObject | None = None
    #: A subagent's call (shown nested in its parent's ``spawn_agent`` card): the subagent's chat, where it is
    #: approved; None: a call of the chat shown.
    chat_id: str | None = None
    #: The latest details, typed (a file change, a code search, a subagent, a shell command's breakdown).
    detail: ToolCallDetails | None = None

    @property
    def reject_reason(self) -> str | None:
        """The same as :attr:`reason` (the notebook's tool cards read this name)."""
        return self.reason

    #: The engine took the call past its preparation (a ``toolCallRun`` or later content arrived).
    started: bool = False

    @property
    def ended(self) -> bool:
        """Done, failed or rejected: nothing more happens to this call."""
        return self.status in _ENDED

    @property
    def subagent(self) -> SubagentDetails | None:
        """A ``spawn_agent`` call's subagent (its chat, agent, step), when the details name one."""
        return self.detail if isinstance(self.detail, SubagentDetails) else None

    def update(self, content: Content | Mapping[str, Any]) -> None:
        """Apply one ``toolCall*`` content of this call (typed; a wire dict is parsed first)."""
        if isinstance(content, Mapping):
            if content.get("type") == "toolCallPrepare":
                self._prepare(content)
                return
            content = parse_content(content)
            if isinstance(content, Mapping):
                return
        kind = content.type
        self.summary = getattr(content, "summary", None) or self.summary
        detail = getattr(content, "details", None)
        if detail is not None:
            self.detail, self.details = detail, _wire(detail)
        server = getattr(content, "server", None)
        if server:
            self.server = server
        risk = getattr(content, "risk", None)
        if risk is not None:
            self.risk = _wire(risk)
        if kind == "toolCallPrepare":  # the model, from a client that parsed every content
            self.arguments_text += getattr(content, "arguments_text", "") or ""
            return
        self.started = True
        arguments = getattr(content, "arguments", None)
        if arguments is not None and "arguments" in content.model_fields_set:
            self.arguments = arguments
        if kind == "toolCallRun":
            self.manual_approval = bool(getattr(content, "manual_approval", False))
            self.status = "pending" if self.manual_approval and not self.decided else "running"
        elif kind == "toolCallRunning":
            self.status = "running"
        elif kind == "toolCalled":
            self.error = bool(getattr(content, "error", False))
            self.status = "failed" if self.error else "done"
            self.total_time_ms = getattr(content, "total_time_ms", None)
            self.output = _outputs_text(getattr(content, "outputs", None))
        elif kind == "toolCallRejected":
            self.status = "rejected"
            self.reason = getattr(content, "reason", None)

    def _prepare(self, chunk: Mapping[str, Any]) -> None:
        """A ``toolCallPrepare`` chunk (wire form: it streams)."""
        self.summary = chunk.get("summary") or self.summary
        details = chunk.get("details")
        if isinstance(details, dict) and details:
            parsed = _lenient(_PrepareDetails, {"details": details})
            self.detail = getattr(parsed, "details", None)
            self.details = dict(details)
        if chunk.get("server"):
            self.server = chunk["server"]
        if isinstance(chunk.get("risk"), dict):
            self.risk = dict(chunk["risk"])
        self.arguments_text += chunk.get("argumentsText") or ""

    def interrupted(self) -> None:
        """The turn ended with this call still open (a stop)."""
        if self.status == "pending":
            self.status = "rejected"
        elif self.status in ("preparing", "running"):
            self.status = "failed"

    def args_text(self) -> str:
        """The arguments for display: the parsed ones as indented JSON, else the text streamed so far."""
        if self.arguments is not None:
            try:
                return json.dumps(self.arguments, indent=2, ensure_ascii=False)
            except (TypeError, ValueError):
                return str(self.arguments)
        return self.arguments_text


class _PrepareDetails(BaseModel):
    """Only to type a ``toolCallPrepare`` chunk's details (rare: the chunk is otherwise kept as it streamed)."""

    details: ToolCallDetails | None = None


class Block:
    """One piece of a turn as shown: ``user`` (the prompt), ``text``, ``reasoning``, ``tool``, ``image`` or ``note``
    (a system text; ``error`` when it reports a failure).

    Text arrives in chunks: they are kept in a list and joined when :attr:`text` is read, so a long answer is not
    copied once per chunk."""

    __slots__ = ("_parts", "done", "error", "id", "kind", "tool", "total_time_ms")

    def __init__(self, kind: str, text: str = "", *, id: str | None = None, tool: ToolCallState | None = None,
                 error: bool = False) -> None:
        self.kind = kind
        self._parts = [text] if text else []
        self.id = id
        self.tool = tool
        self.error = error
        self.done = False
        self.total_time_ms: int | None = None

    @property
    def text(self) -> str:
        """The block's text so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @text.setter
    def text(self, value: str) -> None:
        self._parts[:] = [value] if value else []

    def append(self, text: str) -> None:
        """Add a streamed chunk."""
        if text:
            self._parts.append(text)

    def __repr__(self) -> str:
        return f"Block({self.kind!r}, {self.text[:40]!r}, id={self.id!r}, done={self.done})"


@dataclass(slots=True)
class Change:
    """What one content changed in a :class:`TurnFold` (:meth:`TurnFold.step`): the content, typed; the blocks it
    changed; for a tool content, the call's state after it and whether it started a new call."""

    kind: str
    role: str | None
    content: Content
    blocks: list[Block]
    tool: ToolCallState | None = None
    new_call: bool = False

    @property
    def text(self) -> str:
        """A ``text`` / ``reasonText`` content's text (the chunk itself, not the block's text so far)."""
        content = self.content
        if isinstance(content, dict):
            return str(content.get("text") or "")
        return str(getattr(content, "text", "") or "")


@dataclass(slots=True, frozen=True)
class ContentEvent:
    """One content of a chat as the engine publishes it to the doors subscribed to that chat (``Engine.subscribe``):
    redacted and parsed once (:func:`parse_content`), however many doors read it. ``parent_chat_id`` is set for a
    subagent's chat (a subscriber to the parent gets its contents too)."""

    chat_id: str
    role: str
    content: Content
    parent_chat_id: str | None = None


class TurnFold:
    """The contents of one chat, folded into :class:`Block` s as they arrive.

    :meth:`step` takes one content (with its role) and returns the :class:`Change` it made (``add``: only the blocks
    it changed); a ``progress finished`` content closes the turn's open blocks (reasoning is done, calls still open
    are :meth:`ToolCallState.interrupted`). A ``spawn_agent`` call's subagent gets a fold of its own
    (:attr:`subagents`, fed through :meth:`step_subagent`), whose calls carry the subagent's chat id.
    """

    def __init__(self, chat_id: str | None = None) -> None:
        #: Set on a subagent's fold: its calls are approved in this chat.
        self.chat_id = chat_id
        self.blocks: list[Block] = []
        #: The calls by engine id: the latest call of each id (an id repeats across turns).
        self.tools: dict[str, ToolCallState] = {}
        self.turn_start = 0  # index of the first block of the current turn
        self.progress = ""
        self.title: str | None = None
        #: The last ``usage`` content, typed (:attr:`usage_content`: its wire form).
        self.last_usage: UsageContent | None = None
        self.usage_content: JsonObject | None = None
        #: The chat's latest plan (a ``plan`` content): each one replaces the one before (:attr:`plan_content`: its
        #: wire form).
        self.plan: PlanContent | None = None
        self.plan_content: JsonObject | None = None
        #: How many blocks there were when the latest plan arrived (tells which turn it belongs to).
        self.plan_at = -1
        #: A subagent's chat id → its fold, and the parent's ``spawn_agent`` call that runs it.
        self.subagents: dict[str, TurnFold] = {}
        self.subagent_calls: dict[str, ToolCallState] = {}
        self._tool: ToolCallState | None = None
        self._new = False

    # -- folding -------------------------------------------------------------------------------------------------

    def add(self, role: str | None, content: Content | Mapping[str, Any]) -> list[Block]:
        """Fold one content of the chat (typed; a wire dict is parsed first); returns the blocks it changed."""
        if type(content) is dict and role == "assistant" and content.get("type") == "text":
            return self._answer(content.get("text") or "")  # type: ignore[arg-type]  # the hot path: a chunk
        return self._fold(role, parse_content(content))

    def step(self, role: str | None, content: Content | Mapping[str, Any]) -> Change:
        """Fold one content of the chat and say what it changed (a door's translation starts here)."""
        if type(content) is dict and role == "assistant" and content.get("type") == "text":
            return Change("text", role, content, self._answer(content.get("text") or ""))  # type: ignore[arg-type]
        typed = parse_content(content)
        self._tool, self._new = None, False
        blocks = self._fold(role, typed)
        kind = typed["type"] if isinstance(typed, dict) else typed.type
        return Change(str(kind), role, typed, blocks, self._tool, self._new)

    def step_subagent(self, child_id: str, role: str | None, content: Content | Mapping[str, Any], *,
                      known_only: bool = False) -> Change | None:
        """Fold one content of a subagent's chat (``parentChatId`` is this chat) into the subagent's own fold; None
        when *known_only* and no call of this chat named that subagent."""
        fold = self.subagents.get(child_id)
        if fold is None:
            if known_only:
                return None
            fold = self.subagents[child_id] = type(self)()
            fold.chat_id = child_id
        return fold.step(role, content)

    def _fold(self, role: str | None, content: Content) -> list[Block]:
        if isinstance(content, dict):  # a streamed chunk, wire form: the hot path
            if role == "user":
                return []
            chunk = content  # one of the three chunk TypedDicts (its keys read leniently: a peer's wire form)
            if chunk["type"] == "text":
                return self._text(role, chunk.get("text") or "")
            if chunk["type"] == "reasonText":
                block = self._reasoning(chunk.get("id") or "")
                block.append(chunk.get("text") or "")
                return [block]
            if chunk["type"] == "toolCallPrepare":
                return self._tool_content(chunk.get("id") or "", chunk.get("name") or "tool",
                                          chunk.get("server") or "eca", True, chunk)
            return []
        if role == "user":
            return []  # the prompt as typed is the reader's to show (the echo carries attached contexts too)
        if isinstance(content, TextContent):
            return self._text(role, content.text)
        if isinstance(content, ProgressContent):
            finished = content.state == "finished"
            self.progress = "" if finished else content.text
            if finished:
                self._close_open_blocks()
            return []
        if isinstance(content, UsageContent):
            self.last_usage = content
            self.usage_content = _wire(content)
            return []
        if isinstance(content, MetadataContent):
            self.title = content.title or self.title
            return []
        if isinstance(content, PlanContent):
            self.plan = content
            self.plan_content = _wire(content)
            self.plan_at = len(self.blocks)
            return []
        if isinstance(content, (ReasonStartedContent, ReasonTextContent, ReasonFinishedContent)):
            block = self._reasoning(content.id)
            if isinstance(content, ReasonTextContent):
                block.append(content.text)
            elif isinstance(content, ReasonFinishedContent):
                block.done = True
                block.total_time_ms = content.total_time_ms
            return [block]
        if isinstance(content, _TOOL_MODELS):
            return self._tool_content(content.id, content.name or "tool", content.server or "eca",
                                      isinstance(content, (ToolCallPrepareContent, ToolCallRunContent)), content)
        if isinstance(content, UrlContent):
            return [self.note(f"[{content.title or content.url}]({content.url})")]
        return []

    def _text(self, role: str | None, text: str) -> list[Block]:
        if role == "system":
            return [self.note(text, error=text.startswith(ERROR_PREFIX))]
        return self._answer(text)

    def _answer(self, text: str) -> list[Block]:
        last = self.blocks[-1] if self.blocks else None
        if last is None or last.kind != "text" or last.done:
            last = Block("text")
            self.blocks.append(last)
        last.append(text)
        return [last]

    def _tool_content(self, call_id: str, name: str, server: str, starts: bool,
                      content: Content | Mapping[str, Any]) -> list[Block]:
        state = self.tools.get(call_id)
        if state is None or (starts and state.ended):
            state = ToolCallState(call_id, name, server, chat_id=self.chat_id)
            self.tools[call_id] = state
            self._end_text()
            self.blocks.append(Block("tool", id=call_id, tool=state))
            self._new = True
        state.update(content)
        self._tool = state
        subagent = state.subagent
        if subagent is not None and subagent.subagent_chat_id:
            child = subagent.subagent_chat_id
            self.subagent_calls.setdefault(child, state)
            if child not in self.subagents:
                self.subagents[child] = type(self)()
                self.subagents[child].chat_id = child
        return [b for b in self.blocks if b.tool is state]

    def note(self, text: str, error: bool = False) -> Block:
        """Add a note block (a system text)."""
        block = Block("note", text, error=error)
        self.blocks.append(block)
        return block

    def clear(self) -> None:
        """Forget every turn (``chat/cleared``: a rewind or ``chat/clear``); the server replays what it kept."""
        chat_id = self.chat_id
        TurnFold.__init__(self, chat_id)

    def new_turn(self) -> None:
        """A new turn starts here (a prompt sent, or replayed): what was open is closed."""
        self._close_open_blocks()
        self.turn_start = len(self.blocks)

    # -- reading -------------------------------------------------------------------------------------------------

    def texts(self, all_turns: bool = False) -> list[str]:
        """The assistant's text blocks of the current turn (or of every turn)."""
        start = 0 if all_turns else self.turn_start
        return [b.text for b in self.blocks[start:] if b.kind == "text"]

    def notes(self, all_turns: bool = False) -> list[Block]:
        """The note blocks of the current turn (or of every turn)."""
        start = 0 if all_turns else self.turn_start
        return [b for b in self.blocks[start:] if b.kind == "note"]

    def calls(self, all_turns: bool = False) -> list[ToolCallState]:
        """The tool calls of the current turn (or of every turn), in order."""
        start = 0 if all_turns else self.turn_start
        return [b.tool for b in self.blocks[start:] if b.tool is not None]

    def _end_text(self) -> None:
        if self.blocks and self.blocks[-1].kind == "text":
            self.blocks[-1].done = True

    def _reasoning(self, reason_id: str) -> Block:
        for block in reversed(self.blocks):
            if block.kind == "reasoning" and block.id == reason_id:
                return block
        self._end_text()
        block = Block("reasoning", id=reason_id)
        self.blocks.append(block)
        return block

    def _close_open_blocks(self) -> None:
        for block in self.blocks[self.turn_start:]:
            if block.kind == "reasoning":
                block.done = True
            if block.tool is not None:
                block.tool.interrupted()
