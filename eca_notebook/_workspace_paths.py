"""Is a path inside the workspace? One answer for every door and tool.

The rule: resolve *fully* (``..`` and symlinks, the last component included) before comparing, so a symlink inside a
workspace folder that points at ``/etc`` is outside, whatever its spelling. A path that does not exist (a file just
deleted, one about to be created) resolves through its deepest existing ancestor — ``Path.resolve(strict=False)`` —
so an index event for a gone file is still attributed to where it lived.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["containing_folder", "is_inside", "resolved_folders"]


def resolved_folders(folders: Iterable[Path]) -> list[Path]:
    return [Path(f).resolve(strict=False) for f in folders]


def containing_folder(path: Path, folders: Iterable[Path]) -> Path | None:
    """The deepest (resolved) folder of `folders` that holds the resolved `path` (or is it), else None."""
    p = Path(path).resolve(strict=False)
    best: Path | None = None
    for f in resolved_folders(folders):
        if (p == f or p.is_relative_to(f)) and (best is None or len(f.parts) > len(best.parts)):
            best = f
    return best


def is_inside(path: Path, folders: Iterable[Path]) -> bool:
    """Whether the resolved `path` is one of `folders` or below one."""
    return containing_folder(path, folders) is not None
