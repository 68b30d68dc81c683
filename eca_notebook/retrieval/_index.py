"""The content index of one workspace: symbols, ranked full-text search and semantic search over its files.

This module owns *when* work happens and who waits for it; reading files into the store is :mod:`._scan`'s job and
ranking is :mod:`._search`'s. How it stays out of the way:

* **Lazy.** Nothing happens when it is created. The first search (or :meth:`CodeIndex.ensure_built`) scans the
  workspace; in a new process that scan finds the database of the previous one and re-reads only files whose size or
  mtime moved — and re-parses only those whose sha256 changed.
* **Searches don't wait for scans they don't need.** Only a search with nothing stored to answer from waits for the
  (first) build. A new process with a big stored index (above ``background_files``) answers at once from it and
  checks it against the disk in the background; until that check is done the results carry a ``note`` saying they
  may miss changes made meanwhile (the tools show it). A small workspace's check is cheap (a stat per file) and runs
  before the answer, as do periodic refreshes of small workspaces; big ones refresh in the background.
* **Off the event loop.** Scans, parses and searches run in worker threads; SQLite's WAL lets searches read while a
  scan writes. Progress reaches the caller on its event loop (``Indexing 1,234 of 5,000 files…``).
* **Incremental.** :meth:`CodeIndex.apply_changes` takes file-watcher events; a ``content_hash`` equal to the stored
  one skips the file without opening it.
* **Corruption costs a rebuild, not an error.** A database found corrupt while in use is recreated empty; the
  search that met it answers with nothing and the next scan refills it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import _search, _vectors
from ._scan import Scanner
from ._store import CorruptIndex, Store, _is_corruption
from ._types import FileChange, IndexProgress, Progress, SearchHits, SymbolHit, TextHit, VectorResult, _Stats

__all__ = ["CodeIndex"]

log = logging.getLogger(__name__)

_BACKGROUND_REFRESH_FILES = 20_000  # above this many files a scan the search can do without runs in the background
_VECTOR_BUDGET = 5_000  # chunks a vector_search embeds at most at once; beyond, only the text search's candidates


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86_400:.0f} days"


class CodeIndex:
    """One workspace's content index (see the module docstring). Create it freely: it does nothing until used."""

    def __init__(self, folders: Sequence[Path], db_path: Path, *, max_file_bytes: int = 1_000_000,
                 max_files: int = 200_000, refresh_interval: float = 5.0, vectors: bool = True,
                 background_files: int = _BACKGROUND_REFRESH_FILES, vector_budget: int = _VECTOR_BUDGET) -> None:
        self.folders = [Path(os.path.abspath(f)) for f in folders]
        self.db_path = db_path
        self.refresh_interval = refresh_interval
        self.vectors_enabled = vectors
        #: above this many stored files, a scan a search can do without (a restart's check, a periodic refresh)
        #: runs in the background while the search answers from what is stored
        self.background_files = background_files
        #: chunks a vector_search embeds at once at most; beyond, it embeds only the text search's candidates
        self.vector_budget = vector_budget
        self.stats = _Stats()
        self._cancel = threading.Event()  # close(): a running scan stops at its next batch
        self._scanner = Scanner(self.folders, db_path, self.stats, self._cancel, max_file_bytes=max_file_bytes,
                                max_files=max_files)
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._lock: asyncio.Lock | None = None  # one scan or batch of changes at a time
        self._embed_lock: asyncio.Lock | None = None  # one embedding pass at a time (never waits for a scan)
        self._listeners: list[Progress] = []
        self._scanned = False  # a scan ran in this process (the database matches the disk as of then)
        self._last_scan = 0.0
        self._scan_started = -1.0  # monotonic start of the last scan that ran to the end
        self._known_files: int | None = None  # files stored, as of the last scan (None: not counted yet)
        self._stored_at: float | None = None  # when the stored index was last checked against the disk (epoch)
        self._background: asyncio.Task[Any] | None = None
        self._opening: asyncio.Task[Any] | None = None  # symbols_if_open(): the build it started

    # -- state ---------------------------------------------------------------------------------------------------

    @property
    def max_file_bytes(self) -> int:
        """Files above this size are not indexed (notebooks: ten times it, as only their sources count)."""
        return self._scanner.max_file_bytes

    @max_file_bytes.setter
    def max_file_bytes(self, value: int) -> None:
        self._scanner.max_file_bytes = value

    @property
    def max_files(self) -> int:
        """The most files a scan lists; beyond, ``status()["truncated"]``."""
        return self._scanner.max_files

    @max_files.setter
    def max_files(self, value: int) -> None:
        self._scanner.max_files = value

    @property
    def ready(self) -> bool:
        """A scan ran in this process: searches answer at once."""
        return self._scanned

    @property
    def building(self) -> bool:
        return self._lock is not None and self._lock.locked()

    @property
    def vectors_available(self) -> bool:
        return self.vectors_enabled and _vectors.available()

    def status(self) -> dict[str, Any]:
        """Counts and timings for ``index/status`` and the tools (cheap: a few SQLite counts when open)."""
        files = symbols = chunks = vectors = 0
        disk = 0
        if self._store is not None:
            try:
                files, symbols, chunks, vectors = self._store.counts()
                disk = self._store.disk_bytes()
            except sqlite3.Error:
                pass
        progress = self.stats.progress
        return {
            "state": "building" if self.building else ("ready" if self._scanned else "empty"),
            "files": files, "symbols": symbols, "chunks": chunks, "vectors": vectors,
            "disk_bytes": disk, "db_path": str(self.db_path),
            "built_at": self.stats.built_at, "refreshed_at": self.stats.refreshed_at,
            "duration_ms": self.stats.duration_ms, "truncated": self.stats.truncated,
            "vectors_available": self.vectors_available,
            "progress": None if progress is None else {"stage": progress.stage, "done": progress.done,
                                                       "total": progress.total, "message": progress.message},
        }

    # -- building ------------------------------------------------------------------------------------------------

    async def ensure_built(self, progress: Progress | None = None) -> None:
        """Make the index match the disk, as far as a search needs it to: a first build waits (with progress);
        a check of a stored index, or a refresh when the last scan is older than ``refresh_interval``, waits only
        on a small workspace (at most ``background_files`` files) and otherwise runs in the background."""
        while not self._scanned and not self._refreshing() and self.building:
            await self._wait_for_scan(progress)  # the first build is under way: wait for it, then look again
        if self._scanned:
            if self.building or time.monotonic() - self._last_scan < self.refresh_interval:
                return
        elif self._refreshing():
            return  # the stored index is being checked in the background: answer from it meanwhile
        files = self._known_files
        if files is None:
            files = self._known_files = int(await asyncio.to_thread(self._count_stored))
        if files > self.background_files:
            self._start_background()
            return
        await self._run_scan(progress, reset=False)

    def stale_note(self) -> str | None:
        """Why a search answered now may miss recent changes, or None: the index has not been checked against the
        disk in this process yet (a check is under way in the background)."""
        if self._scanned:
            return None
        when = f" as of {_age(time.time() - self._stored_at)} ago" if self._stored_at is not None else ""
        progress = self.stats.progress
        where = f" ({progress.message.rstrip('…')})" if progress is not None else ""
        return (f"answered from the stored index{when}; it is being checked against the disk in the background"
                f"{where}, so files changed meanwhile may be missing or out of date")

    async def refresh(self, progress: Progress | None = None) -> int:
        """Scan now (stat every file, read those that moved); the number of files re-indexed or removed."""
        await self._run_scan(progress, reset=False)
        return self.stats.last_changed

    async def rebuild(self, progress: Progress | None = None) -> int:
        """Forget everything and index the workspace again; the number of files indexed."""
        await self._run_scan(progress, reset=True)
        return self.stats.last_changed

    async def wait_for_refresh(self) -> None:
        """Return when no background refresh is under way (at once when none is)."""
        task = self._background
        if task is not None and not task.done():
            await asyncio.wait({task})

    async def _wait_for_scan(self, progress: Progress | None) -> None:
        """Wait for the running scan (or batch of changes), with its progress reported to `progress` too."""
        if progress is not None:
            self._listeners.append(progress)
        try:
            async with self._async_lock():
                pass
        finally:
            if progress is not None:
                self._listeners.remove(progress)

    def _refreshing(self) -> bool:
        return self._background is not None and not self._background.done()

    def _start_background(self) -> None:
        if self._refreshing():
            return
        task = asyncio.get_running_loop().create_task(self._run_scan(None, reset=False), name="eca-code-index-refresh")
        task.add_done_callback(_log_failure)
        self._background = task

    async def _run_scan(self, progress: Progress | None, *, reset: bool) -> None:
        lock = self._async_lock()
        asked = time.monotonic()
        if progress is not None:
            self._listeners.append(progress)
        try:
            async with lock:
                if not reset and self._scanned and self._scan_started >= asked:
                    return  # a scan that started after this one was asked for has just brought the index up to date
                if self._cancel.is_set():
                    return
                report = self._threadsafe_report()
                started = time.monotonic()
                complete = await asyncio.to_thread(self._scan_sync, report, reset)
                self.stats.progress = None
                if not complete:
                    return  # close() stopped it
                self._scan_started = started
                self._last_scan = time.monotonic()
                now = time.time()
                if not self._scanned or reset:
                    self.stats.built_at = now
                    self.stats.duration_ms = (time.monotonic() - started) * 1000
                self.stats.refreshed_at = now
                self._scanned = True
        finally:
            if progress is not None:
                self._listeners.remove(progress)

    def _async_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _threadsafe_report(self) -> Callable[[IndexProgress], None]:
        """A progress callback for the worker thread: it hands each report to the listeners on the event loop."""
        loop = asyncio.get_running_loop()

        def deliver(event: IndexProgress) -> None:
            for listener in list(self._listeners):
                try:
                    result = listener(event)
                    if asyncio.iscoroutine(result):
                        loop.create_task(result)
                except Exception:  # noqa: BLE001 - a listener's bug must not stop the build
                    log.exception("index progress listener failed")

        def report(event: IndexProgress) -> None:
            self.stats.progress = event
            if self._listeners:
                loop.call_soon_threadsafe(deliver, event)

        return report

    def store(self) -> Store:
        """The database, opened (and rebuilt if unreadable) on first use."""
        with self._store_lock:
            if self._store is None:
                self._store = Store(self.db_path)
                self._store.set_meta("folders", "\n".join(str(f) for f in self.folders))
            return self._store

    def _with_store(self, work: Callable[[Store], Any]) -> Any:
        """Run `work`; a database found corrupt while in use is recreated and `work` tried once more (on an empty
        index: the next scan refills it)."""
        store = self.store()
        try:
            return work(store)
        except sqlite3.DatabaseError as exc:
            if not _is_corruption(exc):
                raise
            log.warning("content index %s is corrupt (%s): starting over", self.db_path, exc)
            store.reset()
            self._scanned = False
            raise CorruptIndex(str(exc)) from exc

    def _scan_sync(self, report: Callable[[IndexProgress], None], reset: bool) -> bool:
        """One scan; False when close() stopped it."""
        try:
            return bool(self._scan_once(report, reset))
        except CorruptIndex:
            return bool(self._scan_once(report, False))

    def _scan_once(self, report: Callable[[IndexProgress], None], reset: bool) -> bool:
        def work(store: Store) -> bool:
            scanned = self._scanner.scan(store, report, reset)
            if scanned is None:
                return False
            self.stats.last_changed, self._known_files = scanned
            self._stored_at = time.time()
            store.set_meta("scanned_at", repr(self._stored_at))
            return True

        return bool(self._with_store(work))

    # -- incremental ---------------------------------------------------------------------------------------------

    async def apply_changes(self, changes: Iterable[FileChange]) -> int:
        """Apply file-watcher events; the number of files re-indexed or removed. A ``content_hash`` equal to the
        stored one skips the file without reading it. With nothing stored yet, events are pointless: the first
        build reads everything anyway, so this builds instead (and returns 0)."""
        changes = list(changes)
        if not self._scanned:
            if self._known_files is None:
                self._known_files = int(await asyncio.to_thread(self._count_stored))
            if not self._known_files:
                await self.ensure_built()
                return 0
        async with self._async_lock():
            return int(await asyncio.to_thread(self._apply_sync, changes))

    def _apply_sync(self, changes: list[FileChange]) -> int:
        def work(store: Store) -> int:
            count = self._scanner.apply(store, changes)
            self.stats.last_changed = count
            self.stats.refreshed_at = time.time()
            return count

        try:
            return int(self._with_store(work))
        except CorruptIndex:
            return 0

    # -- searching -----------------------------------------------------------------------------------------------

    async def search_symbols(self, query: str, *, kind: str | None = None, path: str | None = None,
                             limit: int = 20, progress: Progress | None = None) -> SearchHits[SymbolHit]:
        """Definitions whose name matches `query`, best first: exact name, then prefix, then word starts
        (``user`` finds ``getUserName``); ``Class.method`` narrows by container. `kind` (function, method, class,
        interface, type, enum, namespace) and `path` (a glob, as grep's ``include``) filter."""
        await self.ensure_built(progress)
        note = self.stale_note()
        hits: SearchHits[SymbolHit] = SearchHits(
            await asyncio.to_thread(self._guarded, _search.search_symbols, query, kind, path, limit))
        hits.note = note
        return hits

    async def symbols_if_open(self, query: str, *, limit: int = 5) -> list[SymbolHit] | None:
        """:meth:`search_symbols` for a keystroke (the ``@`` completion), which must never wait on a build: the
        hits when the index can answer at once (scanned in this process, or a stored index being checked in the
        background), else None — and then the index starts opening in the background, so later keystrokes find
        it ready. Never scans in the caller's stead, however old the last scan."""
        if not self._scanned and not self._refreshing():
            if self._opening is None or self._opening.done():
                task = asyncio.get_running_loop().create_task(self.ensure_built(), name="eca-code-index-open")
                task.add_done_callback(_log_failure)
                self._opening = task
            return None
        return list(await asyncio.to_thread(self._guarded, _search.search_symbols, query, None, None, limit))

    async def search_text(self, query: str, *, path: str | None = None, limit: int = 20,
                          progress: Progress | None = None) -> SearchHits[TextHit]:
        """Chunks matching every word of `query` (the last as a prefix; identifiers match their parts), BM25-ranked
        with definitions and paths weighing more than mere uses; ``"an exact phrase"`` in double quotes."""
        await self.ensure_built(progress)
        note = self.stale_note()
        hits: SearchHits[TextHit] = SearchHits(
            await asyncio.to_thread(self._guarded, _search.search_text, query, path, limit, False))
        hits.note = note
        return hits

    async def vector_search(self, query: str, *, limit: int = 10, progress: Progress | None = None) -> VectorResult:
        """Chunks nearest in meaning to `query` (cosine of sentence embeddings), fused with the text search's
        ranking (reciprocal rank fusion) when that finds anything. Raises ``RuntimeError`` without the model."""
        if not self.vectors_available:
            raise RuntimeError(_vectors.missing_message())
        await self.ensure_built(progress)
        note = self.stale_note()
        if self._embed_lock is None:
            self._embed_lock = asyncio.Lock()
        # one embedding pass at a time; never behind a scan (the store's write lock orders their transactions, and
        # a vector whose chunk a scan removed meanwhile is not written)
        async with self._embed_lock:
            report = self._threadsafe_report() if progress is not None else None
            if progress is not None:
                self._listeners.append(progress)
            try:
                result = await asyncio.to_thread(self._guarded, _search.vector_search, query, limit,
                                                 self.vector_budget, report)
            finally:
                if progress is not None:
                    self._listeners.remove(progress)
        assert isinstance(result, VectorResult)
        return VectorResult(result.hits, result.reranked, result.embedded, result.message, note)

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(store, *args)`; on a store found corrupt (and recreated), what an empty index would answer."""
        try:
            return self._with_store(lambda store: fn(store, *args))
        except CorruptIndex:
            return [] if fn is not _search.vector_search else VectorResult([], False, 0, "the index was rebuilt")

    # -- helpers -------------------------------------------------------------------------------------------------

    def absolute(self, display: str) -> Path:
        """The file behind a result's path."""
        return self._scanner.absolute(display)

    def _count_stored(self) -> int:
        """The number of files stored (opening the database), and when it was last checked against the disk."""
        try:
            store = self.store()
            stamp = store.get_meta("scanned_at")
            self._stored_at = float(stamp) if stamp else None
            return int(store.query("SELECT count(*) FROM files")[0][0])
        except (sqlite3.Error, ValueError):
            return 0

    async def close(self) -> None:
        """Stop a background refresh and a running scan, and close the database."""
        self._cancel.set()
        task, self._background = self._background, None
        if task is not None:  # (not cancelled: its worker thread would go on with a database closed under it)
            await asyncio.gather(task, return_exceptions=True)
        opening, self._opening = self._opening, None
        if opening is not None:
            await asyncio.gather(opening, return_exceptions=True)
        if self._lock is not None:
            async with self._lock:
                pass
        if self._store is not None:
            self._store.close()
            self._store = None


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background refresh of the content index failed", exc_info=task.exception())
