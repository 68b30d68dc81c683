"""Saved chats: round trips, atomic writes, corrupt files, the self-healing index, secret scrubbing, odd ids,
pruning."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine.chats.store import ChatStore, chats_dir_for

SECRET = "sk-live-0123456789abcdefghij"
DAY_MS = 86_400_000


def now_ms() -> int:
    return int(time.time() * 1000)


def record(chat_id: str, *, title: str = "t", updated: int | None = None, **extra: Any) -> dict[str, Any]:
    updated = now_ms() if updated is None else updated
    return {
        "id": chat_id,
        "title": title,
        "createdAt": updated - 1000,
        "updatedAt": updated,
        "model": "openai/gpt-5",
        "messageCount": 2,
        "messages": [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}],
        **extra,
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "chats"


@pytest.fixture
def store(root: Path) -> ChatStore:
    return ChatStore(root)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".tmp-"))


def test_save_load_roundtrip(store: ChatStore) -> None:
    rec = record("c1", extra={"nested": [1, {"a": None}]})
    store.save(rec)
    assert store.load("c1") == rec
    assert store.load("missing") is None


def test_list_summaries_newest_first(store: ChatStore) -> None:
    t = now_ms()
    store.save(record("old", title="Old", updated=t - 5000))
    store.save(record("new", title="New", updated=t))
    store.save(record("mid", title="Mid", updated=t - 1000))
    summaries = store.list()
    assert [s["id"] for s in summaries] == ["new", "mid", "old"]
    assert summaries[0] == {
        "id": "new",
        "title": "New",
        "createdAt": t - 1000,
        "updatedAt": t,
        "model": "openai/gpt-5",
        "messageCount": 2,
    }


def test_list_on_missing_dir_is_empty_and_creates_nothing(root: Path, store: ChatStore) -> None:
    assert store.list() == []
    assert store.load("x") is None
    assert not root.exists()


def test_summary_fallbacks(store: ChatStore) -> None:
    store.save({"id": "bare", "messages": [1, 2, 3]})
    (summary,) = store.list()
    assert summary["messageCount"] == 3 and summary["title"] is None and summary["model"] is None
    assert isinstance(summary["updatedAt"], int) and summary["createdAt"] == summary["updatedAt"]


def test_save_overwrites(store: ChatStore) -> None:
    store.save(record("c", title="first"))
    store.save(record("c", title="second"))
    assert store.load("c")["title"] == "second"
    assert [s["title"] for s in store.list()] == ["second"]


def test_delete(store: ChatStore) -> None:
    store.save(record("a"))
    store.save(record("b"))
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert store.load("a") is None
    assert [s["id"] for s in store.list()] == ["b"]


def test_permissions(root: Path, store: ChatStore) -> None:
    store.save(record("c"))
    store.list()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for path in root.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_failed_write_keeps_old_version_and_leaves_no_temp(root: Path, store: ChatStore) -> None:
    store.save(record("c", title="good"))
    before = store.path_for("c").read_bytes()
    bad = record("c", title="bad")
    bad["messages"].append({"payload": object()})  # fails midway through serialisation
    with pytest.raises(TypeError):
        store.save(bad)
    assert store.path_for("c").read_bytes() == before
    assert store.load("c")["title"] == "good"
    assert leftovers(root) == []


def test_successful_writes_leave_no_temp(root: Path, store: ChatStore) -> None:
    for i in range(5):
        store.save(record(f"c{i}"))
    store.delete("c0")
    store.list()
    assert leftovers(root) == []


def test_invalid_records_rejected(store: ChatStore) -> None:
    with pytest.raises(ValueError):
        store.save({"title": "no id"})
    with pytest.raises(ValueError):
        store.save({"id": ""})
    with pytest.raises(ValueError):
        store.save({"id": "x" * 257})
    with pytest.raises(ValueError):
        store.save({"id": 42})


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"no": "id"}', b""])
def test_corrupt_file_set_aside(root: Path, store: ChatStore, garbage: bytes, caplog: pytest.LogCaptureFixture) -> None:
    store.save(record("good"))
    store.save(record("bad"))
    path = store.path_for("bad")
    path.write_bytes(garbage)
    assert store.load("bad") is None
    assert not path.exists()
    assert (root / (path.name + ".corrupt")).read_bytes() == garbage
    assert any("moved aside" in r.getMessage() for r in caplog.records)
    assert [s["id"] for s in store.list()] == ["good"]
    # A new save of the same id works again.
    store.save(record("bad", title="again"))
    assert store.load("bad")["title"] == "again"


def test_corrupt_file_found_while_listing(root: Path, store: ChatStore) -> None:
    store.save(record("good"))
    store.save(record("bad"))
    store.path_for("bad").write_text("{oops")  # changes size/mtime: the index entry is stale
    assert [s["id"] for s in store.list()] == ["good"]
    assert (root / (store.path_for("bad").name + ".corrupt")).exists()


def test_second_corruption_does_not_overwrite_first(root: Path, store: ChatStore) -> None:
    path = store.path_for("c")
    for text in ("one", "two"):
        store.save(record("c"))
        path.write_text(text)
        assert store.load("c") is None
    corrupt = sorted(p.read_text() for p in root.iterdir() if p.name.endswith(".corrupt"))
    assert corrupt == ["one", "two"]


def test_index_rebuilt_when_missing_or_corrupt(root: Path, store: ChatStore) -> None:
    for i in range(3):
        store.save(record(f"c{i}", updated=now_ms() - i))
    expected = store.list()
    index = root / "index.json"
    index.unlink()
    assert store.list() == expected
    assert index.exists()
    index.write_text("garbage{")
    assert store.list() == expected
    assert json.loads(index.read_text())["version"] == 1


def test_index_follows_external_changes(root: Path, store: ChatStore) -> None:
    store.save(record("a", title="A"))
    store.save(record("b", title="B"))
    store.list()
    other = ChatStore(root)  # another process writing to the same directory
    other.save(record("c", title="C"))
    # edit "a" behind the index's back
    path = store.path_for("a")
    path.write_text(json.dumps(record("a", title="A2")))
    store.path_for("b").unlink()
    assert {s["id"]: s["title"] for s in store.list()} == {"a": "A2", "c": "C"}


def test_a_tampered_index_entry_is_summarised_again_from_its_file(root: Path, store: ChatStore) -> None:
    """The index is a cache anyone may write: an entry whose values are not a summary's (a title that is a number, a
    count that is text) is not listed as it is — chat/list's typed summaries would refuse it — but read again."""
    store.save(record("c", title="real"))
    store.list()
    index = root / "index.json"
    data = json.loads(index.read_text())
    (entry,) = data["chats"].values()
    entry.update(title=7, messageCount="lots", createdAt=None)  # mtime and size still match the file
    index.write_text(json.dumps(data))
    assert [(s["title"], s["messageCount"]) for s in store.list()] == [("real", 2)]
    assert isinstance(json.loads(index.read_text())["chats"][next(iter(data["chats"]))]["createdAt"], int)


def test_list_uses_index_without_reading_unchanged_files(root: Path, store: ChatStore) -> None:
    store.save(record("c", title="indexed"))
    store.list()
    path = store.path_for("c")
    st = path.stat()
    # Same size and mtime but unreadable content: a listing that reads the file would set it aside.
    path.write_bytes(b"x" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [s["title"] for s in store.list()] == ["indexed"]
    assert path.exists()


def test_secrets_scrubbed(root: Path) -> None:
    secrets = [SECRET, "short"]
    store = ChatStore(root, secrets=lambda: secrets)
    rec = record(
        "c",
        title=f"key {SECRET}",
        note="a short note",
        messages=[{"text": f"my key is {SECRET}!"}, {"args": {"key": SECRET, SECRET: "as key"}}],
    )
    store.save(rec)
    text = store.path_for("c").read_text()
    assert SECRET not in text
    assert SECRET not in (root / "index.json").read_text()
    loaded = store.load("c")
    assert loaded["messages"][0]["text"] == "my key is ***!"
    assert loaded["messages"][1]["args"] == {"key": "***", "***": "as key"}
    assert loaded["title"] == "key ***"
    assert loaded["note"] == "a short note"  # "short" is too short to be treated as a secret
    assert rec["title"] == f"key {SECRET}"  # caller's record untouched

    # Secrets are read at each save: a key added later is scrubbed too.
    later = "anthropic-key-abcdefghijkl"
    secrets.append(later)
    store.save(record("d", title=later))
    assert store.load("d")["title"] == "***"


@pytest.mark.parametrize(
    "chat_id",
    ["../../x", "/etc/passwd", "a/b\\c", "chat-ü-🙂-中文", "x" * 256, "CON", ".", "..", " spaced id ", "nul\x00byte"],
)
def test_weird_ids(root: Path, store: ChatStore, chat_id: str) -> None:
    store.save(record(chat_id, title="weird"))
    files = [p for p in root.rglob("*") if p.is_file()]
    assert all(p.parent == root for p in files)  # nothing escapes the chats directory
    assert store.path_for(chat_id).name.removesuffix(".json").isalnum()
    assert store.load(chat_id)["id"] == chat_id
    assert [s["id"] for s in store.list()] == [chat_id]
    assert store.delete(chat_id) is True
    assert store.list() == []


def test_invalid_ids_on_read_paths(store: ChatStore) -> None:
    assert store.load("x" * 257) is None
    assert store.load("") is None
    assert store.delete("") is False


def test_file_for_another_id_is_not_returned(store: ChatStore) -> None:
    store.save(record("a", title="A"))
    store.path_for("b").write_bytes(store.path_for("a").read_bytes())
    assert store.load("b") is None
    assert [s["id"] for s in store.list()] == ["a"]


def test_prune(root: Path, store: ChatStore) -> None:
    t = now_ms()
    store.save(record("ancient", updated=t - 30 * DAY_MS))
    store.save(record("old", updated=t - 8 * DAY_MS))
    store.save(record("fresh", updated=t - 1 * DAY_MS))
    stale_tmp = root / ".tmp-leftover.json"
    stale_tmp.write_text("partial")
    os.utime(stale_tmp, (time.time() - 3 * 86400,) * 2)
    assert store.prune(0) == 0  # disabled, as the reference's chatRetentionDays: 0
    assert store.prune(7) == 2
    assert [s["id"] for s in store.list()] == ["fresh"]
    assert store.load("old") is None
    assert not stale_tmp.exists()
    assert store.prune(7) == 0


def test_chats_dir_for(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    a, b = tmp_path / "a", tmp_path / "b"
    d = chats_dir_for([a, b], env)
    assert d.parent == tmp_path / "cache" / "eca-notebook" / "chats"
    assert len(d.name) == 16 and int(d.name, 16) >= 0
    assert chats_dir_for([b, a], env) == d  # order does not matter
    assert chats_dir_for([a], env) != d
    assert chats_dir_for([tmp_path / "x" / ".." / "a", b], env) == d  # paths are resolved
    del env["XDG_CACHE_HOME"]
    assert chats_dir_for([a], env).parent == tmp_path / "home" / ".cache" / "eca-notebook" / "chats"


def test_separate_workspaces_do_not_share_chats(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    one = ChatStore(chats_dir_for([tmp_path / "one"], env))
    two = ChatStore(chats_dir_for([tmp_path / "two"], env))
    one.save(record("c"))
    assert two.load("c") is None and two.list() == []


# -- saving off the event loop ----------------------------------------------------------------------------------------


class GatedSerialize:
    """Wraps store.serialize: records the thread it runs on and can hold it until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        from eca_notebook.engine.chats import store as store_module

        self.real = store_module.serialize
        self.threads: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        monkeypatch.setattr(store_module, "serialize", self)

    def __call__(self, record, secrets):
        import threading

        self.threads.append(threading.get_ident())
        self.entered.set()
        assert self.release.wait(30)
        return self.real(record, secrets)


def test_background_saves_keep_the_latest_version_and_leave_the_caller_free(root: Path, monkeypatch):
    import threading

    gate = GatedSerialize(monkeypatch)
    gate.release.clear()
    store = ChatStore(root)
    rec = record("c", title="v0")
    store.save_in_background(rec)
    assert gate.entered.wait(30)  # the writer thread is inside serialize, and we are not blocked
    assert gate.threads == [gate.threads[0]] and gate.threads[0] != threading.get_ident()
    rec["title"] = "mutated after the call"  # the snapshot was taken at the call: this is not what gets written
    for version in range(1, 30):
        store.save_in_background(record("c", title=f"v{version}"))
    gate.release.set()
    assert store.flush(30)
    assert store.load("c")["title"] == "v29"
    assert len(gate.threads) == 2  # v0 (in flight) and v29: the waiting ones were superseded, never written late
    assert [c["title"] for c in store.list()] == ["v29"]


def test_a_delete_wins_over_a_save_in_flight(root: Path, monkeypatch):
    gate = GatedSerialize(monkeypatch)
    store = ChatStore(root)
    store.save(record("c", title="saved"))
    gate.release.clear()
    gate.entered.clear()
    store.save_in_background(record("c", title="in flight"))
    assert gate.entered.wait(30)
    assert store.delete("c")
    gate.release.set()
    assert store.flush(30)
    assert store.load("c") is None and store.list() == []
    assert [p.name for p in root.iterdir() if p.name.startswith(".tmp-")] == []
    store.save_in_background(record("c", title="new chat, same id"))  # a later save of the id works again
    assert store.wait_saved("c", 30)
    assert store.load("c")["title"] == "new chat, same id"


def test_background_saves_scrub_secrets_and_stay_private(root: Path):
    store = ChatStore(root, secrets=lambda: [SECRET])
    store.save_in_background(record("c", title=f"key {SECRET}"))
    assert store.flush(30)
    text = store.path_for("c").read_text()
    assert SECRET not in text and "key ***" in text
    assert stat.S_IMODE(os.stat(store.path_for("c")).st_mode) == 0o600


def test_a_parents_subagent_contents_round_trip_with_secrets_scrubbed(root: Path) -> None:
    """A subagent's chat is saved inside its parent's record (so chat/open replays it after a restart): through the
    same atomic write and the same redaction as the parent's own contents."""
    from eca_notebook.engine.chats._chat import Chat

    secret = "sk-live-subagent-0123456789"
    parent = Chat(id="p", title="t")
    parent.subagent_contents["subagent-1"] = [
        {"role": "user", "content": {"type": "text", "text": f"use {secret}\n"}},
        {"role": "assistant", "content": {"type": "text", "text": "done"}}]
    store = ChatStore(root, secrets=lambda: [secret])
    store.save(parent.to_record())
    assert secret not in store.path_for("p").read_text()
    again = Chat.from_record(store.load("p") or {})
    assert list(again.subagent_contents) == ["subagent-1"]
    assert again.subagent_contents["subagent-1"][1]["content"]["text"] == "done"
    assert "***" in again.subagent_contents["subagent-1"][0]["content"]["text"]
    assert "subagents" not in Chat(id="q").to_record()  # no subagent: the record as before


def test_image_contents_and_message_images_go_to_side_files(store: ChatStore) -> None:
    """An ``image`` content's base64 and a message's image bytes are written once each to ``images/`` (named by their
    hash) and put back on load; the JSON holds only the names. A record naming a file elsewhere reads nothing."""
    import base64

    picture = b"\x89PNG\r\n\x1a\n" + os.urandom(3000)
    b64 = base64.b64encode(picture).decode()
    image = {"role": "assistant", "content": {"type": "image", "mediaType": "image/png", "base64": b64}}
    record = {"id": "c1", "messages": [{"role": "user", "text": "look", "images": [
        {"media_type": "image/png", "data": picture, "width": 1, "height": 1, "name": "a.png", "sha256": ""}]}],
        "contents": [image], "subagents": [{"chatId": "child", "contents": [image]}]}
    store.save(record)
    store.save(record)
    text = store.path_for("c1").read_text()
    assert b64[:100] not in text and '"file": ' in text
    files = sorted((store.root / "images").iterdir())
    assert [f.read_bytes() for f in files] == [picture]  # one file for the picture, in all three places
    loaded = store.load("c1")
    assert loaded is not None
    assert loaded["contents"][0]["content"] == image["content"]
    assert loaded["subagents"][0]["contents"][0]["content"] == image["content"]
    assert loaded["messages"][0]["images"][0]["data"] == picture
    # a side file gone: the content says so instead of failing the chat
    for f in files:
        f.unlink()
    again = store.load("c1")
    assert again is not None and again["contents"][0]["content"]["type"] == "text"
    assert again["messages"][0]["images"] == []
    # a record cannot point a side file at another path
    tampered = json.loads(store.path_for("c1").read_text())
    tampered["contents"][0]["content"]["file"] = "../../../etc/passwd"
    store.path_for("c1").write_text(json.dumps(tampered))
    assert store.load("c1")["contents"][0]["content"]["type"] == "text"  # type: ignore[index]


def test_prune_removes_side_files_no_chat_names(store: ChatStore) -> None:
    picture = b"\x89PNG\r\n\x1a\n" + os.urandom(100)
    other = b"\x89PNG\r\n\x1a\n" + os.urandom(100)

    def with_image(chat_id: str, data: bytes) -> dict[str, Any]:
        return {"id": chat_id, "messages": [{"role": "user", "text": "x", "images": [
            {"media_type": "image/png", "data": data, "width": 1, "height": 1, "name": "", "sha256": ""}]}],
            "contents": []}

    store.save(with_image("keep", picture))
    store.save(with_image("shared", picture))
    store.save(with_image("gone", other))
    assert len(list((store.root / "images").iterdir())) == 2
    store.delete("gone")
    store.delete("shared")
    old = time.time() - 7200
    for f in (store.root / "images").iterdir():
        os.utime(f, (old, old))
    store.prune(0)  # (chat retention off: orphaned images still go)
    [left] = list((store.root / "images").iterdir())
    assert left.read_bytes() == picture
    assert store.load("keep")["messages"][0]["images"][0]["data"] == picture  # type: ignore[index]
