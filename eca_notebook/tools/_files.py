"""File I/O helpers for the tools: bounded reads, fingerprints, and writes that re-check their target.

What counts as binary and the atomic write itself are the package's (``eca_notebook/_fileio.py``): an attached
file and ``read_file`` agree on "binary", and every file we replace is replaced the same way.

The file tools read and write through :class:`~eca_notebook.tools.base.FileAccess` when the door provides one (ACP
clients serve ``fs/read_text_file`` from their editor buffers, unsaved changes included) and fall back to the disk
otherwise; :func:`client_text` and :func:`write_through` are that routing, :func:`text_fingerprint` lets a text read
from the client be compared with one read from the disk.

Writes and moves re-check their target *when they happen*, not only when the diff was made: the approved path was
resolved (symlinks and all) at prepare time, and :func:`open_directory` walks to it again one component at a time
with ``O_NOFOLLOW`` from a directory handle, so a folder swapped for a symlink in between (by another process, a
``git checkout``, a command approved in another chat) makes the write fail with :class:`TargetMoved` instead of
landing wherever the link points. The final rename then happens relative to that handle (``renameat``), so nothing
can be swapped between the check and the write either.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .._fileio import SNIFF_BYTES, atomic_write, default_mode, looks_binary

__all__ = [
    "ANY",
    "MAX_EDIT_BYTES",
    "FileChanged",
    "TargetMoved",
    "check_resolves_to",
    "check_text",
    "client_text",
    "fingerprint",
    "fingerprint_at",
    "guarded_fingerprint",
    "guarded_write",
    "open_directory",
    "read_text",
    "text_fingerprint",
    "write_through",
]

log = logging.getLogger(__name__)

MAX_EDIT_BYTES = 10 * 1024 * 1024  # files the edit tools load whole (to diff and replace)


def fingerprint(path: Path) -> str | None:
    """Content hash of a file (None when missing, "dir" for a directory) — to detect changes between the diff the
    user approved and the write."""
    try:
        if path.is_dir():
            return "dir"
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()
    except FileNotFoundError:
        return None


def text_fingerprint(text: str) -> str:
    """The :func:`fingerprint` a file holding exactly `text` (UTF-8) has: client and disk views compare equal."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_text(text: str, max_bytes: int = MAX_EDIT_BYTES) -> None:
    """The limits of :func:`read_text`, for a text that did not come from the disk. Raises ValueError."""
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise ValueError(f"file is too large ({size} bytes; the limit is {max_bytes})")
    if "\0" in text[:SNIFF_BYTES]:
        raise ValueError("file looks binary (it contains NUL bytes)")


async def client_text(fs: Any, path: Path) -> str | None:
    """The client's view of `path` through ``ctx.fs``; None when there is no client view (use the disk).

    A failing client (gone, timed out, refusing the path) is "not handled" too: the disk is the truth we fall back
    on, and the tool then reports whatever the disk says (e.g. "file not found")."""
    if fs is None:
        return None
    try:
        text = await fs.read_text(path)
    except Exception as exc:  # noqa: BLE001 - any client failure means "use the disk"
        log.info("client read of %s failed, using the disk: %s", path, exc)
        return None
    return text if isinstance(text, str) else None


async def write_through(fs: Any, path: Path, text: str, folders: Iterable[Path] = (), expected: Any = None,
                        ) -> None:
    """Write via ``ctx.fs`` when the client takes it, else atomically to the disk. A client that fails raises
    OSError: the user approved a write *through their editor*, silently writing behind its back instead would
    leave the editor with a stale buffer.

    `path` is the target as resolved (and approved) in prepare; `expected` its disk fingerprint then (:data:`ANY`:
    already checked by the caller). Raises :class:`TargetMoved` when the path now leads elsewhere through a symlink,
    :class:`FileChanged` when the file is no longer what the diff was made from."""
    folders = list(folders)
    if fs is not None:
        check_resolves_to(path, folders)  # the client writes by name: re-resolve and compare just before
        if expected is not ANY and guarded_fingerprint(path, folders) != expected:
            raise FileChanged(path)
        try:
            handled = await fs.write_text(path, text)
        except Exception as exc:
            raise OSError(f"the client could not write the file: {exc}") from None
        if handled:
            return
    guarded_write(path, text, folders, expected)


def read_text(path: Path, max_bytes: int = MAX_EDIT_BYTES) -> tuple[str, bytes]:
    """Whole UTF-8 content, newlines untouched. Raises ValueError with a reason for binary/non-UTF-8/huge files."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"file is too large ({size} bytes; the limit is {max_bytes})")
    raw = path.read_bytes()
    if looks_binary(raw[:SNIFF_BYTES]):
        raise ValueError("file looks binary (it contains NUL bytes)")
    try:
        return raw.decode("utf-8"), raw
    except UnicodeDecodeError as exc:
        raise ValueError(f"file is not valid UTF-8 text ({exc.reason} at byte {exc.start})") from None


# ---------------------------------------------------------------------------------------------------------------
# Write-time checks: walk to the approved directory without following symlinks


class ANY:  # noqa: N801 - a sentinel, used as a value
    """``expected`` value meaning "do not compare fingerprints"."""


class FileChanged(Exception):
    """The file is no longer the one the approved diff was made from."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} changed since the diff was shown")
        self.path = path


class TargetMoved(Exception):
    """A component of the approved path is now a symbolic link (or no longer a directory): writing would land
    somewhere else than what the user approved. `link` is that component, `target` where it leads now, `outside`
    whether that is outside every workspace folder."""

    def __init__(self, link: Path, target: Path | None, outside: bool) -> None:
        where = f" to {target}" if target is not None else ""
        scope = ", outside the workspace" if outside else ""
        super().__init__(f"{link} is now a symbolic link{where}{scope}")
        self.link = link
        self.target = target
        self.outside = outside


_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a directory for walking without needing read permission on it (e.g. /home with mode 0711).
_O_WALK = (_O_DIR | os.O_PATH) if hasattr(os, "O_PATH") else _O_DIR
_DIR_FD_OK = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and os.rename in os.supports_dir_fd


def _anchor(path: Path, folders: Iterable[Path]) -> Path:
    """Where the walk starts: the deepest workspace folder holding `path` (trusted as configured), else the root of
    the file system (an outside path the user approved: every component is then checked)."""
    best: Path | None = None
    for f in folders:
        f = Path(f).resolve(strict=False)
        if (path == f or path.is_relative_to(f)) and (best is None or len(f.parts) > len(best.parts)):
            best = f
    return best if best is not None else Path(path.anchor)


def _moved(at: Path, folders: list[Path]) -> TargetMoved:
    try:
        target: Path | None = Path(os.path.realpath(at))
    except OSError:
        target = None
    outside = target is None or not any(
        target == f or target.is_relative_to(f) for f in (Path(x).resolve(strict=False) for x in folders))
    return TargetMoved(at, target, outside)


@contextlib.contextmanager
def open_directory(path: Path, folders: Iterable[Path], *, create: bool = False) -> Iterator[int]:
    """A handle on directory `path` (absolute, resolved in prepare), reached from its workspace folder — or ``/``
    for an outside path — one component at a time with ``O_NOFOLLOW``. With `create`, missing directories are made
    (also without following anything). Raises :class:`TargetMoved` when a component is now a symlink or a file,
    FileNotFoundError when one is missing and `create` is false."""
    folders = list(folders)
    anchor = _anchor(path, folders)
    rel = path.relative_to(anchor).parts
    fd = os.open(anchor, _O_WALK)
    try:
        for i, name in enumerate(rel):
            here = anchor.joinpath(*rel[: i + 1])
            try:
                try:
                    nfd = os.open(name, _O_WALK | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    nfd = os.open(name, _O_WALK | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _moved(here, folders) from None
                raise
            if not stat.S_ISDIR(os.fstat(nfd).st_mode):  # O_PATH | O_NOFOLLOW opens a symlink itself
                os.close(nfd)
                raise _moved(here, folders)
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def fingerprint_at(dir_fd: int, name: str) -> str | None:
    """:func:`fingerprint` of the entry `name` in directory `dir_fd`, never following it: ``"link"`` for a symlink,
    ``"dir"`` for a directory, None when missing."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    h = hashlib.sha256()
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def check_resolves_to(path: Path, folders: Iterable[Path]) -> None:
    """For a write someone else performs by name (the ACP client): `path` must still resolve to itself. A path
    outside every workspace folder was approved as such; it too must not have moved."""
    folders = list(folders)
    now = Path(os.path.realpath(path))
    if now == path:
        return
    # find the first component that now resolves elsewhere, to name it
    probe = Path(path.anchor)
    for part in path.relative_to(path.anchor).parts:
        probe = probe / part
        if os.path.islink(probe) or Path(os.path.realpath(probe)) != probe:
            raise _moved(probe, folders)
    raise _moved(path, folders)


def guarded_fingerprint(path: Path, folders: Iterable[Path]) -> str | None:
    """:func:`fingerprint` of the approved `path`, reached as :func:`open_directory` does."""
    if not _DIR_FD_OK:
        check_resolves_to(path, folders)
        return fingerprint(path)
    try:
        with open_directory(path.parent, folders) as dfd:
            return fingerprint_at(dfd, path.name)
    except FileNotFoundError:
        return None


def guarded_write(path: Path, text: str, folders: Iterable[Path], expected: Any = ANY) -> None:
    """:func:`atomic_write` to the approved `path` through a handle on its directory (see :func:`open_directory`):
    the temp file is created there with ``O_EXCL | O_NOFOLLOW`` and renamed over the target relative to the same
    handle. With `expected` (a :func:`fingerprint` from prepare) the file must still be that; raises
    :class:`FileChanged` otherwise."""
    folders = list(folders)
    if not _DIR_FD_OK:  # no *at() calls here: re-resolve and compare, then write by name
        check_resolves_to(path, folders)
        if expected is not ANY and fingerprint(path) != expected:
            raise FileChanged(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)  # an existing file keeps its mode
        return
    with open_directory(path.parent, folders, create=True) as dfd:
        if expected is not ANY and fingerprint_at(dfd, path.name) != expected:
            raise FileChanged(path)
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
            mode = st.st_mode & 0o7777 if stat.S_ISREG(st.st_mode) else default_mode()
        except FileNotFoundError:
            mode = default_mode()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        while True:
            tmp = f".{path.name}.{secrets.token_hex(4)}.eca-tmp"
            try:
                fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
