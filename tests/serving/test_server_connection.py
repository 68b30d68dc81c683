"""ServerConnection + Engine over an in-memory stream pair: the protocol behaviour without a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol.errors import RpcError
from eca_notebook.rpc import Endpoint
from eca_notebook.serving import ServerConnection
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Stall, Text
from eca_notebook.transports.memory import memory_pair


class Harness:
    def __init__(self, client: Endpoint) -> None:
        self.client = client
        self.log: list[tuple[str, Any]] = []
        self.changed = asyncio.Event()

    def record(self, method: str, params: Any) -> None:
        self.log.append((method, params))
        self.changed.set()

    async def until(self, predicate, timeout: float = 30) -> None:
        async def wait() -> None:
            while not any(predicate(m, p) for m, p in self.log):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), timeout)

    def contents(self, chat_id: str) -> list[dict]:
        return [p["content"] for m, p in self.log if m == "chat/contentReceived" and p["chatId"] == chat_id]


@pytest.fixture
async def connected(tmp_path: Path, llm: ScriptedLLMServer):
    env = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OLLAMA_API_URL": "http://127.0.0.1:9",
    }
    options = {"providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}, "m2": {}}}}}

    def factory(params) -> Engine:
        return Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options=options, env=env))

    server_side, client_side = memory_pair()
    connection = ServerConnection(server_side, factory)
    client = Endpoint(client_side, name="test-client")
    harness = Harness(client)
    for method in ("chat/contentReceived", "config/updated", "tool/serverUpdated", "$/progress", "$/showMessage",
                   "chat/opened", "chat/deleted", "chat/statusChanged"):
        client.register(method, lambda params, _m=method: harness.record(_m, params))
    server_task = asyncio.create_task(connection.run())
    client_task = asyncio.create_task(client.run())
    await client.request("initialize", {"processId": None, "capabilities": {},
                                        "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}]})
    await client.notify("initialized")
    await harness.until(lambda m, p: m == "tool/serverUpdated")
    harness.engine = connection.engine
    yield harness
    await client.close()
    await asyncio.wait_for(server_task, 30)
    client_task.cancel()
    await asyncio.gather(client_task, return_exceptions=True)


async def test_prompt_response_comes_after_the_user_echo(connected: Harness, llm):
    llm.enqueue(Reply.text("hi"))
    result = await connected.client.request("chat/prompt", {"message": "hello", "model": "fake/m1"})
    # by the time the response arrived the user echo and title were already delivered
    echo, title = connected.contents(result["chatId"])[:2]
    assert echo == {"type": "text", "text": "hello\n", "contentId": echo["contentId"]}
    assert title == {"type": "metadata", "title": "hello"}


async def test_two_chats_stream_concurrently(connected: Harness, llm):
    llm.enqueue(Reply([Text("slow "), Stall(30)]), Reply.text("fast"))
    slow = await connected.client.request("chat/prompt", {"message": "one", "model": "fake/m1"})
    await connected.until(lambda m, p: m == "chat/contentReceived" and p["content"].get("text") == "slow ")
    fast = await connected.client.request("chat/prompt", {"message": "two", "model": "fake/m1"})
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": fast["chatId"], "status": "idle"})
    assert {"type": "text", "text": "fast"} in connected.contents(fast["chatId"])
    # the slow one is still running, and a second prompt to it is refused without disturbing it
    busy = await connected.client.request("chat/prompt", {"chatId": slow["chatId"], "message": "again"})
    assert busy["status"] == "error"
    await connected.client.notify("chat/promptStop", {"chatId": slow["chatId"]})
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": slow["chatId"], "status": "idle"})


async def test_cancel_for_an_unknown_id_is_ignored(connected: Harness):
    # (cancelling a running request is covered in tests/rpc; here: the ECA connection passes $/ methods its guard)
    await connected.client.notify("$/cancelRequest", {"id": 12345})
    assert await connected.client.request("chat/list", {}) == {"chats": []}


async def test_selected_model_and_behavior(connected: Harness, llm):
    await connected.client.notify("chat/selectedModelChanged", {"model": "fake/m2"})
    await connected.client.notify("chat/selectedBehaviorChanged", {"behavior": "plan"})
    llm.enqueue(Reply.text("ok"))
    result = await connected.client.request("chat/prompt", {"message": "which model?"})
    assert result["model"] == "fake/m2"
    idle = {"chatId": result["chatId"], "status": "idle"}
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == idle)
    assert llm.requests[-1].body["model"] == "m2"
    assert "plan mode" in llm.requests[-1].body["messages"][0]["content"]

    await connected.client.notify("chat/selectedBehaviorChanged", {"behavior": "nonsense"})
    await connected.until(lambda m, p: m == "$/showMessage" and "nonsense" in p["message"])


async def test_unknown_model_is_reported_in_chat(connected: Harness):
    result = await connected.client.request("chat/prompt", {"message": "x", "model": "nope/zzz"})
    assert result["status"] == "error"
    texts = [c["text"] for c in connected.contents(result["chatId"]) if c["type"] == "text"]
    assert any("Unknown or unavailable model 'nope/zzz'" in t and "fake/m1" in t for t in texts)


async def test_delete_while_running_stops_first(connected: Harness, llm):
    llm.enqueue(Reply([Text("x"), Stall(30)]))
    chat_id = (await connected.client.request("chat/prompt", {"message": "x", "model": "fake/m1"}))["chatId"]
    await connected.until(lambda m, p: m == "chat/contentReceived" and p["content"].get("text") == "x")
    assert await connected.client.request("chat/delete", {"chatId": chat_id}) == {}
    methods = [m for m, p in connected.log if isinstance(p, dict) and p.get("chatId") == chat_id]
    assert methods[-1] == "chat/deleted"
    assert (await connected.client.request("chat/list", {}))["chats"] == []


async def test_shutdown_then_requests_are_refused(connected: Harness):
    assert await connected.client.request("shutdown") is None
    with pytest.raises(RpcError) as err:
        await connected.client.request("chat/list", {})
    assert err.value.code == -32600


async def test_old_saved_chats_are_pruned_at_start(tmp_path: Path, llm):
    import os
    import time

    from eca_notebook.engine.chats.store import ChatStore, chats_dir_for

    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    store = ChatStore(chats_dir_for([tmp_path], env))
    old_ms = int((time.time() - 30 * 86400) * 1000)
    store.save({"id": "old", "title": "old", "createdAt": old_ms, "updatedAt": old_ms, "messageCount": 1})
    store.save({"id": "new", "title": "new", "createdAt": old_ms, "updatedAt": int(time.time() * 1000),
                "messageCount": 1})
    old_file = store.path_for("old")
    os.utime(old_file, (time.time() - 30 * 86400,) * 2)
    engine = Engine(EngineOptions(workspace_folders=[tmp_path], initialization_options={"chatRetentionDays": 14},
                                  env=env))
    await engine.start()
    assert [c.id for c in engine.list_chats()] == ["new"]
    await engine.aclose()


class GatedStream:
    """A MessageStream whose writes wait for a gate: a client that is not reading."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.written: list[Any] = []

    async def read(self) -> Any:
        await asyncio.Event().wait()

    async def write(self, message: Any) -> None:
        await self.gate.wait()
        self.written.append(message)

    async def close(self) -> None:
        pass


async def test_text_chunks_queued_for_a_client_that_is_not_reading_are_merged():
    from eca_notebook.serving import ServerConnection as Connection

    stream = GatedStream()
    connection = Connection(stream, lambda params: None)
    chunks = [f"chunk {i} " for i in range(2000)]
    connection.send("chat/contentReceived",
                    {"chatId": "c", "role": "assistant", "content": {"type": "text", "text": "first"}})
    await asyncio.sleep(0)  # the endpoint's writer takes the first one and blocks on it
    shared = [{"chatId": "c", "role": "assistant", "content": {"type": "text", "text": t}} for t in chunks]
    for params in shared:
        connection.send("chat/contentReceived", params)
    connection.send("chat/contentReceived", {"chatId": "c", "role": "assistant",
                                             "content": {"type": "reasonText", "id": "r", "text": "a"}})
    connection.send("chat/contentReceived", {"chatId": "c", "role": "assistant",
                                             "content": {"type": "reasonText", "id": "r", "text": "b"}})
    connection.send("chat/contentReceived", {"chatId": "other", "role": "assistant",
                                             "content": {"type": "text", "text": "x"}})
    connection.send("chat/contentReceived", {"chatId": "c", "role": "user", "content": {"type": "text", "text": "u1"}})
    connection.send("chat/contentReceived", {"chatId": "c", "role": "user", "content": {"type": "text", "text": "u2"}})
    from eca_notebook.serving._chunks import MERGE_BACKLOG

    # The first chunks wait as they are (a client that keeps up sees them unchanged); past the backlog bound the
    # rest are one notification.
    assert connection.endpoint.queued == MERGE_BACKLOG + 4
    stream.gate.set()
    await asyncio.wait_for(connection.endpoint.drain(), 30)
    await connection.endpoint.close()
    contents = [(m["params"]["chatId"], m["params"]["role"], m["params"]["content"]) for m in stream.written]
    texts = [c for chat, role, c in contents if chat == "c" and role == "assistant" and c["type"] == "text"]
    assert "".join(c["text"] for c in texts) == "first" + "".join(chunks)
    assert len(texts) == MERGE_BACKLOG + 1
    assert contents[len(texts):] == [
        ("c", "assistant", {"type": "reasonText", "id": "r", "text": "ab"}),
        ("other", "assistant", {"type": "text", "text": "x"}),
        ("c", "user", {"type": "text", "text": "u1"}),
        ("c", "user", {"type": "text", "text": "u2"}),
    ]
    assert shared[0]["content"]["text"] == "chunk 0 "  # the engine's dicts (shared by all listeners) are untouched


# -- numeric chat ids (a Neovim client sends its tab number) ----------------------------------------------------------


SESSION_METHODS = ("chat/contentReceived", "chat/opened", "chat/statusChanged", "chat/deleted")


@contextlib.asynccontextmanager
async def session(tmp_path: Path, llm: ScriptedLLMServer, *, capabilities: dict[str, Any] | None = None,
                  requests: dict[str, Any] | None = None, methods: tuple[str, ...] = SESSION_METHODS):
    """One client session: a fresh engine (as after a server restart) on the same workspace and saved chats. The
    client advertises *capabilities*, answers the server's *requests* (method → handler) and records *methods*."""
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "OLLAMA_API_URL": "http://127.0.0.1:9"}
    options = {"providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}
    server_side, client_side = memory_pair()
    connection = ServerConnection(server_side, lambda params: Engine(EngineOptions(
        workspace_folders=[tmp_path], initialization_options=options, env=env)))
    client = Endpoint(client_side, name="test-client")
    harness = Harness(client)
    for method in methods:
        client.register(method, lambda params, _m=method: harness.record(_m, params))
    for method, handler in (requests or {}).items():
        client.register(method, handler)
    tasks = [asyncio.create_task(connection.run()), asyncio.create_task(client.run())]
    await client.request("initialize", {"processId": None, "capabilities": capabilities or {},
                                        "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}]})
    harness.engine = connection.engine
    try:
        yield harness
    finally:
        await client.close()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)


def sent_user_texts(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


async def test_a_numeric_chat_id_is_accepted_and_answered_with_the_same_number(tmp_path: Path, llm):
    llm.enqueue(Reply.text("hello back"), Reply.text("second answer"))
    async with session(tmp_path, llm) as s:
        result = await s.client.request("chat/prompt", {"chatId": 1, "message": "hello", "model": "fake/m1"})
        assert result["chatId"] == 1 and result["status"] == "prompting"
        await s.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": 1, "status": "idle"})
        assert {"type": "text", "text": "hello back"} in s.contents(1)
        assert all(p["chatId"] == 1 for m, p in s.log)  # every notification carries the number, as an int
        # The same number continues the same chat within the session.
        await s.client.request("chat/prompt", {"chatId": 1, "message": "more", "model": "fake/m1"})
        await s.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": 1, "status": "idle"}
                      and {"type": "text", "text": "second answer"} in s.contents(1))
        assert sent_user_texts(llm.requests[-1]) == ["hello", "more"]
        listed = (await s.client.request("chat/list", {}))["chats"]
        assert [c["id"] for c in listed] == [1]
        commands = await s.client.request("chat/queryCommands", {"chatId": 1, "query": "doc"})
        assert commands["chatId"] == 1


async def test_a_new_session_s_chat_1_does_not_continue_an_old_session_s_chat_1_unless_opened(tmp_path: Path, llm):
    llm.enqueue(Reply.text("old answer"))
    async with session(tmp_path, llm) as old:
        await old.client.request("chat/prompt", {"chatId": 1, "message": "old secret plan", "model": "fake/m1"})
        await old.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": 1, "status": "idle"})

    llm.enqueue(Reply.text("new answer"))
    async with session(tmp_path, llm) as new:  # a restarted server; the client numbers its first tab 1 again
        await new.client.request("chat/prompt", {"chatId": 1, "message": "fresh start", "model": "fake/m1"})
        await new.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": 1, "status": "idle"})
        assert sent_user_texts(llm.requests[-1]) == ["fresh start"]  # nothing of the old chat reached the model
        listed = (await new.client.request("chat/list", {}))["chats"]
        assert len(listed) == 2 and listed[0]["id"] == 1  # the old conversation is kept, under its own id
        assert isinstance(listed[1]["id"], str) and listed[1]["title"] == "old secret plan"

    llm.enqueue(Reply.text("resumed"))
    async with session(tmp_path, llm) as third:
        # chat/open is the explicit resume: the latest chat this client numbered 1 (the "fresh start" one).
        opened = await third.client.request("chat/open", {"chatId": 1})
        assert opened["found"] is True
        assert {"type": "text", "text": "new answer"} in third.contents(1)
        await third.client.request("chat/prompt", {"chatId": 1, "message": "go on", "model": "fake/m1"})
        await third.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": 1, "status": "idle"})
        assert sent_user_texts(llm.requests[-1]) == ["fresh start", "go on"]


async def test_a_string_chat_id_is_unchanged_and_booleans_are_refused(connected: Harness, llm):
    llm.enqueue(Reply.text("ok"))
    result = await connected.client.request("chat/prompt", {"chatId": "1", "message": "x", "model": "fake/m1"})
    assert result["chatId"] == "1"
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": "1", "status": "idle"})
    with pytest.raises(RpcError) as err:
        await connected.client.request("chat/prompt", {"chatId": True, "message": "x"})
    assert err.value.code == -32602


async def test_chat_list_is_answered_while_a_chat_is_being_saved(connected: Harness, llm, monkeypatch):
    """Saving happens on the store's writer thread: with serialization held up there, the loop still answers."""
    import threading

    from eca_notebook.engine.chats import store as store_module

    real, entered, release, threads = store_module.serialize, threading.Event(), threading.Event(), []

    def held(record, secrets):
        threads.append(threading.get_ident())
        entered.set()
        release.wait(30)
        return real(record, secrets)

    monkeypatch.setattr(store_module, "serialize", held)
    llm.enqueue(Reply.text("saved answer"))
    result = await connected.client.request("chat/prompt", {"message": "big chat", "model": "fake/m1"})
    assert await asyncio.to_thread(entered.wait, 30)  # a save is in progress, held inside serialize...
    listed = await asyncio.wait_for(connected.client.request("chat/list", {}), 30)  # ...and the loop answers
    assert [c["id"] for c in listed["chats"]] == [result["chatId"]]
    assert threading.get_ident() not in threads
    release.set()
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": result["chatId"],
                                                                           "status": "idle"}, timeout=30)
    assert await asyncio.to_thread(connected.engine.store.wait_saved, result["chatId"], 30)
    saved = connected.engine.store.load(result["chatId"])
    assert any(c["content"].get("text") == "saved answer" for c in saved["contents"])
