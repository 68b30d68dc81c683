"""Turns that go wrong the way small models go wrong: a looping reply, a tool call repeated with the same outcome,
the round cap — each ends with a note in the chat and history the next prompt can use. And the small-model profile
(``compact``) end to end: plain questions go out without tools and with the compact prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.providers.base import AssistantMessage, ToolResultMessage
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage

from .conftest import provider_config


def system_texts(result) -> list[str]:
    return [item.content.text for item in result.contents
            if item.role == "system" and item.content.type == "text"]


def looping_reply() -> Reply:
    loop = "1.1.2." * 3000  # 18,000 characters of a loop, streamed in small chunks
    return Reply([Text("Here is the function:\n")] + [Text(loop[i:i + 6]) for i in range(0, len(loop), 6)]
                 + [Usage(10, 9000)])


async def test_a_small_models_looping_reply_is_cut_short_with_a_note(small: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(looping_reply())
    result = await small.prompt("Write a Python function that adds two numbers.")
    assert len(result.text) < 2000  # stopped long before the end of the loop
    assert any("kept repeating itself" in text for text in system_texts(result))
    chat = small.engine.chats[result.chat_id]
    [answer] = [m for m in chat.messages if isinstance(m, AssistantMessage)]
    assert answer.text.startswith("Here is the function:\n") and len(answer.text) < 40  # the loop isn't history
    # the chat goes on
    llm.enqueue(Reply([Text("Sorry about that."), Usage(5, 3)]))
    again = await small.prompt("Try again", chat_id=result.chat_id)
    assert again.text == "Sorry about that." and again.ok


async def test_other_models_stream_repetitive_output_whole(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(looping_reply())
    result = await client.prompt("Print 1.1.2. many times")
    assert len(result.text) == len("Here is the function:\n") + 18000


def missing_read(call_id: str) -> Reply:
    return Reply([ToolCall(call_id, "eca__read_file", json.dumps({"path": "file.txt"})), Usage(5, 5)])


async def test_a_call_failing_the_same_way_is_not_run_a_third_time(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(missing_read("c1"), missing_read("c2"), missing_read("c3"),
                Reply([Text("I could not find file.txt."), Usage(5, 5)]))
    result = await client.prompt("Read file.txt")
    ran = [c for c in result.tool_calls if c.status in ("done", "failed", "error")]
    assert [c.id for c in ran][:2] == ["c1", "c2"]
    # not run: the same call already failed twice — and its card is finished, not left "preparing"
    [c3] = [c for c in result.tool_calls if c.id == "c3"]
    assert c3.status == "failed" and (c3.output or "").startswith("Not run: this exact call already ran 2 times")
    assert any("Not running read_file again" in text for text in system_texts(result))
    assert result.text == "I could not find file.txt."
    chat = client.engine.chats[result.chat_id]
    blocked = [m for m in chat.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "c3"]
    assert blocked and blocked[0].is_error and "Do not call it again" in blocked[0].output
    # the model was told; its request after the blocked call carries the explanation
    last = llm.requests[-1].body["messages"]
    assert any("Do not call it again" in str(m.get("content")) for m in last)


async def test_a_model_that_keeps_repeating_the_call_is_stopped(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(*[missing_read(f"c{i}") for i in range(1, 8)])
    result = await client.prompt("Read file.txt")
    assert any(text.startswith("Stopped: the model kept repeating a tool call") for text in system_texts(result))
    assert len(llm.requests) == 4  # two runs, two refusals, then the turn ended
    assert result.ok or result.error is None


async def test_the_same_successful_call_is_not_repeated_forever(client: EcaClient, llm: ScriptedLLMServer):
    read = lambda i: Reply([ToolCall(f"r{i}", "eca__read_file", json.dumps({"path": "README.md"})), Usage(5, 5)])  # noqa: E731
    llm.enqueue(*[read(i) for i in range(1, 8)])
    result = await client.prompt("Summarize README.md")
    done = [c for c in result.tool_calls if c.status == "done"]
    assert len(done) == 2
    assert any("kept repeating a tool call" in text for text in system_texts(result))


async def test_the_round_cap_is_reached_with_a_message(workspace: Path, env: dict[str, str], llm: ScriptedLLMServer):
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    (workspace / "c.txt").write_text("c\n")
    llm.enqueue(*[Reply([ToolCall(f"r{n}", "eca__read_file", json.dumps({"path": f"{n}.txt"})), Usage(5, 5)])
                  for n in "abc"])
    async with await EcaClient.start(workspace=workspace, env=env,
                                     config=provider_config(("fake", llm), toolCall={"maxRounds": 2})) as eca:
        result = await eca.prompt("Read a.txt, b.txt and c.txt")
    assert any("Stopped after 2 tool rounds" in text for text in system_texts(result))
    assert len(llm.requests) == 2


# -- the small-model profile through the engine ---------------------------------------------------------------------


@pytest.fixture
def small_config(llm: ScriptedLLMServer) -> dict[str, Any]:
    cfg = provider_config(("fake", llm))
    cfg["providers"]["fake"]["models"]["m1"] = {"compact": True}
    return cfg


@pytest.fixture
async def small(workspace: Path, env: dict[str, str], small_config: dict[str, Any]):
    async with await EcaClient.start(workspace=workspace, env=env, config=small_config) as eca:
        yield eca


def sent(request) -> tuple[str, list[str]]:
    body = request.body
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    return system, sorted(t["function"]["name"] for t in body.get("tools") or [])


async def test_a_small_model_gets_a_plain_request_for_a_plain_question(small: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("```python\ndef add(a, b):\n    return a + b\n```"), Usage(60, 20)]))
    result = await small.prompt("Write a Python function that adds two numbers.")
    assert "def add" in result.text and result.tool_calls == []
    system, tools = sent(llm.requests[-1])
    assert tools == []
    assert len(system) < 400 and "tool" not in system.lower()


async def test_a_small_model_gets_the_tools_a_request_needs(small: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(
        Reply([ToolCall("w1", "eca__write_file", json.dumps({"path": "hello.py", "content": "print('hi')\n"})),
               Usage(5, 5)]),
        Reply([Text("I proposed hello.py."), Usage(5, 5)]),
    )
    result = await small.prompt("Create a file hello.py that prints hi")
    system, tools = sent(llm.requests[0])
    assert tools == ["eca__write_file"]  # a file that does not exist yet: write_file alone (_small_model.py)
    assert "tool" in system.lower()
    # today's approval flow: the unattended default policy rejects the write, nothing is written
    [call] = result.tool_calls
    assert call.name == "write_file" and call.status == "rejected"
    assert not (small.engine.workspace_folders[0] / "hello.py").exists()


async def test_a_small_model_with_tools_always(workspace: Path, env: dict[str, str], llm: ScriptedLLMServer,
                                               small_config: dict[str, Any]):
    small_config["localModel"] = {"enabled": False, "tools": "always"}
    llm.enqueue(Reply([Text("Hi!"), Usage(5, 5)]))
    async with await EcaClient.start(workspace=workspace, env=env, config=small_config) as eca:
        await eca.prompt("Hello!")
    _, tools = sent(llm.requests[-1])
    assert "eca__shell_command" in tools and "eca__read_file" in tools


async def test_a_small_model_reads_then_must_answer(small: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(
        Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": "README.md"})), Usage(5, 5)]),
        Reply([Text("A demo project."), Usage(5, 5)]),
    )
    result = await small.prompt("Summarize README.md")
    assert result.text == "A demo project."
    _, first = sent(llm.requests[0])
    _, second = sent(llm.requests[1])
    assert first == ["eca__directory_tree", "eca__grep", "eca__read_file"]
    assert second == []  # one round of reading, then the answer is asked for without tools
