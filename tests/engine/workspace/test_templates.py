"""Templates in agent prompts and rules (workspace/_templates.py), alone and in the system prompts an engine builds."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.turn._subagents import subagents_for
from eca_notebook.engine.workspace._templates import render_prompt_template, template_variables

PROMPT = ("{% if isSubagent %}Be concise.{% else %}Explain trade-offs.{% endif %}"
          "{% if toolEnabled_eca__shell_command %} You can run shell commands.{% endif %}"
          "{% if toolEnabled_nope__tool %} never{% endif %}"
          " Roots: {{ workspaceRoots }}.{{ unknownVariable }}")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_variables_and_branches() -> None:
    main = template_variables(subagent=False, workspace_folders=[Path("/a"), Path("/b")],
                              tool_names=["eca__shell_command", "eca__read_file"])
    assert render_prompt_template(PROMPT, main, "p") == (
        "Explain trade-offs. You can run shell commands. Roots: /a, /b.")
    sub = template_variables(subagent=True, workspace_folders=[Path("/a")], tool_names=[])
    assert render_prompt_template(PROMPT, sub, "p") == "Be concise. Roots: /a."


def test_broken_template_keeps_text_and_reports() -> None:
    problems: list[str] = []
    broken = "{% if isSubagent %}never closed"
    assert render_prompt_template(broken, {}, "rule x.md", problems) == broken
    assert len(problems) == 1 and problems[0].startswith("rule x.md: template error")
    # the sandbox refuses Python internals: raw text, a problem, no crash
    sneaky = "{{ ''.__class__.__mro__ }}"
    assert render_prompt_template(sneaky, {}, "rule y.md", problems) == sneaky
    assert "rule y.md" in problems[-1]
    # no tags: untouched (a single brace, a JSON example)
    plain = 'Answer {"a": 1} and use {name}.'
    assert render_prompt_template(plain, {}, "p", problems) is plain


async def test_engine_prompts_render_agents_and_rules(tmp_path: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    write(ws / ".eca" / "agents" / "helper.md",
          "---\nmode: [primary, subagent]\ndescription: helps\n---\n"
          "{% if isSubagent %}SUB-MODE{% else %}MAIN-MODE{% endif %} in {{ workspaceRoots }}\n")
    write(ws / ".eca" / "rules" / "empty-for-subagents.md", "{% if not isSubagent %}Main-only rule.{% endif %}")
    write(ws / ".eca" / "rules" / "broken.md", "Broken {% if %} rule")
    engine = Engine(EngineOptions(workspace_folders=[ws], initialization_options={"localModel": False}, env=env))
    try:
        main = engine.system_prompt("helper")
        assert f"MAIN-MODE in {ws}" in main and "SUB-MODE" not in main
        assert "Main-only rule." in main and "Broken {% if %} rule" in main
        sub = engine.system_prompt("helper", subagent=True)
        assert "SUB-MODE" in sub and "MAIN-MODE" not in sub
        assert "empty-for-subagents.md" not in sub  # a rule rendering to nothing is left out
        assert any("broken.md" in p and "template error" in p for p in engine.problems)
        spec = next(s for s in subagents_for(engine.agents, "code") if s.id == "helper")
        child = engine.subagents.system_prompt(spec)  # what a spawned helper's chat is given
        assert "SUB-MODE" in child and "{% if isSubagent" not in child and "MAIN-MODE" not in child
    finally:
        await engine.aclose()


def test_a_rule_cannot_make_rendering_take_unbounded_time_or_memory() -> None:
    """A repository's AGENTS.md is rendered at every prompt: two nested loops over range(100000) ran for hours,
    "ab" * 10**10 asked for 20 GB and a macro calling itself twice doubles per level. Such a template is used as
    written, with a problem naming why; what the reference's prompts use still renders."""
    bombs = ["{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
             '{{ "ab" * 10**10 }}', '{{ "%0999999999d" % 1 }}', '{{ "x"|center(1000000000) }}',
             "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
             "{% for i in range(100000) %}{{ range(100000)|join|length }}{% endfor %}",
             "{% for x in y recursive %}{{ loop(x) }}{% endfor %}",
             "{% for i in range(100000) %}" + "x" * 1000 + "{% endfor %}"]
    for bomb in bombs:
        problems: list[str] = []
        assert render_prompt_template(bomb, {}, "rule AGENTS.md", problems) == bomb
        assert len(problems) == 1 and problems[0].startswith("rule AGENTS.md: template not rendered ("), problems
    fine = ("{% if isSubagent %}short{% elif x == 1 %}one{% else %}long{% endif %} {{ workspaceRoots|upper }}"
            "{% for r in roots %} {{ loop.index }}:{{ r|trim }}{% endfor %}{{ range(3)|join(',') }}")
    problems = []
    assert render_prompt_template(fine, {"isSubagent": False, "workspaceRoots": "/a", "roots": [" p ", "q"]},
                                  "p", problems) == "long /A 1:p 2:q0,1,2"
    assert problems == []
