"""Skills (workspace/_skills.py): discovery and its reported problems, the system prompt's catalogue, ``/skills``, and
a turn in which the model loads a skill (EcaClient over the in-memory door, the scripted LLM server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.engine.workspace._skills import discover_skills, list_skills, read_roots, render_skills
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall


def skill(folder: Path, name: str, description: str, body: str = "Do it well.\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    ws, glob = tmp_path / "ws", tmp_path / "config" / "eca"
    ws.mkdir()
    glob.mkdir(parents=True)
    return ws, glob


def test_workspace_then_agents_then_global_then_config(layout: tuple[Path, Path], tmp_path: Path) -> None:
    ws, glob = layout
    skill(ws / ".eca" / "skills" / "lint", "lint-fix", "Lint and fix the code")
    skill(ws / ".agents" / "skills" / "nested" / "deeper", "deep", "Found below a grouping folder")
    skill(glob / "skills" / "gif", "gif-generator", "Make gifs")
    skill(tmp_path / "elsewhere" / "one", "from-config", "Listed by the config")
    skill(ws / "rel" / "two", "relative", "Relative to the workspace")

    found = discover_skills([ws], glob, [{"path": str(tmp_path / "elsewhere")}, {"path": "rel"}, {"nope": 1}])
    assert [(s.name, s.scope) for s in found.skills] == [
        ("lint-fix", "workspace"), ("deep", "workspace"), ("gif-generator", "global"),
        ("from-config", "config"), ("relative", "config")]
    assert found.problems == []
    assert found.get("gif-generator") is not None and found.get("gif-generator").folder == glob / "skills" / "gif"
    assert found.get("lint-fix").body.strip() == "Do it well."


def test_broken_skills_are_reported_not_fatal(layout: tuple[Path, Path]) -> None:
    ws, glob = layout
    root = ws / ".eca" / "skills"
    skill(root / "good", "good", "Works")
    (root / "plain").mkdir()
    (root / "plain" / "SKILL.md").write_text("# no front matter\n")
    (root / "open").mkdir()
    (root / "open" / "SKILL.md").write_text("---\nname: open\ndescription: never closed\n")
    (root / "nodesc").mkdir()
    (root / "nodesc" / "SKILL.md").write_text("---\nname: nodesc\n---\nbody\n")
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: bin\ndescription: x\n---\n\xff\xfe")
    (root / "spaces").mkdir()
    (root / "spaces" / "SKILL.md").write_text("---\nname: two words\ndescription: x\n---\n")
    skill(glob / "skills" / "good", "good", "The global one, shadowed by the project's")

    found = discover_skills([ws], glob)
    assert [s.name for s in found.skills] == ["good"]
    assert found.skills[0].scope == "workspace"
    text = "\n".join(found.problems)
    assert "plain/SKILL.md: no front matter" in text
    assert "open/SKILL.md: the front matter is not closed" in text
    assert "nodesc/SKILL.md: the front matter has no description" in text
    assert "binary/SKILL.md: not valid UTF-8" in text
    assert "spaces/SKILL.md: the name 'two words' has spaces" in text
    assert "skill 'good' is already defined by" in text
    listed = list_skills(found)
    assert "- good: Works (workspace," in listed and "Skipped:" in listed and "no front matter" in listed


def test_nothing_found_and_a_changed_file_is_read_again(layout: tuple[Path, Path]) -> None:
    ws, glob = layout
    found = discover_skills([ws], glob)
    assert found.skills == [] and render_skills(found) == "" and "No skills found" in list_skills(found)
    path = skill(ws / ".eca" / "skills" / "a", "a", "first")
    assert discover_skills([ws], glob).skills[0].description == "first"
    path.write_text("---\nname: a\ndescription: second, longer\n---\n")
    assert discover_skills([ws], glob).skills[0].description == "second, longer"


def test_catalogue_names_and_descriptions_only(layout: tuple[Path, Path]) -> None:
    ws, glob = layout
    skill(ws / ".eca" / "skills" / "a", "review-pr", 'Review a "pull request" <url>', body="SECRET-BODY\n")
    text = render_skills(discover_skills([ws], glob))
    assert '<skill name="review-pr" description="Review a &quot;pull request&quot; &lt;url&gt;"/>' in text
    assert "eca__skill" in text and "SECRET-BODY" not in text


def test_read_roots_are_the_skill_folders_outside_the_workspace(layout: tuple[Path, Path]) -> None:
    ws, glob = layout
    skill(ws / ".eca" / "skills" / "inside", "inside", "x")
    skill(glob / "skills" / "outside", "outside", "y")
    assert read_roots(discover_skills([ws], glob), [ws]) == ((glob / "skills" / "outside").resolve(),)


def test_a_workspace_skill_linking_out_of_the_workspace_is_not_loaded(layout: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    """A repository's ``.eca/skills/up`` → ``../../other`` (another project's skills, beside it) would make that
    folder one ``read_file`` reads without asking, and so would a ``SKILL.md`` linking to a file outside."""
    ws, glob = layout
    skill(tmp_path / "other" / "skills" / "deploy", "deploy", "Deploys")
    (tmp_path / "other" / "skills" / "deploy" / "secrets.env").write_text("TOKEN=x\n")
    (ws / ".eca" / "skills").mkdir(parents=True)
    (ws / ".eca" / "skills" / "up").symlink_to(tmp_path / "other")
    (ws / ".agents" / "skills" / "one").mkdir(parents=True)
    (ws / ".agents" / "skills" / "one" / "SKILL.md").symlink_to(glob / "skills" / "g" / "SKILL.md")
    skill(glob / "skills" / "g", "global-one", "Lives in the user's config folder")
    skill(ws / ".eca" / "skills" / "local", "local", "Stays")

    found = discover_skills([ws], glob)
    assert [s.name for s in found.skills] == ["local", "global-one"]
    assert read_roots(found, [ws]) == ((glob / "skills" / "g").resolve(),)  # the user's own folder only
    assert len(found.problems) == 2 and all("symlink points outside the workspace" in p for p in found.problems)


# -- through the engine ------------------------------------------------------------------------------------------


@pytest.fixture
def config(llm: ScriptedLLMServer) -> dict[str, Any]:
    return {"localModel": False, "defaultModel": "fake/m1",
            "providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


async def test_no_skill_tool_without_skills(workspace: Path, env: dict[str, str], config: dict[str, Any],
                                            llm: ScriptedLLMServer) -> None:
    llm.enqueue(Reply.text("hi"))
    client = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        result = await client.prompt("hello")
        assert result.ok, result.error
    finally:
        await client.aclose()
    body = llm.requests[-1].body
    assert "eca__skill" not in tool_names(body) and "<skills" not in json.dumps(body)


async def test_the_model_loads_a_global_skill_and_reads_its_files(workspace: Path, env: dict[str, str],
                                                                 config: dict[str, Any],
                                                                 llm: ScriptedLLMServer) -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "eca" / "skills" / "gif"
    skill(folder, "gif-generator", "Make gifs with the bundled script", body="Run scripts/gen.py NAME.\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "gen.py").write_text("print('GIF-SCRIPT')\n")
    llm.enqueue(Reply([ToolCall("s1", "eca__skill", json.dumps({"name": "gif-generator"}))]),
                Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": str(folder / "scripts" / "gen.py")}))]),
                Reply([ToolCall("s2", "eca__skill", json.dumps({"name": "nope"}))]),
                Reply.text("done"))
    asked: list[Any] = []
    client = await EcaClient.start(workspace=workspace, config=config, env=env,
                                   approval=lambda content: asked.append(content) or False)
    try:
        result = await client.prompt("make me a gif")
        assert result.ok, result.error
        listing = await client.prompt("/skills")
    finally:
        await client.aclose()
    first = llm.requests[0].body
    assert "eca__skill" in tool_names(first)
    system = first["messages"][0]["content"]
    assert '<skill name="gif-generator" description="Make gifs with the bundled script"/>' in system
    assert "Run scripts/gen.py" not in system  # the body only on demand
    loaded, read, missing = result.tool_calls
    assert loaded.status == "done" and loaded.summary == "Loading skill 'gif-generator'"
    assert f"**Base directory**: {folder}" in (loaded.output or "")
    assert "Run scripts/gen.py NAME." in (loaded.output or "") and "- scripts/gen.py" in (loaded.output or "")
    # the skill's own file, outside the workspace, is read without asking (the approval callback refuses all)
    assert read.status == "done" and "GIF-SCRIPT" in (read.output or "") and asked == []
    assert missing.status == "failed" and "no skill named 'nope'. Available skills: gif-generator" in (
        missing.output or "")
    assert "gif-generator: Make gifs with the bundled script (global," in "\n".join(listing.system)


async def test_approval_rules_select_skills_by_name_and_disabled_tools_hide_them(
        workspace: Path, env: dict[str, str], config: dict[str, Any], llm: ScriptedLLMServer) -> None:
    skill(workspace / ".eca" / "skills" / "a", "safe", "Fine to load")
    skill(workspace / ".eca" / "skills" / "b", "risky", "Never load")
    config["toolCall"] = {"approval": {"deny": {"eca__skill": {"argsMatchers": {"name": ["risky"]}}}}}
    llm.enqueue(Reply([ToolCall("s1", "eca__skill", json.dumps({"name": "risky"})),
                       ToolCall("s2", "eca__skill", json.dumps({"name": "safe"}))]), Reply.text("ok"))
    client = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        result = await client.prompt("go")
    finally:
        await client.aclose()
    assert [(c.arguments["name"], c.status) for c in result.tool_calls] == [("risky", "rejected"), ("safe", "done")]

    config["disabledTools"] = ["skill"]
    llm.enqueue(Reply.text("ok"))
    client = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        assert (await client.prompt("go")).ok
    finally:
        await client.aclose()
    body = llm.requests[-1].body
    assert "eca__skill" not in tool_names(body) and "<skills" not in json.dumps(body)


# -- skills as commands -------------------------------------------------------------------------------------------


def test_a_skill_command_prompt_loads_the_skill_with_the_words(layout: tuple[Path, Path]) -> None:
    from eca_notebook.engine.workspace._skills import skill_prompt

    ws, glob = layout
    skill(ws / ".eca" / "skills" / "plain", "plain", "No placeholders", body="PLAIN-STEPS\n")
    skill(ws / ".eca" / "skills" / "args", "args", "With placeholders", body="Review $1, then $ARGUMENTS.\n")
    found = discover_skills([ws], glob)
    plain, args = found.get("plain"), found.get("args")
    assert plain is not None and args is not None
    text = skill_prompt(plain, "check the login code")
    assert text.startswith("Load skill: plain") and "PLAIN-STEPS" in text
    assert text.endswith("Request: check the login code") and f"**Base directory**: {plain.folder}" in text
    filled = skill_prompt(args, "auth.py carefully")
    assert "Review auth.py, then auth.py carefully." in filled and "Request:" not in filled  # the words were used
    assert "Follow the skill's instructions." in skill_prompt(plain, "")
    listed = list_skills(found, {"plain": "the built-in command /plain"})
    assert "- plain: No placeholders (workspace," in listed
    assert "not a command: /plain is the built-in command /plain, which wins" in listed
    args_line = next(line for line in listed.splitlines() if line.startswith("- args:"))
    assert "which wins" not in args_line


async def test_skills_are_commands_and_a_built_in_name_stays_the_built_in(
        workspace: Path, env: dict[str, str], config: dict[str, Any], llm: ScriptedLLMServer) -> None:
    skill(workspace / ".eca" / "skills" / "review", "review-pr", "Review a pull request", body="REVIEW-STEPS\n")
    skill(workspace / ".eca" / "skills" / "doctor", "doctor", "A skill with a built-in's name", body="NEVER-SENT\n")
    llm.enqueue(Reply.text("Reviewed."))
    client = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: True)
    try:
        commands = {c["name"]: c for c in await client.query_commands("")}
        result = await client.prompt("/review-pr check the login code")
        doctor = await client.prompt("/doctor", chat_id=result.chat_id)
        listing = await client.prompt("/skills", chat_id=result.chat_id)
    finally:
        await client.aclose()
    assert commands["review-pr"] == {"name": "review-pr", "description": "Review a pull request", "type": "skill",
                                     "arguments": []}
    assert commands["doctor"]["type"] == "native"  # the built-in, listed once
    assert result.ok and result.text == "Reviewed."
    sent = json.dumps(llm.requests[0].body["messages"][-1])
    assert "Load skill: review-pr" in sent and "REVIEW-STEPS" in sent and "Request: check the login code" in sent
    assert len(llm.requests) == 1 and "NEVER-SENT" not in json.dumps([r.body for r in llm.requests])
    assert doctor.system  # /doctor answered as ever
    assert "not a command: /doctor is the built-in command /doctor, which wins" in "\n".join(listing.system)
