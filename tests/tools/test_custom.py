"""Custom tools (``customTools``): the reference's config shape, its placeholders filled as positional parameters (so
no value is ever shell code), real processes run the shell tool's way, the risk never below medium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.tools._command_template import TemplateError, compile_template
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.custom import CustomTool, custom_tools

from .conftest import call, write

# The reference's docs/config/tools.md, "Custom Tools", both examples verbatim.
REFERENCE_EXAMPLE_1 = """
{
  "customTools": {
    "web-search": {
      "description": "Fetches the content of a URL and returns it in Markdown format.",
      "command": "trafilatura --output-format=markdown -u {{url}}",
      "schema": {
        "properties": {
          "url": {
            "type": "string",
            "description": "The URL to fetch content from."
          }
        },
        "required": ["url"]
      }
    }
  }
}
"""
REFERENCE_EXAMPLE_2 = """
{
  "customTools": {
    "file-search": {
      "description": "${file:tools/my-tool.md}",
      "command": "find {{directory}} -name {{pattern}}",
      "schema": {
        "properties": {
          "directory": {
            "type": "string",
            "description": "The directory to start the search from."
          },
          "pattern": {
            "type": "string",
            "description": "The search pattern for the filename (e.g., '*.clj')."
          }
        },
        "required": ["directory", "pattern"]
      }
    }
  }
}
"""

#: What the model may send to break out of the template: every line a shell would run if it were pasted in.
INJECTIONS = ["; touch PWNED", "$(touch PWNED)", "`touch PWNED`", "x' ; touch PWNED ; '", 'x" ; touch PWNED ; "',
              "a\ntouch PWNED", "${IFS}touch${IFS}PWNED", "\\\"; touch PWNED #", "-rf ~"]


def one(config: str) -> CustomTool:
    [tool], problems = custom_tools(json.loads(config)["customTools"])
    assert problems == []
    return tool


def test_the_reference_examples_become_tools_with_their_schema() -> None:
    tool = one(REFERENCE_EXAMPLE_1)
    assert tool.name == "web-search"
    assert tool.description == "Fetches the content of a URL and returns it in Markdown format."
    assert tool.parameters == {"type": "object", "required": ["url"], "properties": {
        "url": {"type": "string", "description": "The URL to fetch content from."}}}
    search = one(REFERENCE_EXAMPLE_2)
    assert search.parameters["required"] == ["directory", "pattern"]


async def test_the_reference_find_example_runs_with_its_glob_kept_literal(ws: Path, ctx: ToolContext) -> None:
    write(ws / "src" / "core.clj", "(ns core)")
    write(ws / "src" / "notes.txt", "")
    write(ws / "a.clj", "")  # a bare *.clj would be expanded by the shell to this file: find would get "a.clj"
    tool = one(REFERENCE_EXAMPLE_2)
    prepared, result = await call(tool, {"directory": "src", "pattern": "*.clj"}, ctx)
    assert not result.error, result.output
    assert result.output.startswith("Exit code: 0") and "src/core.clj" in result.output
    assert "notes.txt" not in result.output
    assert prepared.args == {"directory": "src", "pattern": "*.clj"}
    assert prepared.summary == "file-search: $ find src -name '*.clj'"


@pytest.mark.parametrize("value", INJECTIONS)
@pytest.mark.parametrize("template", [
    "printf '%s\\n' {{value}}",  # bare
    "printf '%s\\n' \"{{value}}\"",  # in double quotes
    "printf '%s\\n' '{{value}}'",  # in single quotes
    "printf '%s\\n' \"$(printf '%s' {{value}})\"",  # inside a command substitution inside double quotes
    "cat <<'EOF'\n{{value}}\nEOF",  # the reference's nREPL example: a quoted here-document
    "cat <<EOF\n{{value}}\nEOF",
])
async def test_an_injection_attempt_reaches_the_program_as_one_literal_argument(
        ws: Path, ctx: ToolContext, template: str, value: str) -> None:
    [tool], problems = custom_tools({"echo": {"description": "Echo.", "command": template,
                                              "schema": {"properties": {"value": {"type": "string"}},
                                                         "required": ["value"]}}})
    assert problems == []
    _, result = await call(tool, {"value": value}, ctx)
    assert not result.error, result.output
    assert result.output == f"Exit code: 0\n\n{value}\n"  # printf got it as one argument, unchanged
    assert not (ws / "PWNED").exists()
    assert not any(ws.iterdir())


async def test_values_are_separate_arguments_and_non_strings_read_as_written(ws: Path, ctx: ToolContext) -> None:
    [tool], _ = custom_tools({"args": {"description": "Count.", "command": "printf '[%s]' {{a}} {{n}} {{flag}} {{a}}",
                                       "schema": {"properties": {"a": {"type": "string"}, "n": {"type": "integer"},
                                                                 "flag": {"type": "boolean"}}, "required": ["a"]}}})
    _, result = await call(tool, {"a": "two words", "n": 3, "flag": True}, ctx)
    assert result.output == "Exit code: 0\n\n[two words][3][true][two words]"
    _, result = await call(tool, {"a": ""}, ctx)  # optional ones left out: empty
    assert result.output == "Exit code: 0\n\n[][][][]"


async def test_bad_arguments_fail_before_anything_runs(ws: Path, ctx: ToolContext) -> None:
    tool = one(REFERENCE_EXAMPLE_1)
    prepared, result = await call(tool, {}, ctx)
    assert prepared.error == "web-search: missing required argument: url" and result.error
    prepared, _ = await call(tool, {"url": 3}, ctx)
    assert prepared.error == "web-search: argument 'url' must be of type string"
    prepared, _ = await call(tool, {"url": "a\0b"}, ctx)
    assert prepared.error is not None and "NUL" in prepared.error


async def test_it_runs_in_the_workspace_with_the_shell_tools_limits(ws: Path, ctx: ToolContext) -> None:
    [pwd, big, fails], _ = custom_tools({
        "where": {"description": "pwd", "command": "pwd"},
        "big": {"description": "lots of output", "command": "seq 1 100000"},
        "fails": {"description": "fails", "command": "echo oops >&2; exit 3"}})
    _, result = await call(pwd, {}, ctx)
    assert result.output == f"Exit code: 0\n\n{ws}\n"
    _, result = await call(big, {}, ctx)
    assert "[output truncated: showing 2000 of 100000 lines" in result.output
    _, result = await call(fails, {}, ctx)
    assert result.error and result.output == "Exit code: 3\n\noops\n"


def test_risk_is_at_least_medium_and_follows_the_command_line(ws: Path, ctx: ToolContext) -> None:
    [reader, remover], _ = custom_tools({
        "show": {"description": "Show a file.", "command": "cat {{path}}",
                 "schema": {"properties": {"path": {"type": "string"}}}},
        "clean": {"description": "Remove a folder.", "command": "rm -rf {{path}}",
                  "schema": {"properties": {"path": {"type": "string"}}}}})
    risk = reader.assess_risk(reader.prepare({"path": "README.md"}, ctx), ctx)
    assert risk.level == "medium" and risk.reason.startswith("custom tool")
    risk = remover.assess_risk(remover.prepare({"path": "build"}, ctx), ctx)
    assert risk.level == "high" and "build" in risk.reason
    outside = reader.prepare({"path": "/etc/passwd"}, ctx)
    assert outside.outside_workspace  # asks like any outside call, whatever the rules allow
    assert not reader.mutates and remover.mutates  # read-only agents keep the reader only


def test_bad_entries_are_problems_and_a_builtin_name_is_refused() -> None:
    tools, problems = custom_tools({
        "ok": {"description": "fine", "command": "true"},
        "shell_command": {"description": "mine now", "command": "true"},
        "nocommand": {"description": "x"},
        "open": {"description": "x", "command": "echo 'unclosed {{a}}",
                 "schema": {"properties": {"a": {"type": "string"}}}},
        "gone": None}, reserved=frozenset({"shell_command"}))
    assert [t.name for t in tools] == ["ok"]
    assert [p.split(":")[0] for p in problems] == ["customTools.shell_command", "customTools.nocommand",
                                                   "customTools.open"]


def test_a_placeholder_in_arithmetic_is_refused() -> None:
    with pytest.raises(TemplateError):
        compile_template("echo $(( {{n}} + 1 ))", ["n"])
    assert compile_template("echo $(( 1 + 1 )) {{n}}", ["n"]).script() == 'echo $(( 1 + 1 )) "${1}"'


@pytest.mark.parametrize("template", [
    "x=hello; echo ${x:{{n}}}", "echo ${x: {{n}}}", "echo ${x:0:{{n}}}", "echo ${arr[{{n}}]}", "echo ${#arr[{{n}}]}",
    "echo $[{{n}} + 1]", "(( {{n}} > 1 )) && echo big", "for (( i = 0; i < {{n}}; i++ )); do :; done",
    "let x={{n}}", "true; let \"x = {{n}}\"", "declare -i x={{n}}", "[[ {{n}} -eq 1 ]] && echo one",
    "[[ \"{{n}}\" -gt 1 ]]",
])
def test_a_placeholder_in_bashs_arithmetic_is_refused(template: str) -> None:
    """Where /bin/sh is bash (macOS, Fedora), an operand of its arithmetic is evaluated again as an expression, so a
    value ``a[$(cmd)]`` runs cmd even from a quoted parameter: a substring offset or length, an array subscript,
    ``$[…]``, ``((…))``, ``let``, ``declare -i`` and ``[[ … -eq … ]]`` are refused like ``$((…))``."""
    with pytest.raises(TemplateError):
        compile_template(template, ["n"])


@pytest.mark.parametrize("template", [
    "echo ${x:-{{n}}}", "echo ${x:={{n}}}", "echo ${x:+{{n}}}", "echo ${x-{{n}}}", "echo ${x#{{n}}}",
    "[[ -f {{n}} ]] && cat {{n}}", "echo let {{n}}", "echo '((' {{n}}", "( (echo {{n}}) )",
])
def test_a_placeholder_beside_arithmetic_words_is_kept(template: str) -> None:
    assert compile_template(template, ["n"]).names == ("n",)



def test_a_name_with_control_or_invisible_characters_is_a_problem_written_out() -> None:
    """A tool's name is shown as it is on its card, in the panel's list and in the approval: a newline, a bidi
    override or an escape sequence in it could make it read as another tool (``run\\u202egnp.sh``). Such an entry is
    refused, and the problem (in /doctor, the config problems, the log) shows the name written out."""
    names = ["two\nlines", "evil\u202ehs.pdf", "\x1b]52;c;Y3VybA==\x07clip", "nul\x00", "zero\u200bwidth"]
    tools, problems = custom_tools({name: {"description": "x", "command": "true"} for name in names})
    assert tools == []
    assert len(problems) == len(names)
    for problem in problems:
        assert all(ch.isprintable() for ch in problem) and "\u202e" not in problem and "\u200b" not in problem, problem
    assert "evil\\u202ehs.pdf" in problems[1]
    ok, fine = custom_tools({"web-search": {"command": "true"}, "données.v2": {"command": "true"}})
    assert [t.name for t in ok] == ["web-search", "données.v2"] and fine == []


@pytest.mark.parametrize("template", ["cat <<EOF\n{{body}}\nEOF\ncat {{path}}",
                                      "cat <<'EOF'\n{{body}}\nEOF\ncat {{path}}",
                                      "cat <<-EOF\n\tx{{body}}y\n\tEOF\ncat {{path}}"])
@pytest.mark.parametrize("body", ["EOF\n: <<'Z'", "x\nEOF\n: <<Z", "\tEOF\n: <<Z", "E", "OF\n: <<Z\nZ"])
async def test_a_value_cannot_end_a_here_document_in_what_is_checked(
        ws: Path, ctx: ToolContext, template: str, body: str) -> None:
    """The shell fixes a here-document's extent before it expands the value, so a line ``EOF`` in the value does not
    end it — but in the command line with the values written in (what the path and risk checks read and the user
    approves) it did, and a ``: <<Z`` after it swallowed the rest: ``cat /etc/passwd`` was no longer seen, so an
    outside read ran without asking under an allow rule. The line shows such a value without ending anything."""
    [tool], problems = custom_tools({"t": {"command": template, "schema": {"properties": {
        "body": {"type": "string"}, "path": {"type": "string"}}}}})
    assert problems == []
    outside = tool.prepare({"body": body, "path": "/etc/passwd"}, ctx)
    assert outside.outside_workspace and Path("/etc/passwd") in outside.paths, outside.state["line"]
    write(ws / "in.txt", "inside\n")
    _, result = await call(tool, {"body": body, "path": "in.txt"}, ctx)
    assert not result.error and result.output.endswith("inside\n"), result.output
    assert body.replace("\t", "") in result.output.replace("\t", "")  # the program still got the value as sent
