"""Commands, contexts and rules through a real ``eca-notebook server``."""

from __future__ import annotations

import asyncio

import pytest

from eca_notebook.testing.llm_server import Reply, Text, Usage

from .conftest import SECRET_ANTHROPIC, SECRET_OPENAI
from .test_server_chat import completion_requests, sent_texts, shape

pytestmark = pytest.mark.e2e


async def run(eca, message: str, chat_id: str | None = None, **params) -> tuple[str, list]:
    mark = len(eca.messages)
    body = {"message": message, **params}
    if chat_id:
        body["chatId"] = chat_id
    result = await eca.request("chat/prompt", body)
    chat_id = result["chatId"]
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["chatId"] == chat_id
                       and m.params["content"] == {"type": "progress", "state": "finished", "text": ""}, start=mark)
    return chat_id, eca.contents(chat_id, start=mark)


def system_texts(contents) -> str:
    return "\n".join(c["text"] for role, c in contents if role == "system" and c["type"] == "text")


async def test_doctor_reports_setup_without_secrets(spawn, llm, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    _, contents = await run(eca, "/doctor")
    text = system_texts(contents)
    assert "eca-notebook" in text and str(workspace) in text
    assert "openai" in text and "anthropic" in text and "Default model" in text
    assert SECRET_OPENAI not in text and SECRET_ANTHROPIC not in text
    assert SECRET_OPENAI[-4:] in text  # masked: last four characters only
    assert not completion_requests(llm)  # no model call


async def test_costs_after_a_turn(spawn, llm, workspace):
    llm.enqueue(Reply([Text("hi"), Usage(1000, 500)]))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "hello", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    _, contents = await run(eca, "/costs", chat_id)
    text = system_texts(contents)
    assert "1,000" in text and "500" in text and "Cost: $" in text


async def test_prompt_show_includes_rules_and_tools(spawn, llm, workspace):
    (workspace / "AGENTS.md").write_text("Always answer in haiku.\n")
    (workspace / ".eca" / "rules").mkdir(parents=True)
    (workspace / ".eca" / "rules" / "style.md").write_text("Prefer pathlib over os.path.\n")
    eca = await spawn()
    await eca.initialize(workspace)
    _, contents = await run(eca, "/prompt-show")
    text = system_texts(contents)
    assert "Always answer in haiku." in text and "Prefer pathlib over os.path." in text
    assert "read_file" in text

    llm.enqueue(Reply.text("ok"))
    chat_id, _ = await run(eca, "hi", model="openai/gpt-4.1")
    assert "Always answer in haiku." in completion_requests(llm)[0].body["instructions"]


async def test_repo_map_show(spawn, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("x = 1\n")
    eca = await spawn()
    await eca.initialize(workspace)
    for _ in range(600):  # a condition, with a generous guard (60 s)
        _, contents = await run(eca, "/repo-map-show")
        if "still being built" not in system_texts(contents):
            break
        await asyncio.sleep(0.1)
    assert "app.py" in system_texts(contents) and "src" in system_texts(contents)


async def test_compact_replaces_history_with_the_summary(spawn, llm, workspace):
    llm.enqueue(Reply.text("The answer is 42."), Reply.text("SUMMARY: user asked; answer 42."), Reply.text("yes"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id, _ = await run(eca, "What is the answer?", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    mark = len(eca.messages)
    await run(eca, "/compact", chat_id)
    await eca.wait_idle(chat_id, start=mark)
    assert any("compacted" in t for t in system_texts(eca.contents(chat_id, start=mark)).splitlines())
    assert shape(eca.contents(chat_id, start=mark))[-1] == ("system", "progress", "finished", "")
    await run(eca, "And again?", chat_id)
    await eca.wait_idle(chat_id)
    history = sent_texts("openai-responses", completion_requests(llm)[-1].body)
    assert len(history) == 2 and "SUMMARY: user asked; answer 42." in history[0][1]
    assert history[1] == ("user", "And again?")


async def test_resume_lists_and_loads_a_previous_chat(spawn, llm, workspace):
    llm.enqueue(Reply.text("Noted: blue."), Reply.text("Blue."))
    eca = await spawn()
    await eca.initialize(workspace)
    first, _ = await run(eca, "My favourite colour is blue", model="openai/gpt-4.1")
    await eca.wait_idle(first)
    second, contents = await run(eca, "/resume")
    assert "My favourite colour is blue" in system_texts(contents)
    _, contents = await run(eca, "/resume 1", second)
    assert "Resumed" in system_texts(contents)
    await run(eca, "What is my favourite colour?", second, model="openai/gpt-4.1")
    await eca.wait_idle(second)
    history = sent_texts("openai-responses", completion_requests(llm)[-1].body)
    assert history[0] == ("user", "My favourite colour is blue")


async def test_custom_command_with_placeholders(spawn, llm, workspace):
    (workspace / ".eca" / "commands").mkdir(parents=True)
    (workspace / ".eca" / "commands" / "review.md").write_text("Review $1 focusing on $ARGS\n")
    llm.enqueue(Reply.text("reviewed"))
    eca = await spawn()
    await eca.initialize(workspace)
    listed = (await eca.request("chat/queryCommands", {"query": "rev"}))["commands"]
    assert listed[0]["name"] == "review" and listed[0]["type"] == "customPrompt"  # reference name (chat/queryCommands)
    everything = {c["name"] for c in (await eca.request("chat/queryCommands", {"query": ""}))["commands"]}
    assert {"doctor", "costs", "prompt-show", "repo-map-show", "compact", "resume", "review"} <= everything
    chat_id, contents = await run(eca, "/review app.py", model="openai/gpt-4.1")
    await eca.wait_idle(chat_id)
    assert shape(contents)[0] == ("user", "text", "/review app.py\n")
    sent = sent_texts("openai-responses", completion_requests(llm)[0].body)
    assert sent[0][1].startswith("Review app.py focusing on")


async def test_code_commands_prompt_about_the_attached_selection(spawn, llm, workspace):
    """``/fix``, ``/test``, ``/explain``, ``/refactor``: built-ins in every door (the session stream's slash
    commands), listed, and sent to the model as their prompt with the attached lines."""
    (workspace / "calc.py").write_text("".join(f"x{i} = {i}  # line {i}\n" for i in range(1, 21)))
    llm.enqueue(Reply.text("It assigns numbers."))
    eca = await spawn()
    await eca.initialize(workspace)
    listed = {c["name"]: c for c in (await eca.request("chat/queryCommands", {"query": ""}))["commands"]}
    assert {"fix", "test", "explain", "refactor"} <= set(listed) and listed["fix"]["type"] == "native"
    context = {"type": "file", "path": str(workspace / "calc.py"), "linesRange": {"start": 5, "end": 7}}
    chat_id, contents = await run(eca, "/explain why x6", model="openai/gpt-4.1", contexts=[context])
    await eca.wait_idle(chat_id)
    assert "Unknown command" not in system_texts(contents)
    sent = sent_texts("openai-responses", completion_requests(llm)[0].body)[0][1]
    assert sent.startswith("Explain the attached code.") and "The user's question: why x6" in sent
    assert "# line 5" in sent and "# line 7" in sent and "# line 9" not in sent


async def test_a_newer_clients_extra_fields_are_ignored(spawn, llm, workspace):
    """The tolerant reader of the ECA door: unknown fields in a request and in its nested objects are ignored."""
    (workspace / "calc.py").write_text("x = 1\n")
    llm.enqueue(Reply.text("Fixed."))
    eca = await spawn()
    await eca.initialize(workspace)
    context = {"type": "file", "path": str(workspace / "calc.py"), "linesRange": {"start": 1, "end": 1, "col": 3},
               "encoding": "utf-8"}
    chat_id, contents = await run(eca, "/fix", model="openai/gpt-4.1", contexts=[context], clientTrace="t-1")
    await eca.wait_idle(chat_id)
    assert "Fixed." in "".join(c.get("text", "") for role, c in eca.contents(chat_id) if role == "assistant")
    sent = sent_texts("openai-responses", completion_requests(llm)[0].body)[0][1]
    assert sent.startswith("Fix the bug in the attached code.") and "x = 1" in sent


async def test_unknown_command_is_explained(spawn, llm, workspace):
    eca = await spawn()
    await eca.initialize(workspace)
    _, contents = await run(eca, "/frobnicate now")
    assert "Unknown command '/frobnicate'" in system_texts(contents) and "/doctor" in system_texts(contents)
    assert not completion_requests(llm)


async def test_query_context_and_file_context_with_lines_range(spawn, llm, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "component.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "component.py").write_text("ignored\n")
    eca = await spawn()
    await eca.initialize(workspace)
    contexts = []
    for _ in range(600):  # a condition, with a generous guard (60 s)
        contexts = (await eca.request("chat/queryContext", {"query": "compo", "contexts": []}))["contexts"]
        if contexts:
            break
        await asyncio.sleep(0.1)
    paths = [c.get("path", "") for c in contexts]
    assert paths and paths[0].endswith("src/component.py")
    assert not any("build" in p for p in paths)

    llm.enqueue(Reply.text("seen"))
    chat_id, _ = await run(eca, "explain", model="openai/gpt-4.1",
                           contexts=[{"type": "file", "path": paths[0], "linesRange": {"start": 3, "end": 5}},
                                     {"type": "somethingNew", "foo": 1}])
    await eca.wait_idle(chat_id)
    sent = sent_texts("openai-responses", completion_requests(llm)[0].body)[0][1]
    assert "line 3" in sent and "line 5" in sent and "line 6" not in sent and "line 2\n" not in sent


async def test_a_text_context_reaches_the_model_in_the_user_message(spawn, llm, workspace):
    """The reference's ``TextContext`` (``{type: "text", label, content}``: a buffer with no file, e.g. compile
    output) goes with the user message as ``<text label="…">``, redacted like any attached text."""
    llm.enqueue(Reply.text("It is a missing import."))
    eca = await spawn()
    await eca.initialize(workspace)
    context = {"type": "text", "label": "*compilation*",
               "content": f"error: name 'np' is not defined\nOPENAI_API_KEY={SECRET_OPENAI}\n"}
    chat_id, contents = await run(eca, "why does it fail?", model="openai/gpt-4.1", contexts=[context])
    await eca.wait_idle(chat_id)
    assert not system_texts(contents)  # no problem reported
    sent = sent_texts("openai-responses", completion_requests(llm)[0].body)[0][1]
    assert sent.startswith("why does it fail?")
    assert '<text label="*compilation*">' in sent and "name 'np' is not defined" in sent and "</text>" in sent
    assert SECRET_OPENAI not in sent
    assert "name 'np'" not in completion_requests(llm)[0].body.get("instructions", "")
