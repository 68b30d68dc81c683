"""Code retrieval: a content index beside the file-name index — definitions from tree-sitter (Python, TypeScript,
JavaScript, notebooks' code cells), BM25-ranked full-text search (SQLite FTS5) and semantic search (sentence
embeddings, with the ``vectors`` extra) — stored per workspace and kept up to date incrementally.

The engine owns one :class:`CodeIndex` per workspace (``engine.code_index``); the ``search_symbols``,
``search_text`` and ``vector_search`` tools and the REST ``index/*`` endpoints use it. Nothing here imports torch
until a semantic search needs the model.
"""

from __future__ import annotations

from ._index import CodeIndex
from ._store import SCHEMA_VERSION
from ._text import identifier_parts
from ._types import FileChange, IndexProgress, SearchHits, SymbolHit, TextHit, VectorResult
from ._vectors import MODEL_NAME
from ._vectors import available as vectors_available
from ._vectors import missing_message as vectors_missing_message

__all__ = [
    "MODEL_NAME",
    "SCHEMA_VERSION",
    "CodeIndex",
    "FileChange",
    "IndexProgress",
    "SearchHits",
    "SymbolHit",
    "TextHit",
    "VectorResult",
    "identifier_parts",
    "vectors_available",
    "vectors_missing_message",
]
