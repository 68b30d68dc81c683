"""``/export`` → ``/import`` (into another server) and ``/fork`` through a real ``eca-notebook server`` over stdio."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests, sent_texts
from .test_server_commands import run, system_texts

pytestmark = pytest.mark.e2e


def opened_chats(eca, start: int, *, besides: tuple[str, ...]) -> list[dict]:
    return [m.params for m in eca.messages[start:] if m.method == "chat/opened" and m.params["chatId"] not in besides]


async def test_export_then_import_in_another_server(spawn, llm, workspace):
    llm.enqueue(Reply.text("Noted: the code word is HERON."), Reply.text("HERON"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "The code word is HERON", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    _, contents = await run(eca, "/export saved/heron.json", chat_id)
    target = workspace / "saved" / "heron.json"
    assert f"Chat exported to {target}" in system_texts(contents)
    assert json.loads(target.read_text())["chat"]["title"] == "The code word is HERON"
    await eca.kill()

    other = await spawn()  # a fresh server (another machine, as far as the chat is concerned)
    await other.initialize(workspace)
    mark = len(other.messages)
    importer, contents = await run(other, "/import saved/heron.json")
    assert "Imported chat to: The code word is HERON" in system_texts(contents)
    opened = opened_chats(other, mark, besides=(importer,))
    assert [o.get("title") for o in opened] == ["The code word is HERON"]
    new_id = opened[0]["chatId"]
    replayed = [c.get("text") for _, c in other.contents(new_id, start=mark)]
    assert "The code word is HERON\n" in replayed

    listed = await other.request("chat/list", {})
    assert new_id in json.dumps(listed)
    await run(other, "What is the code word?", new_id, model="openai/gpt-4.1")
    await other.wait_idle(new_id)
    history = sent_texts("openai-responses", completion_requests(llm)[-1].body)
    assert history[0] == ("user", "The code word is HERON")
    assert history[-1] == ("user", "What is the code word?") and len(history) == 3


async def test_fork_continues_in_a_new_chat(spawn, llm, workspace):
    llm.enqueue(Reply.text("Noted: OTTER."), Reply.text("OTTER"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "Remember OTTER", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    mark = len(eca.messages)
    _, contents = await run(eca, "/fork", chat_id)
    assert "Chat forked to: Remember OTTER (2)" in system_texts(contents)
    opened = opened_chats(eca, mark, besides=(chat_id,))
    assert [o.get("title") for o in opened] == ["Remember OTTER (2)"]
    fork_id = opened[0]["chatId"]

    await run(eca, "Which animal?", fork_id, model="openai/gpt-4.1")
    await eca.wait_idle(fork_id)
    history = sent_texts("openai-responses", completion_requests(llm)[-1].body)
    assert history[0] == ("user", "Remember OTTER") and history[-1] == ("user", "Which animal?")
    assert not any("/fork" in text for _, text in history)
