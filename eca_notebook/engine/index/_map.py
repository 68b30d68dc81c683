"""The repo map: the workspace as an indented tree, for the system prompt and ``/repo-map-show``.

A pure function of a file-index snapshot (:class:`~eca_notebook.engine.index._index.WorkspaceIndex` caches its result on
the snapshot, so it is rendered once per change of the workspace). It has to fit a prompt, so it is a budget problem:
entries are chosen breadth first — the top levels say most about a project — with a cap per directory, and whatever
is left out is counted rather than silently dropped, so the model knows the tree goes on.
"""

from __future__ import annotations

from pathlib import Path

from ._snapshot import Snapshot, fold

__all__ = ["render_repo_map"]


def render_repo_map(snap: Snapshot, folders: list[Path], labels: list[str], max_entries: int, max_per_dir: int, *,
                    truncated: bool, max_files: int) -> str:
    """The tree of `snap` under each of `folders` (their snapshot keys: `labels`), two spaces per level, directories
    ending with ``/``; at most `max_entries` lines of entries and `max_per_dir` per directory below a root, each
    directory's rest on a ``… N more`` line and a final note when entries were left out (or the index itself was
    `truncated` at `max_files`)."""
    roots = set(labels)
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
        for child in sorted(shown.get(key, ()), key=fold):
            name = child.rpartition("/")[2]
            out.append("  " * depth + name + ("/" if is_dir.get(child) else ""))
            if child in shown:
                emit(child, depth + 1)
        if hidden.get(key):
            out.append("  " * depth + f"… {hidden[key]} more")

    for fi, folder in enumerate(folders):
        out.append(folder.as_posix().rstrip("/") + "/")
        emit(labels[fi], 1)
    omitted = snap.n - total
    if omitted > 0:
        out.append(f"(repo map truncated: {total} of {snap.n} entries shown)")
    if truncated:
        out.append(f"(the index stopped at {max_files} entries)")
    return "\n".join(out)
