"""The file-name index's storage: an immutable snapshot of every entry of the workspace, kept as flat strings.

Why it looks the way it does:

* **Flat storage.** 100,000 paths as 100,000 Python objects (plus their lowercase twins, plus a dict per directory)
  cost tens of megabytes and a lot of pointer chasing. Instead a snapshot holds three ``"\\n"``-joined strings — the
  paths as shown, the same paths lowercased, the lowercased basenames — and arrays of line offsets. Line *i* of each
  string is entry *i*. Searching is then C-speed work (``str.find``, one compiled regex) over one big string, and a
  path becomes a Python string only when it is a candidate.
* **Entries are ordered shallow-first** (depth, then name). A blank query is just the first lines; and when a query
  matches thousands of entries, the scan meets the shallow, short ones first — the ones the scorer prefers anyway —
  so it can stop after a bounded number of candidates instead of scoring everything.
* **Immutable.** A snapshot is never changed once built: a refresh builds a new one and swaps it in whole, so
  queries on the event loop never see a half-updated index while a refresh runs in a worker thread.
"""

from __future__ import annotations

import bisect
import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, compress, groupby, repeat

__all__ = ["Snapshot", "fold", "sort_key"]


def fold(text: str) -> str:
    """Lowercase without changing the length (a few characters, like ``İ``, lowercase to two): offsets into the
    display string and the lowercase string must stay interchangeable."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)


def sort_key(display: str) -> tuple[int, str, str]:
    """The snapshot's order: shallow first, then by folded name (the exact name breaks ties between case variants)."""
    return display.count("/"), fold(display), display


def _offsets(lengths: Iterable[int]) -> array[int]:
    """Start offset of every line of ``"\\n" + "\\n".join(lines) + "\\n"``, plus one past the end (len n + 1)."""
    return array("q", accumulate(map(operator.add, lengths, repeat(1)), initial=1))


class Snapshot:
    """An immutable view of the index: shared by readers, replaced (never mutated) by writers.

    ``disp``/``low``/``base`` are the blobs (entry *i* is line *i*; ``starts``/``bstarts`` where each line begins),
    ``isdir`` one byte per entry; ``dlow``/``dstarts``/``child_lo``/``child_hi`` index the directories (see
    ``_index_dirs``); ``repo_maps`` caches the repo maps rendered from this snapshot."""

    __slots__ = ("disp", "low", "base", "starts", "bstarts", "isdir", "n", "files", "dirs", "dlow", "dstarts",
                 "dir_ordinal", "child_lo", "child_hi", "repo_maps")

    def __init__(self, lines: list[str], isdir: bytearray) -> None:
        self.n = len(lines)
        self.disp = "\n" + "\n".join(lines) + "\n" if lines else "\n"
        low = self.disp.lower()
        self.low = self.disp if low == self.disp else (low if len(low) == len(self.disp) else fold(self.disp))
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
        which lets the path-fuzzy scan treat a path as "directory part + basename" (see ``Query.path_fuzzy`` in
        :mod:`._index_rank`)."""
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
        k = self.dir_ordinal.get(fold(display))
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
