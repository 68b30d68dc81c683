"""``chat/list`` answers from what the engine knows, not from what the store's writer thread has written so far: a
chat cleared (or renamed) right after its turn stays listed, and a new chat nobody prompted is not. CI caught the
first one: ``chat/clear`` right after a turn, before the writer wrote the chat, made it vanish from the list."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.chats import Chat
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer


@pytest.fixture
async def engine(tmp_path: Path, llm: ScriptedLLMServer):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-0000"}
    eng = Engine(EngineOptions(workspace_folders=[workspace], initialization_options={"localModel": False}, env=env))
    await eng.start()
    try:
        yield eng
    finally:
        await eng.aclose()


@pytest.fixture
def held_writer(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The store's writer thread waits at its first write until released: nothing reaches the disk meanwhile."""
    assert engine.store is not None
    release = threading.Event()
    write = engine.store._write

    def slow_write(*args, **kwargs):
        assert release.wait(120), "the test never released the writer"
        return write(*args, **kwargs)

    monkeypatch.setattr(engine.store, "_write", slow_write)
    yield release
    release.set()


async def prompted(engine: Engine, llm: ScriptedLLMServer) -> str:
    llm.enqueue(Reply.text("The answer is 42."))
    result = await engine.prompt(ChatPromptParams(message="what is the answer?", model="openai/gpt-4.1"))
    await asyncio.wait_for(asyncio.shield(engine.chats[result.chat_id].task), 60)
    return result.chat_id


async def test_a_chat_cleared_before_it_is_written_stays_listed(engine: Engine, llm: ScriptedLLMServer,
                                                                 held_writer: threading.Event):
    chat_id = await prompted(engine, llm)
    assert engine.store is not None and not engine.store.path_for(chat_id).exists()  # the writer holds it
    engine.chats[chat_id].title = "Answers"
    assert engine.clear(chat_id, messages=True)
    listed = {c.id: c for c in engine.list_chats()}
    assert chat_id in listed, "the cleared chat vanished from chat/list"
    assert listed[chat_id].title == "Answers"
    assert listed[chat_id].message_count == 0
    held_writer.set()
    await asyncio.to_thread(engine.store.flush, 60)
    assert chat_id in {c.id for c in engine.list_chats()}


async def test_a_created_chat_is_listed_before_it_is_written(engine: Engine, held_writer: threading.Event):
    """REST ``POST /sessions`` makes an empty chat "saved and announced": the list shows it at once."""
    chat = engine.create_chat(title="Plans")
    assert {c.id: c.title for c in engine.list_chats()} == {chat.id: "Plans"}


async def test_a_chat_never_saved_is_not_listed(engine: Engine, llm: ScriptedLLMServer):
    """A chat object the engine holds but never saved (a prompt still being set up) is not a chat to list yet."""
    chat_id = await prompted(engine, llm)
    engine.chats["ghost"] = Chat(id="ghost")
    assert [c.id for c in engine.list_chats()] == [chat_id]
