"""Where our files live (XDG base directories), and the two-phase write of the chat store.

Every function takes the environment as a mapping instead of reading ``os.environ`` itself, so tests (and a server
started with a different environment) never touch the real home directory.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..._fileio import PRIVATE_MODE, fsync_dir

__all__ = [
    "commit_temp",
    "ensure_private_dir",
    "home_dir",
    "sync_dir",
    "write_temp",
    "xdg_cache_home",
    "xdg_config_home",
]

DIR_MODE = 0o700


def home_dir(env: Mapping[str, str]) -> Path:
    """``$HOME`` from *env* when set, else the process's home directory."""
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    # The XDG spec says relative values are invalid and must be ignored.
    value = env.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return home_dir(env) / fallback


def xdg_config_home(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME``, default ``~/.config``."""
    return _xdg(env, "XDG_CONFIG_HOME", ".config")


def xdg_cache_home(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME``, default ``~/.cache``."""
    return _xdg(env, "XDG_CACHE_HOME", ".cache")


def ensure_private_dir(path: Path) -> Path:
    """Create *path* (and parents) if needed; the leaf is made owner-only (0700) because it holds chat history."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    with contextlib.suppress(OSError):
        if (path.stat().st_mode & 0o777) != DIR_MODE:
            path.chmod(DIR_MODE)
    return path


def write_temp(path: Path, pieces: Iterable[str]) -> Path:
    """The first half of an atomic write (``eca_notebook/_fileio.py``) for a large file written under a lock: the
    text *pieces* in a fsynced 0600 temp file next to *path* (the slow part, which needs no lock).
    :func:`commit_temp` renames it over *path*; on failure nothing is left behind.

    Written in batches of about 256 KB as the pieces come: the GIL is released during each write, so a thread
    writing a large file leaves the event loop's thread room to run."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb", buffering=0) as fh:
            with contextlib.suppress(OSError):
                os.fchmod(fh.fileno(), PRIVATE_MODE)
            batch: list[str] = []
            size = 0
            for piece in pieces:
                time.sleep(0)  # let a thread waiting for the GIL (the event loop's) run now, not after 5 ms
                batch.append(piece)
                size += len(piece)
                if size >= _WRITE_BATCH:
                    _write_all(fh, "".join(batch).encode("utf-8"))
                    batch, size = [], 0
            if batch:
                _write_all(fh, "".join(batch).encode("utf-8"))
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp


_WRITE_BATCH = 256 * 1024


def _write_all(fh: Any, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[fh.write(view) :]


def commit_temp(tmp: Path, path: Path, *, sync_dir: bool = True) -> None:
    """The second half: atomically replace *path* with the temp file (a rename, fast), made durable (unless
    ``sync_dir=False``: then the caller calls :func:`sync_dir` later, e.g. after releasing a lock)."""
    os.replace(tmp, path)
    if sync_dir:
        fsync_dir(path.parent)


def sync_dir(directory: Path) -> None:
    """Make the renames in *directory* durable (best effort)."""
    fsync_dir(directory)
