"""Reading and writing files the same way everywhere: what counts as binary, and all-or-nothing writes.

One rule for "binary" because the user sees its verdicts side by side: a file attached to a prompt and the same
file read by the ``read_file`` tool (or searched by ``grep``) must be text or binary for both. The rule is git's and
ripgrep's: a NUL byte in the first 8 KB.

One atomic write for every file we replace — saved chats, their index, the workspace approval policy, files the
tools edit (on platforms without ``*at()`` calls) — so each gets the same guarantees: a reader sees the old or the
new file, never half of one; a failing write leaves the old file untouched and no temp file behind. What differs
between callers is only the mode of a file that did not exist yet: owner-only for our own files (chats may hold
secrets), what ``open()`` would give for a user's file. An existing file keeps its permission bits either way.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["PRIVATE_MODE", "SNIFF_BYTES", "atomic_write", "default_mode", "fsync_dir", "looks_binary"]

SNIFF_BYTES = 8192  # how much of a file's start :func:`looks_binary` needs
PRIVATE_MODE = 0o600


def looks_binary(head: bytes) -> bool:
    """Whether a file starting with *head* (its first :data:`SNIFF_BYTES`) is binary: it has a NUL byte."""
    return b"\0" in head


def default_mode() -> int:
    """The mode ``open()`` gives a new file: ``0o666`` less the process's umask (read without changing it)."""
    return 0o666 & ~_umask()


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write(path: Path, content: str | Callable[[IO[str]], None], *, private: bool = False,
                 durable: bool = True) -> None:
    """Replace *path* with *content* — a text, or a function writing to a text stream — all or nothing.

    The data goes to a temp file in the same directory (``.tmp-<name>.<random>.eca-tmp``, so ``os.replace`` is a
    rename on one file system), is flushed and fsynced, then renamed over the target; the directory is fsynced after
    the rename. If writing raises, the temp file is removed and the old file is left untouched. The parent directory
    must exist. Newlines are written as given.

    An existing file keeps its permission bits; a new one is ``0600`` with *private*, else :func:`default_mode`.
    ``durable=False`` skips both fsyncs (for a cache that heals itself when a crash leaves it empty).
    """
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = PRIVATE_MODE if private else default_mode()
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name[:64]}.", suffix=".eca-tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            with contextlib.suppress(OSError):  # a file system without modes (FAT, some mounts) still gets the data
                os.fchmod(fh.fileno(), mode)
            if isinstance(content, str):
                fh.write(content)
            else:
                content(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make the renames in *directory* durable (best effort: not every platform can open a directory)."""
    with contextlib.suppress(OSError, AttributeError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
