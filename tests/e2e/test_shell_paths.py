"""Shell commands that reach outside the workspace ask, even under ``byDefault: "allow"`` (issue #12, 3).

Through a real ``eca-notebook server`` with ``toolCall.approval.byDefault: "allow"`` in the workspace config. The
model asks for a command; the test rejects it when asked. Before the fix these ran without asking and the secret
went back to the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt, wait_tool_run

pytestmark = pytest.mark.e2e

SECRET = "top secret 4711"


@pytest.fixture
def allow_all(workspace: Path, home: Path, tmp_path: Path) -> Path:
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"approval": {"byDefault": "allow"}}}))
    # the user trusts the workspace, so its own looser approvals apply (engine/workspace/_trust.py)
    (home / ".config" / "eca").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "eca" / "config.json").write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (home / "secret.txt").write_text(SECRET + "\n")
    return outside


def commands(outside: Path) -> dict[str, str]:
    return {
        "dotdot": "cat ../outside/secret.txt",
        "cd out": "cd .. && cat outside/secret.txt",
        "absolute": f"cat {outside}/secret.txt",
        "tilde": "cat ~/secret.txt",
        "$HOME": 'cat "$HOME/secret.txt"',
        "redirect in": "wc -c < ../outside/secret.txt; cat < ../outside/secret.txt",
        "redirect out": "echo leaked > ../outside/written.txt",
        "subshell": "(cd ../outside && cat secret.txt)",
        "variable": "F=../outside/secret.txt; cat $F",
        "cannot analyse": "cat $(printf '../outside/secret.txt')",
        "syntax": "cat ../outside/secret.txt 'unterminated",
        "eval": "eval 'cat ../outside/secret.txt'",
    }


@pytest.mark.parametrize("kind", list(commands(Path("/x"))))
async def test_outside_shell_commands_ask_under_allow_by_default(kind, allow_all, spawn, llm, workspace):
    command = commands(allow_all)[kind]
    llm.enqueue(Reply([call("shell_command", {"command": command})]), Reply.text("ok"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "look", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    assert run["manualApproval"] is True, f"{command!r} ran without asking"
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    assert SECRET not in json.dumps(completion_requests(llm)[1].body)
    assert not (allow_all / "written.txt").exists()


async def test_inside_commands_still_run_without_asking(allow_all, spawn, llm, workspace):
    llm.enqueue(Reply([call("shell_command", {"command": "cat README.md | wc -l && ls > listing.txt 2>&1"})]),
                Reply.text("ok"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "look", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    [run] = of_type(eca.contents(chat_id), "toolCallRun")
    assert run["manualApproval"] is False
    [called] = of_type(eca.contents(chat_id), "toolCalled")
    assert called["error"] is False and "Exit code: 0" in called["outputs"][0]["text"]
    assert "README.md" in (workspace / "listing.txt").read_text()
