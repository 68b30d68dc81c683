"""File I/O helpers for the tools: bounded reads, binary sniffing, fingerprints and atomic writes.

The file tools read and write through :class:`~eca_notebook.tools.base.FileAccess` when the door provides one (ACP
clients serve ``fs/read_text_file`` from their editor buffers, unsaved changes included) and fall back to the disk
otherwise; :func:`client_text` and :func:`write_through` are that routing, :func:`text_fingerprint` lets a text read
from the client be compared with one read from the disk.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "SNIFF_BYTES",
    "MAX_EDIT_BYTES",
    "is_binary",
    "looks_binary",
    "fingerprint",
    "read_text",
    "atomic_write",
    "check_text",
    "client_text",
    "text_fingerprint",
    "write_through",
]

log = logging.getLogger(__name__)

SNIFF_BYTES = 8192  # like git and ripgrep: a NUL byte near the start means binary
MAX_EDIT_BYTES = 10 * 1024 * 1024  # files the edit tools load whole (to diff and replace)


def looks_binary(head: bytes) -> bool:
    return b"\0" in head


def is_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return looks_binary(f.read(SNIFF_BYTES))


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


async def write_through(fs: Any, path: Path, text: str) -> None:
    """Write via ``ctx.fs`` when the client takes it, else atomically to the disk. A client that fails raises
    OSError: the user approved a write *through their editor*, silently writing behind its back instead would
    leave the editor with a stale buffer."""
    if fs is not None:
        try:
            handled = await fs.write_text(path, text)
        except Exception as exc:
            raise OSError(f"the client could not write the file: {exc}") from None
        if handled:
            return
    atomic_write(path, text)


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


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same directory + ``os.replace``: readers see the old or the new file, never half
    of one. Parent directories are created; an existing file keeps its permission bits."""
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".eca-tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
