"""The workspace file index: every file and directory of the workspace folders, for ``@``-completion
(``chat/queryContext``), the repo map and ``/repo-map-show``.

Why it looks the way it does:

* **Flat storage.** 100,000 paths as 100,000 Python objects (plus their lowercase twins, plus a dict per directory)
  cost tens of megabytes and a lot of pointer chasing. Instead a snapshot holds three ``"\\n"``-joined strings — the
  paths as shown, the same paths lowercased, the lowercased basenames — and arrays of line offsets. Line *i* of each
  string is entry *i*. Searching is then C-speed work (``str.find``, one compiled regex) over one big string, and a
  path becomes a Python string only when it is a candidate.
* **Entries are ordered shallow-first** (depth, then name). A blank query is just the first lines; and when a query
  matches thousands of entries, the scan meets the shallow, short ones first — the ones the scorer prefers anyway —
  so it can stop after a bounded number of candidates instead of scoring everything.
* **Tiers.** The score is ``tier * 1000 + bonus`` (bonus below 1000), tiers being, best first: basename equal,
  basename prefix, basename contains (word boundary first), basename fuzzy, path contains, path fuzzy (a query with a
  ``/`` is matched against the whole path instead). The bonus rewards exact case, consecutive and word-start
  characters and short paths. Each tier has a cheap discovery scan; the scans run best tier first and stop as soon
  as enough results are in hand, because nothing found later can outrank them. A scan that finds thousands stops
  after a bounded number of candidates — the shallow ones, met first — which is where the ranking is approximate:
  a deeper entry with a slightly shorter name may be left out (the benchmark counts how often the top 10 differs
  from scoring everything). The costly scan, path fuzzy, works on directories (a few thousand) and then only on
  the children of the directories that match part of the query.
* **Typing.** Users type a query one character at a time. When a query was answered completely (every scan ran to
  the end), its matches are remembered: the next, longer query's matches are a subset, so it only rescores those.
* **Incremental refresh.** Creating, deleting or renaming an entry changes its directory's mtime, so ``refresh()``
  stats every known directory and rescans only those whose mtime moved (plus the subtree of any ``.gitignore`` that
  changed). Snapshots are immutable and swapped whole, so queries on the event loop never see a half-updated index
  while a refresh runs in a worker thread.

Ignore rules come from :mod:`eca_notebook.tools.ignore` (``.gitignore`` files, ``.git/info/exclude``, never ``.git``).
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import logging
import operator
import os
import re
import threading
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, groupby, repeat
from pathlib import Path
from typing import Any

from ..tools.ignore import IgnoreMatcher, walk

__all__ = ["Entry", "WorkspaceIndex"]

log = logging.getLogger(__name__)

# Score layout: tier * _TIER + bonus, 0 <= bonus < _TIER.
_TIER = 1000
T_EXACT, T_PREFIX, T_WORD, T_CONTAINS, T_BASE_FUZZY, T_PATH_CONTAINS, T_PATH_FUZZY = 7, 6, 5, 4, 3, 2, 1
_SEPARATORS = frozenset("/\\-_. ")
# Rescoring a remembered match set must stay cheaper than scanning: only small sets are remembered.
_CACHE_MAX = 5_000
# A directory whose mtime is this close to "now" may still change within the same mtime tick on coarse file systems:
# remember it as unknown (-1) so the next refresh lists it again (the "racy git" problem).
_RACY_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class Entry:
    """One query result. ``rel`` is relative to its workspace folder, ``/``-separated; with several folders it starts
    with the folder's label (its name, made unique) so results from different folders can be told apart."""

    path: Path
    rel: str
    is_dir: bool
    score: float


def _fold(text: str) -> str:
    """Lowercase without changing the length (a few characters, like ``İ``, lowercase to two): offsets into the
    display string and the lowercase string must stay interchangeable."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)


def _sort_key(display: str) -> tuple[int, str, str]:
    return display.count("/"), _fold(display), display


def _offsets(lengths: Iterable[int]) -> array[int]:
    """Start offset of every line of ``"\\n" + "\\n".join(lines) + "\\n"``, plus one past the end (len n + 1)."""
    return array("q", accumulate(map(operator.add, lengths, repeat(1)), initial=1))


class _Snapshot:
    """An immutable view of the index: shared by readers, replaced (never mutated) by writers."""

    __slots__ = ("disp", "low", "base", "starts", "bstarts", "isdir", "n", "files", "dirs", "dlow", "dstarts",
                 "dir_ordinal", "child_lo", "child_hi", "repo_maps")

    def __init__(self, lines: list[str], isdir: bytearray) -> None:
        self.n = len(lines)
        self.disp = "\n" + "\n".join(lines) + "\n" if lines else "\n"
        low = self.disp.lower()
        self.low = self.disp if low == self.disp else (low if len(low) == len(self.disp) else _fold(self.disp))
        lows = self.low[1:-1].split("\n") if lines else []
        # Two passes of strings rather than one of tuples: 100k live tuples wake the garbage collector up.
        parents = [line.rpartition("/")[0] for line in lows]
        bases = [line.rpartition("/")[2] for line in lows]
        self.base = "\n" + "\n".join(bases) + "\n" if bases else "\n"
        self.starts = _offsets(map(len, lines))
        self.bstarts = _offsets(map(len, bases))
        self.isdir = isdir
        self.dirs = sum(isdir)
        self.files = self.n - self.dirs
        self._index_dirs(lows, parents)
        self.repo_maps: dict[tuple[int, int], str] = {}

    def _index_dirs(self, lows: list[str], parents: Sequence[str]) -> None:
        """The directories as their own blob (``dlow``), and where each one's children are.

        In (depth, folded path) order the children of a directory are contiguous — ``[child_lo[d], child_hi[d])`` —
        which lets the path-fuzzy scan treat a path as "directory part + basename" (see ``_Query.path_fuzzy``)."""
        dirs = list(compress(lows, self.isdir))
        self.dlow = "\n" + "/\n".join(dirs) + "/\n" if dirs else "\n"  # "dir/": the part a child's path adds
        self.dstarts = _offsets(len(d) + 1 for d in dirs)
        # Case variants (Foo/, foo/) share one range: a superset, which every user re-checks.
        ordinal = self.dir_ordinal = {d: k for k, d in enumerate(dirs)}
        self.child_lo = array("i", bytes(4 * len(dirs)))
        self.child_hi = array("i", bytes(4 * len(dirs)))
        pos = 0
        for parent, group in groupby(parents):
            count = len(list(group))
            k = ordinal.get(parent)
            if k is not None:
                if not self.child_hi[k]:
                    self.child_lo[k] = pos
                self.child_hi[k] = pos + count
            pos += count

    def line(self, i: int) -> str:
        return self.disp[self.starts[i] : self.starts[i + 1] - 1]

    def lines(self) -> list[str]:
        return self.disp[1:-1].split("\n") if self.n else []

    def children(self, display: str) -> Iterator[int]:
        """Indices of the direct children of the directory `display` (non-empty)."""
        k = self.dir_ordinal.get(_fold(display))
        if k is None:
            return
        for i in range(self.child_lo[k], self.child_hi[k]):
            if self.line(i).rpartition("/")[0] == display:
                yield i

    def find_prefixed(self, prefix: str) -> Iterator[int]:
        """Indices of the entries whose display path starts with `prefix` (non-empty)."""
        disp, starts, needle = self.disp, self.starts, "\n" + prefix
        pos = disp.find(needle)
        while pos >= 0:
            yield bisect.bisect_right(starts, pos + 1) - 1
            pos = disp.find(needle, pos + 1)


def _fuzzy_from(ql: str, low: str, disp: str, first: int) -> int | None:
    """Points for matching `ql` as a subsequence of `low` starting at `first` (a position of ``ql[0]``), or None."""
    n = len(low)
    prev = -1
    pts = 0
    for k, ch in enumerate(ql):
        if k == 0:
            j = first
        elif prev + 1 < n and low[prev + 1] == ch:
            j = prev + 1
            pts += 6  # consecutive
        else:
            j = low.find(ch, prev + 1)
            if j < 0:
                return None
            pts -= min(j - prev - 1, 6)  # gap
        if j == 0 or low[j - 1] in _SEPARATORS or (disp[j - 1].islower() and disp[j].isupper()):
            pts += 8 if k == 0 else 5  # start of a word
        prev = j
    return pts


def _fuzzy(ql: str, low: str, disp: str) -> int | None:
    """Quality 0..400 of `ql` as a subsequence of `low` (None: no match). Tries the leftmost start and the first
    start at a word boundary, so ``btn`` in ``submit_button`` scores the ``button`` reading."""
    first = low.find(ql[0])
    if first < 0:
        return None
    best = _fuzzy_from(ql, low, disp, first)
    if best is None:
        return None
    j = first
    while True:
        j = low.find(ql[0], j + 1)
        if j < 0:
            break
        if low[j - 1] in _SEPARATORS or (disp[j - 1].islower() and disp[j].isupper()):
            other = _fuzzy_from(ql, low, disp, j)
            if other is not None:
                best = max(best, other)
            break
    return max(0, min(400, best * 400 // (14 * len(ql))))


def _is_boundary(low: str, disp: str, j: int) -> bool:
    return j == 0 or low[j - 1] in _SEPARATORS or (disp[j - 1].islower() and disp[j].isupper())


def _subsequence_regex(ql: str) -> re.Pattern[str]:
    """``a[^b\\n]*+b[^c\\n]*+c``: a subsequence test within one line; possessive classes never backtrack."""
    parts = [re.escape(ql[0])]
    for ch in ql[1:]:
        esc = re.escape(ch)
        parts.append(f"[^{esc}\\n]*+{esc}")
    return re.compile("".join(parts))


def _prefix_regex(ql: str) -> re.Pattern[str]:
    """Per line, the longest prefix of `ql` that is a subsequence of it: one match per line, ``lastindex`` = its
    length (``\\n[^a\\n]*+(?:(a)[^b\\n]*+(?:(b)…)?)?``)."""
    body = ""
    for ch in reversed(ql):
        esc = re.escape(ch)
        body = f"[^{esc}\\n]*+(?:({esc}){body})?"
    return re.compile("\\n" + body)


class _Query:
    """One normalised query and the scorer for it."""

    __slots__ = ("q", "ql", "slash", "snap")

    def __init__(self, q: str, snap: _Snapshot) -> None:
        self.q = q
        self.ql = _fold(q)
        self.slash = "/" in q
        self.snap = snap

    def score(self, i: int) -> float | None:
        snap, ql = self.snap, self.ql
        s, e = snap.starts[i], snap.starts[i + 1] - 1
        low = snap.low[s:e]
        disp = snap.disp[s:e]
        shortness = 300 - min(len(low), 300)
        if self.slash:
            if low == ql or low == ql.rstrip("/"):
                tier, bonus = T_EXACT, 0
            elif low.startswith(ql):
                tier, bonus = T_PREFIX, 0
            else:
                j = low.find(ql)
                if j >= 0:
                    tier, bonus = (T_WORD if _is_boundary(low, disp, j) else T_CONTAINS), 0
                else:
                    quality = _fuzzy(ql, low, disp)
                    if quality is None:
                        return None
                    tier, bonus = T_PATH_FUZZY, quality
            if tier != T_PATH_FUZZY and self.q in disp:
                bonus += 60
            return tier * _TIER + bonus + shortness
        blen = snap.bstarts[i + 1] - snap.bstarts[i] - 1
        bl = low[len(low) - blen :]
        bd = disp[len(disp) - blen :]
        # Shorter basenames are closer to what was typed; shallower paths are usually what is meant.
        shortness = max(0, 300 - 4 * blen - len(low) // 2)
        if bl == ql:
            tier, bonus = T_EXACT, 0
        elif bl.startswith(ql):
            tier, bonus = T_PREFIX, 0
        else:
            j = bl.find(ql)
            if j >= 0:
                tier, bonus = (T_WORD if _is_boundary(bl, bd, j) else T_CONTAINS), 0
            else:
                quality = _fuzzy(ql, bl, bd)
                if quality is not None:
                    return T_BASE_FUZZY * _TIER + quality + shortness
                j = low.find(ql)
                if j >= 0:
                    tier, bonus = T_PATH_CONTAINS, (100 if _is_boundary(low, disp, j) else 0)
                else:
                    quality = _fuzzy(ql, low, disp)
                    if quality is None:
                        return None
                    return T_PATH_FUZZY * _TIER + quality + shortness
        if self.q in bd:
            bonus += 60  # exact case
        return tier * _TIER + bonus + shortness

    def scans(self) -> Iterator[Iterator[int]]:
        """Discovery scans, best tier first; each yields entry indices (possibly repeating, possibly a superset)."""
        snap, ql = self.snap, self.ql
        if self.slash:
            yield _literal(snap.low, snap.starts, "\n" + ql.rstrip("/") + "\n", 1)
            yield _literal(snap.low, snap.starts, "\n" + ql, 1)
            yield _literal(snap.low, snap.starts, ql, 0)
        else:
            yield _literal(snap.base, snap.bstarts, "\n" + ql, 1)
            yield _literal(snap.base, snap.bstarts, ql, 0)
            yield _regex(snap.base, snap.bstarts, _subsequence_regex(ql))
            yield self.in_directory_name()
        yield self.path_fuzzy()

    def in_directory_name(self) -> Iterator[int]:
        """Entries with the (slash-free) query inside a directory name of their path: the children of every
        directory whose path contains it — found in the directory blob, a few percent of the full one."""
        snap = self.snap
        for d in _literal(snap.dlow, snap.dstarts, self.ql, 0):
            yield from range(snap.child_lo[d], snap.child_hi[d])

    def path_fuzzy(self) -> Iterator[int]:
        """Entries whose path contains the query as a subsequence, at least one character in the directory part.

        A regex over all paths costs ~25 ms per 100k entries whatever it finds; instead the path is split into
        directory + basename. Matching greedily, the directory part should take the longest possible prefix of the
        query (``k`` characters: one regex pass over the directories, a few thousand lines) and the basename the rest
        — so only the children of directories with ``k >= 1`` are searched, each range with one bounded regex call.
        (``k == 0`` is the basename-fuzzy tier, scanned before.)
        """
        snap, ql = self.snap, self.ql
        m = len(ql)
        if not snap.dlow.strip("\n"):
            return
        rest_patterns: dict[int, re.Pattern[str] | None] = {}
        child_lo, child_hi, base, bstarts = snap.child_lo, snap.child_hi, snap.base, snap.bstarts
        ndirs = len(child_lo)
        ks = (match.lastindex or 0 for match in _prefix_regex(ql).finditer(snap.dlow))
        # Runs of consecutive directories with the same k have adjacent child ranges: one regex call per run.
        runs: list[tuple[int, int, int]] = []
        run_k, run_lo, run_hi = 0, 0, 0
        for d, k in zip(range(ndirs), ks, strict=False):
            lo, hi = child_lo[d], child_hi[d]
            if lo >= hi:
                continue
            if k == run_k and lo == run_hi:
                run_hi = hi
                continue
            if run_k:
                runs.append((run_k, run_lo, run_hi))
            run_k, run_lo, run_hi = k, lo, hi
        if run_k:
            runs.append((run_k, run_lo, run_hi))
        for k, lo, hi in runs:
            if k >= m:  # the directory path alone holds the query: every child matches
                yield from range(lo, hi)
                continue
            if k not in rest_patterns:
                rest = ql[k:]
                rest_patterns[k] = None if "/" in rest else _subsequence_regex(rest)
            pattern = rest_patterns[k]
            if pattern is not None:
                for hit in pattern.finditer(base, bstarts[lo], bstarts[hi]):
                    yield bisect.bisect_right(bstarts, hit.start()) - 1


def _literal(blob: str, starts: array[int], needle: str, skip: int) -> Iterator[int]:
    pos = blob.find(needle)
    while pos >= 0:
        yield bisect.bisect_right(starts, pos + skip) - 1
        pos = blob.find(needle, pos + 1)


def _regex(blob: str, starts: array[int], pattern: re.Pattern[str]) -> Iterator[int]:
    for m in pattern.finditer(blob):
        yield bisect.bisect_right(starts, m.start()) - 1


class WorkspaceIndex:
    """All files and directories of the workspace folders (``.gitignore`` aware), fuzzy-searchable.

    ``build()`` walks the folders in a worker thread; ``refresh()`` (sync, cheap when nothing changed) picks up
    created and deleted entries; ``start_watching()`` runs ``refresh()`` periodically in a worker thread.
    ``query()`` and ``repo_map()`` read an immutable snapshot, so they are safe while either runs.
    """

    def __init__(self, folders: Sequence[Path], *, max_files: int = 500_000) -> None:
        self.folders: list[Path] = [Path(os.path.abspath(os.path.expanduser(str(f)))) for f in folders]
        self.max_files = max_files
        self._roots = [os.path.join(str(f), "") for f in self.folders]  # with a trailing separator, for os.stat
        self._labels = self._make_labels(self.folders)
        self._label_to_folder = {label: i for i, label in enumerate(self._labels)}
        self._snap: _Snapshot | None = None
        self._lock = threading.Lock()  # one writer at a time (build or refresh)
        self._dir_mtimes: dict[str, int] = {}  # display path of every indexed directory ("" / label = a root)
        self._gitignores: dict[str, int] = {}  # display path of every indexed .gitignore -> mtime_ns
        self._matchers: list[IgnoreMatcher] = []
        self._building = 0
        self._truncated = False
        self._built_at: float | None = None
        self._refreshed_at: float | None = None
        self._duration_ms: float | None = None
        self._cache: tuple[_Snapshot, str, list[int]] | None = None  # last complete query: (snapshot, ql, matches)
        self._watch_task: asyncio.Task[None] | None = None

    # -- paths -----------------------------------------------------------------------------------------------------

    @staticmethod
    def _make_labels(folders: list[Path]) -> list[str]:
        if len(folders) <= 1:
            return [""]
        labels: list[str] = []
        for folder in folders:
            name = (folder.name or "root").replace("\n", "_")
            label, k = name, 2
            while label in labels:
                label, k = f"{name}~{k}", k + 1
            labels.append(label)
        return labels

    def _join(self, parent: str, name: str) -> str:
        return f"{parent}/{name}" if parent else name

    def _locate(self, display: str) -> tuple[int, str]:
        """(folder index, path relative to that folder) of a display path."""
        if len(self.folders) <= 1:
            return 0, display
        label, _, rest = display.partition("/")
        return self._label_to_folder[label], rest

    def _abs(self, display: str) -> Path:
        fi, rel = self._locate(display)
        return self.folders[fi] / rel if rel else self.folders[fi]

    # -- state -----------------------------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self._snap is not None

    @property
    def file_count(self) -> int:
        return self._snap.files if self._snap else 0

    @property
    def dir_count(self) -> int:
        return self._snap.dirs if self._snap else 0

    @property
    def built_at(self) -> float | None:
        """When the last full build finished (``time.time()`` seconds), None before the first."""
        return self._built_at

    def status(self) -> dict[str, Any]:
        """``{"state", "files", "dirs", "builtAt", "durationMs", "refreshedAt", "truncated"}`` — ``builtAt`` and
        ``refreshedAt`` are epoch seconds; ``truncated`` means ``max_files`` was reached."""
        state = "building" if self._building else ("ready" if self._snap is not None else "empty")
        return {
            "state": state,
            "files": self.file_count,
            "dirs": self.dir_count,
            "builtAt": self._built_at,
            "durationMs": self._duration_ms,
            "refreshedAt": self._refreshed_at,
            "truncated": self._truncated,
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
            scan_start_ns = time.time_ns()
            self._matchers = [IgnoreMatcher.for_root(f) for f in self.folders]
            entries: list[tuple[str, bool]] = []
            dir_keys: list[str] = []
            self._truncated = False
            for fi, folder in enumerate(self.folders):
                label = self._labels[fi]
                dir_keys.append(label)
                if not self._walk_into(fi, folder, label, entries, dir_keys):
                    break
            entries.sort(key=lambda e: _sort_key(e[0]))
            lines = [d for d, _ in entries]
            isdir = bytearray(is_dir for _, is_dir in entries)
            self._dir_mtimes = {key: self._stat_dir(key, scan_start_ns) for key in dir_keys}
            self._gitignores = {}
            for d in lines:
                if d.endswith(".gitignore") and d.rpartition("/")[2] == ".gitignore":
                    self._gitignores[d] = self._stat_mtime(d)
            self._publish(_Snapshot(lines, isdir))
            self._duration_ms = round((time.perf_counter() - started) * 1000, 1)
            self._built_at = time.time()
            log.debug("indexed %d entries in %.0f ms", len(lines), self._duration_ms)

    def _walk_into(self, fi: int, root: Path, root_key: str, entries: list[tuple[str, bool]],
                   dir_keys: list[str]) -> bool:
        """Append everything under `root` (a folder or a directory in it); False when `max_files` was reached."""
        root_str = str(root)
        cut = len(root_str) + (0 if root_str.endswith(os.sep) else 1)
        for path, is_dir in walk(root, matcher=self._matchers[fi]):
            rel = str(path)[cut:]
            if "\n" in rel:
                continue  # a newline in a name would split a line of the snapshot; such names are not worth it
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
            if len(entries) >= self.max_files:
                self._truncated = True
                return False
            display = self._join(root_key, rel)
            entries.append((display, is_dir))
            if is_dir:
                dir_keys.append(display)
        return True

    def _stat_mtime(self, display: str) -> int:
        fi, rel = self._locate(display)
        try:
            return os.stat(f"{self._roots[fi]}{rel}").st_mtime_ns
        except OSError:
            return -1

    def _stat_dir(self, display: str, scan_start_ns: int) -> int:
        mtime = self._stat_mtime(display)
        # Changed during or just before the scan: we cannot tell whether the listing saw the change.
        return -1 if mtime >= scan_start_ns - _RACY_NS else mtime

    def _publish(self, snap: _Snapshot) -> None:
        self._snap = snap
        self._cache = None

    # -- refresh ---------------------------------------------------------------------------------------------------

    def refresh(self) -> int:
        """Rescan the directories whose mtime changed since the last scan (and the subtree of any changed
        ``.gitignore``); returns the number of entries added or removed. A no-op (0) before the first build."""
        with self._lock:
            snap = self._snap
            if snap is None:
                return 0
            scan_start_ns = time.time_ns()
            changed = [key for key, old in self._dir_mtimes.items() if self._stat_mtime(key) != old or old < 0]
            subtrees: set[str] = set()
            for gi, old in list(self._gitignores.items()):
                if self._stat_mtime(gi) != old:
                    subtrees.add(gi.rpartition("/")[0] if "/" in gi else self._root_key_of(gi))
            if not changed and not subtrees:
                self._refreshed_at = time.time()
                return 0
            removed: set[str] = set()
            added: dict[str, bool] = {}
            present = _Present(snap, removed, added)
            for key in changed:
                if key not in self._dir_mtimes:
                    continue  # inside a subtree already removed in this pass
                if self._rescan_dir(key, present, scan_start_ns):
                    subtrees.add(key)  # a .gitignore appeared or went away here
            if subtrees:
                self._refresh_matchers(subtrees)
                for key in _outermost(subtrees):
                    if key in self._dir_mtimes:
                        self._rescan_subtree(key, present, scan_start_ns)
            count = len(removed) + len(added)
            if count:
                self._apply(snap, removed, added)
            self._refreshed_at = time.time()
            return count

    def _root_key_of(self, display: str) -> str:
        return self._labels[self._locate(display)[0]]

    def _children(self, key: str, present: _Present) -> dict[str, bool]:
        """Indexed direct children of directory `key`: name -> is_dir (this pass's changes included)."""
        snap = present.snap
        out: dict[str, bool] = {}
        if key:
            for i in snap.children(key):
                out[snap.line(i).rpartition("/")[2]] = bool(snap.isdir[i])
        else:  # the root of a single folder: the depth-1 entries, which come first in the snapshot
            for i in range(snap.n):
                line = snap.line(i)
                if "/" in line:
                    break
                out[line] = bool(snap.isdir[i])
        prefix = key + "/" if key else ""
        for display in present.removed:
            if display.startswith(prefix) and "/" not in display[len(prefix) :]:
                out.pop(display[len(prefix) :], None)
        for display, is_dir in present.added.items():
            if display.startswith(prefix) and "/" not in display[len(prefix) :]:
                out[display[len(prefix) :]] = is_dir
        return out

    def _listing(self, key: str) -> dict[str, bool] | None:
        """What is on disk in directory `key` now, ignore rules applied; None when it is gone."""
        fi, _ = self._locate(key) if key else (0, "")
        path = self._abs(key)
        matcher = self._matchers[fi]
        out: dict[str, bool] = {}
        try:
            with os.scandir(path) as it:
                for entry in it:
                    if "\n" in entry.name:
                        continue
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if not matcher.ignored(Path(entry.path), is_dir):
                        out[entry.name] = is_dir
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            return {}
        return out

    def _rescan_dir(self, key: str, present: _Present, scan_start_ns: int) -> bool:
        """Bring the direct children of `key` up to date; True when a ``.gitignore`` appeared or vanished."""
        mtime = self._stat_mtime(key)
        on_disk = self._listing(key)
        if on_disk is None:
            self._remove_subtree(key, present, include_self=key not in self._labels)
            return False
        indexed = self._children(key, present)
        gitignore_changed = False
        for name, is_dir in indexed.items():
            if on_disk.get(name) != is_dir:
                self._remove_subtree(self._join(key, name), present, include_self=True, is_dir=is_dir)
                gitignore_changed |= name == ".gitignore"
        for name, is_dir in on_disk.items():
            if indexed.get(name) != is_dir:
                self._add(self._join(key, name), is_dir, present, scan_start_ns)
                gitignore_changed |= name == ".gitignore"
        self._dir_mtimes[key] = -1 if mtime >= scan_start_ns - _RACY_NS else mtime
        return gitignore_changed

    def _rescan_subtree(self, key: str, present: _Present, scan_start_ns: int) -> None:
        """Recompute everything under `key` (its ignore rules changed) and diff against the index."""
        fi, _ = self._locate(key) if key else (0, "")
        prefix = key + "/" if key else ""
        indexed: dict[str, bool] = {}
        snap = present.snap
        rng = snap.find_prefixed(prefix) if prefix else iter(range(snap.n))
        for i in rng:
            indexed[snap.line(i)] = bool(snap.isdir[i])
        for display in present.removed:
            if display.startswith(prefix):
                indexed.pop(display, None)
        for display, is_dir in present.added.items():
            if display.startswith(prefix):
                indexed[display] = is_dir
        found: list[tuple[str, bool]] = []
        dir_keys: list[str] = []
        self._walk_into(fi, self._abs(key), key, found, dir_keys)
        on_disk = dict(found)
        for display, is_dir in indexed.items():
            if on_disk.get(display) != is_dir:
                present.remove(display)
                self._dir_mtimes.pop(display, None)
                self._gitignores.pop(display, None)
        for display, is_dir in found:
            if indexed.get(display) != is_dir:
                present.add(display, is_dir)
        for d in [key, *dir_keys]:
            self._dir_mtimes[d] = self._stat_dir(d, scan_start_ns)
        for display, _ in found:
            if display.rpartition("/")[2] == ".gitignore":
                self._gitignores[display] = self._stat_mtime(display)

    def _remove_subtree(self, display: str, present: _Present, *, include_self: bool, is_dir: bool = True) -> None:
        if include_self:
            present.remove(display)
            self._gitignores.pop(display, None)
        if not is_dir:
            return
        prefix = display + "/" if display else ""
        snap = present.snap
        for i in snap.find_prefixed(prefix) if prefix else range(snap.n):
            present.remove(snap.line(i))
        for d in [d for d in present.added if d.startswith(prefix)]:
            present.remove(d)
        for d in [d for d in self._dir_mtimes if d.startswith(prefix) or d == display]:
            if d != display or include_self:
                del self._dir_mtimes[d]
        for g in [g for g in self._gitignores if g.startswith(prefix)]:
            del self._gitignores[g]

    def _add(self, display: str, is_dir: bool, present: _Present, scan_start_ns: int) -> None:
        present.add(display, is_dir)
        if display.rpartition("/")[2] == ".gitignore":
            self._gitignores[display] = self._stat_mtime(display)
        if not is_dir:
            return
        fi, _ = self._locate(display)
        found: list[tuple[str, bool]] = []
        dir_keys: list[str] = []
        self._walk_into(fi, self._abs(display), display, found, dir_keys)
        for d, d_is_dir in found:
            present.add(d, d_is_dir)
            if d.rpartition("/")[2] == ".gitignore":
                self._gitignores[d] = self._stat_mtime(d)
        for d in [display, *dir_keys]:
            self._dir_mtimes[d] = self._stat_dir(d, scan_start_ns)

    def _refresh_matchers(self, subtrees: set[str]) -> None:
        # Matchers cache every .gitignore they read: a changed one needs a fresh matcher for its folder.
        for fi in {self._locate(key)[0] if key else 0 for key in subtrees}:
            self._matchers[fi] = IgnoreMatcher.for_root(self.folders[fi])

    def _apply(self, snap: _Snapshot, removed: set[str], added: dict[str, bool]) -> None:
        lines = snap.lines()
        isdir = snap.isdir
        if removed:
            keep = [i for i, line in enumerate(lines) if line not in removed]
            lines = [lines[i] for i in keep]
            isdir = bytearray(isdir[i] for i in keep)
        else:
            isdir = bytearray(isdir)
        new = list(added.items())  # a name both removed and added changed type: old line out, new one in
        room = self.max_files - len(lines)
        if len(new) > room:
            new = sorted(new, key=lambda e: _sort_key(e[0]))[: max(room, 0)]
            self._truncated = True
        for display, is_dir in new:
            # The snapshot order is (depth, folded path): insert each new entry where a full sort would put it.
            pos = bisect.bisect_left(lines, _sort_key(display), key=_sort_key)
            lines.insert(pos, display)
            isdir.insert(pos, is_dir)
        self._publish(_Snapshot(lines, isdir))

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
        """The best `limit` entries for `text`, best first (see the module docstring for the ranking).

        A blank query returns the shallowest entries (top level first). Matching is case-insensitive, with a small
        bonus for exact case; spaces are ignored; a leading ``./`` or a workspace folder's absolute path is stripped.
        """
        snap = self._snap
        if snap is None or limit <= 0:
            return []
        q = self._normalise(text)
        if not q:
            return [self._entry(snap, i, 0.0) for i in range(min(limit, snap.n))]
        query = _Query(q, snap)
        cache = self._cache
        scored: list[tuple[float, int]] = []
        if cache is not None and cache[0] is snap and query.ql.startswith(cache[1]):
            for i in cache[2]:
                s = query.score(i)
                if s is not None:
                    scored.append((s, i))
            complete = True
        else:
            scored, complete = self._scan(query, limit)
        if complete and len(scored) <= _CACHE_MAX:
            self._cache = (snap, query.ql, [i for _, i in scored])
        best = heapq.nlargest(limit, scored, key=lambda si: (si[0], -si[1]))
        return [self._entry(snap, i, s) for s, i in best]

    def _scan(self, query: _Query, limit: int) -> tuple[list[tuple[float, int]], bool]:
        """Run the discovery scans best tier first until `limit` results are certain; (scored, ran every scan)."""
        cap = max(limit * 20, 1000)  # candidates one scan may score once `limit` is reached
        seen: set[int] = set()
        scored: list[tuple[float, int]] = []
        for scan in query.scans():
            taken = 0
            for i in scan:
                if i in seen:
                    continue
                seen.add(i)
                s = query.score(i)
                if s is None:
                    continue
                scored.append((s, i))
                taken += 1
                if taken >= cap and len(scored) >= limit:
                    return scored, False
            if len(scored) >= limit:
                return scored, False
        return scored, True

    def _normalise(self, text: str) -> str:
        q = "".join(text.split()).replace("\\", "/")
        for fi, folder in enumerate(self.folders):
            root = folder.as_posix().rstrip("/") + "/"
            if q.startswith(root):
                q = self._join(self._labels[fi], q[len(root) :])
                break
        while q.startswith("./"):
            q = q[2:]
        return q

    def _entry(self, snap: _Snapshot, i: int, score: float) -> Entry:
        display = snap.line(i)
        return Entry(path=self._abs(display), rel=display, is_dir=bool(snap.isdir[i]), score=float(score))

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
            cached = snap.repo_maps[key] = self._render_map(snap, max_entries, max_per_dir)
        return cached

    def _render_map(self, snap: _Snapshot, max_entries: int, max_per_dir: int) -> str:
        roots = set(self._labels)
        shown: dict[str, list[str]] = {r: [] for r in roots}  # included dir -> included children (display)
        hidden: dict[str, int] = {}
        is_dir: dict[str, bool] = {}
        total = 0
        for i, line in enumerate(snap.lines()):
            parent = line.rpartition("/")[0]
            siblings = shown.get(parent)
            if siblings is None:
                continue  # parent not shown: counted in the final note only
            limit_here = len(siblings) >= max_per_dir and parent not in roots
            if total >= max_entries or limit_here:
                hidden[parent] = hidden.get(parent, 0) + 1
                continue
            siblings.append(line)
            total += 1
            if snap.isdir[i]:
                shown[line] = []
                is_dir[line] = True
        out: list[str] = []

        def emit(key: str, depth: int) -> None:
            for child in sorted(shown.get(key, ()), key=_fold):
                name = child.rpartition("/")[2]
                out.append("  " * depth + name + ("/" if is_dir.get(child) else ""))
                if child in shown:
                    emit(child, depth + 1)
            if hidden.get(key):
                out.append("  " * depth + f"… {hidden[key]} more")

        for fi, folder in enumerate(self.folders):
            out.append(folder.as_posix().rstrip("/") + "/")
            emit(self._labels[fi], 1)
        omitted = snap.n - total
        if omitted > 0:
            out.append(f"(repo map truncated: {total} of {snap.n} entries shown)")
        if self._truncated:
            out.append(f"(the index stopped at {self.max_files} entries)")
        return "\n".join(out)


def _outermost(keys: set[str]) -> list[str]:
    """The keys not inside another key of the set (so a subtree is rescanned once)."""
    out: list[str] = []
    for key in sorted(keys, key=lambda k: (k.count("/"), k)):
        if not any(key == o or key.startswith(o + "/") or o == "" for o in out):
            out.append(key)
    return out


class _Present:
    """The pending changes of one refresh pass on top of the current snapshot."""

    __slots__ = ("snap", "removed", "added")

    def __init__(self, snap: _Snapshot, removed: set[str], added: dict[str, bool]) -> None:
        self.snap = snap
        self.removed = removed
        self.added = added

    def remove(self, display: str) -> None:
        if self.added.pop(display, None) is None:
            self.removed.add(display)

    def add(self, display: str, is_dir: bool) -> None:
        self.added[display] = is_dir
