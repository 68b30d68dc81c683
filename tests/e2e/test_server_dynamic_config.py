"""A user's existing ``~/.config/eca`` through a real ``eca-notebook server`` over stdio: a provider key from
``${cmd:…}`` (it reaches the provider's Authorization header and never the server's log), an agent's system prompt
from ``${file:prompts/review.md}`` (relative to the config file), and templates (``{% if isSubagent %}``) in a
markdown agent and a rule — the parent's request gets the main branch, the spawned subagent's the other."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_commands import run
from .test_server_tools import call, prompt

pytestmark = pytest.mark.e2e

MODEL = "openai/gpt-4.1"
CMD_KEY = "sk-test-from-cmd-0042"


async def test_file_cmd_and_templates_reach_the_model(spawn, llm, workspace, home):
    config_dir = home / ".config" / "eca"
    (config_dir / "prompts").mkdir(parents=True)
    (config_dir / "prompts" / "review.md").write_text("REVIEW-PROMPT from a file.\n")
    (config_dir / "config.json").write_text(json.dumps({
        "providers": {"openai": {"key": "${cmd:echo " + CMD_KEY + "}"}},
        "agent": {"reviewer": {"mode": "primary", "systemPrompt": "${file:prompts/review.md}"}},
    }))
    (config_dir / "agents").mkdir()
    (config_dir / "agents" / "helper.md").write_text(
        "---\nmode: subagent\ndescription: Helps\n---\n"
        "{% if isSubagent %}HELPER-AS-SUBAGENT{% else %}HELPER-AS-MAIN{% endif %}"
        "{% if toolEnabled_eca__read_file %} CAN-READ{% endif %}\n")
    (config_dir / "rules").mkdir()
    (config_dir / "rules" / "mode.md").write_text("{% if isSubagent %}RULE-SUB{% else %}RULE-MAIN{% endif %}\n")
    llm.enqueue(
        Reply.text("Reviewed."),
        Reply([call("spawn_agent", {"agent": "helper", "task": "Help me"}, "call_parent")]),
        Reply.text("Helped."),
        Reply.text("The helper helped."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    await eca.wait_for(lambda m: m.method == "config/updated")

    await eca.notify("chat/selectedAgentChanged", {"agent": "reviewer"})
    chat_id, _ = await run(eca, "review this", model=MODEL)
    await eca.wait_idle(chat_id)
    [first] = completion_requests(llm)
    assert first.headers["authorization"] == f"Bearer {CMD_KEY}"  # the key the command printed
    assert first.body["instructions"].startswith("REVIEW-PROMPT from a file.")
    assert "RULE-MAIN" in first.body["instructions"]

    await eca.notify("chat/selectedAgentChanged", {"agent": "code"})
    parent = await prompt(eca, "get help", model=MODEL)
    await eca.wait_idle(parent)
    requests = completion_requests(llm)
    assert len(requests) == 4
    parent_prompt, child_prompt = requests[1].body["instructions"], requests[2].body["instructions"]
    assert "RULE-MAIN" in parent_prompt and "RULE-SUB" not in parent_prompt
    assert "HELPER-AS-SUBAGENT CAN-READ" in child_prompt and "RULE-SUB" in child_prompt
    assert "HELPER-AS-MAIN" not in child_prompt and "{%" not in child_prompt

    await eca.shutdown()
    assert CMD_KEY not in eca.stderr
