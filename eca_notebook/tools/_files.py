"""File I/O helpers for the tools: bounded reads, binary sniffing, fingerprints and atomic writes."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = [
    "SNIFF_BYTES",
    "MAX_EDIT_BYTES",
    "is_binary",
    "looks_binary",
    "fingerprint",
    "read_text",
    "atomic_write",
]

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
