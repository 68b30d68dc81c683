"""``/rules``, ``/config`` and ``/context`` (engine/turn/_introspect.py) through a real connection (EcaClient over the
in-memory door) and the scripted LLM server: what they show, that secrets stay masked, that no model is called."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer

SECRET = "sk-test-introspect-SECRET-9876"
MCP_TOKEN = "mcp-env-token-value-424242"


@pytest.fixture
def config(llm: ScriptedLLMServer) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1",
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "key": SECRET,
                                   "models": {"m1": {"limit": {"context": 100000}}}}},
            "mcpServers": {"tool": {"command": "true", "env": {"GITHUB_TOKEN": MCP_TOKEN}, "disabled": True}}}


@pytest.fixture
async def client(workspace: Path, env: dict[str, str], config: dict[str, Any]):
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        yield eca
    finally:
        await eca.aclose()


async def shown(client: EcaClient, command: str, chat_id: str | None = None) -> str:
    result = await client.prompt(command, chat_id=chat_id)
    assert result.ok, result.error
    return "\n".join(result.system)


async def test_rules_lists_each_file_in_prompt_order(client: EcaClient, workspace: Path,
                                                     llm: ScriptedLLMServer) -> None:
    assert "No rules." in await shown(client, "/rules")
    (workspace / "AGENTS.md").write_text("Always answer in haiku.\n")
    (workspace / ".eca" / "rules").mkdir(parents=True)
    (workspace / ".eca" / "rules" / "style.md").write_text("# Style\n\nPrefer pathlib.\nline 3\nline 4 not shown\n")
    text = await shown(client, "/rules")
    assert text.index("AGENTS.md —") < text.index("style.md —")
    assert f"{workspace / '.eca' / 'rules' / 'style.md'}" in text and "Prefer pathlib." in text
    assert "line 4 not shown" not in text
    assert llm.requests == []


async def test_a_rule_symlinked_out_of_the_workspace_is_refused_and_says_so(client: EcaClient, workspace: Path,
                                                                           tmp_path: Path,
                                                                           llm: ScriptedLLMServer) -> None:
    """A cloned repository's AGENTS.md pointing at a file of the user's (netrc, environ, global config): its text
    never reaches the model, which gets a one-line note instead; /rules shows the same note."""
    outside = tmp_path / "users-netrc"
    outside.write_text("machine api.example.com login me password sk-rule-LEAK-0123456789abcdef\n")
    (workspace / "AGENTS.md").symlink_to(outside)
    note = "rule AGENTS.md skipped: symlink points outside the workspace"
    assert note in await shown(client, "/rules")
    llm.enqueue(Reply.text("ok"))
    assert (await client.prompt("hello")).ok
    sent = json.dumps(llm.requests[0].body)
    assert "sk-rule-LEAK" not in sent and "api.example.com" not in sent
    assert note in sent


async def test_config_is_resolved_and_masked(client: EcaClient, llm: ScriptedLLMServer) -> None:
    text = await shown(client, "/config")
    assert '"defaultModel": "fake/m1"' in text and '"byDefault": "ask"' in text  # defaults merged in
    assert SECRET not in text and MCP_TOKEN not in text
    assert '"key": "sk-…9876"' in text  # masked like /doctor shows it
    assert "Applied layers" in text and llm.requests == []


async def test_context_breaks_the_next_request_down(client: EcaClient, workspace: Path,
                                                    llm: ScriptedLLMServer) -> None:
    (workspace / "AGENTS.md").write_text("Always answer in haiku. " * 40)
    skill = workspace / ".eca" / "skills" / "a"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: a-skill\ndescription: Does a thing\n---\nbody\n")
    llm.enqueue(Reply.text("x" * 4000))
    first = await client.prompt("hello " * 100)
    text = await shown(client, "/context", first.chat_id)

    def tokens(row: str) -> int:
        m = re.search(rf"^\s*{row}\s+([\d,]+) tokens", text, re.MULTILINE)
        assert m, (row, text)
        return int(m.group(1).replace(",", ""))

    assert "fake/m1" in text
    assert tokens("Rules") >= 200 and tokens("Skills") > 0 and tokens("Tools") > 500
    assert tokens("History") >= 1100  # the 600-character prompt and the 4,000-character answer
    assert tokens("Total") == sum(tokens(r) for r in ("System prompt", "Rules", "Skills", "Tools", "History"))
    assert "of 100,000" in text and "2 messages" in text
    assert len(llm.requests) == 1  # /context calls no model


def test_context_counts_the_tools_a_small_model_is_really_sent(tmp_path: Path) -> None:
    """A compact (small) model is offered only the tools its prompt asks for: /context says so instead of counting
    every tool definition against its small window."""
    from eca_notebook.engine import Engine, EngineOptions
    from eca_notebook.engine.chats._chat import Chat
    from eca_notebook.engine.turn._introspect import context_show

    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    config = {"localModel": False, "defaultModel": "tiny/m",
              "providers": {"tiny": {"api": "openai-chat", "url": "http://127.0.0.1:9",
                                     "models": {"m": {"compact": True, "limit": {"context": 8192}}}}}}
    engine = Engine(EngineOptions(workspace_folders=[tmp_path], env={
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "ECA_CONFIG": json.dumps(config)}))
    text = context_show(engine, Chat(id="c1"))
    offered = len(engine.offered_tools(engine.selected_behavior))
    assert f"of {offered} definitions: a small model gets only the tools its prompt asks for" in text, text
