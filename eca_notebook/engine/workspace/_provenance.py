"""The engine's key for signing what its tools write into files: the provenance of notebook cells.

Why a key: a cell's ``metadata.eca`` says which chat and tool call wrote it, and ``notebook_read`` tells the model
"written by the assistant" for such a cell — but a notebook is a file anyone can write, and a forged record would make
an attacker's cell read as the assistant's own work. The notebook tools sign the record (with the cell's id and
source) using this key and believe only a signature that checks out.

The key is 32 random bytes in ``$XDG_CACHE_HOME/eca-notebook/provenance.key`` (owner-only, beside the saved chats),
made on first use, so a cell stays recognised across restarts. A workspace cannot reach it (it is outside every
workspace, and a tool reading it outside the workspace asks). When it cannot be read or written, a key of this
process is used: cells written now are recognised until the process ends.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path

from ..config import ensure_private_dir, xdg_cache_home

__all__ = ["KEY_BYTES", "provenance_key", "provenance_key_path"]

KEY_BYTES = 32
_PROCESS_KEY = secrets.token_bytes(KEY_BYTES)


def provenance_key_path(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/eca-notebook/provenance.key`` (next to ``chats/``)."""
    return xdg_cache_home(env) / "eca-notebook" / "provenance.key"


def provenance_key(env: Mapping[str, str]) -> bytes:
    """The key: read, or made (exclusively, 0600) when there is none yet; this process's own when neither works."""
    path = provenance_key_path(env)
    for _ in range(3):  # a second engine may be making it at the same moment: then read what it wrote
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            pass
        except OSError:
            return _PROCESS_KEY
        else:
            if len(key) == KEY_BYTES:
                return key
            if key:
                return _PROCESS_KEY  # damaged: not overwritten (someone may rely on it), not trusted either
            time.sleep(0.05)  # created but not written yet
            continue
        try:
            ensure_private_dir(path.parent)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        except OSError:
            return _PROCESS_KEY
        key = secrets.token_bytes(KEY_BYTES)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(key)
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
            return _PROCESS_KEY
        return key
    return _PROCESS_KEY
