"""Skills through a real ``eca-notebook server``: the catalogue in the system prompt, a skill loaded on demand with
``eca__skill``, and ``/skills``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from .test_server_chat import completion_requests
from .test_server_commands import run, system_texts
from .test_server_tools import of_type, tool_results_sent

pytestmark = pytest.mark.e2e


def skill(folder: Path, name: str, description: str, body: str) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}")


async def test_a_skill_is_listed_then_loaded_on_demand(spawn, llm, workspace, home):
    skill(workspace / ".agents" / "skills" / "review", "review-pr", "Review a pull request",
          "REVIEW-STEPS: read the diff, then comment.\n")
    skill(home / ".config" / "eca" / "skills" / "lint", "lint-fix", "Lint and fix the code",
          "LINT-STEPS: run ruff.\n")
    (home / ".config" / "eca" / "skills" / "broken").mkdir()
    (home / ".config" / "eca" / "skills" / "broken" / "SKILL.md").write_text("no front matter\n")
    llm.enqueue(Reply([ToolCall("call_1", "eca__skill", json.dumps({"name": "review-pr"}))]),
                Reply.text("Reviewed."))
    eca = await spawn()
    await eca.initialize(workspace)

    chat_id, _ = await run(eca, "review my PR", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    first, second = (r.body for r in completion_requests(llm))
    assert '<skill name="review-pr" description="Review a pull request"/>' in first["instructions"]
    assert '<skill name="lint-fix" description="Lint and fix the code"/>' in first["instructions"]
    assert "REVIEW-STEPS" not in json.dumps(first)  # only names and descriptions until the model asks
    assert "eca__skill" in [t["name"] for t in first["tools"]]
    called = of_type(eca.contents(chat_id), "toolCalled")
    assert len(called) == 1 and called[0]["error"] is False and called[0]["name"] == "skill"
    sent = tool_results_sent("openai-responses", second)
    assert len(sent) == 1 and "REVIEW-STEPS: read the diff" in sent[0]
    assert f"**Base directory**: {workspace / '.agents' / 'skills' / 'review'}" in sent[0]

    _, contents = await run(eca, "/skills", chat_id)
    text = system_texts(contents)
    assert "- review-pr: Review a pull request (workspace," in text
    assert "- lint-fix: Lint and fix the code (global," in text
    assert "broken/SKILL.md: no front matter" in text
    assert len(completion_requests(llm)) == 2  # /skills needs no model


async def test_skills_is_a_listed_command(spawn, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    result = await eca.request("chat/queryCommands", {"query": "skil"})
    assert "skills" in [c["name"] for c in result["commands"]]
    _, contents = await run(eca, "/skills")
    assert "No skills found" in system_texts(contents)


async def test_a_skill_is_a_command_whose_text_reaches_the_model(spawn, llm, workspace):
    skill(workspace / ".eca" / "skills" / "review", "review-pr", "Review a pull request",
          "REVIEW-STEPS: read the diff of $1, then comment.\n")
    llm.enqueue(Reply.text("Reviewed."))
    eca = await spawn()
    await eca.initialize(workspace)
    listed = await eca.request("chat/queryCommands", {"query": "review"})
    assert {"name": "review-pr", "description": "Review a pull request", "type": "skill",
            "arguments": []} in listed["commands"]

    chat_id, _ = await run(eca, "/review-pr main.py", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    (request,) = completion_requests(llm)
    sent = json.dumps(request.body["input"])
    assert "Load skill: review-pr" in sent and "REVIEW-STEPS: read the diff of main.py, then comment." in sent
    assert not of_type(eca.contents(chat_id), "toolCalled")  # loaded by the command: no tool round
