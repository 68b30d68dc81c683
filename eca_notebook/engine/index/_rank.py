"""The file-name index's ranking: how well an entry matches a query, and how to find the best ones without scoring
all of them.

* **Tiers.** The score is ``tier * 1000 + bonus`` (bonus below 1000), tiers being, best first: basename equal,
  basename prefix, basename contains (word boundary first), basename fuzzy, path contains, path fuzzy (a query with a
  ``/`` is matched against the whole path instead). The bonus rewards exact case, consecutive and word-start
  characters and short paths.
* **Discovery scans, best tier first.** Each tier has a cheap discovery scan over the snapshot's blobs; the scans
  run best tier first and stop as soon as enough results are in hand, because nothing found later can outrank them.
  A scan that finds thousands stops after a bounded number of candidates — the shallow ones, met first — which is
  where the ranking is approximate: a deeper entry with a slightly shorter name may be left out (the benchmark
  counts how often the top 10 differs from scoring everything). The costly scan, path fuzzy, works on directories
  (a few thousand) and then only on the children of the directories that match part of the query.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator

from ._snapshot import Snapshot, fold

__all__ = ["Query", "discover"]

# Score layout: tier * _TIER + bonus, 0 <= bonus < _TIER.
_TIER = 1000
T_EXACT, T_PREFIX, T_WORD, T_CONTAINS, T_BASE_FUZZY, T_PATH_CONTAINS, T_PATH_FUZZY = 7, 6, 5, 4, 3, 2, 1
_SEPARATORS = frozenset("/\\-_. ")


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


class Query:
    """One normalised query and the scorer for it."""

    __slots__ = ("q", "ql", "slash", "snap")

    def __init__(self, q: str, snap: Snapshot) -> None:
        self.q = q
        self.ql = fold(q)
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


def discover(query: Query, limit: int) -> tuple[list[tuple[float, int]], bool]:
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
