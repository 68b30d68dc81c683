"""Saved chats, one JSON file per chat, per set of workspace folders — so chats survive a refresh or a restart.

Why it is built this way:
- Chat ids come from clients (any string up to 256 chars, e.g. ``../../x``), so a file name is never derived from an
  id directly: it is a hash of the id, and the id lives inside the file (checked on load).
- Every write is atomic (temp file in the same directory, fsync, ``os.replace``): a crash or a failing write leaves
  the previous version, never half a file.
- A broken file is moved aside to ``*.corrupt`` and logged; loading or listing never crashes the server.
- Listing many chats must not read every file: ``index.json`` caches each chat's summary together with the file's
  mtime and size, and is refreshed from the files that changed (so it heals itself when missing, corrupt or stale,
  e.g. after another process wrote a chat).
- API keys must not end up on disk: every string goes through the process-wide redaction (known secret values,
  URL credentials, key shapes) before writing.
- Files are 0600 and the directory 0700: chat history is private.
- Images stay out of the chat's JSON: the writer puts each image's bytes (a message's image, an ``image`` content's
  base64) in a side file ``images/<sha256>.<ext>`` — content-addressed, so ten saves of a chat write its screenshot
  once; at most :data:`MAX_SIDE_FILE_BYTES` each — and the record names the file. :meth:`ChatStore.load` puts the
  bytes back. A chat with ten screenshots is a small JSON that lists and parses fast.
- Saving never blocks the event loop in proportion to the chat's size: :meth:`ChatStore.save_in_background` takes a
  cheap structural snapshot (dicts and lists copied, strings shared) and hands it to one writer thread per store,
  which serializes (:func:`serialize`, the one place a record becomes file contents) and writes it. One thread
  keeps the order: a later save of a chat is never overwritten by an earlier one (a save still waiting is simply
  replaced by the newer one), and a delete wins over a save in flight. The lock that listing takes is held only for
  the final rename and the index update, never while a large chat is encoded or written.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

from ..._fileio import PRIVATE_MODE, atomic_write
from ..._redact import redact_json
from ..config import commit_temp, ensure_private_dir, sync_dir, write_temp, xdg_cache_home
from ._chat import ChatRecord

__all__ = ["MAX_CHAT_ID_LENGTH", "ChatStore", "StoredSummary", "chats_dir_for", "serialize", "snapshot"]

logger = logging.getLogger(__name__)

MAX_CHAT_ID_LENGTH = 256
INDEX_NAME = "index.json"
_INDEX_VERSION = 1
_MIN_SECRET_LENGTH = 8  # shorter "secrets" would scrub ordinary words out of every chat
_STEM = re.compile(r"[0-9a-f]{32}")
_STALE_TEMP_SECONDS = 24 * 3600
_SUMMARY_KEYS = ("id", "title", "createdAt", "updatedAt", "model", "messageCount")
IMAGES_DIR = "images"
#: The largest image a side file holds (the size images are limited to when they come in: eca_notebook/_images.py).
MAX_SIDE_FILE_BYTES = 20 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SIDE_FILE = re.compile(r"[0-9a-f]{64}\.(png|jpg|gif|webp|bin)")
_FILE_REF = re.compile(r'"file": "([0-9a-f]{64}\.(?:png|jpg|gif|webp|bin))"')
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def chats_dir_for(workspace_folders: Sequence[Path], env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/eca-notebook/chats/<16 hex>/``: one directory per set of workspace folders (order-free)."""
    env = os.environ if env is None else env
    folders = sorted(str(Path(p).expanduser().resolve()) for p in workspace_folders)
    digest = hashlib.sha256("\n".join(folders).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return xdg_cache_home(env) / "eca-notebook" / "chats" / digest


def _stem(chat_id: str) -> str:
    return hashlib.sha256(chat_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _valid_id(chat_id: Any) -> bool:
    return isinstance(chat_id, str) and 0 < len(chat_id) <= MAX_CHAT_ID_LENGTH


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _scrub(value: Any, secrets: Sequence[str]) -> Any:
    """The one redaction of :mod:`eca_notebook._redact` (known secrets, URL credentials, key shapes) plus *secrets*."""
    return redact_json(value, secrets)


def snapshot(value: Any) -> Any:
    """A copy of a record's containers (strings and numbers are immutable and shared): the chat goes on changing on
    the loop while the writer thread encodes this. Costs one step per dict/list, not per byte."""
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [snapshot(v) for v in value]
    return value


def serialize(record: Mapping[str, Any], secrets: Sequence[str]) -> tuple[dict[str, Any], Iterator[str]]:
    """What is written for *record*: secrets scrubbed to ``***`` (the ``id`` itself never), JSON-encoded. Returns the
    record's scalar fields scrubbed (its summary goes to the index) and the file's text in pieces. Runs on the writer
    thread; the one place where a record becomes file contents.

    Why pieces: the C encoder keeps the GIL for a whole call, so one call on a 50 MB chat would freeze the event
    loop's thread as surely as encoding on the loop. Lists (messages, contents: nearly all of a chat's bytes) are
    scrubbed and encoded item by item, and the writer lets go of the GIL between pieces.
    """

    def clean(key: str, value: Any) -> Any:
        return value if key == "id" else _scrub(value, secrets)

    head = {k: (v if isinstance(v, list) else clean(k, v)) for k, v in record.items()}

    def pieces() -> Iterator[str]:
        yield "{"
        for i, (key, value) in enumerate(head.items()):
            yield (", " if i else "") + json.dumps(key) + ": "
            if isinstance(value, list):
                yield "["
                for j, item in enumerate(value):
                    yield (", " if j else "") + json.dumps(clean(key, item))
                yield "]"
            else:
                yield json.dumps(value)
        yield "}"

    return head, pieces()


def _has_image(items: Any, marker: str) -> bool:
    """Whether a record's list holds an image: a message with ``images`` / a content of type ``image``."""
    if not isinstance(items, list):
        return False
    if marker == "images":
        return any(isinstance(m, dict) and m.get("images") for m in items)
    return any(isinstance(i, dict) and isinstance(i.get("content"), dict) and i["content"].get("type") == "image"
               for i in items)


class StoredSummary(TypedDict):
    """A saved chat in :meth:`ChatStore.list` (and the index file that caches the list)."""

    id: str
    title: str | None
    createdAt: int
    updatedAt: int
    model: str | None
    messageCount: int


class _IndexEntry(StoredSummary):
    """A chat in the index file: its summary and what says the file is unchanged since."""

    mtimeNs: int
    size: int


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _well_formed(entry: Mapping[str, Any]) -> bool:
    """Whether a cached index entry holds what :func:`_summary` makes: the index is a file anyone may have written,
    and ``chat/list`` answers with typed summaries — an entry that is not is summarised again from its chat file."""
    return (all(isinstance(entry.get(k), int) and not isinstance(entry.get(k), bool)
                for k in ("createdAt", "updatedAt", "messageCount"))
            and all(entry.get(k) is None or isinstance(entry.get(k), str) for k in ("title", "model")))


def _summary(record: Mapping[str, Any], mtime_ns: int) -> StoredSummary:
    updated = _number(record.get("updatedAt"))
    if updated is None:
        updated = mtime_ns // 1_000_000
    created = _number(record.get("createdAt"))
    count = _number(record.get("messageCount"))
    if count is None:
        messages = record.get("messages")
        count = len(messages) if isinstance(messages, list) else 0
    title, model = record.get("title"), record.get("model")
    return {
        "id": record["id"],
        "title": title if isinstance(title, str) else None,
        "createdAt": created if created is not None else updated,
        "updatedAt": updated,
        "model": model if isinstance(model, str) else None,
        "messageCount": count,
    }


class ChatStore:
    """Chats saved under *root*. Thread-safe within a process; several processes sharing *root* are tolerated
    (last writer wins per chat; the index repairs itself)."""

    def __init__(self, root: Path, *, secrets: Callable[[], Iterable[str]] = lambda: ()) -> None:
        self.root = Path(root)
        self._secrets = secrets
        self._lock = threading.RLock()  # files and index; never held while encoding or writing a chat's bytes
        # The background writer: saves waiting (one per chat, oldest first), the chat being written, and per chat a
        # generation bumped by delete so a save in flight knows it lost.
        self._queue = threading.Condition()
        self._waiting: dict[str, tuple[ChatRecord, int]] = {}
        self._writing: str | None = None
        self._worker: threading.Thread | None = None
        self._generation: dict[str, int] = {}
        self._names: dict[str, str] = {}  # an image content's base64 (its hash) → its side file (writer thread)

    # -- paths ---------------------------------------------------------------------------------------------------

    def path_for(self, chat_id: str) -> Path:
        """The file of *chat_id* (whether or not it exists)."""
        return self.root / f"{_stem(chat_id)}.json"

    @property
    def index_path(self) -> Path:
        """The summary index of the saved chats (a cache: rebuilt from the chat files when missing)."""
        return self.root / INDEX_NAME

    # -- public API ----------------------------------------------------------------------------------------------

    def save(self, record: ChatRecord) -> None:
        """Write *record* (must have a string ``id`` of 1–256 chars) atomically, secrets scrubbed to ``***``.

        Raises ``ValueError`` for a bad id, ``TypeError`` for a value JSON can't hold, ``OSError`` for disk errors;
        in every case the previously saved version is left intact. The ``id`` itself is never scrubbed.
        """
        chat_id = self._check(record)
        self._write(chat_id, record, None)

    def save_in_background(self, record: ChatRecord, *, copy: bool = True) -> None:
        """Queue *record* for the writer thread and return at once (see the module docstring). With ``copy=False``
        the caller promises nothing in *record* changes any more (it made its own :func:`snapshot`).

        Raises ``ValueError``/``TypeError`` for a bad record right away; a failing write is logged by the writer (the
        previous version stays, the next save retries). :meth:`flush` / :meth:`wait_saved` wait for the writes.
        """
        chat_id = self._check(record)
        frozen = snapshot(record) if copy else record
        with self._queue:
            self._waiting.pop(chat_id, None)  # a save not started yet is superseded: the newer one goes to the back
            self._waiting[chat_id] = (frozen, self._generation.get(chat_id, 0))
            if self._worker is None:
                self._worker = threading.Thread(target=self._drain, name="eca-chat-writer", daemon=True)
                self._worker.start()
            self._queue.notify_all()

    def wait_saved(self, chat_id: str, timeout: float | None = None) -> bool:
        """Block until no save of *chat_id* is waiting or being written; False on timeout. (Call it off the loop.)"""
        with self._queue:
            return self._queue.wait_for(lambda: chat_id not in self._waiting and self._writing != chat_id, timeout)

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every queued save is written; False on timeout. (Call it off the loop.)"""
        with self._queue:
            return self._queue.wait_for(lambda: not self._waiting and self._writing is None, timeout)

    def _drain(self) -> None:
        """The writer thread: write queued saves oldest first; exit when there are none (restarted on demand)."""
        while True:
            with self._queue:
                if not self._waiting:
                    self._worker = None
                    self._queue.notify_all()
                    return
                chat_id = next(iter(self._waiting))
                record, generation = self._waiting.pop(chat_id)
                self._writing = chat_id
            try:
                self._write(chat_id, record, generation)
            except Exception:  # the previous version stays on disk; the chat's next save retries
                logger.exception("could not save chat %s", chat_id)
            finally:
                with self._queue:
                    self._writing = None
                    self._queue.notify_all()

    def _check(self, record: Any) -> str:
        if not isinstance(record, Mapping):
            raise TypeError("a chat record must be a dict")
        chat_id = record.get("id")
        if not _valid_id(chat_id):
            raise ValueError(f"a chat record needs an 'id' string of 1 to {MAX_CHAT_ID_LENGTH} characters")
        return str(chat_id)

    def _write(self, chat_id: str, record: Mapping[str, Any], generation: int | None) -> None:
        """Encode and write outside the lock; rename and update the index under it (unless a delete came since
        *generation*: then the new bytes are dropped, so a deleted chat never comes back)."""
        record = self._images_out(record)
        clean, pieces = serialize(record, self._current_secrets())
        ensure_private_dir(self.root)
        path = self.path_for(chat_id)
        written = write_temp(path, pieces)  # data fsynced here, outside the lock
        tmp: Path | None = written
        # Replacing a large file frees its blocks inside the rename: keep a second link to the old version so that
        # happens in the unlink below, after the lock is released.
        old: Path | None = path.with_name(f".tmp-old-{written.name[5:]}")
        try:
            os.link(path, path.with_name(f".tmp-old-{written.name[5:]}"))
        except OSError:
            old = None
        try:
            with self._lock:  # only renames and a small index under the lock: no fsync, listing never waits long
                if generation is not None and self._generation.get(chat_id, 0) != generation:
                    return
                commit_temp(written, path, sync_dir=False)
                tmp = None
                try:
                    st = path.stat()
                    index = self._read_index() or {}
                    index[path.stem] = {**_summary(clean, st.st_mtime_ns), "mtimeNs": st.st_mtime_ns,
                                        "size": st.st_size}
                    self._write_index(index, durable=False)  # a cache: list() heals it after a crash
                except OSError:
                    # The chat itself is saved; list() rebuilds the index entry from the file.
                    logger.warning("could not update the chat index in %s", self.root, exc_info=True)
            sync_dir(self.root)  # the rename made durable
        finally:
            for leftover in (tmp, old):
                if leftover is not None:
                    with contextlib.suppress(OSError):
                        leftover.unlink()

    def load(self, chat_id: str) -> ChatRecord | None:
        """The saved record, or None when absent, unreadable (moved aside to ``*.corrupt``) or not this id's."""
        if not _valid_id(chat_id):
            return None
        with self._lock:
            record = self._read_chat(self.path_for(chat_id))
        if record is None or record.get("id") != chat_id:
            return None
        # a file anyone may have written: a ChatRecord in shape only, Chat.from_record checks each field it reads
        return cast(ChatRecord, self._images_in(record))

    # -- images in side files --------------------------------------------------------------------------------------

    @property
    def images_dir(self) -> Path:
        """Where the saved chats' images are (one file per image, named by its SHA-256)."""
        return self.root / IMAGES_DIR

    def _images_out(self, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """*record* with every image's bytes written to a side file and replaced by its name (writer thread)."""
        messages, contents = record.get("messages"), record.get("contents")
        subagents = record.get("subagents")
        if not (_has_image(messages, "images") or _has_image(contents, "image") or subagents):
            return record
        out = dict(record)
        if isinstance(messages, list):
            out["messages"] = [self._message_images_out(m) for m in messages]
        if isinstance(contents, list):
            out["contents"] = [self._content_image_out(c) for c in contents]
        if isinstance(subagents, list):
            out["subagents"] = [{**s, "contents": [self._content_image_out(c) for c in s.get("contents") or []]}
                                if isinstance(s, dict) else s for s in subagents]
        return out

    def _message_images_out(self, message: Any) -> Any:
        if not isinstance(message, dict) or not message.get("images"):
            return message
        images = []
        for image in message["images"]:
            data = image.get("data") if isinstance(image, dict) else None
            if not isinstance(data, bytes):
                continue
            digest = image.get("sha256")  # (the ImagePart's own, computed once when it came in)
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                digest = hashlib.sha256(data).hexdigest()
            name = self._side_file(digest, str(image.get("media_type")), data)
            if name is not None:
                images.append({k: v for k, v in image.items() if k != "data"} | {"file": name})
        return {**message, "images": images}

    def _content_image_out(self, item: Any) -> Any:
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(content, dict) or content.get("type") != "image" or not isinstance(content.get("base64"),
                                                                                                 str):
            return item
        name = self._content_side_file(content["base64"], str(content.get("mediaType")))
        kept = {k: v for k, v in content.items() if k != "base64"}
        return {**item, "content": kept | ({"file": name} if name is not None else {})}

    def _content_side_file(self, text: str, media_type: str) -> str | None:
        """The side file of an ``image`` content's base64: named by the hash of its bytes, like a message's image (one
        file for the picture a prompt attached and shows); the text's own hash remembers the name, so a later save
        of the chat decodes nothing."""
        key = hashlib.sha256(text.encode("ascii", "replace")).hexdigest()
        name = self._names.get(key)
        if name is not None and (self.images_dir / name).exists():
            return name
        if len(text) > MAX_SIDE_FILE_BYTES * 4 // 3 + 4:
            return None
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
        name = self._side_file(hashlib.sha256(data).hexdigest(), media_type, data)
        if name is not None:
            if len(self._names) > 10_000:
                self._names.clear()
            self._names[key] = name
        return name

    def _side_file(self, digest: str, media_type: str, data: bytes) -> str | None:
        """The side file holding *data* (written when new), or None when it is over :data:`MAX_SIDE_FILE_BYTES`
        (the image is then not kept)."""
        name = f"{digest}.{_EXT.get(media_type, 'bin')}"
        path = self.images_dir / name
        if path.exists():
            return name
        if len(data) > MAX_SIDE_FILE_BYTES:
            return None
        ensure_private_dir(self.images_dir)
        fd, tmp = tempfile.mkstemp(dir=self.images_dir, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), PRIVATE_MODE)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)  # (same bytes under the same name: two writers racing write the same file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return name

    def _read_side_file(self, name: Any) -> bytes | None:
        if not isinstance(name, str) or not _SIDE_FILE.fullmatch(name):  # a record is data: no paths out of here
            return None
        try:
            with open(self.images_dir / name, "rb") as fh:
                data = fh.read(MAX_SIDE_FILE_BYTES + 1)
        except OSError:
            return None
        return data if len(data) <= MAX_SIDE_FILE_BYTES else None

    def _images_in(self, record: dict[str, Any]) -> dict[str, Any]:
        """*record* with its images' bytes read back from their side files (an image whose file is gone is dropped
        from a message, and shown as a text saying so in the contents)."""
        for message in record.get("messages") or []:
            if isinstance(message, dict) and isinstance(message.get("images"), list):
                images = []
                for image in message["images"]:
                    data = self._read_side_file(image.get("file")) if isinstance(image, dict) else None
                    if data is not None:
                        images.append({k: v for k, v in image.items() if k != "file"} | {"data": data})
                message["images"] = images
        lists = [record.get("contents")] + [s.get("contents") for s in record.get("subagents") or []
                                            if isinstance(s, dict)]
        for items in lists:
            for item in items if isinstance(items, list) else []:
                content = item.get("content") if isinstance(item, dict) else None
                if isinstance(content, dict) and content.get("type") == "image" and "file" in content:
                    data = self._read_side_file(content.get("file"))
                    if data is None:
                        item["content"] = {"type": "text", "text": "(an image of this chat is no longer saved)\n"}
                    else:
                        item["content"] = {k: v for k, v in content.items() if k != "file"} | {
                            "base64": base64.b64encode(data).decode("ascii")}
        return record

    def list(self) -> list[StoredSummary]:
        """Summaries ``{id, title, createdAt, updatedAt, model, messageCount}``, most recently updated first."""
        with self._lock:
            if not self.root.is_dir():
                return []
            index = self._read_index()
            changed = index is None
            known = index or {}
            fresh: dict[str, _IndexEntry] = {}
            try:
                entries = list(os.scandir(self.root))
            except OSError:
                logger.warning("cannot list saved chats in %s", self.root, exc_info=True)
                return []
            for entry in entries:
                name = entry.name
                if not name.endswith(".json") or not _STEM.fullmatch(name[:-5]):
                    continue
                stem = name[:-5]
                try:
                    st = entry.stat()
                except OSError:
                    continue
                cached = known.get(stem)
                if (cached and cached.get("mtimeNs") == st.st_mtime_ns and cached.get("size") == st.st_size
                        and _well_formed(cached)):
                    fresh[stem] = cached
                    continue
                changed = True
                record = self._read_chat(Path(entry.path))
                if record is None or _stem(record["id"]) != stem:
                    continue
                fresh[stem] = {**_summary(record, st.st_mtime_ns), "mtimeNs": st.st_mtime_ns, "size": st.st_size}
            if changed or fresh.keys() != known.keys():
                try:
                    self._write_index(fresh)
                except OSError:
                    logger.warning("could not write the chat index in %s", self.root, exc_info=True)
        summaries = [cast(StoredSummary, {k: entry.get(k) for k in _SUMMARY_KEYS}) for entry in fresh.values()]
        summaries.sort(key=lambda s: s.get("updatedAt") or 0, reverse=True)
        return summaries

    def delete(self, chat_id: str) -> bool:
        """Remove a saved chat; True when there was one."""
        if not _valid_id(chat_id):
            return False
        with self._lock:
            with self._queue:  # a waiting save is dropped, one in flight finds its generation changed
                self._waiting.pop(chat_id, None)
                self._generation[chat_id] = self._generation.get(chat_id, 0) + 1
            path = self.path_for(chat_id)
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            try:
                index = self._read_index()
                if index is not None and index.pop(path.stem, None) is not None:
                    self._write_index(index)
            except OSError:
                logger.warning("could not update the chat index in %s", self.root, exc_info=True)
            return True

    def prune(self, max_age_days: float) -> int:
        """Delete chats not updated for *max_age_days*; returns how many. ``<= 0`` disables pruning (as the
        reference's ``chatRetentionDays: 0``). Also clears leftover temp files and old ``*.corrupt`` files."""
        if max_age_days <= 0:
            self._sweep_images()
            return 0
        cutoff_ms = _now_ms() - int(max_age_days * 86_400_000)
        removed = 0
        for summary in self.list():
            if (summary.get("updatedAt") or 0) < cutoff_ms and self.delete(summary["id"]):
                removed += 1
        self._sweep(cutoff_ms / 1000)
        self._sweep_images()
        return removed

    def _sweep_images(self) -> None:
        """Remove the side files no saved chat names any more (their chats deleted or pruned; several chats may
        share one) and stale temp files — only those older than an hour: a save in flight writes its images before
        its chat. Reads every chat file, which is cheap because images are not in them."""
        folder = self.images_dir
        if not folder.is_dir():
            return
        named: set[str] = set()
        try:
            for entry in os.scandir(self.root):
                if entry.name.endswith(".json") and _STEM.fullmatch(entry.name[:-5]):
                    with contextlib.suppress(OSError):
                        named.update(_FILE_REF.findall(Path(entry.path).read_text("utf-8", errors="replace")))
            entries = list(os.scandir(folder))
        except OSError:
            return
        now = time.time()
        for entry in entries:
            if entry.name in named or not (_SIDE_FILE.fullmatch(entry.name) or entry.name.startswith(".tmp-")):
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > 3600:
                    os.unlink(entry.path)

    # -- internals -----------------------------------------------------------------------------------------------

    def _current_secrets(self) -> builtins.list[str]:
        # Longest first, so a secret containing another one is replaced whole.
        found = {s for s in self._secrets() if isinstance(s, str) and len(s) >= _MIN_SECRET_LENGTH}
        return sorted(found, key=len, reverse=True)

    def _read_chat(self, path: Path) -> dict[str, Any] | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("cannot read saved chat %s: %s", path.name, exc.strerror or type(exc).__name__)
            return None
        try:
            record = json.loads(data.decode("utf-8"))
        except ValueError as exc:  # includes UnicodeDecodeError and JSONDecodeError
            self._set_aside(path, type(exc).__name__)
            return None
        if not isinstance(record, dict) or not _valid_id(record.get("id")):
            self._set_aside(path, "not a chat record")
            return None
        return record

    def _set_aside(self, path: Path, reason: str) -> None:
        target = path.with_name(path.name + ".corrupt")
        if target.exists():
            target = path.with_name(f"{path.name}.{time.time_ns()}.corrupt")
        try:
            os.replace(path, target)
        except OSError:
            logger.warning("saved chat %s is unreadable (%s) and could not be moved aside", path.name, reason)
            return
        logger.warning("saved chat %s is unreadable (%s); moved aside to %s", path.name, reason, target.name)

    def _read_index(self) -> dict[str, _IndexEntry] | None:
        try:
            data = json.loads(self.index_path.read_bytes().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            logger.info("chat index %s unreadable; rebuilding it", self.index_path)
            return None
        if not isinstance(data, dict) or data.get("version") != _INDEX_VERSION:
            return None
        if not isinstance(data.get("chats"), dict):
            return None
        # our own cache file, but read back as any file: list() takes each entry's keys with .get
        return {k: cast(_IndexEntry, v) for k, v in data["chats"].items()
                if isinstance(v, dict) and _valid_id(v.get("id"))}

    def _write_index(self, chats: Mapping[str, Mapping[str, Any]], *, durable: bool = True) -> None:
        ensure_private_dir(self.root)
        payload = {"version": _INDEX_VERSION, "chats": dict(chats)}
        atomic_write(self.index_path, lambda fh: json.dump(payload, fh), private=True, durable=durable)

    def _sweep(self, cutoff_s: float) -> None:
        now = time.time()
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return
        for entry in entries:
            try:
                mtime = entry.stat().st_mtime
                if (entry.name.startswith(".tmp-") and now - mtime > _STALE_TEMP_SECONDS) or (
                    entry.name.endswith(".corrupt") and mtime < cutoff_s
                ):
                    os.unlink(entry.path)
            except OSError:
                continue
