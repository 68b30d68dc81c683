"""Chats through a real ``eca-notebook server`` process, for each of the four provider wire APIs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Cut, Error, Reasoning, Reply, Stall, StreamError, Text, Usage

from .conftest import API_MODELS, SECRET_ANTHROPIC, SECRET_OPENAI

pytestmark = pytest.mark.e2e

APIS = list(API_MODELS)


def shape(contents: list[tuple[str, dict]]) -> list[tuple]:
    """A compact, comparable view of a content sequence."""
    out = []
    for role, c in contents:
        t = c["type"]
        if t == "text":
            out.append((role, "text", c["text"]))
        elif t == "progress":
            out.append((role, "progress", c["state"], c["text"]))
        elif t == "metadata":
            out.append((role, "metadata", c["title"]))
        elif t in ("reasonStarted", "reasonFinished"):
            out.append((role, t))
        elif t == "reasonText":
            out.append((role, t, c["text"]))
        else:
            out.append((role, t))
    return out


def completion_requests(llm) -> list:
    return [r for r in llm.requests if r.method == "POST" and not r.path.startswith("/_scripted")]


def sent_texts(api: str, body: dict) -> list[tuple[str, str]]:
    """(role, text) of the conversation a provider request carried, whatever the wire format."""
    out: list[tuple[str, str]] = []
    if api == "openai-responses":
        for item in body["input"]:
            content = item.get("content")
            if isinstance(content, str):
                out.append((item["role"], content))
            elif isinstance(content, list):
                out.append((item["role"], "".join(part.get("text", "") for part in content)))
    elif api == "anthropic":
        for message in body["messages"]:
            content = message["content"]
            if isinstance(content, str):
                out.append((message["role"], content))
            else:
                out.append((message["role"], "".join(b.get("text", "") for b in content if b["type"] == "text")))
    else:  # openai-chat, ollama
        for message in body["messages"]:
            if message["role"] != "system":
                out.append((message["role"], message.get("content") or ""))
    return out


@pytest.mark.parametrize("api", APIS)
async def test_text_turn_streams_in_reference_order(api, spawn, llm, workspace):
    llm.enqueue(Reply([Text("Hel"), Text("lo "), Text("there!"), Usage(input_tokens=12, output_tokens=3)]))
    eca = await spawn()
    await eca.initialize(workspace)

    result = await eca.request("chat/prompt", {"message": "Say hello", "model": API_MODELS[api]})
    assert result["status"] == "prompting"
    assert result["model"] == API_MODELS[api]
    chat_id = result["chatId"]
    await eca.wait_idle(chat_id)

    got = shape(eca.contents(chat_id))
    assert got == [
        ("user", "text", "Say hello\n"),
        ("system", "metadata", "Say hello"),
        ("system", "progress", "running", "Waiting model"),
        ("system", "progress", "running", "Generating"),
        ("assistant", "text", "Hel"),
        ("assistant", "text", "lo "),
        ("assistant", "text", "there!"),
        ("system", "usage"),
        ("system", "progress", "finished", ""),
    ]
    usage = eca.contents(chat_id)[-2][1]
    assert usage["sessionTokens"] == 15
    assert usage["messageInputTokens"] == 12 and usage["messageOutputTokens"] == 3

    # The user echo reached the client before the chat/prompt response (the handler flushes first).
    statuses = [m.params["status"] for m in eca.messages if m.method == "chat/statusChanged"]
    assert statuses == ["running", "idle"]
    opened = eca.of("chat/opened")
    assert opened == [{"chatId": chat_id}]

    body = completion_requests(llm)[0].body
    assert sent_texts(api, body) == [("user", "Say hello")]


@pytest.mark.parametrize("api", APIS)
async def test_multi_turn_history_is_sent_to_provider(api, spawn, llm, workspace):
    llm.enqueue(Reply.text("Paris is the capital."), Reply.text("About 2.1 million people."))
    eca = await spawn()
    await eca.initialize(workspace)

    first = await eca.request("chat/prompt", {"message": "Capital of France?", "model": API_MODELS[api]})
    chat_id = first["chatId"]
    await eca.wait_idle(chat_id)
    mark = len(eca.messages)
    second = await eca.request("chat/prompt", {"chatId": chat_id, "message": "Population?"})
    assert second["chatId"] == chat_id and second["model"] == API_MODELS[api]
    await eca.wait_idle(chat_id, start=mark)

    bodies = [r.body for r in completion_requests(llm)]
    assert len(bodies) == 2
    assert sent_texts(api, bodies[1]) == [
        ("user", "Capital of France?"),
        ("assistant", "Paris is the capital."),
        ("user", "Population?"),
    ]
    # metadata (title) only on the first prompt of a chat
    assert [c["type"] for _, c in eca.contents(chat_id, start=mark)].count("metadata") == 0


@pytest.mark.parametrize("api", APIS)
async def test_reasoning_streams_before_text(api, spawn, llm, workspace):
    llm.enqueue(Reply([Reasoning("Let me "), Reasoning("think."), Text("42")]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "Answer?", "model": API_MODELS[api]}))["chatId"]
    await eca.wait_idle(chat_id)

    got = shape(eca.contents(chat_id))
    reasoning = [g for g in got if g[1].startswith("reason")]
    assert reasoning[0] == ("assistant", "reasonStarted")
    assert "".join(g[2] for g in reasoning if g[1] == "reasonText") == "Let me think."
    assert reasoning[-1] == ("assistant", "reasonFinished")
    assert got.index(("assistant", "reasonFinished")) < got.index(("assistant", "text", "42"))
    ids = {c["id"] for _, c in eca.contents(chat_id) if c["type"].startswith("reason")}
    assert len(ids) == 1


async def test_usage_carries_cost_for_priced_models(spawn, llm, workspace):
    llm.enqueue(Reply([Text("ok"), Usage(input_tokens=1_000_000, output_tokens=1_000_000)]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}))["chatId"]
    await eca.wait_idle(chat_id)
    usage = next(c for _, c in eca.contents(chat_id) if c["type"] == "usage")
    assert usage["sessionTokens"] == 2_000_000
    assert float(usage["sessionCost"]) > 0
    assert usage["lastMessageCost"] == usage["sessionCost"]
    assert usage["limit"]["context"] > 0 and usage["limit"]["output"] > 0


@pytest.mark.parametrize("api", APIS)
async def test_stop_ends_stream_and_chat_stays_usable(api, spawn, llm, workspace):
    llm.enqueue(Reply([Text("partial answer"), Stall(30)]), Reply.text("second answer"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "long task", "model": API_MODELS[api]}))["chatId"]
    await eca.wait_for(lambda m: (m.method == "chat/contentReceived"
                                  and m.params["content"].get("text") == "partial answer"))

    loop = asyncio.get_running_loop()
    stop_sent = loop.time()
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id)
    print(f"stop → idle in {(loop.time() - stop_sent) * 1000:.1f} ms")

    statuses = [m.params["status"] for m in eca.messages if m.method == "chat/statusChanged"]
    assert statuses == ["running", "stopping", "idle"]
    assert shape(eca.contents(chat_id))[-1] == ("system", "progress", "finished", "")

    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "again"})
    await eca.wait_idle(chat_id, start=mark)
    assert ("assistant", "text", "second answer") in shape(eca.contents(chat_id, start=mark))
    # the partial answer the user saw is part of the history sent next
    assert sent_texts(api, completion_requests(llm)[1].body) == [
        ("user", "long task"),
        ("assistant", "partial answer"),
        ("user", "again"),
    ]


@pytest.mark.parametrize(
    "script, expected",
    [
        (Reply([Error(400, "model overloaded with nonsense")]), "model overloaded with nonsense"),
        (Reply([Text("half"), Cut()]), "ended unexpectedly"),
        (Reply([Text("half"), StreamError("upstream exploded")]), "upstream exploded"),
    ],
    ids=["http-400", "cut", "stream-error"],
)
@pytest.mark.parametrize("api", APIS)
async def test_provider_errors_show_in_chat_and_next_prompt_works(api, script, expected, spawn, llm, workspace):
    llm.enqueue(script, Reply.text("recovered"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "q1", "model": API_MODELS[api]}))["chatId"]
    await eca.wait_idle(chat_id)
    got = shape(eca.contents(chat_id))
    errors = [g for g in got if g[0] == "system" and g[1] == "text"]
    assert len(errors) == 1 and errors[0][2].startswith("Error:") and expected in errors[0][2]
    assert got[-1] == ("system", "progress", "finished", "")
    for secret in (SECRET_OPENAI, SECRET_ANTHROPIC):
        assert secret not in errors[0][2]

    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "q2"})
    await eca.wait_idle(chat_id, start=mark)
    assert ("assistant", "text", "recovered") in shape(eca.contents(chat_id, start=mark))


async def test_rate_limit_is_retried_honouring_retry_after(spawn, llm, workspace):
    llm.enqueue(Reply([Error(429, "slow down", retry_after=0.2)]), Reply.text("after retry"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}))["chatId"]
    await eca.wait_idle(chat_id)
    assert ("assistant", "text", "after retry") in shape(eca.contents(chat_id))
    assert len(completion_requests(llm)) == 2


async def test_delete_removes_chat_everywhere(spawn, llm, workspace, home):
    llm.enqueue(Reply.text("hello"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}))["chatId"]
    await eca.wait_idle(chat_id)
    listed = await eca.request("chat/list", {})
    assert [c["id"] for c in listed["chats"]] == [chat_id]
    saved: list[Path] = []
    for _ in range(1200):  # saved by the server's writer thread, just after "idle": a condition, generous guard
        saved = [p for p in (home / ".cache").rglob("*.json") if p.name != "index.json"
                 and not p.name.startswith(".tmp-")]
        if saved:
            break
        await asyncio.sleep(0.05)
    assert len(saved) == 1

    assert await eca.request("chat/delete", {"chatId": chat_id}) == {}
    await eca.wait_for(lambda m: m.method == "chat/deleted" and m.params == {"chatId": chat_id})
    assert (await eca.request("chat/list", {}))["chats"] == []
    # A save already being written when the delete came drops its bytes and removes its temporary file on the
    # writer thread, just after: wait for that (a chat file that comes back stays, and fails here).
    left: list[Path] = []
    for _ in range(1200):
        left = [p for p in (home / ".cache").rglob("*.json") if p.name != "index.json"]
        if not left:
            break
        await asyncio.sleep(0.05)
    assert left == []
    assert (await eca.request("chat/open", {"chatId": chat_id}))["found"] is False


async def test_client_chosen_chat_id_and_early_revision_fields(spawn, llm, workspace):
    llm.enqueue(Reply.text("hi!"))
    eca = await spawn()
    await eca.initialize(workspace)
    result = await eca.request(
        "chat/prompt",
        {"chatId": "my-own-id-1", "message": "hello", "requestId": "r-1", "request-id": "r-1",
         "behavior": "agent", "agent": None, "model": None, "contexts": []},
    )
    assert result["chatId"] == "my-own-id-1" and result["status"] == "prompting"
    await eca.wait_idle("my-own-id-1")

    for bad in ["", "   ", "has space", "x" * 257]:
        answer = await eca.request("chat/prompt", {"chatId": bad, "message": "hello"})
        assert answer["status"] == "error"


async def test_restart_lists_and_reopens_saved_chats(spawn, llm, workspace):
    llm.enqueue(Reply([Reasoning("hmm"), Text("first "), Text("answer"), Usage(10, 2)]))
    eca = await spawn()
    await eca.initialize(workspace)
    answer = await eca.request("chat/prompt", {"message": "remember me", "model": "anthropic/claude-sonnet-4-5"})
    chat_id = answer["chatId"]
    await eca.wait_idle(chat_id)
    assert await eca.shutdown() == 0

    again = await spawn()
    await again.initialize(workspace)
    listed = (await again.request("chat/list", {"limit": 10, "sortBy": "updatedAt"}))["chats"]
    assert len(listed) == 1
    summary = listed[0]
    assert summary["id"] == chat_id and summary["title"] == "remember me"
    assert summary["messageCount"] == 2 and summary["model"] == "anthropic/claude-sonnet-4-5"

    mark = len(again.messages)
    opened = await again.request("chat/open", {"chatId": chat_id})
    selection = opened.pop("selection")
    assert opened == {"found": True, "chatId": chat_id, "title": "remember me"}
    assert (selection["model"], selection["agent"], selection["trust"]) == ("anthropic/claude-sonnet-4-5", "code",
                                                                            False)
    # chat/cleared, chat/opened, then the saved contents, all before the response
    replay = again.messages[mark:]
    assert replay[0].method == "chat/cleared" and replay[0].params == {"chatId": chat_id, "messages": True}
    assert replay[1].method == "chat/opened" and replay[1].params == {"chatId": chat_id, "title": "remember me"}
    # the chat's model and trust toggle, scoped to it (as the reference does on a restore), then its contents
    scoped = [m.params for m in replay if m.method == "config/updated"]
    assert scoped == [{"chatId": chat_id, "chat": {"selectModel": "anthropic/claude-sonnet-4-5",
                                                   "variants": selection["variants"],
                                                   "selectVariant": selection["variant"]}},
                      {"chatId": chat_id, "chat": {"selectTrust": False}}]
    replayed = shape([(m.params["role"], m.params["content"]) for m in replay[2:]
                      if m.method == "chat/contentReceived"])
    assert ("assistant", "text", "first answer") in replayed
    assert ("assistant", "reasonText", "hmm") in replayed
    assert replayed[0] == ("user", "text", "remember me\n")

    # and the conversation continues with its history
    llm.enqueue(Reply.text("yes"))
    mark = len(again.messages)
    await again.request("chat/prompt", {"chatId": chat_id, "message": "still there?"})
    await again.wait_idle(chat_id, start=mark)
    assert sent_texts("anthropic", completion_requests(llm)[-1].body) == [
        ("user", "remember me"), ("assistant", "first answer"), ("user", "still there?"),
    ]


async def test_secrets_never_reach_disk_or_logs(spawn, llm, workspace, home, tmp_path):
    log_file = tmp_path / "server.log"
    llm.enqueue(Reply.text(f"echoing {SECRET_OPENAI} back"), Reply([Error(401, "bad key")]))
    eca = await spawn("--log-level", "debug", "--log-file", str(log_file))
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "hi", "model": "openai/gpt-4.1"}))["chatId"]
    await eca.wait_idle(chat_id)
    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "again"})
    await eca.wait_idle(chat_id, start=mark)
    assert await eca.shutdown() == 0

    error = [c for _, c in eca.contents(chat_id, start=mark) if c["type"] == "text" and c["text"].startswith("Error")]
    assert "OPENAI_API_KEY" in error[0]["text"]
    for path in [log_file, *(home / ".cache").rglob("*")]:
        if path.is_file():
            text = path.read_text(errors="replace")
            assert SECRET_OPENAI not in text and SECRET_ANTHROPIC not in text, path
    assert SECRET_OPENAI not in eca.stderr


async def test_no_provider_gives_clear_message_not_crash(spawn, home, workspace):
    from .conftest import server_env

    eca = await spawn(env=server_env(home, None, OLLAMA_API_URL="http://127.0.0.1:9",
                                     ECA_CONFIG='{"localModel": false}'))
    await eca.initialize(workspace)
    updated = eca.of("config/updated")[0]
    assert updated["chat"]["models"] == []
    await eca.wait_for(lambda m: m.method == "$/showMessage" and "API key" in m.params["message"])
    result = await eca.request("chat/prompt", {"message": "hello"})
    assert result["status"] == "login"
    chat_id = result["chatId"]
    texts = [c["text"] for _, c in eca.contents(chat_id) if c["type"] == "text"]
    assert any("OPENAI_API_KEY" in t for t in texts)
    assert json.dumps(eca.contents(chat_id)).count("progress") == 1


async def test_busy_chat_and_unknown_model_answer_status_error_with_a_message(spawn, llm, workspace):
    """eca-compat-notes: a refused ``chat/prompt`` is a result with ``status: "error"`` and a reason, not a JSON-RPC
    error and not silence (a prompt to a running chat, a model that does not exist)."""
    llm.enqueue(Reply([Text("slow "), Stall(60)]))
    eca = await spawn()
    await eca.initialize(workspace)
    first = await eca.request("chat/prompt", {"message": "long one", "model": "openai/gpt-4.1"})
    chat_id = first["chatId"]
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["content"].get("text") == "slow ")

    busy = await eca.request("chat/prompt", {"chatId": chat_id, "message": "again"})
    assert busy["chatId"] == chat_id and busy["status"] == "error"
    assert "already running" in busy["message"]
    await eca.notify("chat/promptStop", {"chatId": chat_id})
    await eca.wait_idle(chat_id)

    unknown = await eca.request("chat/prompt", {"message": "hi", "model": "nope/zzz"})
    assert unknown["status"] == "error" and unknown["model"] == "nope/zzz"
    assert "Unknown or unavailable model 'nope/zzz'" in unknown["message"] and "openai/gpt-4.1" in unknown["message"]
    await eca.wait_for(lambda m: m.method == "$/showMessage" and "nope/zzz" in m.params["message"])
    assert await eca.shutdown() == 0
