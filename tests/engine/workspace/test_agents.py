"""Agents (workspace/_agents.py) on a real engine: built-ins, config agents with ``inherit`` (and cycles), markdown
agents from the workspace and the user config dir, the deprecated id ``agent``, ``defaultAgent``, ``spawnableBy``, and a
custom agent's ``disabledTools``/``toolCall`` changing what the model is offered."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.workspace._agents import parse_agent_markdown


@pytest.fixture
async def make(tmp_path: Path, env: dict[str, str]) -> AsyncIterator[Callable[..., Engine]]:
    made: list[Engine] = []

    def factory(config: dict[str, Any] | None = None) -> Engine:
        engine = Engine(EngineOptions(workspace_folders=[tmp_path / "ws"],
                                      initialization_options={"localModel": False, **(config or {})}, env=env))
        made.append(engine)
        return engine

    (tmp_path / "ws").mkdir()
    yield factory
    for engine in made:
        await engine.aclose()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_builtins_and_the_deprecated_id(make):
    engine = make()
    agents = engine.agents
    assert engine.behaviors() == ["code", "plan"]  # the built-in subagents are not selectable in a chat
    assert agents.ids()[:4] == ["code", "plan", "explorer", "general"]
    assert [s.id for s in agents.subagents("code")] == ["explorer", "general"]
    assert agents.get("agent") is agents.get("code")
    assert engine.selected_behavior == "code"
    engine.select_behavior("agent")  # the old id still works, and is shown as the new one
    assert engine.selected_behavior == "code"
    with pytest.raises(ValueError, match="explorer"):
        engine.select_behavior("explorer")
    explorer = agents.get("explorer")
    assert explorer is not None and explorer.description and "without modifying" in explorer.description
    offered = {t.name for t in engine.offered_tools("explorer").values()}
    assert "read_file" in offered and "grep" in offered
    assert not offered & {"edit_file", "write_file", "move_file", "notebook_edit_cell"}
    assert "Do not create or modify files" in engine.system_prompt("explorer")
    assert "edit_file" in {t.name for t in engine.offered_tools("general").values()}
    assert engine.config_updated().chat is not None
    chat = engine.config_updated().chat
    assert chat.agents == chat.behaviors == ["code", "plan"] and chat.select_agent == chat.select_behavior == "code"
    assert not [p for p in engine.problems if "agent" in p]


async def test_config_agents_inherit_and_cycles(make):
    engine = make({"agent": {
        "my-plan": {"inherit": "plan", "description": "plans more"},
        "a": {"inherit": "b", "mode": "subagent", "description": "A"},
        "b": {"inherit": "a", "mode": "subagent", "description": "B"},
        "orphan": {"inherit": "nobody", "systemPrompt": "Be brief."},
        "worker": {"mode": ["subagent"], "description": "works", "spawnableBy": "my-plan", "maxSteps": 5},
        "old": {"prompts": {"chat": "Prompt from prompts.chat"}, "mode": "primary"},
    }, "behavior": {"legacy": {"systemPrompt": "legacy prompt", "mode": "primary"}}})
    agents = engine.agents
    my_plan = agents.get("my-plan")
    assert my_plan is not None and my_plan.inherits == ("plan",) and my_plan.modes == {"primary"}
    # plan's disabled tools come along with the inheritance
    assert "edit_file" not in {t.name for t in engine.offered_tools("my-plan").values()}
    assert "plan" in engine.system_prompt("my-plan").lower()
    problems = "\n".join(engine.problems)
    assert "inherit cycle" in problems and ("a → b → a" in problems or "b → a → b" in problems)
    assert "inherits unknown agent 'nobody'" in problems
    assert agents.get("orphan") is not None  # its own settings still make an agent
    assert engine.behaviors()[:2] == ["code", "plan"]
    assert sorted(engine.behaviors()[2:]) == ["legacy", "my-plan", "old", "orphan"]
    assert agents.get("old").system_prompt == "Prompt from prompts.chat"
    assert engine.system_prompt("legacy").startswith("legacy prompt")
    worker = agents.get("worker")
    assert worker is not None and worker.max_steps == 5 and worker.spawnable_by == ("my-plan",)
    assert "worker" in [s.id for s in agents.subagents("my-plan")]
    assert "worker" not in [s.id for s in agents.subagents("code")]
    assert "worker" not in [s.id for s in agents.subagents(None)]
    assert "orphan" in [s.id for s in agents.subagents("code")]  # no mode: both roles


async def test_markdown_agents_from_workspace_and_user_dir(make, tmp_path, env):
    user_dir = Path(env["XDG_CONFIG_HOME"]) / "eca" / "agents"
    write(user_dir / "Reviewer.md", "---\ndescription: global reviewer\nmode: primary\n---\nGlobal prompt.\n")
    write(user_dir / "sleeper.agent.md", "---\nmode: subagent\ndescription: sleeps\nmodel: openai/gpt-5\n"
                                         "steps: 3\nspawnableBy:\n  - Reviewer\n---\nSleep.\n")
    ws = tmp_path / "ws" / ".eca" / "agents"
    write(ws / "reviewer.md", "---\ndescription: |\n  Reviews the diff.\n  Carefully.\nmode: [primary]\n"
                              "disabledTools: [shell_command]\n---\n\nYou review code.\n")
    write(ws / "broken.md", "---\nmode: [primary\n---\nbody\n")
    write(ws / "bad-type.md", "---\nmaxSteps: many\n---\nbody\n")
    engine = make()
    agents = engine.agents
    reviewer = agents.get("reviewer")
    assert reviewer is not None
    assert reviewer.system_prompt == "You review code."  # the workspace file wins over the user's
    assert reviewer.description == "Reviews the diff. Carefully."
    assert reviewer.source.endswith("reviewer.md") and ".eca" in reviewer.source
    assert "shell_command" not in {t.name for t in engine.offered_tools("reviewer").values()}
    assert "reviewer" in engine.behaviors()
    sleeper = agents.get("sleeper")
    assert sleeper is not None and sleeper.default_model == "openai/gpt-5" and sleeper.max_steps == 3
    assert sleeper.spawnable_by == ("reviewer",)  # lowercased, as the reference does for markdown
    assert [s.id for s in agents.subagents("reviewer")] == ["explorer", "general", "sleeper"]
    problems = "\n".join(engine.problems)
    assert "broken.md" in problems and "not valid YAML" in problems
    assert "bad-type.md" in problems and "maxSteps" in problems
    assert "broken" not in agents.ids()
    # a new file is seen without a restart
    write(ws / "later.md", "---\nmode: primary\n---\nLater.\n")
    assert "later" in engine.behaviors()


async def test_a_workspace_agent_file_linking_out_of_the_workspace_is_not_loaded(make, tmp_path):
    """A repository's ``.eca/agents/code.md`` → ``~/notes.txt`` made that file the default agent's system prompt,
    sent to the model at every prompt."""
    outside = write(tmp_path / "notes.txt", "my private notes: launch code 8812\n")
    ws = tmp_path / "ws" / ".eca" / "agents"
    ws.mkdir(parents=True)
    (ws / "code.md").symlink_to(outside)
    write(ws / "inside.md", "---\ndescription: stays\nmode: primary\n---\nInside prompt.\n")
    engine = make()
    assert "launch code" not in engine.system_prompt("code") and engine.agents.get("inside") is not None
    assert any(p == f"agent file {ws / 'code.md'} skipped: symlink points outside the workspace"
               for p in engine.problems), engine.problems


async def test_default_agent(make):
    assert make({"defaultAgent": "plan"}).selected_behavior == "plan"
    assert make({"defaultBehavior": "agent"}).selected_behavior == "code"
    assert make({"defaultAgent": "mine", "agent": {"mine": {"mode": "primary"}}}).selected_behavior == "mine"
    unknown = make({"defaultAgent": "nope"})
    assert unknown.selected_behavior == "code"
    assert any("defaultAgent 'nope'" in p for p in unknown.problems)
    subagent = make({"defaultAgent": "explorer"})  # not a primary agent
    assert subagent.selected_behavior == "code"


async def test_custom_agent_tools(make):
    engine = make({"agent": {
        "readonly": {"disabledTools": ["edit_file", "write_file"]},
        "strict": {"toolCall": {"approval": {"deny": {"eca__grep": {}}}}},
        "old-name": {"inherit": "agent"},  # the deprecated id works as a parent too
    }, "behavior": {"agent": {"disabledTools": ["move_file"]}}})  # `behavior.agent` configures `code`
    code = {t.name for t in engine.offered_tools("code").values()}
    assert "move_file" not in code and "edit_file" in code
    readonly = {t.name for t in engine.offered_tools("readonly").values()}
    assert "edit_file" not in readonly and "write_file" not in readonly and "read_file" in readonly
    strict = {t.name for t in engine.offered_tools("strict").values()}
    assert "grep" not in strict and "grep" in code  # a bare deny rule hides the tool
    assert engine.agents.tool_call_for("strict").approval.deny.keys() >= {"eca__grep"}
    assert "eca__read_file" in engine.agents.tool_call_for("strict").approval.allow  # global rules kept
    assert engine.agents.get("old-name").inherits == ("code",)
    assert "move_file" not in {t.name for t in engine.offered_tools("old-name").values()}


def test_markdown_parsing(tmp_path):
    ok = parse_agent_markdown(write(tmp_path / "x.md", "---\nname: Duel\ntools:\n  - eca__read_file\n"
                                                       "---\nbody"))
    assert ok == ("duel", {"toolCall": {"approval": {"byDefault": "ask", "allow": {"eca__read_file": {}}}},
                           "systemPrompt": "body"})
    plain = parse_agent_markdown(write(tmp_path / "Plain.md", "Just a prompt.\n"))
    assert plain == ("plain", {"systemPrompt": "Just a prompt."})
    listed = parse_agent_markdown(write(tmp_path / "l.md", "---\n- a\n---\n"))
    assert isinstance(listed, str) and "must be a map" in listed


async def test_read_only_agents_hide_every_tool_that_changes_files_or_notebooks(make):
    """plan and explorer (and an agent saying ``readOnly: true``, or inheriting plan) are offered no tool whose
    ``mutates`` is set — notebook edits included, not only the file tools plan's config lists."""
    engine = make({"agent": {"safe": {"readOnly": True}, "my-plan": {"inherit": "plan"}}})
    changing = {"edit_file", "write_file", "move_file", "notebook_edit_cell", "notebook_insert_cell",
                "notebook_delete_cell", "notebook_move_cell"}
    code = {t.name for t in engine.offered_tools("code").values()}
    assert changing <= code
    for agent in ("plan", "explorer", "safe", "my-plan"):
        offered = {t.name for t in engine.offered_tools(agent).values()}
        assert not offered & changing, agent
        assert {"read_file", "notebook_read"} <= offered, agent
