"""Agents through a real ``eca-notebook server``: a markdown agent of the workspace is listed in ``config/updated``,
selected with ``chat/selectedAgentChanged``, and its system prompt and tool limits reach the model; the deprecated
id ``agent`` still selects ``code``; a broken agent file is reported by ``/doctor``."""

from __future__ import annotations

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_commands import run, system_texts

pytestmark = pytest.mark.e2e


async def test_a_markdown_agent_is_listed_selected_and_prompts_the_model(spawn, llm, workspace, home):
    agents = workspace / ".eca" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\ndescription: Reviews changes\nmode: primary\nmodel: openai/gpt-4.1-mini\n"
                                        "disabledTools: [write_file]\n---\n\nREVIEWER-PROMPT: review, never edit.\n")
    (agents / "broken.md").write_text("---\nmode: [primary\n---\n")
    (home / ".config" / "eca" / "agents").mkdir(parents=True)
    (home / ".config" / "eca" / "agents" / "helper.md").write_text(
        "---\nmode: subagent\ndescription: Helps\n---\nHELPER\n")
    llm.enqueue(Reply.text("Looks fine."), Reply.text("Done."))
    eca = await spawn()
    await eca.initialize(workspace)
    await eca.wait_for(lambda m: m.method == "config/updated")
    chat = eca.of("config/updated")[0]["chat"]
    assert chat["agents"] == chat["behaviors"] == ["code", "plan", "reviewer"]  # subagents are not selectable
    assert chat["selectAgent"] == chat["selectBehavior"] == "code"

    await eca.notify("chat/selectedAgentChanged", {"agent": "reviewer"})
    chat_id, _ = await run(eca, "review my change")
    await eca.wait_idle(chat_id)
    first = completion_requests(llm)[0].body
    assert first["model"] == "gpt-4.1-mini"  # the agent's default model
    assert first["instructions"].startswith("REVIEWER-PROMPT: review, never edit.")
    tools = [t["name"] for t in first["tools"]]
    assert "eca__read_file" in tools and "eca__write_file" not in tools

    await eca.notify("chat/selectedBehaviorChanged", {"behavior": "agent"})  # the deprecated id of `code`
    code_chat, _ = await run(eca, "now edit", model="openai/gpt-4.1")
    await eca.wait_idle(code_chat)
    second = completion_requests(llm)[1].body
    assert "REVIEWER-PROMPT" not in second["instructions"]
    assert "eca__write_file" in [t["name"] for t in second["tools"]]
    assert not eca.of("$/showMessage") or all("unknown agent" not in m["message"] for m in eca.of("$/showMessage"))

    _, contents = await run(eca, "/doctor")
    text = system_texts(contents)
    assert "reviewer (primary;" in text and "helper (subagent;" in text
    assert "broken.md" in text and "not valid YAML" in text


async def test_an_agent_file_added_while_running_is_announced(spawn, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    await eca.wait_for(lambda m: m.method == "config/updated")
    mark = len(eca.messages)
    agents = workspace / ".eca" / "agents"
    agents.mkdir(parents=True)
    (agents / "Tester.md").write_text("---\nmode: primary\ndescription: Tests\n---\nTEST\n")
    update = await eca.wait_for(lambda m: m.method == "config/updated"
                                and "tester" in (m.params.get("chat") or {}).get("agents", []), start=mark,
                                timeout=60)
    assert update.params["chat"]["agents"] == ["code", "plan", "tester"]
    await eca.notify("chat/selectedAgentChanged", {"agent": "nobody"})
    warning = await eca.wait_for(lambda m: m.method == "$/showMessage", start=mark)
    assert "unknown agent 'nobody'" in warning.params["message"] and "tester" in warning.params["message"]
