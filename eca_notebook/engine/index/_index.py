"""The workspace file index: every file and directory of the workspace folders, for ``@``-completion
(``chat/queryContext``), the repo map and ``/repo-map-show``.

:class:`WorkspaceIndex` is the part the engine holds: it decides when the index is built and refreshed (a worker
thread, one writer at a time, a watch loop) and answers queries on the event loop. The work itself lives beside it:

* :mod:`._snapshot` — the storage: an immutable snapshot of flat ``"\\n"``-joined strings, shallow entries
  first, swapped whole so a query never sees a half-updated index;
* :mod:`._walk` — the full walk and the incremental refresh (re-listing only directories whose mtime moved);
* :mod:`._rank` — the tiered scoring and the discovery scans that find the best entries without scoring all;
* :mod:`._map` — the repo map, rendered once per snapshot.

**Typing.** Users type a query one character at a time. When a query was answered completely (every scan ran to the
end), its matches are remembered: the next, longer query's matches are a subset, so it only rescores those.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from ._map import render_repo_map
from ._rank import Query, discover
from ._snapshot import Snapshot, fold
from ._walk import Walker

__all__ = ["Entry", "IndexState", "WorkspaceIndex"]

log = logging.getLogger(__name__)

# Rescoring a remembered match set must stay cheaper than scanning: only small sets are remembered.
_CACHE_MAX = 5_000

# The names other modules import from here (the context renderers ``_fold``, the query benchmark ``_Query``).
_fold = fold
_Query = Query


class IndexState(TypedDict):
    """What :meth:`WorkspaceIndex.status` reports (the panel's index status reads it)."""

    state: Literal["empty", "building", "ready"]
    files: int
    dirs: int
    builtAt: float | None  # epoch seconds, None before the first build
    durationMs: float | None
    refreshedAt: float | None
    truncated: bool  # max_files was reached


@dataclass(frozen=True, slots=True)
class Entry:
    """One query result. ``rel`` is relative to its workspace folder, ``/``-separated; with several folders it starts
    with the folder's label (its name, made unique) so results from different folders can be told apart."""

    path: Path
    rel: str
    is_dir: bool
    score: float


class WorkspaceIndex:
    """All files and directories of the workspace folders (``.gitignore`` aware), fuzzy-searchable.

    ``build()`` walks the folders in a worker thread; ``refresh()`` (sync, cheap when nothing changed) picks up
    created and deleted entries; ``start_watching()`` runs ``refresh()`` periodically in a worker thread.
    ``query()`` and ``repo_map()`` read an immutable snapshot, so they are safe while either runs.
    """

    def __init__(self, folders: Sequence[Path], *, max_files: int = 500_000) -> None:
        self.folders: list[Path] = [Path(os.path.abspath(os.path.expanduser(str(f)))) for f in folders]
        self._walker = Walker(self.folders, max_files=max_files)
        self._snap: Snapshot | None = None
        self._lock = threading.Lock()  # one writer at a time (build or refresh)
        self._building = 0
        self._built_at: float | None = None
        self._refreshed_at: float | None = None
        self._duration_ms: float | None = None
        self._cache: tuple[Snapshot, str, list[int]] | None = None  # last complete query: (snapshot, ql, matches)
        self._watch_task: asyncio.Task[None] | None = None

    # -- state -----------------------------------------------------------------------------------------------------

    @property
    def max_files(self) -> int:
        """The most entries the index holds; beyond, ``status()["truncated"]`` and a note under the repo map."""
        return self._walker.max_files

    @max_files.setter
    def max_files(self, value: int) -> None:
        self._walker.max_files = value

    @property
    def ready(self) -> bool:
        """The first build has finished: queries answer from a snapshot, not an empty index."""
        return self._snap is not None

    @property
    def file_count(self) -> int:
        """Files in the current snapshot (0 before the first build)."""
        return self._snap.files if self._snap else 0

    @property
    def dir_count(self) -> int:
        """Directories in the current snapshot (0 before the first build)."""
        return self._snap.dirs if self._snap else 0

    @property
    def built_at(self) -> float | None:
        """When the last full build finished (``time.time()`` seconds), None before the first."""
        return self._built_at

    def status(self) -> IndexState:
        """``{"state", "files", "dirs", "builtAt", "durationMs", "refreshedAt", "truncated"}`` — ``builtAt`` and
        ``refreshedAt`` are epoch seconds; ``truncated`` means ``max_files`` was reached."""
        state: Literal["empty", "building", "ready"] = (
            "building" if self._building else ("ready" if self._snap is not None else "empty"))
        return {
            "state": state,
            "files": self.file_count,
            "dirs": self.dir_count,
            "builtAt": self._built_at,
            "durationMs": self._duration_ms,
            "refreshedAt": self._refreshed_at,
            "truncated": self._walker.truncated,
        }

    # -- building --------------------------------------------------------------------------------------------------

    async def build(self) -> None:
        """Walk every folder from scratch (in a worker thread) and swap the new snapshot in. Safe to call again."""
        self._building += 1
        try:
            await asyncio.to_thread(self._build_sync)
        finally:
            self._building -= 1

    def _build_sync(self) -> None:
        with self._lock:
            started = time.perf_counter()
            snap = self._walker.build()
            self._publish(snap)
            self._duration_ms = round((time.perf_counter() - started) * 1000, 1)
            self._built_at = time.time()
            log.debug("indexed %d entries in %.0f ms", snap.n, self._duration_ms)

    def _publish(self, snap: Snapshot) -> None:
        self._snap = snap
        self._cache = None

    def refresh(self) -> int:
        """Rescan the directories whose mtime changed since the last scan (and the subtree of any changed
        ``.gitignore``); returns the number of entries added or removed. A no-op (0) before the first build."""
        with self._lock:
            snap = self._snap
            if snap is None:
                return 0
            count, new = self._walker.refresh(snap)
            if new is not None:
                self._publish(new)
            self._refreshed_at = time.time()
            return count

    # -- watching --------------------------------------------------------------------------------------------------

    def start_watching(self, interval: float = 2.0) -> None:
        """Refresh every `interval` seconds in a worker thread (building first if needed); call from a running loop.
        Calling it again while watching restarts the loop with the new interval."""
        if self._watch_task is not None and not self._watch_task.done():
            self._watch_task.cancel()
        self._watch_task = asyncio.get_running_loop().create_task(self._watch(interval), name="workspace-index-watch")

    async def _watch(self, interval: float) -> None:
        if self._snap is None and not self._building:
            try:
                await self.build()
            except Exception:  # noqa: BLE001 - keep watching; the next round tries again
                log.exception("workspace index build failed")
        while True:
            await asyncio.sleep(interval)
            try:
                if self._snap is None:
                    await self.build()
                else:
                    await asyncio.to_thread(self.refresh)
            except RuntimeError as exc:
                # the executor is gone: its loop's owner is closing it ("… after shutdown"), or the interpreter
                # is exiting ("… after interpreter shutdown", printed by the last CI run after its tests)
                if "cannot schedule new futures" in str(exc):
                    return
                log.exception("workspace index refresh failed")
            except Exception:  # noqa: BLE001
                log.exception("workspace index refresh failed")

    async def stop(self) -> None:
        """Stop the watch loop (if any) and wait for it to end."""
        task, self._watch_task = self._watch_task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    # -- querying --------------------------------------------------------------------------------------------------

    def query(self, text: str, limit: int = 50) -> list[Entry]:
        """The best `limit` entries for `text`, best first (:mod:`._rank` explains the ranking).

        A blank query returns the shallowest entries (top level first). Matching is case-insensitive, with a small
        bonus for exact case; spaces are ignored; a leading ``./`` or a workspace folder's absolute path is stripped.
        """
        snap = self._snap
        if snap is None or limit <= 0:
            return []
        q = self._normalise(text)
        if not q:
            return [self._entry(snap, i, 0.0) for i in range(min(limit, snap.n))]
        query = Query(q, snap)
        cache = self._cache
        scored: list[tuple[float, int]] = []
        if cache is not None and cache[0] is snap and query.ql.startswith(cache[1]):
            for i in cache[2]:
                s = query.score(i)
                if s is not None:
                    scored.append((s, i))
            complete = True
        else:
            scored, complete = discover(query, limit)
        if complete and len(scored) <= _CACHE_MAX:
            self._cache = (snap, query.ql, [i for _, i in scored])
        best = heapq.nlargest(limit, scored, key=lambda si: (si[0], -si[1]))
        return [self._entry(snap, i, s) for s, i in best]

    def _normalise(self, text: str) -> str:
        q = "".join(text.split()).replace("\\", "/")
        for fi, folder in enumerate(self.folders):
            root = folder.as_posix().rstrip("/") + "/"
            if q.startswith(root):
                q = self._walker.join(self._walker.labels[fi], q[len(root) :])
                break
        while q.startswith("./"):
            q = q[2:]
        return q

    def _entry(self, snap: Snapshot, i: int, score: float) -> Entry:
        display = snap.line(i)
        return Entry(path=self._walker.absolute(display), rel=display, is_dir=bool(snap.isdir[i]), score=float(score))

    # -- repo map --------------------------------------------------------------------------------------------------

    def repo_map(self, max_entries: int = 400, *, max_per_dir: int = 50) -> str:
        """An indented tree of the workspace (two spaces per level, directories end with ``/``).

        Entries are chosen breadth first — the top levels are the most informative — at most `max_per_dir` per
        directory below a root; what is left out is counted on a ``… N more`` line per directory and in a final note.
        """
        snap = self._snap
        if snap is None:
            return "(the workspace index is not built yet)"
        key = (max_entries, max_per_dir)
        cached = snap.repo_maps.get(key)
        if cached is None:
            cached = snap.repo_maps[key] = render_repo_map(snap, self.folders, self._walker.labels, max_entries,
                                                           max_per_dir, truncated=self._walker.truncated,
                                                           max_files=self.max_files)
        return cached
