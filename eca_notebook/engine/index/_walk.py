"""Walking the workspace folders into a file-index snapshot, and refreshing it cheaply.

**Incremental refresh.** Creating, deleting or renaming an entry changes its directory's mtime, so
:meth:`Walker.refresh` stats every known directory and re-lists only those whose mtime moved (plus the subtree of any
``.gitignore`` that changed), then builds the next snapshot from the old one and the difference. A full walk of a big
workspace takes seconds; a refresh with nothing changed is one ``stat`` per directory. A directory whose mtime is too
close to the walk's start is remembered as unknown, so a change within the same mtime tick is not missed.

The walker keeps what a refresh compares against (directory mtimes, ``.gitignore`` mtimes, the ignore matchers) and
is used under :class:`~eca_notebook.engine.index._index.WorkspaceIndex`'s writer lock, one build or refresh at a time;
the snapshots it returns are never changed afterwards, so queries may read them meanwhile.

Ignore rules come from :mod:`eca_notebook.tools.ignore` (``.gitignore`` files, ``.git/info/exclude``, never ``.git``).
"""

from __future__ import annotations

import bisect
import os
import time
from pathlib import Path

from ...tools.ignore import IgnoreMatcher, walk
from ._snapshot import Snapshot, sort_key

__all__ = ["Walker"]

# A directory whose mtime is this close to "now" may still change within the same mtime tick on coarse file systems:
# remember it as unknown (-1) so the next refresh lists it again (the "racy git" problem).
_RACY_NS = 2_000_000_000


def _make_labels(folders: list[Path]) -> list[str]:
    """Each folder's first path segment in display paths — its name, made unique — so results from several folders
    can be told apart; a single folder needs none (``""``)."""
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


class Walker:
    """The workspace folders as snapshot entries: display paths (``<label>/rel`` with several folders), the full
    walk, and the incremental refresh. At most `max_files` entries; ``truncated`` says the last walk hit it."""

    def __init__(self, folders: list[Path], *, max_files: int) -> None:
        self.folders = folders
        self.max_files = max_files
        self.labels = _make_labels(folders)
        self.truncated = False
        self._label_to_folder = {label: i for i, label in enumerate(self.labels)}
        self._roots = [os.path.join(str(f), "") for f in folders]  # with a trailing separator, for os.stat
        self._dir_mtimes: dict[str, int] = {}  # display path of every indexed directory ("" / label = a root)
        self._gitignores: dict[str, int] = {}  # display path of every indexed .gitignore -> mtime_ns
        self._matchers: list[IgnoreMatcher] = []

    # -- paths -----------------------------------------------------------------------------------------------------

    def join(self, parent: str, name: str) -> str:
        """The display path of `name` in directory `parent` (``""``: the root of a single folder)."""
        return f"{parent}/{name}" if parent else name

    def _locate(self, display: str) -> tuple[int, str]:
        """(folder index, path relative to that folder) of a display path."""
        if len(self.folders) <= 1:
            return 0, display
        label, _, rest = display.partition("/")
        return self._label_to_folder[label], rest

    def absolute(self, display: str) -> Path:
        """The file or directory behind a display path."""
        fi, rel = self._locate(display)
        return self.folders[fi] / rel if rel else self.folders[fi]

    # -- the full walk ---------------------------------------------------------------------------------------------

    def build(self) -> Snapshot:
        """Walk every folder from scratch: the snapshot of what is there (and fresh mtimes and ignore rules)."""
        scan_start_ns = time.time_ns()
        self._matchers = [IgnoreMatcher.for_root(f) for f in self.folders]
        entries: list[tuple[str, bool]] = []
        dir_keys: list[str] = []
        self.truncated = False
        for fi, folder in enumerate(self.folders):
            label = self.labels[fi]
            dir_keys.append(label)
            if not self._walk_into(fi, folder, label, entries, dir_keys):
                break
        entries.sort(key=lambda e: sort_key(e[0]))
        lines = [d for d, _ in entries]
        isdir = bytearray(is_dir for _, is_dir in entries)
        self._dir_mtimes = {key: self._stat_dir(key, scan_start_ns) for key in dir_keys}
        self._gitignores = {}
        for d in lines:
            if d.endswith(".gitignore") and d.rpartition("/")[2] == ".gitignore":
                self._gitignores[d] = self._stat_mtime(d)
        return Snapshot(lines, isdir)

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
                self.truncated = True
                return False
            display = self.join(root_key, rel)
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

    # -- refresh ---------------------------------------------------------------------------------------------------

    def refresh(self, snap: Snapshot) -> tuple[int, Snapshot | None]:
        """Rescan the directories whose mtime changed since the last walk (and the subtree of any changed
        ``.gitignore``): (entries added or removed, the next snapshot — None when nothing changed)."""
        scan_start_ns = time.time_ns()
        changed = [key for key, old in self._dir_mtimes.items() if self._stat_mtime(key) != old or old < 0]
        subtrees: set[str] = set()
        for gi, old in list(self._gitignores.items()):
            if self._stat_mtime(gi) != old:
                subtrees.add(gi.rpartition("/")[0] if "/" in gi else self._root_key_of(gi))
        if not changed and not subtrees:
            return 0, None
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
        return count, (self._apply(snap, removed, added) if count else None)

    def _root_key_of(self, display: str) -> str:
        return self.labels[self._locate(display)[0]]

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
        path = self.absolute(key)
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
            self._remove_subtree(key, present, include_self=key not in self.labels)
            return False
        indexed = self._children(key, present)
        gitignore_changed = False
        for name, is_dir in indexed.items():
            if on_disk.get(name) != is_dir:
                self._remove_subtree(self.join(key, name), present, include_self=True, is_dir=is_dir)
                gitignore_changed |= name == ".gitignore"
        for name, is_dir in on_disk.items():
            if indexed.get(name) != is_dir:
                self._add(self.join(key, name), is_dir, present, scan_start_ns)
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
        self._walk_into(fi, self.absolute(key), key, found, dir_keys)
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
        self._walk_into(fi, self.absolute(display), display, found, dir_keys)
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

    def _apply(self, snap: Snapshot, removed: set[str], added: dict[str, bool]) -> Snapshot:
        """The next snapshot: `snap` without `removed`, with `added` (up to ``max_files``)."""
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
            new = sorted(new, key=lambda e: sort_key(e[0]))[: max(room, 0)]
            self.truncated = True
        for display, is_dir in new:
            # The snapshot order is (depth, folded path): insert each new entry where a full sort would put it.
            pos = bisect.bisect_left(lines, sort_key(display), key=sort_key)
            lines.insert(pos, display)
            isdir.insert(pos, is_dir)
        return Snapshot(lines, isdir)


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

    def __init__(self, snap: Snapshot, removed: set[str], added: dict[str, bool]) -> None:
        self.snap = snap
        self.removed = removed
        self.added = added

    def remove(self, display: str) -> None:
        if self.added.pop(display, None) is None:
            self.removed.add(display)

    def add(self, display: str, is_dir: bool) -> None:
        self.added[display] = is_dir
