"""``/rules``, ``/config`` and ``/context`` through a real ``eca-notebook server``: shown without a model call, and
``/config`` never prints a key."""

from __future__ import annotations

import pytest

from .conftest import SECRET_ANTHROPIC, SECRET_OPENAI
from .test_server_chat import completion_requests
from .test_server_commands import run, system_texts

pytestmark = pytest.mark.e2e


async def test_rules_config_and_context(spawn, llm, workspace):
    (workspace / "AGENTS.md").write_text("Always answer in haiku.\n")
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, contents = await run(eca, "/rules")
    assert "AGENTS.md —" in system_texts(contents) and "Always answer in haiku." in system_texts(contents)

    _, contents = await run(eca, "/config", chat_id)
    text = system_texts(contents)
    assert '"local-vllm"' in text and '"byDefault": "ask"' in text
    assert SECRET_OPENAI not in text and SECRET_ANTHROPIC not in text

    _, contents = await run(eca, "/context", chat_id)
    text = system_texts(contents)
    for row in ("System prompt", "Rules", "Skills", "Tools", "History", "Total"):
        assert f"  {row}" in text, (row, text)
    assert not completion_requests(llm)

    commands = await eca.request("chat/queryCommands", {"query": ""})
    assert {"rules", "config", "context", "skills"} <= {c["name"] for c in commands["commands"]}
