"""Dynamic strings (engine/config/_syntax.py): ``${file:}``, ``${cmd:}``, ``${netrc:}``, ``${classpath:}`` in config
layers, markdown agents and skills — and what a workspace's own files may not do before the user trusts them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from eca_notebook import _redact
from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.config import load_config
from eca_notebook.engine.config._syntax import DynamicSource, resolve_dynamic
from eca_notebook.engine.workspace._skills import discover_skills


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    return write(path, json.dumps(data))


# -- the resolver -------------------------------------------------------------------------------------------------


def test_file_relative_absolute_and_missing(tmp_path: Path) -> None:
    write(tmp_path / "prompts" / "review.md", "Review carefully.\n")
    (tmp_path / "conf").mkdir()
    source = DynamicSource(label="cfg", base_dir=tmp_path / "conf")
    problems: list[str] = []
    value = {"a": "${file:../prompts/review.md}", "b": [f"x ${{file:{tmp_path}/prompts/review.md}}"],
             "${file:keys}": 1, "n": 3}
    assert resolve_dynamic(value, source, problems) == {
        "a": "Review carefully.\n", "b": ["x Review carefully.\n"], "${file:keys}": 1, "n": 3}
    assert problems == []
    assert resolve_dynamic("[${file:nope.md}]", source, problems) == "[]"
    assert len(problems) == 1 and "nope.md" in problems[0] and "cannot read" in problems[0]
    # ${env:} is left for interpolate_env (after merging layers)
    assert resolve_dynamic("${env:HOME}", source, problems) == "${env:HOME}"


def test_cmd_success_failure_timeout_and_once_per_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "count"
    source = DynamicSource(label="cfg", base_dir=tmp_path)
    problems: list[str] = []
    command = f"echo run >> {counter}; printf '  sk-from-cmd-42  \\n\\n'"
    assert resolve_dynamic([f"${{cmd:{command}}}", f"${{cmd:{command}}}"], source, problems) == [
        "sk-from-cmd-42", "sk-from-cmd-42"]  # trimmed
    assert counter.read_text().count("run") == 1  # one run per distinct command per load
    assert problems == []
    assert resolve_dynamic("a${cmd:printf 'out%s' 7788; exit 3}b", source, problems) == "ab"
    assert len(problems) == 1 and "exited with status 3" in problems[0]
    assert "out7788" not in problems[0]  # output is never shown
    monkeypatch.setattr("eca_notebook.engine.config._syntax.CMD_TIMEOUT_SECONDS", 0.5)
    assert resolve_dynamic("${cmd:sleep 30}", source, problems) == ""
    assert "timed out" in problems[-1]


def test_cmd_output_is_a_secret_never_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    value = resolve_dynamic("${cmd:echo tok-ZQ93xv81}", DynamicSource(label="cfg"), [])
    assert value == "tok-ZQ93xv81"
    assert _redact.redact("the key is tok-ZQ93xv81") == "the key is ***"
    assert "tok-ZQ93xv81" not in caplog.text


def test_workspace_file_stays_inside_and_cmd_is_held(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / "notes.md", "inside")
    (ws / ".eca").mkdir()
    write(tmp_path / "outside.md", "outside")
    marker = tmp_path / "ran"
    source = DynamicSource(label="ws", base_dir=ws / ".eca", workspace=ws, cmd_allowed=False)
    problems: list[str] = []
    assert resolve_dynamic("${file:../notes.md}", source, problems) == "inside"
    assert resolve_dynamic("${file:../../outside.md}", source, problems) == ""
    assert "only read files inside" in problems[-1]
    assert resolve_dynamic(f"${{cmd:touch {marker}}}", source, problems) == ""
    assert not marker.exists()
    assert "not run" in problems[-1] and "trustedWorkspaces" in problems[-1]


def test_netrc_and_classpath(tmp_path: Path) -> None:
    netrc = write(tmp_path / "home" / ".netrc",
                  "machine api.example.com login work password pw-netrc-1234\nmachine other.com password x\n")
    netrc.chmod(0o600)
    source = DynamicSource(label="cfg", env={"HOME": str(tmp_path / "home")})
    problems: list[str] = []
    assert resolve_dynamic("${netrc:api.example.com}", source, problems) == "pw-netrc-1234"
    assert resolve_dynamic("${netrc:work@api.example.com:443}", source, problems) == "pw-netrc-1234"
    assert problems == []
    assert resolve_dynamic("${netrc:nobody@api.example.com}", source, problems) == ""
    assert "no matching entry" in problems[-1]
    assert resolve_dynamic("${classpath:prompts/code_agent.md}", source, problems) == ""
    assert "classpath" in problems[-1] and "built-in" in problems[-1]


# -- config layers --------------------------------------------------------------------------------------------------


def test_layers_resolve_per_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": "/usr/bin:/bin"}
    config_dir = home / ".config" / "eca"
    write(config_dir / "prompts" / "review.md", "Review, the user's way.")
    ws = tmp_path / "ws"
    marker = tmp_path / "ws-ran"
    write_json(config_dir / "config.json", {
        "providers": {"openai": {"key": "${cmd:echo sk-user-key-0001}"}},
        "behavior": {"reviewer": {"systemPrompt": "${file:prompts/review.md}"}},
    })
    write_json(ws / ".eca" / "config.json", {
        "behavior": {"ws": {"systemPrompt": "${file:../README.md}${cmd:touch " + str(marker) + "}"}},
    })
    write(ws / "README.md", "ws readme")
    loaded = load_config(workspace_folders=[ws], env=env)
    assert loaded.config.providers["openai"].key == "sk-user-key-0001"
    assert loaded.config.behavior["reviewer"].system_prompt == "Review, the user's way."
    assert loaded.config.behavior["ws"].system_prompt == "ws readme"
    assert not marker.exists()
    assert any("not run" in p and str(ws) in p for p in loaded.problems)
    assert not any("sk-user-key-0001" in p for p in loaded.problems)

    # trusted in the user's own config: the workspace's command runs
    write_json(config_dir / "config.json", {"trustedWorkspaces": [str(tmp_path)]})
    loaded = load_config(workspace_folders=[ws], env=env)
    assert marker.exists()
    assert not any("not run" in p for p in loaded.problems)


# -- markdown agents and skills -------------------------------------------------------------------------------------


async def test_markdown_agents_and_skills(tmp_path: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    user = Path(env["XDG_CONFIG_HOME"]) / "eca"
    write(user / "snippets" / "style.md", "Use short sentences.")
    write(user / "agents" / "writer.md", "---\ndescription: ${cmd:echo writes docs}\nmode: primary\n---\n"
                                         "${file:../snippets/style.md} Home: ${env:HOME}\n")
    marker = tmp_path / "agent-ran"
    write(ws / ".eca" / "agents" / "sneaky.md", f"---\nmode: primary\n---\nHi ${{cmd:touch {marker}}}\n")
    write(user / "skills" / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: ${cmd:echo Deploys it}\n---\n"
                                                   "Steps: ${file:steps.txt}\n")
    write(user / "skills" / "deploy" / "steps.txt", "one, two")
    write(ws / ".eca" / "skills" / "wsk" / "SKILL.md", f"---\nname: wsk\ndescription: d\n---\n${{cmd:touch {marker}}}"
                                                       "${file:/etc/hostname}\n")
    engine = Engine(EngineOptions(workspace_folders=[ws], initialization_options={"localModel": False}, env=env))
    try:
        writer = engine.agents.get("writer")
        assert writer is not None and writer.description == "writes docs"
        assert writer.system_prompt == f"Use short sentences. Home: {env['HOME']}"
        sneaky = engine.agents.get("sneaky")
        assert sneaky is not None and sneaky.system_prompt == "Hi"
        assert not marker.exists()
        assert any("sneaky.md" in p and "not run" in p for p in engine.problems)
        skills = discover_skills([ws], user)
        deploy = skills.get("deploy")
        assert deploy is not None and deploy.description == "Deploys it" and "Steps: one, two" in deploy.body
        wsk = skills.get("wsk")
        assert wsk is not None and wsk.body.strip() == ""
        assert not marker.exists()
        joined = "\n".join(skills.problems)
        assert "not run" in joined and "only read files inside" in joined
    finally:
        await engine.aclose()
