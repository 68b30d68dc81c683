"""``chat/rollback`` and ``chat/fork`` through a real ``eca-notebook server`` process over stdio: the files a rewound
turn wrote are reverted, clients get ``chat/cleared`` and the kept messages, the model's next request no longer holds
the removed turns; a fork opens a new chat that continues from the fork point; saved chats keep their ids; errors."""

from __future__ import annotations

import json

import pytest

from eca_notebook.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from eca_notebook.testing.llm_server import Reply, Stall, ToolCall

from .test_server_chat import completion_requests, sent_texts

pytestmark = pytest.mark.e2e

MODEL = "openai/gpt-4.1"
API = "openai-responses"


async def turn(eca, message: str, chat_id: str | None = None, approve: tuple[str, ...] = ()) -> tuple[str, str]:
    """Prompt, approve the calls named, wait for the turn's end; the chat id and the prompt's ``contentId``."""
    mark = len(eca.messages)
    params = {"message": message, "model": MODEL, **({"chatId": chat_id} if chat_id else {})}
    result = await eca.request("chat/prompt", params)
    assert result["status"] == "prompting", result
    chat_id = result["chatId"]
    for call_id in approve:
        await eca.wait_for(lambda m, c=call_id: m.method == "chat/contentReceived"
                           and m.params["content"]["type"] == "toolCallRun" and m.params["content"]["id"] == c
                           and m.params["content"]["manualApproval"], start=mark, timeout=60)
        await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": call_id})
    await eca.wait_idle(chat_id, start=mark, timeout=60)
    echo = next(c for role, c in eca.contents(chat_id, start=mark) if role == "user")
    assert echo["text"] == message + "\n" and echo["contentId"]
    return chat_id, echo["contentId"]


def last_conversation(llm) -> str:
    return json.dumps(sent_texts(API, completion_requests(llm)[-1].body))


def write(path: str, content: str, call_id: str) -> Reply:
    return Reply([ToolCall(call_id, "eca__write_file", json.dumps({"path": path, "content": content}), chunks=2)])


async def test_rollback_reverts_the_turns_files_and_the_model_no_longer_sees_them(spawn, llm, workspace):
    llm.enqueue(Reply.text("ANSWER-ONE"), write("notes.txt", "written in turn two\n", "w1"), Reply.text("ANSWER-TWO"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, first = await turn(eca, "QUESTION-ONE")
    _, second = await turn(eca, "QUESTION-TWO", chat_id, approve=("w1",))
    assert (workspace / "notes.txt").read_text() == "written in turn two\n"

    mark = len(eca.messages)
    assert await eca.request("chat/rollback", {"chatId": chat_id, "contentId": second}) == {}
    assert not (workspace / "notes.txt").exists()  # the file turn 2 created is gone again
    after = [m for m in eca.messages[mark:] if m.params.get("chatId") == chat_id]
    assert (after[0].method, after[0].params) == ("chat/cleared", {"chatId": chat_id, "messages": True})
    replayed = [(m.params["role"], m.params["content"]) for m in after[1:] if m.method == "chat/contentReceived"]
    assert replayed[0] == ("user", {"type": "text", "text": "QUESTION-ONE\n", "contentId": first})
    texts = [c.get("text", "") for _, c in replayed]
    assert "ANSWER-ONE" in texts and not any("TWO" in t for t in texts[:-1])
    assert texts[-1].startswith("Reverted 1 file change") and "notes.txt" in texts[-1]

    llm.enqueue(Reply.text("ANSWER-THREE"))
    await turn(eca, "QUESTION-THREE", chat_id)
    sent = last_conversation(llm)
    assert "QUESTION-ONE" in sent and "ANSWER-ONE" in sent and "QUESTION-THREE" in sent
    assert "QUESTION-TWO" not in sent and "ANSWER-TWO" not in sent
    assert await eca.shutdown() == 0


async def test_fork_continues_from_the_fork_point_and_leaves_the_original_alone(spawn, llm, workspace):
    llm.enqueue(Reply.text("ANSWER-ONE"), Reply.text("ANSWER-TWO"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, first = await turn(eca, "QUESTION-ONE")
    await turn(eca, "QUESTION-TWO", chat_id)

    mark = len(eca.messages)
    result = await eca.request("chat/fork", {"chatId": chat_id, "contentId": first})
    new_id = result["chatId"]
    assert new_id and new_id != chat_id
    assert eca.of("chat/opened")[-1] == {"chatId": new_id, "title": "QUESTION-ONE (2)"}
    forked = [c for _, c in eca.contents(new_id, start=mark)]
    assert forked[0] == {"type": "text", "text": "QUESTION-ONE\n", "contentId": first}
    assert "ANSWER-ONE" in [c.get("text") for c in forked] and forked[-1] == {"type": "metadata",
                                                                               "title": "QUESTION-ONE (2)"}
    assert [c["text"] for _, c in eca.contents(chat_id, start=mark)] == ["Chat forked to: QUESTION-ONE (2)"]

    llm.enqueue(Reply.text("FORK-ANSWER"), Reply.text("ORIGINAL-ANSWER"))
    await turn(eca, "FORK-QUESTION", new_id)
    sent = last_conversation(llm)
    assert "ANSWER-ONE" in sent and "FORK-QUESTION" in sent and "QUESTION-TWO" not in sent
    await turn(eca, "ORIGINAL-QUESTION", chat_id)
    sent = last_conversation(llm)
    assert "QUESTION-TWO" in sent and "ANSWER-TWO" in sent and "FORK" not in sent
    titles = {c["id"]: c.get("title") for c in (await eca.request("chat/list", {}))["chats"]}
    assert titles == {chat_id: "QUESTION-ONE", new_id: "QUESTION-ONE (2)"}
    assert await eca.shutdown() == 0


async def test_saved_chats_keep_content_ids_and_rewind_after_a_restart(spawn, llm, workspace):
    llm.enqueue(Reply.text("ANSWER-ONE"), Reply.text("ANSWER-TWO"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, first = await turn(eca, "QUESTION-ONE")
    _, second = await turn(eca, "QUESTION-TWO", chat_id)
    assert await eca.shutdown() == 0

    eca = await spawn()
    await eca.initialize(workspace)
    mark = len(eca.messages)
    assert (await eca.request("chat/open", {"chatId": chat_id}))["found"] is True
    ids = [c.get("contentId") for role, c in eca.contents(chat_id, start=mark) if role == "user"]
    assert ids == [first, second]
    await eca.request("chat/rollback", {"chatId": chat_id, "contentId": second, "include": ["messages"]})
    fork = (await eca.request("chat/fork", {"chatId": chat_id, "contentId": first}))["chatId"]
    assert await eca.shutdown() == 0

    eca = await spawn()  # the rewind and the fork were saved
    await eca.initialize(workspace)
    summaries = {c["id"]: c for c in (await eca.request("chat/list", {}))["chats"]}
    assert summaries[chat_id]["messageCount"] == 2 and summaries[fork]["messageCount"] == 2
    llm.enqueue(Reply.text("ANSWER-THREE"))
    await turn(eca, "QUESTION-THREE", chat_id)
    assert "QUESTION-TWO" not in last_conversation(llm) and "ANSWER-ONE" in last_conversation(llm)
    assert await eca.shutdown() == 0


async def test_errors_are_json_rpc_errors_and_the_server_keeps_serving(spawn, llm, workspace):
    llm.enqueue(Reply.text("fine"), Reply([Stall(60)]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, first = await turn(eca, "hello")
    for method in ("chat/rollback", "chat/fork"):
        with pytest.raises(RpcError) as unknown_chat:
            await eca.request(method, {"chatId": "nope", "contentId": first})
        assert unknown_chat.value.code == INVALID_PARAMS and "unknown chat 'nope'" in unknown_chat.value.message
        with pytest.raises(RpcError) as unknown_id:
            await eca.request(method, {"chatId": chat_id, "contentId": "not-an-id"})
        assert unknown_id.value.code == INVALID_PARAMS and "not-an-id" in unknown_id.value.message
    with pytest.raises(RpcError) as missing:
        await eca.request("chat/rollback", {"chatId": chat_id})
    assert missing.value.code == INVALID_PARAMS

    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "slow", "model": MODEL})
    await eca.wait_for(lambda m: m.method == "chat/statusChanged" and m.params == {"chatId": chat_id,
                                                                                   "status": "running"}, start=mark)
    with pytest.raises(RpcError) as busy:
        await eca.request("chat/rollback", {"chatId": chat_id, "contentId": first})
    assert busy.value.code == INVALID_REQUEST and "chat/promptStop" in busy.value.message
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id, start=mark, timeout=60)
    assert await eca.request("chat/rollback", {"chatId": chat_id, "contentId": first}) == {}
    llm.enqueue(Reply.text("still serving"))
    await turn(eca, "again", chat_id)
    assert await eca.shutdown() == 0
