"""Risk levels over the wire, through a real ``eca-notebook server``: every content of a call carries the engine's
``risk``, and ``toolCall.approval.risk`` acts on it (auto-allow low, always ask high)."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_tools import call, of_type, prompt, wait_tool_run

pytestmark = pytest.mark.e2e


async def test_tool_calls_carry_their_risk_and_the_config_acts_on_it(spawn, llm, workspace, home):
    # the user trusts the workspace, so its own looser approvals apply (engine/workspace/_trust.py)
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


async def test_what_runs_programs_or_reaches_outside_asks_under_low_allow(spawn, llm, workspace, home):
    """#29: with the README's own ``risk: {low: allow}`` (and ``byDefault: allow``), a reader that runs a program
    (``rg --pre``), a hook written into ``.git/hooks``, a ``file://`` URL and ``git config --global`` all ask; the
    summary and the risk reason show a newline and a bidi override as escapes, not as themselves."""
    (home / ".config" / "eca").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "eca" / "config.json").write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".eca").mkdir()
    (workspace / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"approval": {
        "byDefault": "allow", "risk": {"low": "allow", "high": "ask"}}}}))
    tricky = "notes\u202etxt.sh\nrm -rf ~.md"
    calls = [
        ("c1", "shell_command", {"command": "rg --pre sh TODO ."}),
        ("c2", "write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}),
        ("c3", "shell_command", {"command": "curl -s file:///etc/hostname"}),
        ("c4", "shell_command", {"command": "git config --global user.name Mallory"}),
        ("c5", "write_file", {"path": tricky, "content": "x\n"}),
    ]
    llm.enqueue(*[Reply([call(name, args, call_id)]) for call_id, name, args in calls], Reply.text("Done."))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "tidy up", model="openai/gpt-4.1")
    seen = {}
    for call_id, _, _ in calls:
        run = await wait_tool_run(eca, call_id)
        seen[call_id] = run
        if call_id == "c5":  # a new file in the workspace: low, runs unasked
            assert run["manualApproval"] is False
            continue
        assert run["manualApproval"] is True, (call_id, run)
        await eca.notify("chat/toolCallReject", {"chatId": chat_id, "toolCallId": call_id})
    await eca.wait_idle(chat_id)
    assert seen["c1"]["risk"]["level"] == "high" and "rg --pre" in seen["c1"]["risk"]["reason"]
    assert seen["c2"]["risk"] == {"level": "high", "reason": "writes git's internals: .git/hooks/pre-commit (runs as "
                                                             "code on the next git command)"}
    assert "/etc/hostname" in seen["c3"]["risk"]["reason"]
    assert ".gitconfig" in seen["c4"]["risk"]["reason"]
    for shown in (seen["c5"]["summary"], seen["c5"]["risk"]["reason"]):
        assert "notes\\u202etxt.sh\\nrm -rf ~.md" in shown and "\u202e" not in shown and "\n" not in shown
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
