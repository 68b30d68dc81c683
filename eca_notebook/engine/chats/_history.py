"""Windows over a chat's history (``chat/history``, and ``chat/open`` with ``limit``/``before``/``after``), as the
reference server pages them, so an editor can show the newest page of a long chat and load older ones on demand.

The unit is one recorded chat content (what ``chat/contentReceived`` showed: a user message, an answer, a tool call's
step, a note). Cursors are opaque: base64url of ``"<index>.<checksum>"``, the checksum a fingerprint of the content
at that index. A cursor resolves to its index while the checksum still matches there, else to wherever that content
moved; a content that is gone (a rollback, ``chat/clear``) makes the cursor *expired* and the client refetches the
newest page. ``"lastCompaction"`` names the last compaction note (``/compact`` or an automatic one): ``after`` it is
the active context, ``before`` it the summarised-away history; never compacted, it bounds nothing.

``after`` and ``before`` are exclusive bounds. A page is the newest ``limit`` contents of the window, except with an
opaque ``after`` cursor alone, which pages forward (the oldest ``limit`` after it). ``beforeCursor`` /
``afterCursor`` are null at the ends of the whole history.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

from ...protocol import ChatHistoryMeta
from ._chat import ContentRecord

__all__ = ["LAST_COMPACTION", "Page", "compaction_cursor", "page"]

LAST_COMPACTION = "lastCompaction"
_EXPIRED = "expired"


@dataclass
class Page:
    """The contents of one window, with the cursors around it."""

    start: int
    end: int
    total: int
    before_cursor: str | None
    after_cursor: str | None

    def meta(self, records: list[ContentRecord]) -> ChatHistoryMeta:
        """The reference's ``ChatHistoryMeta``."""
        return ChatHistoryMeta(total=self.total, returned=self.end - self.start, before_cursor=self.before_cursor,
                               after_cursor=self.after_cursor, compaction_cursor=compaction_cursor(records))


def _checksum(record: ContentRecord) -> str:
    raw = json.dumps([record.get("role"), record.get("content")], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def _encode(index: int, record: ContentRecord) -> str:
    raw = f"{index}.{_checksum(record)}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(cursor: str) -> tuple[int, str] | None:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        index, checksum = raw.split(".", 1)
        return int(index), checksum
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def _is_compaction(record: ContentRecord) -> bool:
    content = record.get("content") or {}
    text = content.get("text") if isinstance(content, dict) else None
    return (record.get("role") == "system" and isinstance(text, str)
            and (text.startswith("Chat compacted:") or "compacted the earlier conversation" in text))


def _last_compaction(records: list[ContentRecord]) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        if _is_compaction(records[index]):
            return index
    return None


def _resolve(records: list[ContentRecord], value: str | None) -> int | str | None:
    """An index, ``"expired"``, or None (no bound: absent, or ``lastCompaction`` in a chat never compacted)."""
    if value is None:
        return None
    if value == LAST_COMPACTION:
        return _last_compaction(records)
    decoded = _decode(value)
    if decoded is None:
        return _EXPIRED
    index, checksum = decoded
    if 0 <= index < len(records) and _checksum(records[index]) == checksum:
        return index
    for i, record in enumerate(records):  # moved (contents inserted or removed before it)
        if _checksum(record) == checksum:
            return i
    return _EXPIRED


def compaction_cursor(records: list[ContentRecord]) -> str | None:
    """A cursor at the last compaction note; None when the chat was never compacted."""
    index = _last_compaction(records)
    return None if index is None else _encode(index, records[index])


def page(records: list[ContentRecord], limit: int | None, before: str | None, after: str | None) -> Page | None:
    """The window of *records* the bounds and *limit* select; None when a cursor is expired."""
    n = len(records)
    lo, hi = _resolve(records, after), _resolve(records, before)
    if lo == _EXPIRED or hi == _EXPIRED:
        return None
    start = min((lo + 1) if isinstance(lo, int) else 0, n)
    end = max(start, min(hi if isinstance(hi, int) else n, n))
    forward = isinstance(lo, int) and after != LAST_COMPACTION and hi is None
    if limit is not None and limit > 0:
        if forward:
            end = min(end, start + limit)
        else:
            start = max(start, end - limit)
    return Page(start=start, end=end, total=n,
                before_cursor=_encode(start, records[start]) if 0 < start < n else None,
                after_cursor=_encode(end - 1, records[end - 1]) if 0 < end < n else None)
