"""A chat's state, and how it is saved.

A chat keeps two parallel records:

* ``messages`` — the provider-neutral history the LLM sees on the next turn;
* ``contents`` — what clients were shown (``chat/contentReceived`` params), replayed by ``chat/open``. Consecutive
  text chunks of one role are merged as they are recorded, so a 20,000-chunk answer is saved as one text.

A prompt's user echo in ``contents`` carries a ``contentId``, and the :class:`UserMessage` it put in ``messages`` the
same ``content_id``: that pairs the two records, so ``chat/rollback`` and ``chat/fork`` cut both at one point
(``_rewind.py``). Chats saved before ids existed have none and simply offer no such point.

Both are plain data so a chat round-trips through JSON; nothing here talks to a provider or a client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from ..._images import ImageError, ImagePart, image_from_base64
from ..._text import user_words
from ...protocol import JsonObject
from ...providers.base import AssistantMessage, Message, Reasoning, ToolCall, ToolResultMessage, UserMessage

MAX_CHAT_ID_LENGTH = 256
SUBAGENT_PREFIX = "subagent-"  # the ids of subagent chats (_subagents.py): reserved, as the reference server does
TITLE_LENGTH = 48
# The first words of a compaction's summary message (turn/_window.py writes it; a rewind never cuts past one).
COMPACT_PREFIX = "Summary of the conversation so far (the earlier messages were compacted):"


def now_ms() -> int:
    """Milliseconds since the epoch: the clock of chat records and ``chat/list`` (the wire's unit)."""
    return int(time.time() * 1000)


def invalid_chat_id(chat_id: str) -> str | None:
    """Why a client-chosen chat id is unusable (the reference server refuses these), or None when it is fine."""
    if not chat_id.strip():
        return "chatId is blank"
    if len(chat_id) > MAX_CHAT_ID_LENGTH:
        return f"chatId is longer than {MAX_CHAT_ID_LENGTH} characters"
    if any(ch.isspace() for ch in chat_id):
        return "chatId contains whitespace"
    if chat_id.startswith(SUBAGENT_PREFIX):
        return f"chatId starting with '{SUBAGENT_PREFIX}' is reserved for subagent chats"
    return None


def title_from(message: str) -> str:
    """A short title from the first prompt: cheap, immediate, and needs no extra LLM call. From the user's own words:
    what a host put before them (Jupyter AI's "System note: …" guidance, a resent history) is skipped."""
    text = " ".join(user_words(message).split())
    if len(text) <= TITLE_LENGTH:
        return text or "New chat"
    cut = text[:TITLE_LENGTH].rsplit(" ", 1)[0] or text[:TITLE_LENGTH]
    return cut.rstrip(" .,;:") + "…"


@dataclass
class Usage:
    """Token and cost totals of a chat. Cost is None until a priced model has answered."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    last_input_tokens: int = 0
    last_output_tokens: int = 0
    last_cost: float | None = None

    @property
    def session_tokens(self) -> int:
        # providers report input without cache reads/writes (Anthropic's convention): the prompt is all three
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.output_tokens


class ContentRecord(TypedDict):
    """One content a client was shown, as the chat keeps it (``Chat.contents``) and its saved record holds it: who
    sent it and its wire form (redacted; text and reasoning chunks merged)."""

    role: str
    content: JsonObject


class SubagentRecord(TypedDict):
    """A subagent's contents in its parent's saved record (``subagents``)."""

    chatId: str
    contents: list[ContentRecord]


class ChatRecord(TypedDict):
    """A chat as it is saved (version 1, :meth:`Chat.to_record`) and exported. Read back from a file anyone may have
    written, so :meth:`Chat.from_record` and the store check each field as they read it."""

    version: int
    id: str
    title: str | None
    model: str | None
    behavior: str | None
    createdAt: int
    updatedAt: int
    messageCount: int
    messages: list[dict[str, object]]  # a message's fields (an image's bytes stay bytes: the store writes them aside)
    contents: list[ContentRecord]
    usage: JsonObject
    trust: NotRequired[bool]
    variant: NotRequired[str]
    subagents: NotRequired[list[SubagentRecord]]


@dataclass
class Chat:
    id: str
    title: str | None = None
    model: str | None = None
    behavior: str | None = None
    created_at: int = field(default_factory=now_ms)
    updated_at: int = field(default_factory=now_ms)
    messages: list[Message] = field(default_factory=list)
    contents: list[ContentRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # trust mode (chat/prompt or chat/update ``trust``): calls that would ask run without asking (_toolcall.py)
    trust: bool = False
    # the selected variant of the chat's model (``chat/prompt`` / ``chat/selectedModelChanged`` ``variant``;
    # engine/config/_variants.py); None: the model's ``default`` variant, if any
    variant: str | None = field(default=None, compare=False)
    # runtime only, never saved
    task: asyncio.Task[None] | None = field(default=None, repr=False, compare=False)
    status: str = "idle"
    # chat/promptSteer text waiting for the running turn's next round boundary (_turn.py); dropped when the turn ends
    steer: str | None = field(default=None, repr=False, compare=False)
    # what the model is told at the next round boundary about this chat's background jobs that ended by themselves
    job_notes: list[str] = field(default_factory=list, repr=False, compare=False)
    last_stop_reason: str | None = field(default=None, repr=False, compare=False)  # of the last provider response
    # what the chat learned about its model's context window (token estimate calibration, _context_window.py)
    context_window: Any = field(default=None, repr=False, compare=False)
    # a subagent's chat (_subagents.py): the chat whose spawn_agent call runs it. Such a chat is never saved on its
    # own nor listed (its contents go in the parent's record) and each of its contents tells the clients
    # ``parentChatId``.
    parent_chat_id: str | None = field(default=None, compare=False)
    # a parent's subagents as they were shown (subagent chat id → its contents): saved inside the parent's record,
    # so ``chat/open`` after a reload or a restart replays them nested under the parent's spawn_agent call
    subagent_contents: dict[str, list[ContentRecord]] = field(default_factory=dict, compare=False)
    # saved at least once (a turn ended, or it was renamed, cleared…): listed by ``chat/list`` even when empty, e.g.
    # cleared before the store's writer thread wrote it
    kept: bool = field(default=False, compare=False)
    # the text chunks merged into the last content and not yet joined into it: (its content, the text's parts);
    # reading ``contents`` joins them (see record_content)
    _streaming: tuple[JsonObject, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def running(self) -> bool:
        """A turn of this chat is streaming now (its task exists and is not done)."""
        return self.task is not None and not self.task.done()

    @property
    def message_count(self) -> int:
        """How many messages the model would see on the next turn (``chat/list`` reports it)."""
        return len(self.messages)

    def record_content(self, role: str, content: JsonObject) -> None:
        """Remember what a client was shown, merging text/reasoning chunks into the previous one of the same kind.

        The chunks of the text being merged are kept as parts and joined when :attr:`contents` is read or another
        content comes: ``text + more`` on every chunk copies the whole text each time, quadratic in a long reply
        (2 µs a chunk at 20,000 chunks, most of what recording cost)."""
        contents: list[ContentRecord] = self.__dict__["contents"]
        if contents:
            last = contents[-1]
            prev = last["content"]
            kind = content.get("type")
            if last["role"] == role and prev.get("type") == kind and ((kind == "text" and role != "user") or (
                    kind == "reasonText" and prev.get("id") == content.get("id"))):
                text, more = prev.get("text"), content.get("text", "")
                if isinstance(text, str) and isinstance(more, str):
                    streaming = self._streaming
                    if streaming is None or streaming[0] is not prev:
                        self._join_streamed()
                        self._streaming = streaming = (prev, [text])
                    streaming[1].append(more)
                    return
        self._join_streamed()
        contents.append({"role": role, "content": dict(content)})

    def _join_streamed(self) -> None:
        """Write the text merged so far into its content (see :meth:`record_content`)."""
        streaming = self._streaming
        if streaming is not None:
            self._streaming = None
            streaming[0]["text"] = "".join(streaming[1])

    # -- persistence ---------------------------------------------------------------------------------------------

    def to_record(self) -> ChatRecord:
        """The chat as the saved record (version 1): what :meth:`from_record` reads back."""
        record: ChatRecord = {
            "version": 1,
            "id": self.id,
            "title": self.title,
            "model": self.model,
            "behavior": self.behavior,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "messageCount": self.message_count,
            "messages": [_message_to_dict(m) for m in self.messages],
            "contents": self.contents,
            "usage": dataclasses.asdict(self.usage),
        }
        if self.trust:
            record["trust"] = True
        if self.variant:
            record["variant"] = self.variant
        if self.subagent_contents:
            record["subagents"] = [{"chatId": k, "contents": v} for k, v in self.subagent_contents.items()]
        return record

    @classmethod
    def from_record(cls, record: ChatRecord) -> Chat:
        """A chat from its saved record; unknown usage fields of a newer version are ignored."""
        usage_fields = {f.name for f in dataclasses.fields(Usage)}
        # the saved counts as they are (a file anyone may have written; Usage takes what it is given)
        saved = {k: v for k, v in (record.get("usage") or {}).items() if k in usage_fields}
        usage = Usage(**saved)  # type: ignore[arg-type]
        return cls(
            id=str(record["id"]),
            title=record.get("title"),
            model=record.get("model"),
            behavior=record.get("behavior"),
            created_at=int(record.get("createdAt") or now_ms()),
            updated_at=int(record.get("updatedAt") or now_ms()),
            messages=[m for m in (_message_from_dict(d) for d in record.get("messages") or []) if m is not None],
            contents=list(record.get("contents") or []),
            usage=usage,
            trust=record.get("trust") is True,
            variant=record["variant"] if isinstance(record.get("variant"), str) else None,
            subagent_contents={str(s["chatId"]): list(s.get("contents") or []) for s in record.get("subagents") or []
                               if isinstance(s, dict) and isinstance(s.get("chatId"), str)},
        )


def _get_contents(chat: Chat) -> list[ContentRecord]:
    """What clients were shown, in order: a text still streaming is joined into its content first."""
    chat._join_streamed()
    contents: list[ContentRecord] = chat.__dict__["contents"]
    return contents


def _set_contents(chat: Chat, contents: list[ContentRecord]) -> None:
    if "contents" in chat.__dict__:
        chat._join_streamed()  # into the list being replaced, which someone may still hold
    chat.__dict__["contents"] = contents


# What a client was shown, text chunks merged: a property over the dataclass field, so that every reader (save,
# replay, history, rewind…) gets the text streamed so far joined — record_content keeps a streamed text's chunks
# as parts instead of copying the whole text on each one.
setattr(Chat, "contents", property(_get_contents, _set_contents))  # noqa: B010  (to mypy the field stays a list)


def _message_to_dict(message: Message) -> dict[str, object]:
    data = dataclasses.asdict(message)  # (an image's bytes stay bytes: the store writes them to a side file)
    if data.get("content_id", "") is None:  # only prompts carry one; older readers never see the key
        del data["content_id"]
    if "images" in data and not data["images"]:
        del data["images"]
    return data


def _images_from(data: dict[str, Any]) -> list[ImagePart]:
    """A saved message's images: bytes put back by the store (``data``), or base64 — an exported chat, a file anyone
    may have written, so checked like any image coming in (a bomb or a lie is dropped)."""
    images = []
    for image in data.get("images") or []:
        if not isinstance(image, dict):
            continue
        raw = image.get("data")
        if not isinstance(raw, bytes) and isinstance(image.get("base64"), str):
            try:
                images.append(image_from_base64(image["base64"], media_type=str(image.get("media_type")),
                                                name=str(image.get("name") or "image")))
            except ImageError:
                pass
            continue
        if isinstance(raw, bytes) and isinstance(image.get("media_type"), str):
            images.append(ImagePart(image["media_type"], raw, int(image.get("width") or 0),
                                    int(image.get("height") or 0), str(image.get("name") or "")))
    return images


def _message_from_dict(data: dict[str, Any]) -> Message | None:
    role = data.get("role")
    if role == "user":
        content_id = data.get("content_id")  # absent in chats saved before rollback/fork existed
        return UserMessage(text=str(data.get("text", "")), content_id=str(content_id) if content_id else None,
                           images=_images_from(data))
    if role == "assistant":
        return AssistantMessage(
            text=str(data.get("text", "")),
            reasoning=[Reasoning(**r) for r in data.get("reasoning") or []],
            tool_calls=[ToolCall(**t) for t in data.get("tool_calls") or []],
        )
    if role == "tool":
        return ToolResultMessage(
            tool_call_id=str(data.get("tool_call_id", "")),
            name=str(data.get("name", "")),
            output=str(data.get("output", "")),
            is_error=bool(data.get("is_error", False)),
            images=_images_from(data),
        )
    return None
