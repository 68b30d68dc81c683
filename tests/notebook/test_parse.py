"""Parsing ``%eca`` lines and cells: options first, prompts verbatim, subcommands only when the line is exactly one."""

from __future__ import annotations

import pytest

from eca_notebook.notebook._parse import UsageError, parse_magic


def test_prompt_is_kept_verbatim_after_options():
    req = parse_magic("-m openai/gpt-4.1 --new what's the \"best\" way?")
    assert req.command == "prompt"
    assert req.model == "openai/gpt-4.1" and req.new
    assert req.prompt == "what's the \"best\" way?"


def test_all_options():
    req = parse_magic('-b plan -c analysis -f "my file.py" -f b.py --dir src -o code -w -y explain')
    assert (req.behavior, req.chat, req.files, req.dirs, req.format, req.wait, req.yes) == (
        "plan", "analysis", ["my file.py", "b.py"], ["src"], "code", True, True)
    assert req.prompt == "explain"
    assert parse_magic("--agent reviewer go").behavior == parse_magic("-a reviewer go").behavior == "reviewer"


def test_variant_option():
    req = parse_magic("-v high -m anthropic/claude-sonnet-4-5 think hard")
    assert (req.variant, req.model, req.prompt) == ("high", "anthropic/claude-sonnet-4-5", "think hard")
    assert parse_magic("--variant=low go").variant == "low" and parse_magic("go").variant is None


def test_option_with_equals_and_double_dash():
    req = parse_magic("--model=x/y -- -n is not an option here")
    assert req.model == "x/y" and not req.new
    assert req.prompt == "-n is not an option here"


def test_cell_magic_joins_first_line_words_and_body():
    req = parse_magic("-o text summarise", "line one\nline two\n")
    assert req.format == "text"
    assert req.prompt == "summarise\nline one\nline two"


@pytest.mark.parametrize("line,command,argument", [
    ("new", "new", ""), ("chats", "chats", ""), ("model", "model", ""),
    ("model openai/gpt-4.1", "model", "openai/gpt-4.1"),
    ("behavior plan", "behavior", "plan"), ("agent plan", "behavior", "plan"), ("agent", "behavior", ""),
    ("stop", "stop", ""), ("config", "config", ""), ("mcp", "mcp", ""),
    ("fix", "fix", ""), ("fix it without pandas", "fix", "it without pandas"), ("help", "help", ""),
])
def test_subcommands(line: str, command: str, argument: str):
    req = parse_magic(line)
    assert (req.command, req.argument) == (command, argument)


@pytest.mark.parametrize("line", ["model this data as a time series", "new ideas for plots", "stop words in nltk?"])
def test_longer_lines_are_prompts(line: str):
    req = parse_magic(line)
    assert req.command == "prompt" and req.prompt == line


def test_cell_fix_takes_the_body_as_a_note():
    req = parse_magic("fix", "use numpy only")
    assert req.command == "fix" and req.argument == "use numpy only"


def test_commands_pass_through():
    req = parse_magic("/doctor")
    assert req.command == "prompt" and req.prompt == "/doctor"


@pytest.mark.parametrize("line,needle", [("--bogus hi", "unknown option --bogus"), ("-m", "needs a value"),
                                         ("-o html hi", "unknown format"), ("-n=1 x", "takes no value")])
def test_usage_errors(line: str, needle: str):
    with pytest.raises(UsageError, match=needle):
        parse_magic(line)


def test_negative_number_is_a_prompt_not_an_option():
    assert parse_magic("-5 squared?").prompt == "-5 squared?"
