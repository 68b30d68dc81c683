"""The user's hooks through a real ``eca-notebook server``: a ``preToolCall`` hook (exit 2) blocks a write — the card
is rejected with the hook's reason, the model is told why — a ``postToolCall`` hook sees the result of an allowed
call, a ``chatStatusChanged`` hook sees the chat run, run a tool and go idle, what a hook prints never shows a
secret, and ``/hooks`` lists them."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from .conftest import SECRET_OPENAI
from .test_server_chat import completion_requests
from .test_server_commands import run, system_texts
from .test_server_tools import call, prompt, tool_results_sent

pytestmark = pytest.mark.e2e

GUARD = """
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["HOOK_LOG"], "pre.jsonl"), "a") as f:
    f.write(json.dumps(event) + "\\n")
if event["tool_name"] == "write_file":
    print("no writes please (key " + os.environ["OPENAI_API_KEY"] + ")", file=sys.stderr)
    sys.exit(2)
"""

AUDIT = """
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["HOOK_LOG"], event["hook_type"] + ".jsonl"), "a") as f:
    f.write(json.dumps(event) + "\\n")
"""


def write_hooks(home: Path, tmp_path: Path) -> Path:
    (tmp_path / "guard.py").write_text(GUARD)
    (tmp_path / "audit.py").write_text(AUDIT)
    config = {"hooks": {
        "guard": {"type": "preToolCall", "description": "No writes", "matcher": "eca__.*",
                  "actions": [{"type": "shell", "shell": f"{sys.executable} {tmp_path / 'guard.py'}"}]},
        "audit": {"type": "postToolCall",
                  "actions": [{"type": "shell", "shell": f"{sys.executable} {tmp_path / 'audit.py'}"}]},
        "status": {"type": "chatStatusChanged",
                   "actions": [{"type": "shell", "shell": f"{sys.executable} {tmp_path / 'audit.py'}"}]},
    }}
    (home / ".config" / "eca").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "eca" / "config.json").write_text(json.dumps(config))
    logs = tmp_path / "hook-logs"
    logs.mkdir()
    return logs


async def test_a_pre_tool_call_hook_blocks_a_write_and_the_model_is_told_why(spawn, llm, workspace, home, tmp_path):
    logs = write_hooks(home, tmp_path)
    llm.enqueue(
        Reply([call("write_file", {"path": "new.txt", "content": "x"})]),
        Reply([call("read_file", {"path": "README.md"}, "c2")]),
        Reply.text("Done."),
    )
    eca = await spawn(HOOK_LOG=str(logs))
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "write a file", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id, timeout=90)

    assert not (workspace / "new.txt").exists()
    contents = eca.contents(chat_id)
    rejected = [c for _, c in contents if c["type"] == "toolCallRejected"]
    assert [(c["id"], c["reason"]) for c in rejected] == [("call_1", "hook-rejected")]
    notes = [c["text"] for _, c in contents if c["type"] == "text" and "hook" in c["text"]]
    assert any("Tool call rejected by hook 'guard': no writes please" in n for n in notes), notes
    assert all(SECRET_OPENAI not in json.dumps(c) for _, c in contents)

    bodies = [r.body for r in completion_requests(llm)]
    told = tool_results_sent("openai-responses", bodies[1])
    assert "no writes please" in told[0] and "hook 'guard'" in told[0] and SECRET_OPENAI not in told[0]

    pre = [json.loads(line) for line in (logs / "pre.jsonl").read_text().splitlines()]
    assert [(e["hook_type"], e["tool_name"], e["server"]) for e in pre] == [
        ("preToolCall", "write_file", "eca"), ("preToolCall", "read_file", "eca")]
    assert pre[0]["tool_input"] == {"path": "new.txt", "content": "x"} and pre[0]["chat_id"] == chat_id
    assert pre[0]["cwd"] == str(workspace)
    post = [json.loads(line) for line in (logs / "postToolCall.jsonl").read_text().splitlines()]
    assert len(post) == 1 and post[0]["tool_name"] == "read_file" and "demo project" in post[0]["tool_response"]

    status_log = logs / "chatStatusChanged.jsonl"
    for _ in range(1200):  # the advisory hook runs in the background: its last event (idle) comes after the turn
        if status_log.exists() and '"status": "idle"' in status_log.read_text():
            break
        await asyncio.sleep(0.1)
    statuses = [json.loads(line) for line in status_log.read_text().splitlines()]
    assert statuses[0]["status"] == "running" and statuses[-1]["status"] == "idle"
    assert all(e["chat_id"] == chat_id for e in statuses)
    assert ["c2"] in [e["running_tool_call_ids"] for e in statuses]  # the read ran
    assert all(a != b for a, b in zip(statuses, statuses[1:], strict=False))  # never the same snapshot twice

    _, listed = await run(eca, "/hooks", chat_id)
    text = system_texts(listed)
    assert "preToolCall:\n  - guard — No writes matcher: eca__.*" in text and "postToolCall:" in text
    assert await eca.shutdown() == 0
