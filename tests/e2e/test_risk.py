"""Risk levels over the wire, through a real ``eca-notebook server``: every content of a call carries the engine's
``risk``, and ``toolCall.approval.risk`` acts on it (auto-allow low, always ask high)."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_tools import call, of_type, prompt, wait_tool_run

pytestmark = pytest.mark.e2e


async def test_tool_calls_carry_their_risk_and_the_config_acts_on_it(spawn, llm, workspace, home):
    # the user trusts the workspace, so its own looser approvals apply (engine/_trust.py)
    (home / ".config" / "eca").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "eca" / "config.json").write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    (workspace / "build").mkdir()
    (workspace / ".eca").mkdir()
    # shell commands matching "rm .*" are allowed by a rule — but high risk always asks; low risk runs unasked
    (workspace / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"approval": {
        "allow": {"eca__shell_command": {"argsMatchers": {"command": ["rm .*"]}}},
        "risk": {"low": "allow", "high": "ask"},
    }}}))
    llm.enqueue(
        Reply([call("shell_command", {"command": "ls"}, "c1")]),
        Reply([call("shell_command", {"command": "rm -rf build"}, "c2")]),
        Reply.text("I left build alone."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "clean up", model="openai/gpt-4.1")

    listing = await wait_tool_run(eca, "c1")
    assert listing["manualApproval"] is False
    assert listing["risk"] == {"level": "low", "reason": "only reads: ls"}

    removal = await wait_tool_run(eca, "c2")
    assert removal["manualApproval"] is True  # the allow rule matches, the high risk asks anyway
    assert removal["risk"] == {"level": "high", "reason": "deletes recursively: build"}
    await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": "c2"})
    await eca.wait_idle(chat_id)
    assert (workspace / "build").is_dir()

    contents = eca.contents(chat_id)
    [ran] = of_type(contents, "toolCallRunning")
    [called] = of_type(contents, "toolCalled")
    [rejected] = of_type(contents, "toolCallRejected")
    assert ran["risk"] == called["risk"] == listing["risk"]  # every content of a call says it, for replays
    assert rejected["risk"] == removal["risk"]

    # a reopened chat replays the same risk
    mark = len(eca.messages)
    await eca.request("chat/open", {"chatId": chat_id})
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["content"]["type"] ==
                       "toolCallRejected", start=mark)
    replayed = [c for _, c in eca.contents(chat_id, start=mark) if c["type"] == "toolCallRejected"]
    assert replayed[0]["risk"] == removal["risk"]
