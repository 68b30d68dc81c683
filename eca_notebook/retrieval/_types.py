"""The values the content index takes and hands out: file-watcher events in, progress and search hits out, and the
counters it keeps.

They live apart from :class:`~eca_notebook.retrieval.CodeIndex` because three modules share them — the scan
(:mod:`._scan`) reports progress and counts what it read, the searches (:mod:`._search`) build the hits, and the
index (:mod:`._index`) hands both to its callers — and none of those should import another just for a dataclass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = ["FileChange", "IndexProgress", "SearchHits", "SymbolHit", "TextHit", "VectorResult"]

ChangeType = Literal["created", "modified", "deleted"]
Progress = Callable[["IndexProgress"], Any]


@dataclass(frozen=True, slots=True)
class FileChange:
    """A file-watcher event. `path` is absolute or relative to the (first) workspace folder; `content_hash` the
    sha256 of the new bytes, hex (``sha256:`` prefix allowed), when the client knows it."""

    type: ChangeType
    path: str
    content_hash: str | None = None


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Where a build is: ``stage`` is ``scanning`` (listing files), ``indexing`` (reading and parsing changed files)
    or ``embedding`` (computing vectors)."""

    stage: str
    done: int
    total: int
    message: str


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A definition found by :meth:`CodeIndex.search_symbols` (1-based lines and columns; in a notebook, within
    the cell ``cell_index``/``cell_id``)."""

    name: str
    kind: str
    container: str | None
    path: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    signature: str
    cell_index: int | None = None
    cell_id: str | None = None
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class TextHit:
    """A chunk found by text or vector search: its line range and the lines that show why (``snippet``)."""

    path: str
    start_line: int
    end_line: int
    snippet: list[tuple[int, str]]
    score: float
    cell_index: int | None = None
    cell_id: str | None = None


_HitT = TypeVar("_HitT")


class SearchHits(list[_HitT]):
    """A search's results — a plain list — and, in ``note``, why they may be incomplete (``None`` when the index
    had been checked against the disk in this process): e.g. answered from the index a previous session stored
    while it is being checked in the background."""

    note: str | None = None


@dataclass(frozen=True, slots=True)
class VectorResult:
    """What :meth:`CodeIndex.vector_search` found; ``reranked``: fused with the text search's ranking."""

    hits: list[TextHit]
    reranked: bool
    embedded: int  # chunks embedded by this call
    message: str = ""
    note: str | None = None  # as SearchHits.note


@dataclass
class _Stats:
    files_read: int = 0  # files opened (bytes read) since the index was created
    files_parsed: int = 0  # files (re)indexed: parsed and their chunks written
    last_changed: int = 0
    built_at: float | None = None
    refreshed_at: float | None = None
    duration_ms: float | None = None
    progress: IndexProgress | None = None
    truncated: bool = False
    errors: list[str] = field(default_factory=list)
