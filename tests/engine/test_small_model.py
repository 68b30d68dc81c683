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

from ..test_text import JUPYTER_AI_GUIDANCE


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
    assert prompt_intents("Explain briefly.", has_contexts=True, folders=[folder]) == set()


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
    # a file that does not exist yet is created with write_file alone (in one round); an existing one is not
    assert pick("Create a file hello.py that prints hello") == ["eca__write_file"]
    assert pick("Please write greet.py with a function that says hi") == ["eca__write_file"]
    assert pick("Create stats.py with a mean function") == ["eca__edit_file", "eca__move_file", "eca__read_file",
                                                           "eca__write_file"]
    assert pick("Create new.py like stats.py") == ["eca__edit_file", "eca__move_file", "eca__read_file",
                                                  "eca__write_file"]  # it reads stats.py first
    assert tool_rounds(["write_file"]) == 1 and tool_rounds(["read_file", "write_file"]) > 1
    # explaining what is attached reads nothing more (its text is in the prompt); changing it still gets the tools
    with_context = lambda message: sorted(tools_for_prompt(TOOLS, TOOLS, message, has_contexts=True,  # noqa: E731
                                                           folders=[folder]))
    assert with_context("Explain briefly.") == [] and with_context("Summarize this") == []
    assert with_context("Explain stats.py and the Makefile") == ["eca__directory_tree", "eca__grep",
                                                                 "eca__read_file"]
    assert "eca__edit_file" in with_context("Fix this")


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


# A host's guidance of Jupyter AI's kind, naming tools of the MCP server it hands over (the demo server's here)
HOST_GUIDANCE = JUPYTER_AI_GUIDANCE.replace("insert_cell, edit_cell", "echo, add")
DEMO = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"


async def test_a_hosts_guidance_before_the_prompt_does_not_choose_the_tools(workspace: Path, env: dict[str, str],
                                                                            llm) -> None:
    """The tools a small model gets follow the user's own words, not the guidance a host put before them: inside
    Jupyter AI, whose guidance names its MCP server's insert_cell, the embedded model was offered that tool for
    "Say hello in five words" and called it."""
    import asyncio
    import sys

    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply

    config = {"localModel": False, "defaultModel": "tiny/m",
              "mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}},
              "providers": {"tiny": {"api": "openai-chat", "url": llm.url,
                                     "models": {"m": {"compact": True, "limit": {"context": 8192}}}}}}
    llm.enqueue(Reply.text("Hello there, how are you?"), Reply.text("Sure."))
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: False)
    try:
        for _ in range(900):  # up to 90 s for the MCP server to start on a busy machine
            if eca.engine.mcp.status("demo").get("status") == "running":
                break
            await asyncio.sleep(0.1)
        assert eca.engine.mcp.status("demo").get("status") == "running", eca.engine.mcp.status("demo")
        plain = await eca.prompt(f"{HOST_GUIDANCE}\n\nSay hello in five words.")
        assert plain.ok, plain.error
        first = llm.requests[-1].body
        assert not first.get("tools"), [t["function"]["name"] for t in first["tools"]]
        # nor does the model read it: the 135M model took it for the question (the tools keep what it asks)
        assert first["messages"][-1] == {"role": "user", "content": "Say hello in five words."}
        # the user's own words still choose: naming a tool offers it
        named = await eca.prompt(f"{HOST_GUIDANCE}\n\nUse echo to say hi.", chat_id=plain.chat_id)
        assert named.ok, named.error
        names = {t["function"]["name"] for t in llm.requests[-1].body.get("tools") or []}
        assert any(n.endswith("__echo") for n in names) and not any(n.endswith("__add") for n in names), names
    finally:
        await eca.aclose()


async def test_a_full_size_model_reads_the_hosts_guidance(workspace: Path, env: dict[str, str], llm) -> None:
    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply

    config = {"localModel": False, "defaultModel": "big/m",
              "providers": {"big": {"api": "openai-chat", "url": llm.url, "models": {"m": {}}}}}
    llm.enqueue(Reply.text("Hello."))
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: False)
    try:
        result = await eca.prompt(f"{JUPYTER_AI_GUIDANCE}\n\nSay hello in five words.")
        assert result.ok, result.error
        assert llm.requests[-1].body["messages"][-1]["content"] == f"{JUPYTER_AI_GUIDANCE}\n\nSay hello in five words."
    finally:
        await eca.aclose()
