"""Subagents end to end over stdio: the parent model calls ``spawn_agent``, the subagent works in its own chat
(every content carrying ``parentChatId``), calls a tool and answers; its answer is the parent's tool result. And a
subagent waiting for an approval is stopped with its parent, the server serving on."""

from __future__ import annotations

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_commands import run, system_texts
from .test_server_tools import call, of_type, prompt

MODEL = "openai/gpt-4.1"


def child_messages(eca, parent_id: str) -> list[dict]:
    return [m.params for m in eca.messages
            if m.method == "chat/contentReceived" and m.params.get("parentChatId") == parent_id]


async def explore_notes(spawn, llm, workspace):
    """A server whose parent chat asked; its model spawned ``explorer``, which read notes.txt and answered."""
    (workspace / "notes.txt").write_text("the answer is 42\n")
    llm.enqueue(
        Reply([call("spawn_agent", {"agent": "explorer", "task": "Find the answer in notes.txt",
                                    "activity": "finding the answer"}, "call_parent")]),
        Reply([call("read_file", {"path": "notes.txt"}, "call_child")]),
        Reply.text("Found it: the answer is 42 (notes.txt)."),
        Reply.text("The subagent says 42."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    parent = await prompt(eca, "what is the answer?", model=MODEL)
    await eca.wait_idle(parent)
    return eca, parent


async def test_subagent_explores_and_answers_the_parent(spawn, llm, workspace):
    eca, parent = await explore_notes(spawn, llm, workspace)

    contents = eca.contents(parent)
    [run] = [c for c in of_type(contents, "toolCallRun") if c["name"] == "spawn_agent"]
    details = run["details"]
    child = details["subagentChatId"]
    assert child.startswith("subagent-")
    assert details == {"type": "subagent", "subagentChatId": child, "model": MODEL, "agentName": "explorer",
                       "step": 0}
    assert run["summary"] == "explorer: finding the answer"
    steps = [c["details"]["step"] for c in of_type(contents, "toolCallRunning") if c["name"] == "spawn_agent"]
    assert steps[0] == 0 and max(steps) == 2  # two rounds: the read, then the answer
    [called] = [c for c in of_type(contents, "toolCalled") if c["name"] == "spawn_agent"]
    assert called["error"] is False
    assert "Found it: the answer is 42" in called["outputs"][0]["text"]
    assert called["details"]["step"] == 2

    # the subagent's chat: every content says its parent, it read the file, and answered
    nested = child_messages(eca, parent)
    assert nested and {m["chatId"] for m in nested} == {child}
    assert len(nested) == len(eca.contents(child))
    assert "Find the answer in notes.txt" in nested[0]["content"]["text"]
    child_calls = [m["content"] for m in nested if m["content"]["type"] == "toolCalled"]
    assert [c["name"] for c in child_calls] == ["read_file"] and "42" in child_calls[0]["outputs"][0]["text"]

    # the subagent's requests: its own history (the task), its agent's tools (read-only, no spawn_agent)
    requests = completion_requests(llm)
    child_request = str(requests[1].body)
    assert "Find the answer in notes.txt" in child_request and "what is the answer?" not in child_request
    tool_names = str(requests[1].body.get("tools"))
    assert "eca__read_file" in tool_names and "eca__write_file" not in tool_names
    assert "eca__spawn_agent" not in tool_names
    assert "eca__spawn_agent" in str(requests[0].body.get("tools"))
    assert "Found it: the answer is 42" in str(requests[-1].body)  # the parent got the answer as the tool result

    # subagent chats are not listed
    listed = await eca.request("chat/list", {})
    assert [c["id"] for c in listed["chats"]] == [parent]


async def test_stopping_the_parent_stops_a_subagent_waiting_for_approval(spawn, llm, workspace):
    llm.enqueue(
        Reply([call("spawn_agent", {"agent": "general", "task": "Create out.txt"}, "call_parent")]),
        Reply([call("write_file", {"path": "out.txt", "content": "x\n"}, "call_child")]),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    parent = await prompt(eca, "make a file", model=MODEL)
    waiting = await eca.wait_for(lambda m: m.method == "chat/contentReceived"
                                 and m.params["content"]["type"] == "toolCallRun"
                                 and m.params["content"]["id"] == "call_child")
    assert waiting.params["content"]["manualApproval"] is True
    assert waiting.params["parentChatId"] == parent
    child = waiting.params["chatId"]

    await eca.request("chat/promptStop", {"chatId": parent})
    await eca.wait_idle(parent)
    await eca.wait_idle(child)
    rejected = [c for c in of_type(eca.contents(child), "toolCallRejected") if c["id"] == "call_child"]
    assert rejected and rejected[0]["reason"] == "user-choice"
    [called] = [c for c in of_type(eca.contents(parent), "toolCalled") if c["name"] == "spawn_agent"]
    assert called["error"] is True
    assert not (workspace / "out.txt").exists()

    # the server serves on: a new prompt in the same chat works
    llm.enqueue(Reply.text("Ready."))
    mark = len(eca.messages)
    await prompt(eca, "hello again", chatId=parent, model=MODEL)
    await eca.wait_idle(parent, start=mark)
    assert any(c.get("text") == "Ready." for _, c in eca.contents(parent, mark))


async def test_subagents_command_and_reserved_ids(spawn, llm, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    _, contents = await run(eca, "/subagents")
    text = system_texts(contents)
    assert "explorer — " in text and "general — " in text and "read_file" in text
    result = await eca.request("chat/prompt", {"message": "hi", "chatId": "subagent-mine"})
    assert result["status"] == "error" and "reserved" in result["message"]


def kinds(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, content type) of each content, consecutive text chunks of one role counted once."""
    found: list[tuple[str, str]] = []
    for m in messages:
        kind = (m["role"], m["content"]["type"])
        if not (kind[1] == "text" and found and found[-1] == kind):
            found.append(kind)
    return found


async def test_a_reopened_parent_brings_its_subagents_back(spawn, llm, workspace):
    """The subagent's chat is saved inside its parent's record: after a restart, ``chat/open`` of the parent replays
    the subagent's contents (with ``parentChatId``) right after the spawn_agent call first names it; a later turn
    of the reopened parent keeps them."""
    eca, parent = await explore_notes(spawn, llm, workspace)
    live = child_messages(eca, parent)
    child = live[0]["chatId"]
    assert await eca.shutdown() == 0

    async def reopen() -> list:
        again = await spawn()
        await again.initialize(workspace)
        mark = len(again.messages)
        assert (await again.request("chat/open", {"chatId": parent}))["found"] is True
        return again, [m.params for m in again.messages[mark:] if m.method == "chat/contentReceived"]

    again, replay = await reopen()
    nested = [p for p in replay if p.get("parentChatId") == parent]
    assert kinds(nested) == kinds(live) and {p["chatId"] for p in nested} == {child}
    texts = [p["content"]["text"] for p in nested if p["role"] == "assistant" and p["content"]["type"] == "text"]
    assert any("Found it: the answer is 42" in t for t in texts)  # (its chunks merged into one text)
    assert "Find the answer in notes.txt" in nested[0]["content"]["text"]
    assert any(p["content"]["type"] == "toolCalled" and p["content"]["name"] == "read_file" for p in nested)
    # placed after the parent's spawn_agent call first names the subagent, before that call's result
    first = next(i for i, p in enumerate(replay) if (p["content"].get("details") or {}).get("subagentChatId") == child)
    called = next(i for i, p in enumerate(replay)
                  if p["chatId"] == parent and p["content"]["type"] == "toolCalled")
    at = replay.index(nested[0])
    assert first < at and all(p.get("parentChatId") == parent for p in replay[at:at + len(nested)])
    assert at + len(nested) <= called
    # the parent's own contents never carry parentChatId
    assert all("parentChatId" not in p for p in replay if p["chatId"] == parent)

    # a later turn of the reopened parent saves it again: its subagent stays
    llm.enqueue(Reply.text("Still 42."))
    mark = len(again.messages)
    await prompt(again, "sure?", chatId=parent, model=MODEL)
    await again.wait_idle(parent, start=mark)
    assert await again.shutdown() == 0
    _, replay = await reopen()
    assert [p["content"] for p in replay if p.get("parentChatId") == parent] == [p["content"] for p in nested]
