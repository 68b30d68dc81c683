"""The content index on disk: one SQLite file per workspace (files, symbols, chunks, FTS5 tables, vectors).

Why SQLite: FTS5 gives BM25-ranked full-text search in C, the file is one artefact that survives restarts, and
writes in transactions mean a crash mid-build leaves the last committed state, never a half-written file. WAL mode
lets a search read while the builder writes.

Why two connections: the builder writes from a worker thread while searches read from others; each connection is
used under its own lock (``sqlite3`` objects are not safe to share between threads at the same time).

Why ``synchronous=NORMAL`` (and a big page cache for the writer): the database is a rebuildable cache, so a power cut
may cost the last transactions (never consistency, with WAL) but must not cost an fsync per transaction. Files are
written many at a time (:meth:`Store.put_files`: one ``executemany`` per table for a whole batch, row ids assigned
here), which keeps a 100,000-file build in SQLite's C code rather than in a Python loop of single-row statements.

A database that cannot be opened or read (``file is not a database``, ``malformed``), or that has another schema
version, is deleted and created anew: the index is a cache of the workspace, never the only copy of anything.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._symbols import SymbolDef
from ._text import Chunk, identifier_parts

__all__ = ["SCHEMA_VERSION", "FileRow", "NewFile", "Store"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    lang TEXT
);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    name_lower TEXT NOT NULL,
    kind TEXT NOT NULL,
    container TEXT,
    start_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    end_col INTEGER NOT NULL,
    signature TEXT NOT NULL,
    cell_index INTEGER,
    cell_id TEXT
);
CREATE INDEX symbols_file ON symbols(file_id);
CREATE INDEX symbols_name ON symbols(name_lower);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    cell_index INTEGER,
    cell_id TEXT
);
CREATE INDEX chunks_file ON chunks(file_id);
CREATE TABLE vectors (chunk_id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE VIRTUAL TABLE symbols_fts USING fts5(words, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
CREATE VIRTUAL TABLE chunks_fts USING fts5(path, defs, content, parts, tokenize = 'unicode61 remove_diacritics 2');
"""

#: BM25 column weights of chunks_fts: a chunk *defining* a name outranks chunks that only use it; the path counts
#: more than a word in the body; the split form (parts) a little less than the text itself.
BM25_WEIGHTS = (2.0, 8.0, 1.0, 0.6)


@dataclass(frozen=True, slots=True)
class FileRow:
    id: int
    size: int
    mtime_ns: int
    hash: str


@dataclass(frozen=True, slots=True)
class NewFile:
    """A file to insert: its bytes' identity, its definitions and its chunks as ``(chunk, path words, defined names,
    split form)``."""

    path: str
    size: int
    mtime_ns: int
    digest: str
    lang: str | None
    symbols: Sequence[SymbolDef]
    chunks: Sequence[tuple[Chunk, str, str, str]]


class CorruptIndex(Exception):
    """The database is unreadable: the caller rebuilds it."""


def _is_corruption(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("not a database", "malformed", "corrupt", "no such table", "no such column",
                                   "disk image"))


class Store:
    """The SQLite file of one workspace's content index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rebuilt = False  # the file was unreadable or of another schema, and was created anew
        self._wlock = threading.Lock()
        self._rlock = threading.Lock()
        self._writer = self._open_checked()
        self._reader = self._connect()

    # -- opening -----------------------------------------------------------------------------------------------

    def _connect(self, *, writer: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA temp_store=MEMORY")
        if writer:
            conn.execute("PRAGMA cache_size=-32768")  # 32 MiB (grown as needed): a build's FTS merges stay in memory
        return conn

    def _open_checked(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect(writer=True)
            version = self._version(conn)
            if version == SCHEMA_VERSION:
                return conn
            conn.close()
            if version is not None:
                log.info("content index %s has schema %s, not %s: rebuilding", self.path, version, SCHEMA_VERSION)
        except sqlite3.DatabaseError as exc:
            log.warning("content index %s is unreadable (%s): rebuilding", self.path, exc)
        self._delete_files()
        self.rebuilt = True
        conn = self._connect(writer=True)
        conn.executescript("BEGIN;" + _SCHEMA + "COMMIT;")
        conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        return conn

    @staticmethod
    def _version(conn: sqlite3.Connection) -> int | None:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return None if not tables else -1
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        try:
            return int(row[0]) if row else -1
        except ValueError:
            return -1

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def close(self) -> None:
        with self._wlock, self._rlock:
            for conn in (self._reader, self._writer):
                try:
                    conn.close()
                except sqlite3.Error:
                    pass

    def reset(self) -> None:
        """Start over with an empty database (after corruption was found while in use)."""
        self.close()
        self._delete_files()
        with self._wlock, self._rlock:
            self._writer = self._open_checked()
            self._reader = self._connect()
        self.rebuilt = True

    # -- meta --------------------------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._rlock:
            row = self._reader.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._wlock:
            self._writer.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- writing -----------------------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the writer lock held throughout): committed on success, rolled back on error."""
        with self._wlock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def files(self) -> dict[str, tuple[int, int, int, str]]:
        """Every indexed file, by path: ``(id, size, mtime_ns, hash)`` — plain tuples, in one query (a restart's
        scan compares 100,000 of them with the disk in memory)."""
        with self._rlock:
            rows = self._reader.execute("SELECT path, id, size, mtime_ns, hash FROM files").fetchall()
        return {row[0]: row[1:] for row in rows}

    def file(self, path: str) -> FileRow | None:
        with self._rlock:
            row = self._reader.execute("SELECT id, size, mtime_ns, hash FROM files WHERE path = ?",
                                       (path,)).fetchone()
        return FileRow(*row) if row else None

    @staticmethod
    def delete_files(conn: sqlite3.Connection, file_ids: Sequence[int]) -> None:
        """Remove files with their symbols, chunks and vectors (a statement per table for all of them)."""
        if not file_ids:
            return
        ids = [(fid,) for fid in file_ids]
        conn.executemany("DELETE FROM symbols_fts WHERE rowid IN (SELECT id FROM symbols WHERE file_id = ?)", ids)
        conn.executemany("DELETE FROM symbols WHERE file_id = ?", ids)
        conn.executemany("DELETE FROM vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id = ?)", ids)
        conn.executemany("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = ?)", ids)
        conn.executemany("DELETE FROM chunks WHERE file_id = ?", ids)
        conn.executemany("DELETE FROM files WHERE id = ?", ids)

    @staticmethod
    def touch_files(conn: sqlite3.Connection, rows: Sequence[tuple[int, int, int]]) -> None:
        """New ``(size, mtime_ns)`` of files whose bytes did not change: ``(id, size, mtime_ns)`` each."""
        conn.executemany("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?",
                         [(size, mtime, fid) for fid, size, mtime in rows])

    @staticmethod
    def put_files(conn: sqlite3.Connection, files: Sequence[NewFile]) -> None:
        """Insert files with their symbols and chunks; the caller deleted any previous version first. Row ids are
        assigned here (one past the largest, under the writer's transaction) so that every table gets a single
        ``executemany`` for the whole batch."""
        if not files:
            return
        file_id, symbol_id, chunk_id = conn.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM files), (SELECT coalesce(max(id), 0) FROM symbols),"
            " (SELECT coalesce(max(id), 0) FROM chunks)").fetchone()
        file_rows: list[tuple[Any, ...]] = []
        symbol_rows: list[tuple[Any, ...]] = []
        symbol_words: list[tuple[int, str]] = []
        chunk_rows: list[tuple[Any, ...]] = []
        chunk_texts: list[tuple[int, str, str, str, str]] = []
        for f in files:
            file_id += 1
            file_rows.append((file_id, f.path, f.size, f.mtime_ns, f.digest, f.lang))
            for sym in f.symbols:
                symbol_id += 1
                symbol_rows.append((symbol_id, file_id, sym.name, sym.name.lower(), sym.kind, sym.container,
                                    sym.start_line, sym.start_col, sym.end_line, sym.end_col, sym.signature,
                                    sym.cell_index, sym.cell_id))
                symbol_words.append((symbol_id, _words(sym.name)))
            for chunk, path_words, defs, parts in f.chunks:
                chunk_id += 1
                chunk_rows.append((chunk_id, file_id, chunk.start_line, chunk.end_line, chunk.cell_index,
                                   chunk.cell_id))
                chunk_texts.append((chunk_id, path_words, defs, chunk.text, parts))
        conn.executemany("INSERT INTO files (id, path, size, mtime_ns, hash, lang) VALUES (?, ?, ?, ?, ?, ?)",
                         file_rows)
        conn.executemany(
            "INSERT INTO symbols (id, file_id, name, name_lower, kind, container, start_line, start_col, end_line,"
            " end_col, signature, cell_index, cell_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", symbol_rows)
        conn.executemany("INSERT INTO symbols_fts (rowid, words) VALUES (?, ?)", symbol_words)
        conn.executemany("INSERT INTO chunks (id, file_id, start_line, end_line, cell_index, cell_id)"
                         " VALUES (?, ?, ?, ?, ?, ?)", chunk_rows)
        conn.executemany("INSERT INTO chunks_fts (rowid, path, defs, content, parts) VALUES (?, ?, ?, ?, ?)",
                         chunk_texts)

    # -- reading -----------------------------------------------------------------------------------------------

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read on the reader connection."""
        with self._rlock:
            return self._reader.execute(sql, tuple(params)).fetchall()

    def counts(self) -> tuple[int, int, int, int]:
        """(files, symbols, chunks, vectors)."""
        row = self.query("SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM symbols),"
                         " (SELECT count(*) FROM chunks), (SELECT count(*) FROM vectors)")[0]
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    def disk_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += Path(str(self.path) + suffix).stat().st_size
            except OSError:
                pass
        return total

    def put_vectors(self, rows: Sequence[tuple[int, bytes]]) -> None:
        with self.transaction() as conn:
            # a chunk deleted since its text was read must not get a vector back
            conn.executemany("INSERT OR REPLACE INTO vectors (chunk_id, vec) SELECT ?, ? WHERE EXISTS "
                             "(SELECT 1 FROM chunks WHERE id = ?)", [(cid, blob, cid) for cid, blob in rows])

    def clear_vectors(self) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM vectors")


@functools.lru_cache(maxsize=65_536)  # names repeat across files
def _words(name: str) -> str:
    parts = identifier_parts(name)
    return " ".join([name.lower(), *parts]) if len(parts) > 1 else name.lower()
