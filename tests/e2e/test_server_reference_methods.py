"""The reference server's newer methods over a real ``eca-notebook server`` (issue 34): ``chat/queryFiles``,
``chat/clear``, ``chat/history`` paging and ``chat/open``'s window, with the params eca-emacs sends."""

from __future__ import annotations

import asyncio

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests, sent_texts
from .test_server_commands import run

pytestmark = pytest.mark.e2e


async def test_query_files_answers_only_files(spawn, workspace):
    """eca-emacs' file completion: ``chat/queryFiles`` ``{chatId, query}`` → ``{chatId, files}``, file contexts only
    (no directories, repo map or git), ignored files left out."""
    (workspace / "src" / "components").mkdir(parents=True)
    (workspace / "src" / "components" / "button.py").write_text("x = 1\n")
    (workspace / "src" / "component_test.py").write_text("y = 2\n")
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "component.py").write_text("ignored\n")
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "/doctor")
    files: list = []
    for _ in range(600):  # a condition, with a generous guard (60 s)
        answer = await eca.request("chat/queryFiles", {"chatId": chat_id, "query": "compo"})
        files = answer["files"]
        if len(files) >= 2:
            break
        await asyncio.sleep(0.1)
    assert answer["chatId"] == chat_id
    assert files and all(f["type"] == "file" for f in files)
    paths = [f["path"] for f in files]
    assert any(p.endswith("src/component_test.py") for p in paths)
    assert any(p.endswith("src/components/button.py") for p in paths)
    assert not any("build" in p for p in paths)
    everything = (await eca.request("chat/queryFiles", {"query": ""}))
    assert "chatId" not in everything and {f["type"] for f in everything["files"]} == {"file"}
    # chat/queryContext still offers the folder and the repo map
    contexts = (await eca.request("chat/queryContext", {"query": "compo", "contexts": []}))["contexts"]
    assert any(c["type"] == "directory" for c in contexts)


async def test_clear_empties_the_messages_and_keeps_the_chat(spawn, llm, workspace):
    """eca-emacs' ``eca-chat-clear``: ``chat/clear`` ``{chatId, messages: true}`` → ``{}``, every client told
    ``chat/cleared {chatId, messages: true}``; the chat keeps its id, title and trust, the next prompt starts a fresh
    conversation (the model sees nothing of before), and reopening it replays nothing."""
    llm.enqueue(Reply.text("The answer is 42."))
    llm.enqueue(Reply.text("Fresh start."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "what is the answer?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    assert await eca.request("chat/update", {"chatId": chat_id, "title": "Answers", "trust": True}) == {}
    mark = len(eca.messages)
    assert await eca.request("chat/clear", {"chatId": chat_id, "messages": True}) == {}
    cleared = [m.params for m in eca.messages[mark:] if m.method == "chat/cleared"]
    assert cleared == [{"chatId": chat_id, "messages": True}]
    listed = {c["id"]: c for c in (await eca.request("chat/list", {}))["chats"]}
    assert listed[chat_id]["title"] == "Answers"

    mark = len(eca.messages)
    opened = await eca.request("chat/open", {"chatId": chat_id})
    assert opened["found"] is True
    assert not [m for m in eca.messages[mark:] if m.method == "chat/contentReceived"]

    await run(eca, "start over", chat_id, model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    conversation = sent_texts("openai-responses", completion_requests(llm)[1].body)
    assert [text for _, text in conversation] == ["start over"]
    # an unknown chat is ignored, as the reference does
    assert await eca.request("chat/clear", {"chatId": "no-such-chat", "messages": True}) == {}
