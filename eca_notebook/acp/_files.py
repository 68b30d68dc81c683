"""File access through the ACP client: ``fs/read_text_file`` and ``fs/write_text_file``.

Set as ``engine.file_access`` when the client advertises the ``fs`` capabilities, so the file tools see what the
user sees in the editor — unsaved buffers included — and their writes land in the editor (which saves them).

ACP file requests name a session. The engine's tools do not know which chat they run for, so the door sets
:data:`CURRENT_SESSION` around ``engine.prompt``; the turn task the engine creates there copies the context, and
every tool call of that turn reads it back here. Outside a session (no context) the disk is used.
"""

from __future__ import annotations

import contextvars
import errno
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..protocol import JsonObject
from ..protocol.errors import INVALID_PARAMS, RpcError
from ._schema import FILE_NOT_FOUND, FILE_TOO_LARGE, PERMISSION_DENIED, READ_LIMIT, ReadTextFileResult

__all__ = ["CURRENT_SESSION", "FS_RETRIES", "READ_TIMEOUT", "WRITE_TIMEOUT", "ClientFiles", "read_for_client"]

log = logging.getLogger(__name__)

#: The ACP session whose turn is running in this task (set by the door around ``engine.prompt``).
CURRENT_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar("acp_session", default=None)

# acp-messages.md "Timeout Specifications": both are retried ("Retry: Yes") — once, after a timeout only (an answer,
# even a refusal, is the client's word). A write is idempotent (the whole content), so a late first answer is harmless.
READ_TIMEOUT = 30.0
WRITE_TIMEOUT = 60.0
FS_RETRIES = 1

Request = Callable[[str, JsonObject, float], Awaitable[Any]]


class ClientFiles:
    """A :class:`~eca_notebook.tools.base.FileAccess` over the client's ``fs/*`` methods.

    ``request(method, params, timeout)`` sends one request to the client. Reads that fail (the client has no such
    file, refuses the path, times out) return None, so the tool falls back to the disk; writes that fail raise,
    so the user learns that their approved change did not land."""

    def __init__(self, request: Request, *, can_read: bool, can_write: bool) -> None:
        self._request = request
        self.can_read = can_read
        self.can_write = can_write
        #: The client refused a raw ``.ipynb`` write (Jupyter AI does): the file tools stop offering to write one.
        self.refuses_notebooks = False

    async def _retrying(self, method: str, params: JsonObject, timeout: float) -> Any:
        for attempt in range(FS_RETRIES + 1):
            try:
                return await self._request(method, params, timeout)
            except TimeoutError:
                if attempt == FS_RETRIES:
                    raise
                log.info("%s %s: no answer in time; retrying", method, params.get("path"))
        raise AssertionError("unreachable")

    async def read_text(self, path: Path) -> str | None:
        session = CURRENT_SESSION.get()
        if not self.can_read or session is None:
            return None
        try:
            result = await self._retrying("fs/read_text_file", {"sessionId": session, "path": str(path)},
                                          READ_TIMEOUT)
        except (RpcError, TimeoutError, ConnectionError) as exc:
            log.info("fs/read_text_file %s: %s; using the disk", path,
                     exc.describe() if isinstance(exc, RpcError) else exc)
            return None
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            log.info("fs/read_text_file %s: no content in the answer; using the disk", path)
            return None
        return content

    async def write_text(self, path: Path, content: str) -> bool:
        session = CURRENT_SESSION.get()
        if not self.can_write or session is None:
            return False
        try:
            await self._retrying("fs/write_text_file",
                                 {"sessionId": session, "path": str(path), "content": content}, WRITE_TIMEOUT)
        except RpcError as exc:  # the client's reason (error.data) is what lets the model correct course
            if path.suffix == ".ipynb":
                self.refuses_notebooks = True  # later turns leave notebooks to notebook tools (Toolbox)
            raise OSError(f"the client refused the write: {exc.describe()}") from None
        except TimeoutError:
            raise OSError(f"the client did not answer fs/write_text_file ({FS_RETRIES + 1} tries)") from None
        return True


def read_for_client(roots: list[Path], path: str, line: int | None = None,
                    limit: int | None = None) -> ReadTextFileResult:
    """``fs/read_text_file`` sent *to* the agent (acp-messages.md "Error Scenarios" shows a client's read answered
    ``-31700``): the file as the agent sees it on disk, for a client that compares it with its buffer. Only files of
    the session's folders (*roots*; symlinks resolved, so a link cannot lead out): anything else is ``-31701``, a
    missing file ``-31700``, one over the spec's fs/* size (10 MB) ``-31702``; the path is checked again as it is
    opened (:func:`_read_inside`). *line* (1-based) and *limit* (lines) cut it as the spec's parameters say."""
    try:
        real = Path(os.path.realpath(path))
    except OSError:  # a symlink on the way removed as it was read
        raise RpcError(FILE_NOT_FOUND, f"File not found: {path}", {"path": path}) from None
    root = max((r for r in (Path(os.path.realpath(x)) for x in roots) if real.is_relative_to(r)),
               key=lambda r: len(r.parts), default=None)
    if root is None:
        if not os.path.lexists(real):  # the spec's example: /nonexistent is File not found (the client, on this
            raise RpcError(FILE_NOT_FOUND, f"File not found: {path}", {"path": path})  # machine, can see that itself)
        raise RpcError(PERMISSION_DENIED, f"Permission denied: {path} is not in the session's folders",
                       {"path": path})
    try:
        data = _read_inside(root, real)
    except FileNotFoundError:
        raise RpcError(FILE_NOT_FOUND, f"File not found: {path}", {"path": path}) from None
    except _NotAFile:
        raise RpcError(FILE_NOT_FOUND, f"File not found: {path} is not a file", {"path": path}) from None
    except _TooLarge as exc:
        raise RpcError(FILE_TOO_LARGE, f"File too large: {path} is {exc.size} bytes (the limit is {READ_LIMIT})",
                       {"path": path, "size": exc.size, "limit": READ_LIMIT}) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # a folder of it became a symlink since it was resolved
            raise RpcError(PERMISSION_DENIED, f"Permission denied: {path} changed to a symlink while being read",
                           {"path": path}) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise RpcError(PERMISSION_DENIED, f"Permission denied: {path}", {"path": path}) from None
        raise RpcError(FILE_NOT_FOUND, f"File not found: {path} ({exc.strerror or exc})", {"path": path}) from None
    if len(data) > READ_LIMIT:  # grew since
        raise RpcError(FILE_TOO_LARGE, f"File too large: {path} is over {READ_LIMIT} bytes",
                       {"path": path, "limit": READ_LIMIT})
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RpcError(INVALID_PARAMS, f"{path} is not a UTF-8 text file", {"path": path}) from None
    if line is not None or limit is not None:
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        text = "".join(lines[start:] if limit is None else lines[start:start + limit])
    return {"content": text}


class _NotAFile(Exception):
    pass


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


# a folder is only walked through (O_PATH where there is one: a folder the user may enter but not list still works)
_O_DIR = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_inside(root: Path, real: Path) -> bytes:
    """At most ``READ_LIMIT + 1`` bytes of the regular file *real* (resolved, under *root*), reached from *root* one
    folder at a time without following a symlink — one swapped in after *real* was resolved fails with ``ELOOP`` or
    ``ENOTDIR`` instead of leading out — and opened without blocking (a FIFO swapped in opens at once and is refused
    by its type; nothing but a regular file is opened at all)."""
    names = real.relative_to(root).parts
    if not names:
        raise _NotAFile
    fd = os.open(root, _O_DIR)
    try:
        for name in names[:-1]:
            next_fd = os.open(name, _O_DIR | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        if not stat.S_ISREG(os.stat(names[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            raise _NotAFile
        file_fd = os.open(names[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                          dir_fd=fd)
    finally:
        os.close(fd)
    with open(file_fd, "rb", closefd=True) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _NotAFile
        if st.st_size > READ_LIMIT:
            raise _TooLarge(st.st_size)
        return f.read(READ_LIMIT + 1)  # never more, however much it grew since
