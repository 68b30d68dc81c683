"""Bringing the store up to date with the disk: walking the workspace, comparing with what is stored, reading and
parsing the files that changed, and writing them in batches.

This is the part of the content index that touches files; :class:`~eca_notebook.retrieval.CodeIndex` decides *when*
it runs (lazily, in a worker thread, under its lock) and this module *what* it does, synchronously. How it stays
cheap:

* **Cheap scans.** A scan is one ``scandir`` walk with the directory entries' own ``lstat`` (ignored and vendored
  directories pruned before they are entered), one query for every stored ``(size, mtime_ns, hash)``, and a
  comparison in memory; a 100,000-file tree with nothing changed takes about a second of CPU. Only files whose size or
  mtime moved are opened, and only those whose sha256 changed are parsed.
* **Batched writes, bounded memory.** Files are read and parsed outside any transaction, then written a batch at a
  time (up to ``_BATCH`` files or ``_BATCH_BYTES`` of source: one transaction, one ``executemany`` per table); a file
  above ``max_file_bytes`` and binary files are skipped; the number of files has a ceiling.
* **Events skip what is known.** A file-watcher event whose ``content_hash`` equals the stored one skips the file
  without opening it.

Ignore rules are those of the file-name index (:mod:`eca_notebook.tools.ignore`: ``.gitignore``, ``.git/info/exclude``,
never ``.git``), plus hidden entries and ``node_modules``/``__pycache__``, which hold no code of the user's own.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .._fileio import SNIFF_BYTES, looks_binary
from ..tools.ignore import IgnoreMatcher, iter_entries
from ._store import NewFile, Store
from ._symbols import Cell, SymbolDef, cell_python, language_for, notebook_cells, parse_symbols
from ._text import Chunk, chunk_lines, identifier_parts, split_form
from ._types import FileChange, IndexProgress, _Stats

__all__ = ["Scanner"]

log = logging.getLogger(__name__)

Report = Callable[[IndexProgress], None]
#: a stored file as the scan compares it: (id, size, mtime_ns, sha256)
StoredRow = tuple[int, int, int, str]

_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
_BATCH = 1_000  # files per write transaction at most...
_BATCH_BYTES = 16_000_000  # ...and bytes of their sources (what a batch holds in memory, parsed, before writing)
_PROGRESS_EVERY = 0.25  # seconds between progress reports
# A file modified this close to the scan's start may change again within one mtime tick without its mtime moving
# ("racy git"): it is stored with mtime -1, so the next scan reads it again. File systems that keep whole seconds
# (FAT: 2 s, HFS+: 1 s) need the wide window; the others store nanoseconds from a clock of a few milliseconds.
_RACY_NS = 2_000_000_000
_RACY_FINE_NS = 100_000_000
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO must not block


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _normal_hash(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip().lower()
    return value.removeprefix("sha256:") or None


def _racy(mtime_ns: int, scan_start_ns: int) -> bool:
    window = _RACY_NS if mtime_ns % 1_000_000_000 == 0 else _RACY_FINE_NS
    return mtime_ns >= scan_start_ns - window


def _read_file(path: str, cap: int) -> tuple[bytes, int] | None:
    """(bytes, mtime_ns) of a regular file of at most `cap` bytes: one open, one fstat, reads to the end."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size or len(data) < st.st_size:  # grew or a short read: read the rest
            pieces = [data]
            total = len(data)
            while piece := os.read(fd, 1 << 20):
                total += len(piece)
                if total > cap:
                    return None
                pieces.append(piece)
            data = b"".join(pieces)
        return data, st.st_mtime_ns
    except OSError:
        return None
    finally:
        os.close(fd)


_PATH_SEPARATORS = re.compile(r"[/\\._\-\s]+")


@functools.lru_cache(maxsize=65_536)
def _piece_parts(piece: str) -> tuple[str, ...]:
    parts = identifier_parts(piece)
    return tuple(parts) if len(parts) > 1 else ()


def _path_words(path: str) -> str:
    """The path as words for the FTS path column: its pieces and their identifier parts (directory names repeat
    in thousands of paths: their parts are split once)."""
    pieces = [p for p in _PATH_SEPARATORS.split(path) if p]
    out = list(pieces)
    for piece in pieces:
        out.extend(_piece_parts(piece))
    return " ".join(out)


def _make_labels(folders: Sequence[Path]) -> list[str]:
    labels: list[str] = []
    for folder in folders:
        name = folder.name or "root"
        label, n = name, 2
        while label in labels:
            label, n = f"{name}-{n}", n + 1
        labels.append(label)
    return labels


class Scanner:
    """The workspace's files as the content index sees them — their display paths (``<label>/path`` with several
    folders) and which of them are indexable — and the synchronous work of bringing a :class:`Store` up to date.

    It counts what it reads and parses into the index's `stats`, and stops a scan at its next batch once `cancel`
    is set (the index closing)."""

    def __init__(self, folders: list[Path], db_path: Path, stats: _Stats, cancel: threading.Event, *,
                 max_file_bytes: int, max_files: int) -> None:
        self.folders = folders
        # the database may live inside the workspace (a cache dir under it): never index it or its neighbours
        self.own_dir = os.path.abspath(db_path.parent) + os.sep
        self.labels = _make_labels(folders)
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.stats = stats
        self.cancel = cancel

    # -- paths ---------------------------------------------------------------------------------------------------

    def display(self, fi: int, rel: str) -> str:
        """How results show `rel` of folder `fi`: as is with one folder, under the folder's label with several."""
        return rel if len(self.folders) == 1 else f"{self.labels[fi]}/{rel}"

    def absolute(self, display: str) -> Path:
        """The file behind a result's path."""
        if len(self.folders) == 1:
            return self.folders[0] / display
        label, _, rel = display.partition("/")
        return self.folders[self.labels.index(label)] / rel if label in self.labels else self.folders[0] / display

    def _size_cap(self, name: str) -> int:
        # a notebook's outputs make it big; only its sources are indexed
        return self.max_file_bytes * 10 if name.endswith(".ipynb") else self.max_file_bytes

    # -- a whole scan --------------------------------------------------------------------------------------------

    def scan(self, store: Store, report: Report, reset: bool) -> tuple[int, int] | None:
        """Make `store` match the disk (emptied first when `reset`): (files re-indexed or removed, files on disk),
        or None when `cancel` stopped it."""
        if reset:
            with store.transaction() as conn:
                for table in ("symbols", "symbols_fts", "chunks", "chunks_fts", "vectors", "files"):
                    conn.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
        scan_start = time.time_ns()
        on_disk = self._list_files(report)
        if on_disk is None:
            return None
        stored = store.files()
        gone = [row[0] for path, row in stored.items() if path not in on_disk]
        todo = [(path, abs_path, size, row) for path, (abs_path, size, mtime) in on_disk.items()
                if (row := stored.get(path)) is None or row[1] != size or row[2] != mtime]
        del stored
        changed = self.update_files(store, [], scan_start, gone) if gone else 0
        total = len(todo)
        done = 0
        last = 0.0

        def loaded(n: int) -> None:  # n files of the batch read and parsed
            nonlocal last
            now = time.monotonic()
            if now - last >= _PROGRESS_EVERY or done + n == total:
                last = now
                report(IndexProgress("indexing", done + n, total, f"Indexing {done + n:,} of {total:,} files…"))

        while done < total:
            if self.cancel.is_set():
                return None
            batch: list[tuple[str, str, StoredRow | None]] = []
            nbytes = 0
            while done + len(batch) < total and len(batch) < _BATCH and nbytes < _BATCH_BYTES:
                path, abs_path, size, row = todo[done + len(batch)]
                batch.append((path, abs_path, row))
                nbytes += size
            changed += self.update_files(store, batch, scan_start, loaded=loaded)
            done += len(batch)
        return changed, len(on_disk)

    def _list_files(self, report: Report) -> dict[str, tuple[str, int, int]] | None:
        """Every indexable file: display path → (absolute path, size, mtime_ns); None when `cancel` stopped it.
        One ``scandir`` walk (ignored, hidden and vendored directories are not entered) and the entries' own
        ``lstat``; nothing is opened."""
        out: dict[str, tuple[str, int, int]] = {}
        last = time.monotonic()
        self.stats.truncated = False
        own = self.own_dir
        cap, notebook_cap = self.max_file_bytes, self._size_cap("x.ipynb")
        is_reg = stat.S_ISREG
        for fi, folder in enumerate(self.folders):
            prefix = "" if len(self.folders) == 1 else self.labels[fi] + "/"
            matcher = IgnoreMatcher.for_root(folder)
            for entry, rel, _depth, is_dir in iter_entries(folder, matcher=matcher, skip_hidden=True,
                                                           skip_dirs=_SKIP_DIRS):
                if is_dir:
                    continue
                path = entry.path
                if path.startswith(own):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                size = st.st_size
                if not size or not is_reg(st.st_mode) or (
                        size > cap and (size > notebook_cap or not rel.endswith(".ipynb"))):
                    continue  # empty, a symbolic link (or no regular file), too big
                if len(out) >= self.max_files:
                    self.stats.truncated = True
                    break
                out[prefix + rel] = (path, size, st.st_mtime_ns)
                if not len(out) & 1023:
                    if self.cancel.is_set():
                        return None
                    now = time.monotonic()
                    if now - last >= _PROGRESS_EVERY:
                        last = now
                        report(IndexProgress("scanning", len(out), 0, f"Listing files: {len(out):,} so far…"))
        return out

    # -- file-watcher events -------------------------------------------------------------------------------------

    def apply(self, store: Store, changes: list[FileChange]) -> int:
        """Apply file-watcher events to `store`; the number of files re-indexed or removed."""
        scan_start = time.time_ns()
        matchers: dict[int, IgnoreMatcher] = {}
        latest: dict[str, tuple[FileChange, Path, bool]] = {}  # one file's last event wins: it is read anyway
        for change in changes:
            where = self._resolve(change.path, matchers)
            if where is not None:
                display, abs_path, ignored = where
                latest.pop(display, None)
                latest[display] = (change, abs_path, ignored)
        deletes: list[int] = []
        items: list[tuple[str, str, StoredRow | None]] = []
        for display, (change, abs_path, ignored) in latest.items():
            row = store.file(display)
            gone = change.type == "deleted" and not abs_path.is_file()  # (deleted, then created again)
            if gone or ignored:
                if row is not None:
                    deletes.append(row.id)
                continue
            wanted = _normal_hash(change.content_hash)
            if row is not None and wanted is not None and wanted == row.hash:
                continue  # the client says the content is what we have: not even opened
            stored = (row.id, row.size, row.mtime_ns, row.hash) if row is not None else None
            items.append((display, str(abs_path), stored))
        return self.update_files(store, items, scan_start, deletes)

    def _resolve(self, raw: str, matchers: dict[int, IgnoreMatcher]) -> tuple[str, Path, bool] | None:
        """(display path, absolute path, ignored) of an event's path; None when outside every folder."""
        path = Path(raw)
        candidates: list[tuple[int, str]] = []
        if path.is_absolute():
            for fi, folder in enumerate(self.folders):
                try:
                    candidates.append((fi, Path(os.path.abspath(path)).relative_to(folder).as_posix()))
                except ValueError:
                    continue
        else:
            rel = os.path.normpath(raw).replace(os.sep, "/")
            head, _, rest = rel.partition("/")
            if len(self.folders) > 1 and head in self.labels:  # "<label>/path", as results show it
                candidates.append((self.labels.index(head), rest))
            else:
                candidates.append((0, rel))
        for fi, rel in candidates[:1]:
            folder = self.folders[fi]
            if not rel or rel == "." or rel.startswith("../"):
                return None
            matcher = matchers.get(fi)
            if matcher is None:
                matcher = matchers[fi] = IgnoreMatcher.for_root(folder)
            parts = rel.split("/")
            ignored = matcher.ignored(Path(rel), False) or any(
                p.startswith(".") for p in parts) or bool(_SKIP_DIRS.intersection(parts[:-1])) \
                or str(folder / rel).startswith(self.own_dir)
            return self.display(fi, rel), folder / rel, ignored
        return None

    # -- reading, parsing, writing -------------------------------------------------------------------------------

    def update_files(self, store: Store, items: Sequence[tuple[str, str, StoredRow | None]], scan_start: int,
                     deletes: Sequence[int] = (), loaded: Callable[[int], None] | None = None) -> int:
        """Bring files up to date — ``(display path, absolute path, stored (id, size, mtime_ns, hash) or None)``
        each — reading and parsing them first, then writing them all in one transaction; the number re-indexed or
        removed (a file whose bytes did not change only gets its new size and mtime)."""
        puts: list[NewFile] = []
        touches: list[tuple[int, int, int]] = []
        removed = list(deletes)
        changed = len(removed)
        for n, (display, abs_path, row) in enumerate(items, 1):
            outcome = self._load(display, abs_path, row, scan_start)
            if loaded is not None:
                loaded(n)
            if outcome is None:  # gone, unreadable, binary or too big now
                if row is not None:
                    removed.append(row[0])
                    changed += 1
            elif isinstance(outcome, NewFile):
                if row is not None:
                    removed.append(row[0])
                puts.append(outcome)
                changed += 1
            elif row is not None:
                touches.append((row[0], *outcome))
        if removed or touches or puts:
            with store.transaction() as conn:
                store.delete_files(conn, removed)
                store.touch_files(conn, touches)
                store.put_files(conn, puts)
        self.stats.files_parsed += len(puts)
        return changed

    def _load(self, display: str, abs_path: str, row: StoredRow | None,
              scan_start: int) -> NewFile | tuple[int, int] | None:
        """One file read: None when it is not (or no longer) indexable, ``(size, mtime_ns)`` when its bytes are the
        stored ones, else the parsed file to write."""
        read = _read_file(abs_path, self._size_cap(display))
        if read is None:
            return None
        data, mtime = read
        self.stats.files_read += 1
        if _racy(mtime, scan_start):
            mtime = -1  # check again next time
        if looks_binary(data[:SNIFF_BYTES]):
            return None
        digest = _digest(data)
        if row is not None and row[3] == digest:
            return len(data), mtime
        lang, symbols, chunks = self._extract(display, data)
        return NewFile(display, len(data), mtime, digest, lang, symbols, chunks)

    def _extract(self, path: str, data: bytes) -> tuple[str | None, list[SymbolDef], list[tuple[Chunk, str, str, str]]]:
        """Symbols and chunks of one file's bytes."""
        lang = language_for(path)
        symbols: list[SymbolDef] = []
        pieces: list[Chunk] = []
        if lang == "notebook":
            try:
                cells = notebook_cells(data)
            except ValueError:
                cells = None
            if cells is not None:
                for cell in cells:
                    if cell.kind == "code" and cell.source.strip():
                        symbols.extend(self._parse(cell_python(cell.source), "python", path, cell))
                    pieces.extend(chunk_lines(cell.source, cell_index=cell.index, cell_id=cell.id))
            else:
                lang = None
        if lang != "notebook":
            text = data.decode("utf-8", "replace")
            if lang is not None:
                symbols = self._parse(data, lang, path, None)
            pieces = list(chunk_lines(text))
        words = _path_words(path)
        chunks = []
        for chunk in pieces:
            defs = [s.name for s in symbols if s.cell_index == chunk.cell_index
                    and chunk.start_line <= s.start_line <= chunk.end_line]
            names = " ".join(defs)
            chunks.append((chunk, words, f"{names} {split_form(names)}".strip(), split_form(chunk.text)))
        return lang, symbols, chunks

    def _parse(self, data: bytes, lang: str, path: str, cell: Cell | None) -> list[SymbolDef]:
        try:
            return parse_symbols(data, lang, cell=cell)
        except Exception as exc:  # noqa: BLE001 - a grammar problem costs this file's symbols, not the build
            if len(self.stats.errors) < 20:
                self.stats.errors.append(f"{path}: {exc}")
            log.debug("could not parse %s", path, exc_info=True)
            return []
