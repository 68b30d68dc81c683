"""The small-model profile: which prompts get tools (both sides of the rule), the compact prompt and its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.engine._small_model import (
    COMPACT_PROMPT,
    RULES_CHARS,
    compact_system_prompt,
    prompt_intents,
    tool_rounds,
    tools_for_prompt,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "stats.py").write_text("x = 1\n")
    (tmp_path / "Makefile").write_text("all:\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "tests").mkdir()
    return tmp_path


# Plain questions: answered as plain text, no tools offered.
NO_TOOLS = [
    "Write a Python function that adds two numbers.",
    "Write a Python function that checks whether a number is prime.",
    "What is the capital of France?",
    "Hello!",
    "Explain this error: ZeroDivisionError: division by zero",
    "Explain: ModuleNotFoundError: No module named 'pandas'",
    "What does this code do?\n\n```python\nwith open('data.txt') as f:\n    text = f.read()\n```",
    "Write a function that reads a file and counts its lines.",
    "Write tests for is_prime",  # a `tests/` folder exists: an ordinary word must not match it
    "How do I run a Python script?",
    "In pandas, how do I read a CSV file into a DataFrame?",
    "Create a list of the first ten squares.",
    "Write a function to parse data from a string.",
]

WITH_TOOLS = [
    ("Summarize README.md", {"read"}),
    ("Read stats.py and explain it", {"read"}),
    ("Can you open stats.py?", {"read"}),
    ("What does this project do?", {"read"}),
    ("Show me the Makefile", {"read"}),
    ("List the files in data/", {"read"}),
    ("Fix the bug in stats.py", {"change"}),
    ("Create a file hello.py with a function that prints hello", {"change"}),
    ("Please add a docstring to every function in stats.py.", {"change"}),
    ("Delete the old notebooks", {"change"}),
    ("Run the tests", {"run"}),
    ("Please run `ls -la`", {"run"}),
    ("Open stats.py, then run it", {"read", "run"}),
]


@pytest.mark.parametrize("message", NO_TOOLS)
def test_plain_questions_get_no_tools(message: str, folder: Path):
    assert prompt_intents(message, folders=[folder]) == set()


@pytest.mark.parametrize("message,intents", WITH_TOOLS)
def test_requests_to_act_on_the_workspace_get_tools(message: str, intents: set[str], folder: Path):
    assert prompt_intents(message, folders=[folder]) == intents


def test_an_attached_context_is_something_to_act_on(folder: Path):
    assert prompt_intents("Fix this", folders=[folder]) == set()
    assert prompt_intents("Fix this", has_contexts=True, folders=[folder]) == {"change"}
    # reading what is already attached needs no tool
    assert prompt_intents("What does this do?", has_contexts=True, folders=[folder]) == set()


TOOLS = {f"eca__{name}": name for name in ("read_file", "directory_tree", "grep", "write_file", "edit_file",
                                            "move_file", "shell_command", "update_plan", "editor_diagnostics")}
TOOLS["github__create_issue"] = "create_issue"


def test_tools_follow_the_intent_and_the_mode(folder: Path):
    pick = lambda message, mode="auto": sorted(  # noqa: E731
        tools_for_prompt(TOOLS, TOOLS, message, mode=mode, folders=[folder]))
    assert pick("Write a Python function that adds two numbers.") == []
    assert pick("Summarize README.md") == ["eca__directory_tree", "eca__grep", "eca__read_file"]
    assert pick("Fix the bug in stats.py") == ["eca__edit_file", "eca__move_file", "eca__read_file",
                                               "eca__write_file"]
    assert pick("Run the tests") == ["eca__read_file", "eca__shell_command"]
    assert pick("Hello!", mode="always") == sorted(TOOLS)  # MCP tools too
    assert pick("Use the read_file tool on notes") == ["eca__read_file"]  # a tool named by the user
    assert pick("Use create_issue to report it") == ["github__create_issue"]
    assert pick("Use the eca__grep tool") == ["eca__grep"]
    assert pick("Fix the bug in stats.py", mode="never") == []


def test_reading_gets_one_tool_round_changing_more():
    assert tool_rounds(["read_file", "grep"]) == 1
    assert tool_rounds(["read_file", "edit_file"]) > 1
    assert tool_rounds(["read_file", "shell_command"]) > 1


def test_compact_prompt_is_small_and_clips_the_rules():
    plain = compact_system_prompt(plan=False, tools=False)
    assert plain == COMPACT_PROMPT
    assert len(plain) / 4 < 60  # tokens, roughly: far inside the ~250-token budget of a plain turn
    assert "tool" in compact_system_prompt(plan=False, tools=True)
    assert "Plan mode" in compact_system_prompt(plan=True, tools=False)
    rules = "## AGENTS.md\n" + "\n".join(f"- rule number {i}: keep it short" for i in range(400))
    prompt = compact_system_prompt(plan=False, tools=False, rules=rules)
    assert "rule number 0" in prompt and "rule number 399" not in prompt
    assert prompt.endswith("[rules shortened]")
    assert len(prompt) < len(COMPACT_PROMPT) + RULES_CHARS + 40
    assert compact_system_prompt(plan=True, tools=False, custom="Be a pirate.") == "Be a pirate."


def test_a_models_own_prompt_is_used_verbatim():
    trained = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    assert compact_system_prompt(plan=False, tools=False, base=trained) == trained
    assert compact_system_prompt(plan=False, tools=True, base=trained).startswith(trained + ". You may use a tool")
