"""Workspace path safety shared by every tool.

Tools never refuse a path outside the workspace themselves: they resolve it *fully* (``..`` and symlinks) and flag
it, so the approval policy can always ask the user. Resolving before checking is the point — a symlink inside the
workspace that points at ``/etc`` is an outside path, whatever its spelling.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .._workspace_paths import containing_folder, is_inside, resolved_folders
from .base import ToolContext

__all__ = ["display", "is_inside", "not_found", "outside_as_named", "resolve", "resolved_folders", "workspace_of"]


def resolve(path: str, ctx: ToolContext) -> Path:
    """Absolute, symlink-free path for `path`: relative to ``ctx.root``, ``~`` expanded, ``..`` collapsed.

    A path that does not exist yet resolves through its deepest existing ancestor (``Path.resolve(strict=False)``),
    so a new file under a symlinked directory is still attributed to where the bytes will really land.
    """
    p = Path(os.path.expanduser(path))
    if not p.is_absolute():
        p = ctx.root / p
    return p.resolve(strict=False)


def workspace_of(path: Path, folders: Iterable[Path]) -> Path | None:
    """The deepest (resolved) workspace folder containing `path`, or None."""
    return containing_folder(path, folders)


def display(path: Path, ctx: ToolContext) -> str:
    """How a path is shown to the LLM and the user: relative to the root when below it (so it can be passed back
    as-is), ``.`` for the root itself, absolute otherwise."""
    p = Path(path)
    root = ctx.root.resolve(strict=False)
    if p == root:
        return "."
    if p.is_relative_to(root):
        return p.relative_to(root).as_posix()
    return str(p)


def not_found(path: Path, ctx: ToolContext) -> str:
    """"file not found" for a path in the workspace, saying where relative paths start: asked to read README.md
    in a lab opened on ``notebooks/``, the card said only "file not found: README.md" (the README is one level up),
    and neither the user nor the model could tell why."""
    shown = display(path, ctx)
    if Path(path).is_relative_to(ctx.root.resolve(strict=False)):
        return f"file not found: {shown} (relative paths start at the workspace folder {ctx.root})"
    return f"file not found: {shown}"


def outside_as_named(written: str, path: Path, ctx: ToolContext, extra: Iterable[Path] = ()) -> bool:
    """Whether a path the model gave (*written*, resolved to *path*) is outside the workspace folders (and *extra*)
    — resolved, or as written: ``../x``, ``~/x`` or an absolute path out of every folder counts even when a symlink
    there leads back in, because where it leads is not for the model to learn before the user approved."""
    folders = [*ctx.workspace_folders, *extra]
    if not is_inside(path, folders):
        return True
    lexical = Path(os.path.normpath(ctx.root / os.path.expanduser(written.strip())))
    return not any(lexical == f or lexical.is_relative_to(f) for f in [*map(Path, folders), *resolved_folders(folders)])
