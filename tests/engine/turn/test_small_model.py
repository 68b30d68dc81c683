"""The small-model profile: which prompts get tools (both sides of the rule), the compact prompt and its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.engine.turn._small_model import (
    COMPACT_PROMPT,
    RULES_CHARS,
    WORKSPACE_PATH_PATTERN,
    compact_system_prompt,
    prompt_intents,
    tool_rounds,
    tools_for_prompt,
    workspace_paths,
)

from ...test_text import JUPYTER_AI_GUIDANCE


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
    # the notebook in play is attached: its cells are in the prompt, "notebook" and "cell" name no file
    "My last cell raises an error. Explain it and fix it.",
    "Fix the cell that raises.",
    "Summarize this notebook.",
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
    ("Delete the old files", {"change"}),
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


def test_an_attached_context_is_not_something_to_act_on(folder: Path):
    """Its text is in the prompt, and the panel attaches the active notebook to every prompt: with it, "Write a
    Python function is_prime(n)…" was offered write_file and "Fix this" edit_file (issue #30)."""
    assert prompt_intents("Fix this", folders=[folder]) == set()
    assert prompt_intents("Fix this", has_contexts=True, folders=[folder]) == set()
    assert prompt_intents("Write a Python function is_prime(n).", has_contexts=True, folders=[folder]) == set()
    assert prompt_intents("What does this do?", has_contexts=True, folders=[folder]) == set()
    assert prompt_intents("Explain briefly.", has_contexts=True, folders=[folder]) == set()
    # naming a file still asks for it
    assert prompt_intents("Fix stats.py", has_contexts=True, folders=[folder]) == {"change"}


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
    # what is attached is in the prompt: explaining or changing it gets no tools, naming a file does
    with_context = lambda message: sorted(tools_for_prompt(TOOLS, TOOLS, message, has_contexts=True,  # noqa: E731
                                                           folders=[folder]))
    assert with_context("Explain briefly.") == [] and with_context("Summarize this") == []
    assert with_context("Explain stats.py and the Makefile") == ["eca__directory_tree", "eca__grep",
                                                                 "eca__read_file"]
    assert with_context("Fix this") == []
    assert "eca__edit_file" in with_context("Fix the bug in stats.py")


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
DEMO = Path(__file__).parents[2] / "mcp" / "servers" / "demo_server.py"


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
            if eca.engine.mcp.status("demo").status == "running":
                break
            await asyncio.sleep(0.1)
        assert eca.engine.mcp.status("demo").status == "running", eca.engine.mcp.status("demo")
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


# -- the panel's automatic context on a small model (issue #30) ------------------------------------------------------

# An IPython traceback as a notebook saves it: ANSI colours, the cell's frame first, pandas' frames, the exception
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[63], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[43mdf\x1b[49m\x1b[38;5;241m.\x1b[39m"
    "\x1b[43mgroupby\x1b[49m(\x1b[38;5;124m\"region\"\x1b[39m)[\x1b[38;5;124m\"sale\"\x1b[39m]\x1b[38;5;241m.\x1b[39msum()",
    *[f"File \x1b[0;32m/venv/pandas/core/frame{i}.py:{100 + i}\x1b[0m, in \x1b[0;36mDataFrame.__getitem__\x1b[0m"
      f"\x1b[0;34m(self, key)\x1b[0m\n\x1b[1;32m   {100 + i}\x1b[0m     return self._get_item(key)" for i in range(12)],
    "\x1b[0;31mKeyError\x1b[0m: 'Column not found: sale'",
]
ERROR_CELL = 'df.groupby("region")["sale"].sum()'
# -- paths held inside the workspace -------------------------------------------------------------------------------

READ_PARAMS = {"type": "object", "properties": {"path": {"type": "string", "minLength": 1},
                                                 "limit": {"type": "integer"}}, "required": ["path"]}


def test_a_path_must_be_relative_unless_the_user_names_one_outside(folder: Path):
    import re

    held = workspace_paths(READ_PARAMS, ("path",), "Read the file notes.txt", folders=[folder], tool="read_file")
    assert held["properties"]["path"] == {"type": "string", "minLength": 1, "pattern": WORKSPACE_PATH_PATTERN}
    assert held["properties"]["limit"] == {"type": "integer"} and "pattern" not in READ_PARAMS["properties"]["path"]
    pattern = re.compile(WORKSPACE_PATH_PATTERN)
    for good in ("notes.txt", "data/a b.csv", ".", ".gitignore", "src/app.py"):
        assert pattern.fullmatch(good), good
    for bad in ("/n/d/a-1/a-2.txt", "~/x", "../x", "..", " x", "\\x", 'a"b', "a\nb", ""):
        assert not pattern.fullmatch(bad), bad
    # the user names a place outside: the call may go there (and asks for approval)
    for message in ("Read /etc/hosts", "Show ~/notes.txt", "Open ../other/x.py", 'Read "/tmp/a.txt"', "Read C:\\x"):
        assert workspace_paths(READ_PARAMS, ("path",), message, folders=[folder], tool="read_file") is READ_PARAMS
    # not a path argument, or a tool without any, or one that already says what it accepts: as it was
    assert workspace_paths(READ_PARAMS, (), "Read x.txt") is READ_PARAMS
    assert workspace_paths(held, ("path",), "Read x.txt") is held
    for message in ("Read data/x.csv", "Read it and/or that"):  # a slash inside a word is not an outside place
        assert "pattern" in workspace_paths(READ_PARAMS, ("path",), message)["properties"]["path"]


def test_files_the_user_names_are_the_only_ones_to_read_or_edit(folder: Path):
    (folder / "sub").mkdir()
    (folder / "sub" / "notes.txt").write_text("7\n")
    named = workspace_paths(READ_PARAMS, ("path",), "Read stats.py and sub/notes.txt", folders=[folder],
                            tool="read_file")
    assert named["properties"]["path"]["enum"] == ["stats.py", "sub/notes.txt"]
    edit = workspace_paths(READ_PARAMS, ("path",), "Fix the bug in stats.py", folders=[folder], tool="edit_file")
    assert edit["properties"]["path"]["enum"] == ["stats.py"]
    # a named file that does not exist (to be created, or misspelt), a directory, a link out, fenced code, another
    # tool: the relative-path pattern only
    (folder / "link.txt").symlink_to("/etc/hostname")
    for message, tool in [("Read stats.py and write summary.md", "read_file"), ("Read data.txt", "read_file"),
                          ("Read link.txt", "read_file"), ("Read this:\n```\nopen('stats.py')\n```", "read_file"),
                          ("Read data/../../notes.txt", "read_file"),
                          ("Read stats.py", "directory_tree"), ("Read stats.py", "write_file")]:
        path = workspace_paths(READ_PARAMS, ("path",), message, folders=[folder], tool=tool)["properties"]["path"]
        assert "enum" not in path and path["pattern"] == WORKSPACE_PATH_PATTERN, message


async def test_a_small_models_tool_call_is_held_to_the_named_file(workspace: Path, env: dict[str, str], llm):
    """Through the engine: the compact model's tools carry the rule in what is sent; a full-size model's do not."""
    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply

    (workspace / "notes.txt").write_text("The secret number is 7.\n")
    llm.enqueue(Reply.text("Done."), Reply.text("Done."))
    config = compact_config(llm.url)
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: False)
    try:
        assert (await eca.prompt("Read the file notes.txt and tell me the secret number.")).ok
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in llm.requests[-1].body["tools"]}
        assert tools["eca__read_file"]["properties"]["path"]["enum"] == ["notes.txt"]
        assert tools["eca__directory_tree"]["properties"]["path"]["pattern"] == WORKSPACE_PATH_PATTERN
    finally:
        await eca.aclose()
    config["providers"]["tiny"]["models"]["m"]["compact"] = False
    eca = await EcaClient.start(workspace=workspace, config=config, env=env, approval=lambda content: False)
    try:
        assert (await eca.prompt("Read the file notes.txt and tell me the secret number.")).ok
        path = {t["function"]["name"]: t["function"]["parameters"]
                for t in llm.requests[-1].body["tools"]}["eca__read_file"]["properties"]["path"]
        assert not {"enum", "pattern"} & path.keys()
    finally:
        await eca.aclose()


PANEL_PROMPTS = [  # the newcomer's questions in the panel, with notebook 05 open (issue #30)
    "What does this notebook do?",
    "Write a Python function is_prime(n) that returns True when n is a prime number.",
    "Plot the distribution of the first numeric column of df.",
    "My last cell raises an error. Explain it and fix it.",
]


def write_large_notebook(path: Path, cells: int = 60) -> None:
    """An executed notebook of ~20 KB: an introduction, `cells` code cells with output, `df` defined near the top,
    and a last cell that raised a KeyError."""
    def code(source: str, count: int, outputs: list[dict]) -> dict:
        return {"cell_type": "code", "execution_count": count, "metadata": {}, "source": source, "outputs": outputs}

    body = [{"cell_type": "markdown", "metadata": {}, "source": "# Sales analysis\n\nLoads the quarterly sales table "
             "into `df` and compares the regions."},
            code('import pandas as pd\ndf = pd.DataFrame({"region": ["north", "south"], "sales": [120, 80]})', 1, [])]
    for i in range(cells):
        body.append(code(f"value_{i} = sum(range({i}))  # step {i} of the analysis, with a comment to make it longer\n"
                         f"print('step {i}', value_{i})", i + 2,
                         [{"output_type": "stream", "name": "stdout", "text": f"step {i} {sum(range(i))}\n"}]))
    body.append(code(ERROR_CELL, cells + 2, [{"output_type": "error", "ename": "KeyError",
                                               "evalue": "'Column not found: sale'", "traceback": TRACEBACK}]))
    path.write_text(json.dumps({"cells": body, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4,
                                "nbformat_minor": 5}))


def compact_config(url: str, **limit: int) -> dict:
    return {"localModel": False, "defaultModel": "tiny/m",
            "providers": {"tiny": {"api": "openai-chat", "url": url,
                                   "models": {"m": {"compact": True, "limit": limit or {"context": 8192}}}}}}


async def test_a_small_model_gets_no_tools_for_the_panels_questions(workspace: Path, env: dict[str, str], llm):
    """With the active notebook attached (the panel's automatic context) none of the newcomer's questions offers a
    tool: "Write … is_prime" was offered write_file (the 135M model wrote the function into the tool call's JSON
    until its token limit) and the error fix read_file (three failed reads of README.md)."""
    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply

    write_large_notebook(workspace / "analysis.ipynb")
    llm.enqueue(*[Reply.text("An answer.") for _ in PANEL_PROMPTS])
    eca = await EcaClient.start(workspace=workspace, config=compact_config(llm.url), env=env,
                                approval=lambda content: False)
    try:
        for message in PANEL_PROMPTS:
            result = await eca.prompt(message, contexts=[{"type": "file", "path": "analysis.ipynb"}])
            assert result.ok, result.error
            offered = [t["function"]["name"] for t in llm.requests[-1].body.get("tools") or []]
            assert offered == [], (message, offered)
    finally:
        await eca.aclose()


async def test_an_error_fix_gets_the_failing_cell_and_its_traceback(workspace: Path, env: dict[str, str], llm):
    """The prompt of a small model carries the cell that raised and its traceback (colours removed, the middle of
    a long one left out), not the notebook: the whole notebook, clipped, lost the failing cell at its end."""
    from eca_notebook.client import EcaClient
    from eca_notebook.testing.llm_server import Reply

    write_large_notebook(workspace / "analysis.ipynb")
    llm.enqueue(Reply.text("The column is called sales."), Reply.text("It sums the sales per region."))
    eca = await EcaClient.start(workspace=workspace, config=compact_config(llm.url), env=env,
                                approval=lambda content: False)
    try:
        fix = await eca.prompt("My last cell raises an error. Explain it and fix it.",
                               contexts=[{"type": "file", "path": "analysis.ipynb"}])
        assert fix.ok, fix.error
        sent = llm.requests[-1].body["messages"][-1]["content"]
        assert sent.startswith("My last cell raises an error. Explain it and fix it.")
        assert f"Cell 63 (In [62]) raised KeyError:\n```python\n{ERROR_CELL}\n```\nTraceback:\n```\n" in sent
        assert "----> 1 df.groupby(\"region\")[\"sale\"].sum()" in sent  # the cell's own frame, without colours
        assert sent.rstrip().endswith("KeyError: 'Column not found: sale'\n```\n</file>\n</contexts>")
        assert "\x1b[" not in sent and "lines of the traceback left out" in sent
        assert "value_30" not in sent  # the rest of the notebook is not sent
        # a question about the notebook itself gets its introduction and headings, still not its cells
        about = await eca.prompt("What does this notebook do?", chat_id=fix.chat_id,
                                 contexts=[{"type": "file", "path": "analysis.ipynb"}])
        assert about.ok, about.error
        sent = llm.requests[-1].body["messages"][-1]["content"]
        assert "Loads the quarterly sales table" in sent and "value_30" not in sent and ERROR_CELL not in sent
    finally:
        await eca.aclose()


async def test_a_long_chat_on_a_small_model_is_never_compacted(workspace: Path, env: dict[str, str], llm):
    """A small model's requests stay within SMALL_MODEL_PROMPT_TOKENS: the oldest turns are left out of what is
    sent (the chat says nothing about it), never summarised — a compaction costs the small model a whole extra
    generation, and it ran on the newcomer's fourth question. The start of what is sent moves seldom (down to half
    the budget at a time), so llama.cpp's prompt cache reads only the new turn most of the time."""
    from eca_notebook.client import EcaClient
    from eca_notebook.engine.turn._window import (
        COMPACT_PROMPT,
        SMALL_MODEL_CHARS_PER_TOKEN,
        SMALL_MODEL_PROMPT_TOKENS,
    )
    from eca_notebook.testing.llm_server import Reply

    prompts = [f"Question {i}: " + " ".join([f"some detail number {i} about the data."] * 16) for i in range(12)]
    llm.enqueue(*[Reply.text(f"Answer {i}: " + " ".join(f"point{j}" for j in range(40))) for i in range(len(prompts))])
    eca = await EcaClient.start(workspace=workspace, config=compact_config(llm.url, context=4096, output=512),
                                env=env, approval=lambda content: False)
    try:
        chat_id = None
        for prompt in prompts:
            result = await eca.prompt(prompt, chat_id=chat_id)
            assert result.ok, result.error
            chat_id = result.chat_id
            assert not any("compact" in note.lower() or "context" in note.lower() for note in result.system), \
                result.system
        assert len(llm.requests) == len(prompts)  # no summary request
        firsts = []
        for request in llm.requests:
            messages = request.body["messages"]
            assert not any(COMPACT_PROMPT in str(m.get("content")) for m in messages)
            chars = sum(len(str(m.get("content") or "")) for m in messages)
            assert chars / SMALL_MODEL_CHARS_PER_TOKEN <= SMALL_MODEL_PROMPT_TOKENS
            firsts.append(messages[1]["content"])  # (after the system prompt)
        last = [str(m.get("content")) for m in llm.requests[-1].body["messages"]]
        assert last[-1] == prompts[-1] and prompts[0] not in last
        moves = sum(1 for a, b in zip(firsts, firsts[1:], strict=False) if a != b)
        assert 1 <= moves <= len(prompts) // 3, firsts
        # the chat itself keeps every turn (a rewind, /compact or another model still has them)
        chat = eca.engine.chat_book.get(chat_id)
        assert chat is not None and sum(1 for m in chat.messages if getattr(m, "text", "") in prompts) == len(prompts)
    finally:
        await eca.aclose()
