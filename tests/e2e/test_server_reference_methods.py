"""The reference server's newer methods over a real ``eca-notebook server`` (issue 34), as its docs/protocol.md
(editor-code-assistant/eca at 09e864f, Aug 2026) shapes them: ``chat/queryFiles``, ``chat/clear``, ``chat/history``
paging, ``chat/open`` (its window, ``selection`` and scoped ``config/updated``), ``chat/queryCommands``' command
types (``mcpPrompt``, ``customPrompt``), the ``url`` content. The rest of that list is driven beside its feature:
the ``text`` context (test_server_commands.py), ``workspace/didChangeWorkspaceFolders``
(test_server_workspace_folders.py), the ``shellCommand`` approval details (test_server_tools.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Citation, Reply, Text

from .conftest import server_env
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


async def _three_turns(eca, llm) -> str:
    chat_id = None
    for n in range(3):
        llm.enqueue(Reply.text(f"Answer {n}."))
        chat_id, _ = await run(eca, f"Question {n}?", chat_id, model="openai/gpt-4.1")
        await eca.wait_idle(chat_id)
    assert chat_id is not None
    return chat_id


async def test_open_a_window_then_page_older_with_history(spawn, llm, workspace):
    """eca-emacs' paginated resume: ``chat/open {chatId, limit}`` replays only the newest page (after
    ``chat/cleared``) and answers ``meta``; ``chat/history {chatId, before, limit}`` pages older in one answer until
    ``beforeCursor`` is null — the pages together are the whole chat, as ``chat/contentReceived`` showed it."""
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await _three_turns(eca, llm)
    everything = await eca.request("chat/history", {"chatId": chat_id})
    full = everything["contents"]
    total = everything["meta"]["total"]
    assert total == len(full) and total >= 6
    assert everything["meta"] == {"total": total, "returned": total, "beforeCursor": None, "afterCursor": None,
                                  "compactionCursor": None}
    assert [c["content"]["text"] for c in full if c["role"] == "user"] == ["Question 0?\n", "Question 1?\n",
                                                                          "Question 2?\n"]
    assert all(c["chatId"] == chat_id for c in full)

    mark = len(eca.messages)
    opened = await eca.request("chat/open", {"chatId": chat_id, "limit": 2})
    assert opened["found"] is True and opened["chatId"] == chat_id
    assert opened["meta"]["total"] == total and opened["meta"]["returned"] == 2
    assert opened["meta"]["afterCursor"] is None and opened["meta"]["beforeCursor"]
    sent = [m for m in eca.messages[mark:] if m.method in ("chat/cleared", "chat/opened", "chat/contentReceived")]
    assert [m.method for m in sent] == ["chat/cleared", "chat/opened", "chat/contentReceived",
                                        "chat/contentReceived"]
    assert [m.params for m in sent[2:]] == full[-2:]

    pages = [full[-2:]]
    cursor = opened["meta"]["beforeCursor"]
    while cursor:
        older = await eca.request("chat/history", {"chatId": chat_id, "before": cursor, "limit": 2})
        assert older["meta"]["returned"] == len(older["contents"]) <= 2
        pages.insert(0, older["contents"])
        cursor = older["meta"]["beforeCursor"]
        assert len(pages) <= total  # (a guard against a cursor that never ends)
    assert [item for page in pages for item in page] == full

    # an opaque after cursor alone pages forward: the oldest page after it
    first = await eca.request("chat/history", {"chatId": chat_id, "limit": 2})
    one = await eca.request("chat/history", {"chatId": chat_id, "before": first["meta"]["beforeCursor"], "limit": 1})
    assert one["contents"] == [full[-3]]
    newer = await eca.request("chat/history", {"chatId": chat_id, "after": one["meta"]["afterCursor"], "limit": 1})
    assert newer["contents"] == [full[-2]] and newer["meta"]["afterCursor"]


async def test_history_errors_as_the_reference_answers_them(spawn, llm, workspace):
    """An unknown chat: ``chat_not_found``; a cursor whose content a ``chat/clear`` removed: ``cursor_expired``
    (in ``chat/history`` and in a windowed ``chat/open``, which then replays nothing)."""
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await _three_turns(eca, llm)
    missing = await eca.request("chat/history", {"chatId": "no-such-chat", "limit": 5})
    assert missing["error"]["code"] == "chat_not_found" and "contents" not in missing
    page = await eca.request("chat/history", {"chatId": chat_id, "limit": 2})
    cursor = page["meta"]["beforeCursor"]
    assert (await eca.request("chat/history", {"chatId": chat_id, "before": "lastCompaction"}))["meta"]["total"] \
        == page["meta"]["total"]  # never compacted: the sentinel bounds nothing
    await eca.request("chat/clear", {"chatId": chat_id, "messages": True})
    expired = await eca.request("chat/history", {"chatId": chat_id, "before": cursor, "limit": 2})
    assert expired == {"error": {"code": "cursor_expired",
                                 "message": "Cursor no longer points to an existing message; refetch the latest page"}}
    mark = len(eca.messages)
    opened = await eca.request("chat/open", {"chatId": chat_id, "before": cursor})
    assert opened["found"] is True and opened["error"]["code"] == "cursor_expired"
    assert not [m for m in eca.messages[mark:] if m.method == "chat/contentReceived"]
    assert (await eca.request("chat/history", {"chatId": chat_id}))["meta"]["total"] == 0


async def test_a_cited_page_is_a_url_content(spawn, llm, workspace):
    """The reference emits ``{type: "url", title, url}`` for a page the model cites (OpenAI's ``url_citation``
    annotation): shown after the text so far, replayed with the chat; a link that is not http(s) is dropped."""
    llm.enqueue(Reply([Text("Python 3.13 is out. "),
                       Citation("What's New In Python 3.13", "https://docs.python.org/3/whatsnew/3.13.html"),
                       Citation("click me", "javascript:alert(1)"),
                       Text("It has a new REPL.")]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "what is new in python?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    shown = [(role, c) for role, c in eca.contents(chat_id) if c["type"] in ("text", "url")]
    assert shown[1:] == [
        ("assistant", {"type": "text", "text": "Python 3.13 is out. "}),
        ("assistant", {"type": "url", "title": "What's New In Python 3.13",
                       "url": "https://docs.python.org/3/whatsnew/3.13.html"}),
        ("assistant", {"type": "text", "text": "It has a new REPL."}),
    ]
    history = (await eca.request("chat/history", {"chatId": chat_id}))["contents"]
    assert [c["content"] for c in history if c["content"]["type"] == "url"] == [shown[2][1]]


async def test_open_answers_the_selection_and_realigns_the_chat_as_the_reference_does(spawn, llm, workspace):
    """``chat/open`` as the reference's docs/protocol.md describes it: ``chat/cleared`` (messages), ``chat/opened``,
    the contents, a ``config/updated`` scoped to the chat with its stored model and variants, another with its trust;
    the answer ``{found, chatId, title?, selection: {model, agent, variant, variants, trust}}``. A subagent's chat
    and an unknown one answer ``found: false``."""
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await _three_turns(eca, llm)
    assert await eca.request("chat/update", {"chatId": chat_id, "trust": True}) == {}
    mark = len(eca.messages)
    opened = await eca.request("chat/open", {"chatId": chat_id})
    assert opened["found"] is True and opened["chatId"] == chat_id
    selection = opened["selection"]
    assert selection == {"model": "openai/gpt-4.1", "agent": "code", "variant": selection["variant"],
                         "variants": selection["variants"], "trust": True}
    assert isinstance(selection["variants"], list) and selection["variant"] in (None, *selection["variants"])
    sent = [m for m in eca.messages[mark:] if m.method in ("chat/cleared", "chat/opened", "config/updated")]
    assert [m.method for m in sent] == ["chat/cleared", "chat/opened", "config/updated", "config/updated"]
    assert sent[0].params == {"chatId": chat_id, "messages": True}
    assert sent[2].params == {"chatId": chat_id, "chat": {"selectModel": "openai/gpt-4.1",
                                                          "variants": selection["variants"],
                                                          "selectVariant": selection["variant"]}}
    assert sent[3].params == {"chatId": chat_id, "chat": {"selectTrust": True}}
    assert await eca.request("chat/open", {"chatId": "no-such-chat"}) == {"found": False}


async def test_a_subagents_chat_does_not_open_on_its_own(spawn, llm, workspace):
    """The reference: ``found`` is false "when the chat is unknown or is a subagent chat" (it opens with its
    parent, nested under the spawn_agent call)."""
    from .test_server_subagents import explore_notes

    eca, parent = await explore_notes(spawn, llm, workspace)
    [child] = {m.params["chatId"] for m in eca.messages
               if m.method == "chat/contentReceived" and m.params.get("parentChatId") == parent}
    assert await eca.request("chat/open", {"chatId": child}) == {"found": False}
    assert (await eca.request("chat/open", {"chatId": parent}))["found"] is True


async def test_query_commands_names_the_types_as_the_reference_does(spawn, llm, home, workspace):
    """``chat/queryCommands {query}`` → ``{commands: ChatCommand[]}``, each ``{name, description, type:
    'mcpPrompt' | 'native' | 'customPrompt' | 'skill', arguments: [{name, description?, required?}]}`` — an MCP
    server's prompt is ``mcpPrompt`` (we said ``mcp-prompt`` before), a ``.eca/commands`` file ``customPrompt``, and
    the MCP prompt still runs as ``/review args``."""
    pytest.importorskip("mcp")
    demo = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"
    (workspace / ".eca" / "commands").mkdir(parents=True)
    (workspace / ".eca" / "commands" / "explain-diff.md").write_text("Explain the diff of $ARGS\n")
    env = server_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["mcpServers"] = {"demo": {"command": sys.executable, "args": [str(demo)]}}
    env["ECA_CONFIG"] = json.dumps(config)
    llm.enqueue(Reply.text("Looks fine."))
    eca = await spawn(env=env)
    await eca.initialize(workspace)
    commands: list = []
    for _ in range(600):  # the MCP server starts in the background (a condition, a 60 s guard)
        commands = (await eca.request("chat/queryCommands", {"query": ""}))["commands"]
        if any(c["type"] == "mcpPrompt" for c in commands):
            break
        await asyncio.sleep(0.1)
    for command in commands:
        assert set(command) == {"name", "description", "type", "arguments"}, command
        assert command["type"] in ("mcpPrompt", "native", "customPrompt", "skill"), command
        assert isinstance(command["name"], str) and isinstance(command["description"], str)
        assert all(set(a) <= {"name", "description", "required"} and isinstance(a["name"], str)
                   for a in command["arguments"])
    by_name = {c["name"]: c for c in commands}
    assert by_name["review"]["type"] == "mcpPrompt"
    assert [a["name"] for a in by_name["review"]["arguments"]] == ["code", "language"]
    assert by_name["review"]["arguments"][0]["required"] is True
    assert by_name["explain-diff"]["type"] == "customPrompt"
    assert by_name["doctor"]["type"] == "native"
    chat_id, _ = await run(eca, "/review print(1)", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    assert ("user", "Please review this python code:\nprint(1)") in sent_texts(
        "openai-responses", completion_requests(llm)[-1].body)
