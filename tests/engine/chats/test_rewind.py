"""``chat/rollback`` and ``chat/fork`` (engine/chats/_rewind.py) through a real connection (EcaClient over the in-memory
door) and the scripted LLM server: what the model sees next, what clients are sent, the files, saved chats, errors."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient, PromptResult
from eca_notebook.engine.chats._rewind import fork_title
from eca_notebook.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Stall, ToolCall


@pytest.fixture
def config(llm: ScriptedLLMServer) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1",
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}


class Seen:
    """Every notification the client gets, in order."""

    def __init__(self, client: EcaClient) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []
        client.subscribe(lambda method, params: self.items.append((method, params)))

    def mark(self) -> int:
        return len(self.items)

    def since(self, mark: int) -> list[tuple[str, dict[str, Any]]]:
        return self.items[mark:]


@pytest.fixture
async def client(workspace: Path, env: dict[str, str], config: dict[str, Any]):
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        yield eca
    finally:
        await eca.aclose()


def write(path: str, content: str, call_id: str) -> Reply:
    return Reply([ToolCall(call_id, "eca__write_file", json.dumps({"path": path, "content": content}))])


def history(llm: ScriptedLLMServer) -> str:
    """The conversation the model was sent last (openai-chat), as one string to look into."""
    return json.dumps(llm.requests[-1].body["messages"])


async def two_turns(client: EcaClient, llm: ScriptedLLMServer, workspace: Path) -> tuple[PromptResult, PromptResult]:
    """Turn 1 answers; turn 2 writes notes.txt (approved) and changes README.md, then answers."""
    llm.enqueue(Reply.text("ANSWER-ONE"))
    first = await client.prompt("QUESTION-ONE")
    llm.enqueue(write("notes.txt", "NEW NOTES\n", "CALL-W1"), write("README.md", "# changed\n", "CALL-W2"),
                Reply.text("ANSWER-TWO"))
    second = await client.prompt("QUESTION-TWO", chat_id=first.chat_id)
    assert first.ok and second.ok, (first.error, second.error)
    assert [c.status for c in second.tool_calls] == ["done", "done"]
    assert (workspace / "notes.txt").read_text() == "NEW NOTES\n"
    assert (workspace / "README.md").read_text() == "# changed\n"
    return first, second


async def test_every_prompt_echo_carries_a_content_id(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("a"), Reply.text("b"))
    first = await client.prompt("one")
    second = await client.prompt("two", chat_id=first.chat_id)
    assert first.content_id and second.content_id and first.content_id != second.content_id
    assert client.engine is not None
    chat = client.engine.chats[first.chat_id]
    assert [getattr(m, "content_id", None) for m in chat.messages if m.role == "user"] == \
        [first.content_id, second.content_id]


async def test_rollback_reverts_the_files_and_cuts_what_the_model_sees(client: EcaClient, llm: ScriptedLLMServer,
                                                                        workspace: Path):
    seen = Seen(client)
    first, second = await two_turns(client, llm, workspace)
    assert second.content_id is not None
    mark = seen.mark()
    await client.rollback(first.chat_id, second.content_id)

    # the files of turn 2 are back: the created one is gone, the overwritten one restored
    assert not (workspace / "notes.txt").exists()
    assert (workspace / "README.md").read_text() == "# demo project\n"
    # clients were told to clear, then got the kept contents again, then the note about the files
    after = [(m, p) for m, p in seen.since(mark) if p.get("chatId") == first.chat_id]
    assert after[0] == ("chat/cleared", {"chatId": first.chat_id, "messages": True})
    replayed = [p["content"] for m, p in after[1:] if m == "chat/contentReceived"]
    texts = [c.get("text", "") for c in replayed]
    assert texts[0] == "QUESTION-ONE\n" and replayed[0]["contentId"] == first.content_id
    assert "ANSWER-ONE" in texts and not any("QUESTION-TWO" in t or "ANSWER-TWO" in t for t in texts)
    assert "Reverted 2 file changes" in texts[-1]
    # the replay is what chat/open shows from now on
    reopened = [item.content for item in await client.open_chat(first.chat_id)]
    assert [getattr(c, "text", "") for c in reopened] == texts

    llm.enqueue(Reply.text("ANSWER-THREE"))
    third = await client.prompt("QUESTION-THREE", chat_id=first.chat_id)
    assert third.ok
    sent = history(llm)
    assert "QUESTION-ONE" in sent and "ANSWER-ONE" in sent and "QUESTION-THREE" in sent
    assert "QUESTION-TWO" not in sent and "ANSWER-TWO" not in sent and "CALL-W1" not in sent


async def test_rollback_of_messages_only_keeps_the_files(client: EcaClient, llm: ScriptedLLMServer,
                                                         workspace: Path):
    first, second = await two_turns(client, llm, workspace)
    assert second.content_id is not None
    await client.rollback(first.chat_id, second.content_id, revert_files=False)
    assert (workspace / "notes.txt").read_text() == "NEW NOTES\n"
    assert client.engine is not None
    assert "QUESTION-TWO" not in json.dumps([m.text for m in client.engine.chats[first.chat_id].messages
                                             if m.role == "user"])


async def test_rollback_of_tools_only_reverts_files_and_keeps_the_chat(client: EcaClient, llm: ScriptedLLMServer,
                                                                       workspace: Path):
    first, second = await two_turns(client, llm, workspace)
    assert second.content_id is not None
    await client.request("chat/rollback", {"chatId": first.chat_id, "contentId": second.content_id,
                                           "include": ["tools"]})
    assert not (workspace / "notes.txt").exists()
    assert client.engine is not None
    chat = client.engine.chats[first.chat_id]
    tool_outputs = [m.output for m in chat.messages if m.role == "tool"]
    assert len(tool_outputs) == 2 and all("undid this change" in out for out in tool_outputs)
    called = [r["content"] for r in chat.contents if r["content"]["type"] == "toolCalled"]
    assert called and all(c["details"]["undoable"] is False for c in called)


async def test_a_file_changed_since_is_reported_not_overwritten(client: EcaClient, llm: ScriptedLLMServer,
                                                                workspace: Path):
    seen = Seen(client)
    first, second = await two_turns(client, llm, workspace)
    assert second.content_id is not None
    (workspace / "notes.txt").write_text("the user's own edit\n")
    mark = seen.mark()
    await client.rollback(first.chat_id, second.content_id)
    assert (workspace / "notes.txt").read_text() == "the user's own edit\n"  # never overwritten
    assert (workspace / "README.md").read_text() == "# demo project\n"  # the other change is reverted
    notes = [p["content"]["text"] for m, p in seen.since(mark)
             if m == "chat/contentReceived" and p["content"]["type"] == "text" and p["role"] == "system"]
    assert notes and "Could not revert 1 change" in notes[-1] and "notes.txt" in notes[-1]
    assert "Reverted 1 file change" in notes[-1]


async def test_fork_opens_a_new_chat_that_continues_from_the_fork_point(client: EcaClient, llm: ScriptedLLMServer,
                                                                        workspace: Path):
    seen = Seen(client)
    first, second = await two_turns(client, llm, workspace)
    assert first.content_id is not None
    mark = seen.mark()
    new_id = await client.fork(first.chat_id, first.content_id)
    assert new_id != first.chat_id

    got = seen.since(mark)
    opened = [p for m, p in got if m == "chat/opened"]
    assert opened == [{"chatId": new_id, "title": fork_title("QUESTION-ONE")}]
    assert opened[0]["title"] == "QUESTION-ONE (2)"
    forked = [p["content"] for m, p in got if m == "chat/contentReceived" and p["chatId"] == new_id]
    texts = [c.get("text", "") for c in forked]
    assert texts[0] == "QUESTION-ONE\n" and "ANSWER-ONE" in texts
    assert not any("QUESTION-TWO" in t for t in texts)
    original_notes = [p["content"].get("text") for m, p in got if m == "chat/contentReceived"
                      and p["chatId"] == first.chat_id]
    assert original_notes == ["Chat forked to: QUESTION-ONE (2)"]
    assert (workspace / "notes.txt").exists()  # a fork changes no file

    llm.enqueue(Reply.text("FORK-ANSWER"))
    in_fork = await client.prompt("FORK-QUESTION", chat_id=new_id)
    assert in_fork.ok
    sent = history(llm)
    assert "QUESTION-ONE" in sent and "ANSWER-ONE" in sent and "FORK-QUESTION" in sent
    assert "QUESTION-TWO" not in sent and "ANSWER-TWO" not in sent

    llm.enqueue(Reply.text("ORIGINAL-ANSWER"))
    in_original = await client.prompt("ORIGINAL-QUESTION", chat_id=first.chat_id)
    assert in_original.ok
    sent = history(llm)
    assert "QUESTION-TWO" in sent and "ANSWER-TWO" in sent and "FORK-QUESTION" not in sent
    titles = {c["id"]: c.get("title") for c in await client.list_chats()}
    assert titles[new_id] == "QUESTION-ONE (2)"


async def test_fork_at_a_tool_call_keeps_the_call_and_its_result(client: EcaClient, llm: ScriptedLLMServer,
                                                                 workspace: Path):
    first, second = await two_turns(client, llm, workspace)
    new_id = await client.fork(first.chat_id, "CALL-W1")
    assert client.engine is not None
    fork = client.engine.chats[new_id]
    called = [r["content"] for r in fork.contents if r["content"]["type"].startswith("toolCall")]
    assert {c["id"] for c in called} == {"CALL-W1"}
    assert all(not (c.get("details") or {}).get("undoable") for c in called)  # the undo stays with the original
    llm.enqueue(Reply.text("went on"))
    result = await client.prompt("go on", chat_id=new_id)
    assert result.ok
    messages = llm.requests[-1].body["messages"]
    assert [m["role"] for m in messages[-4:]] == ["user", "assistant", "tool", "user"]
    assert "CALL-W2" not in json.dumps(messages) and "ANSWER-TWO" not in json.dumps(messages)


async def test_saved_chats_keep_their_ids_and_can_be_rewound_after_a_restart(
        workspace: Path, env: dict[str, str], config: dict[str, Any], llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, config=config, env=env,
                                     approval=lambda content: True) as client:
        first, second = await two_turns(client, llm, workspace)
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as client:
        replayed = await client.open_chat(first.chat_id)
        ids = [getattr(item.content, "content_id", None) for item in replayed if item.role == "user"]
        assert ids == [first.content_id, second.content_id]
        assert second.content_id is not None
        await client.rollback(first.chat_id, second.content_id)
        assert client.engine is not None
        chat = client.engine.chats[first.chat_id]
        assert [m.role for m in chat.messages] == ["user", "assistant"]
        # the undo of the previous server is gone: said, and the files are left as they are
        note = chat.contents[-1]["content"]["text"]
        assert "no longer available" in note and "notes.txt" in note
        assert (workspace / "notes.txt").exists()
        llm.enqueue(Reply.text("ok"))
        assert (await client.prompt("again", chat_id=first.chat_id)).ok
        assert "QUESTION-TWO" not in history(llm)


async def test_a_chat_saved_without_ids_still_opens(workspace: Path, env: dict[str, str], config: dict[str, Any],
                                                    llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as client:
        assert client.engine is not None and client.engine.store is not None
        now = int(time.time() * 1000)  # (a chat older than the retention period would be pruned at start)
        client.engine.store.save({
            "version": 1, "id": "old-chat", "title": "Old", "createdAt": now, "updatedAt": now, "messageCount": 2,
            "messages": [{"role": "user", "text": "old question"}, {"role": "assistant", "text": "old answer"}],
            "contents": [{"role": "user", "content": {"type": "text", "text": "old question\n"}},
                         {"role": "assistant", "content": {"type": "text", "text": "old answer"}}],
        })
    async with await EcaClient.start(workspace=workspace, config=config, env=env) as client:
        replayed = await client.open_chat("old-chat")
        assert [getattr(i.content, "text", None) for i in replayed] == ["old question\n", "old answer"]
        with pytest.raises(RpcError) as error:
            await client.rollback("old-chat", "anything")
        assert error.value.code == INVALID_PARAMS
        llm.enqueue(Reply.text("new answer"))
        result = await client.prompt("new question", chat_id="old-chat")
        assert result.ok and result.content_id
        assert "old question" in history(llm)


async def test_errors_are_json_rpc_errors_and_the_server_keeps_serving(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("fine"))
    first = await client.prompt("hello")
    for method in ("chat/rollback", "chat/fork"):
        with pytest.raises(RpcError) as unknown_chat:
            await client.request(method, {"chatId": "no-such-chat", "contentId": "x"})
        assert unknown_chat.value.code == INVALID_PARAMS and "unknown chat" in unknown_chat.value.message
        with pytest.raises(RpcError) as unknown_id:
            await client.request(method, {"chatId": first.chat_id, "contentId": "no-such-message"})
        assert unknown_id.value.code == INVALID_PARAMS and "no-such-message" in unknown_id.value.message
    with pytest.raises(RpcError) as bad_include:
        await client.request("chat/rollback", {"chatId": first.chat_id, "contentId": first.content_id,
                                               "include": ["everything"]})
    assert bad_include.value.code == INVALID_PARAMS

    # a running chat cannot be rewound; forking its running prompt is refused too
    llm.enqueue(Reply([Stall(60)]))
    running = asyncio.create_task(client.prompt("slow", chat_id=first.chat_id))
    assert client.engine is not None
    engine = client.engine
    async with asyncio.timeout(60):
        while not engine.chats[first.chat_id].running:
            await asyncio.sleep(0.05)
    with pytest.raises(RpcError) as busy:
        await client.rollback(first.chat_id, first.content_id or "")
    assert busy.value.code == INVALID_REQUEST and "stop it" in busy.value.message
    slow_prompt = next(r["content"]["contentId"] for r in engine.chats[first.chat_id].contents
                       if r["role"] == "user" and r["content"]["text"] == "slow\n")
    with pytest.raises(RpcError) as still_running:
        await client.fork(first.chat_id, slow_prompt)
    assert still_running.value.code == INVALID_REQUEST
    assert engine.chats[first.chat_id].running  # the refusals changed nothing
    forked = await client.fork(first.chat_id, first.content_id or "")  # a finished prompt forks while it runs
    assert forked in engine.chats
    await client.stop(first.chat_id)
    await asyncio.gather(running, return_exceptions=True)

    llm.enqueue(Reply.text("still here"))
    assert (await client.prompt("after", chat_id=first.chat_id)).text == "still here"


async def test_a_point_before_a_compaction_is_refused(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("A1"), Reply.text("SUMMARY"), Reply.text("A3"))
    first = await client.prompt("Q1")
    compact = await client.prompt("/compact", chat_id=first.chat_id)
    third = await client.prompt("Q3", chat_id=first.chat_id)
    assert first.ok and compact.ok and third.ok
    for point in (first.content_id, compact.content_id):
        with pytest.raises(RpcError) as refused:
            await client.rollback(first.chat_id, point or "")
        assert "compact" in refused.value.message
    with pytest.raises(RpcError):
        await client.fork(first.chat_id, first.content_id or "")
    # after the compaction is fine, and forking at /compact keeps the summary
    forked = await client.fork(first.chat_id, compact.content_id or "")
    assert client.engine is not None
    assert "SUMMARY" in client.engine.chats[forked].messages[0].text  # type: ignore[union-attr]
    await client.rollback(first.chat_id, third.content_id or "")
    assert [m.role for m in client.engine.chats[first.chat_id].messages] == ["user"]


def test_fork_titles_count_up_like_the_reference():
    assert fork_title("Fix the bug") == "Fix the bug (2)"
    assert fork_title("Fix the bug (2)") == "Fix the bug (3)"
    assert fork_title(None) == "Untitled (2)"
