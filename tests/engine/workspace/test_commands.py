"""Chat commands: parsing, built-ins, custom command files, placeholders, ranking and the wire shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.engine.workspace.commands import (
    BUILTINS,
    Command,
    CommandArgument,
    chat_command,
    command_prompt,
    find_command,
    load_custom_commands,
    parse_command,
    query_commands,
    render_template,
)
from eca_notebook.protocol import ChatCommand


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- parsing ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("/", None),
        ("/doctor", ("doctor", "")),
        ("  /costs now", ("costs", "now")),
        ("not /a command", None),
        ("/compact keep the API notes", ("compact", "keep the API notes")),
        ("/compact   keep\nthe notes  \n", ("compact", "keep\nthe notes")),
        ("/compact\nmulti-line instruction", ("compact", "multi-line instruction")),
        ("/doctor   ", ("doctor", "")),
        ("/ doctor", None),
        ("//doctor", None),
        ("/usr/bin/python is broken", None),
        ("", None),
        ("hello", None),
        ("/prompt-show", ("prompt-show", "")),
        ("/my-mcp:review file.py", ("my-mcp:review", "file.py")),
    ],
)
def test_parse_command(message: str, expected: tuple[str, str] | None) -> None:
    assert parse_command(message) == expected


def test_find_command_exact_then_case_insensitive() -> None:
    cmds = [Command("Review", "x", "mcp-prompt"), Command("review", "y", "custom-prompt")]
    assert find_command("review", cmds) is cmds[1]
    assert find_command("Review", cmds) is cmds[0]
    assert find_command("REVIEW", cmds) is cmds[0]
    assert find_command("nope", cmds) is None


# -- built-ins ------------------------------------------------------------------------------------------------------


def test_builtins() -> None:
    by_name = {c.name: c for c in BUILTINS}
    assert set(by_name) == {"doctor", "costs", "prompt-show", "repo-map-show", "compact", "resume", "skills",
                            "rules", "config", "context", "hooks", "init", "subagents", "model", "fork", "export",
                            "import", "trust", "fix", "test", "explain", "refactor"}
    assert all(c.type == "native" and c.description for c in BUILTINS)
    assert [(a.required) for a in by_name["resume"].arguments] == [False]
    assert [(a.required) for a in by_name["compact"].arguments] == [False]
    assert by_name["doctor"].arguments == []
    assert [(a.required) for a in by_name["import"].arguments] == [True]
    assert [(a.required) for a in by_name["export"].arguments] == [False]


def test_code_commands_prompt_about_the_attached_code() -> None:
    """``/fix``, ``/test``, ``/explain`` and ``/refactor`` (the session stream's slash commands) are prompts about the
    code the editor attached, with what the user wrote after the command; without words, no empty request line."""
    fix = command_prompt("fix", "Fix the authentication bug")
    assert fix is not None and fix.startswith("Fix the bug in the attached code.")
    assert "The user's description of the problem: Fix the authentication bug" in fix
    assert "selected lines of the active editor" in fix and "diagnostics" in fix
    explain = command_prompt("EXPLAIN", "")
    assert explain is not None and "$ARGS" not in explain and "question:" not in explain
    assert "Do not change any file." in explain and "\n\n\n" not in explain
    assert "test framework" in (command_prompt("test", "edge cases") or "")
    assert "without changing its behaviour" in (command_prompt("refactor", "") or "")
    assert command_prompt("doctor", "") is None


# -- templates -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        ("Check $1 then $2.", "a.py b.py", "Check a.py then b.py."),
        ("All: $ARGUMENTS / $ARGS", "  one two  ", "All: one two / one two"),
        ("Quoted: [$1] [$2]", '"two words" x', "Quoted: [two words] [x]"),
        ("Missing: [$3]", "a b", "Missing: []"),
        ("Legacy $ARG1-$ARG2", "x y", "Legacy x-y"),
        ("Keep $HOME and $PATH, $ARGSX, $10", "a", "Keep $HOME and $PATH, $ARGSX, $10"),
        ("Unbalanced: $1|$2", "it's fine", "Unbalanced: it's|fine"),
        ("No expansion twice: $1 $2", "$2 b", "No expansion twice: $2 b"),
        ("Named {{city}} in {{ units }}, again {{city}}", "Paris metric", "Named Paris in metric, again Paris"),
        ("Nothing to fill", "extra words", "Nothing to fill"),
        ("$1", "", ""),
    ],
)
def test_render_template(template: str, args: str, expected: str) -> None:
    assert render_template(template, args) == expected


# -- custom commands -------------------------------------------------------------------------------------------------


def test_load_custom_commands_locations_order_and_shadowing(tmp_path: Path) -> None:
    ws, glob = tmp_path / "ws", tmp_path / "global"
    write(ws / ".eca" / "commands" / "check-performance.md", "\n\nCheck for performance issues in $1 and $2.\n")
    write(ws / ".eca" / "commands" / "Review.md", "# Review the diff\nReview: $ARGUMENTS")
    write(ws / ".eca" / "commands" / "notes.txt", "ignored")
    write(glob / "commands" / "review.md", "global review, shadowed by the project's")
    write(glob / "commands" / "explain.md", "Explain this code.")

    cmds = load_custom_commands([ws], glob)
    assert [c.name for c in cmds] == ["check-performance", "review", "explain"]
    perf, review, explain = cmds
    assert all(c.type == "custom-prompt" for c in cmds)
    assert perf.description == "Check for performance issues in $1 and $2."
    assert [(a.name, a.required) for a in perf.arguments] == [("arg1", True), ("arg2", True)]
    assert perf.path == ws / ".eca" / "commands" / "check-performance.md"
    assert render_template(perf.template or "", "src/app.py db.py").strip() == \
        "Check for performance issues in src/app.py and db.py."
    assert review.description == "Review the diff"
    assert review.path == ws / ".eca" / "commands" / "Review.md"
    assert [(a.name, a.required) for a in review.arguments] == [("args", False)]
    assert explain.arguments == []
    assert explain.path == glob / "commands" / "explain.md"


def test_front_matter_description_and_arguments(tmp_path: Path) -> None:
    write(tmp_path / "ws" / ".eca" / "commands" / "weather.md", """---
description: "Generate a weather report"
arguments:
  - name: city
    description: City to report on
    required: true
  - name: units
    description: metric or imperial
    required: false
---
Write a weather report for {{city}} using {{units}} units.
""")
    write(tmp_path / "ws" / ".eca" / "commands" / "fix.md", """---
description: >
  Fix an issue
  in a file
arguments:
  - name: file
    description: The file
---
Fix $1 carefully.
""")
    cmds = {c.name: c for c in load_custom_commands([tmp_path / "ws"], tmp_path / "g")}
    weather = cmds["weather"]
    assert weather.description == "Generate a weather report"
    assert [(a.name, a.description, a.required) for a in weather.arguments] == [
        ("city", "City to report on", True), ("units", "metric or imperial", False)]
    assert weather.template == "Write a weather report for {{city}} using {{units}} units.\n"
    assert render_template(weather.template, "Paris metric").strip() == \
        "Write a weather report for Paris using metric units."
    fix = cmds["fix"]
    assert fix.description == "Fix an issue in a file"
    assert [(a.name, a.description, a.required) for a in fix.arguments] == [("file", "The file", True)]
    assert "---" not in (fix.template or "")


def test_mixed_placeholders_and_unreadable_files_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "ws" / ".eca" / "commands"
    write(folder / "mixed.md", "Do $1 with {{thing}}")
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00\x00")
    write(folder / "ok.md", "fine")
    (folder / "dir.md").mkdir()
    assert [c.name for c in load_custom_commands([tmp_path / "ws"], tmp_path / "missing")] == ["ok"]


def test_no_command_folders() -> None:
    assert load_custom_commands([], Path("/nonexistent/eca-test")) == []


# -- query ranking -------------------------------------------------------------------------------------------------


def names(cmds: list[Command]) -> list[str]:
    return [c.name for c in cmds]


def test_query_blank_returns_all_in_order() -> None:
    assert names(query_commands("", BUILTINS)) == names(BUILTINS)
    assert names(query_commands("   ", BUILTINS)) == names(BUILTINS)


def test_query_prefix_then_substring_then_fuzzy() -> None:
    cmds = [Command(n, "d", "native") for n in ("show-all", "prompt-show", "shower", "s-h-o-w", "doctor")]
    assert names(query_commands("show", cmds)) == ["show-all", "shower", "prompt-show", "s-h-o-w"]
    assert names(query_commands("SHOW", cmds)) == ["show-all", "shower", "prompt-show", "s-h-o-w"]
    assert names(query_commands("/doc", cmds)) == ["doctor"]
    assert names(query_commands("rmap", BUILTINS)) == ["repo-map-show"]
    assert names(query_commands("rms", BUILTINS)) == ["prompt-show", "repo-map-show"]
    assert query_commands("zzz", BUILTINS) == []


def test_query_over_builtins() -> None:
    assert names(query_commands("co", BUILTINS)) == ["costs", "compact", "config", "context", "doctor", "refactor"]


# -- wire shape ----------------------------------------------------------------------------------------------------


def test_chat_command_is_the_wire_shape() -> None:
    for command in BUILTINS:
        wire = chat_command(command).dump()
        assert ChatCommand.model_validate(wire).name == command.name and wire["type"] == "native"
        assert list(wire) == ["name", "description", "type", "arguments"]
    custom = Command("fix", "Fix it", "custom-prompt",
                     [CommandArgument("file", "The file", True), CommandArgument("why")],
                     template="Fix $1", path=Path("/x/fix.md"))
    model = chat_command(custom)
    assert [(a.name, a.required) for a in model.arguments] == [("file", True), ("why", False)]
    assert model.dump() == {"name": "fix", "description": "Fix it", "type": "customPrompt",
                            "arguments": [{"name": "file", "description": "The file", "required": True},
                                          {"name": "why", "required": False}]}


def test_a_command_symlinked_out_of_its_folder_is_not_loaded(tmp_path: Path) -> None:
    """A repository's /deploy that is a symlink to ~/.netrc would send the user's file to the model when run."""
    ws, glob = tmp_path / "ws", tmp_path / "g"
    secret = write(tmp_path / "home" / ".netrc", "machine x login me password pw-123456\n")
    write(ws / "docs" / "review.md", "Review $ARGS")
    (ws / ".eca" / "commands").mkdir(parents=True)
    (ws / ".eca" / "commands" / "deploy.md").symlink_to(secret)
    (ws / ".eca" / "commands" / "environ.md").symlink_to("/proc/self/environ")
    (ws / ".eca" / "commands" / "review.md").symlink_to(ws / "docs" / "review.md")  # inside: followed
    assert [c.name for c in load_custom_commands([ws], glob)] == ["review"]


def test_a_command_made_with_the_reference_spelling_is_the_engines_type() -> None:
    """A newer plug-in or client naming the type as ``chat/queryCommands`` does (``mcpPrompt``) means the same
    command as the older ``mcp-prompt``; both go out with the reference name."""
    for spelling in ("mcp-prompt", "mcpPrompt"):
        command = Command("review", "x", spelling, server="demo")
        assert command.type == "mcp-prompt" and chat_command(command).type == "mcpPrompt"
    assert chat_command(Command("fix", "x", "customPrompt")).type == "customPrompt"
    assert chat_command(Command("doctor", "x", "native")).type == "native"
