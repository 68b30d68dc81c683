"""The code-search tools through a real engine and connection, with the scripted LLM server: what the model reads
back, the ``retrieval`` details every door gets, progress while the index builds, and hiding when unavailable."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from eca_notebook.retrieval import CodeIndex
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall

from ..serving.test_server_connection import Harness, session


async def finished(harness: Harness, prompt: asyncio.Task[Any], chat_id: str = "c") -> None:
    await asyncio.wait_for(prompt, 60)
    await harness.until(lambda m, p: m == "chat/contentReceived" and p["chatId"] == chat_id
                        and p["content"]["type"] == "progress" and p["content"]["state"] == "finished", timeout=120)


def tool_result(llm: ScriptedLLMServer, request: int) -> str:
    return str(llm.requests[request].body["messages"][-1]["content"])


async def test_search_symbols_and_text_reach_the_model_with_retrieval_details(door, llm):
    assert door.engine.code_index is not None and not door.engine.code_index.ready  # lazy: not built at start
    llm.enqueue(
        Reply([ToolCall("s1", "eca__search_symbols", json.dumps({"query": "parseConfigFile"}))]),
        Reply([ToolCall("t1", "eca__search_text", json.dumps({"query": "load settings", "path": "*.py"}))]),
        Reply.text("It is defined in code/src/config.py."),
    )
    prompt = asyncio.create_task(door.client.request("chat/prompt", {"chatId": "c", "message": "where?"}))
    await finished(door, prompt)
    symbols = tool_result(llm, 1)
    assert symbols.splitlines() == [
        'Found 1 symbol for "parseConfigFile":',
        "code/src/config.py:12  method ConfigLoader.parseConfigFile — def parseConfigFile(self, path: str) -> dict:",
    ]
    text = tool_result(llm, 2)
    assert text.startswith('Found 2 places for "load settings":\ncode/src/config.py:1-18\n')
    assert "  17: def load_settings(path):" in text
    contents = door.contents("c")
    run = next(c for c in contents if c["type"] == "toolCallRun" and c["id"] == "s1")
    assert run["manualApproval"] is False and run["details"] == {
        "type": "retrieval", "stage": "symbol_search", "query": "parseConfigFile",
        "message": 'Searching symbols "parseConfigFile"'}
    done = next(c for c in contents if c["type"] == "toolCalled" and c["id"] == "s1")
    assert done["details"] == {"type": "retrieval", "stage": "symbol_search", "query": "parseConfigFile",
                               "resultsCount": 1, "message": 'Found 1 symbol for "parseConfigFile"'}
    done = next(c for c in contents if c["type"] == "toolCalled" and c["id"] == "t1")
    assert done["details"]["stage"] == "text_search" and done["details"]["resultsCount"] == 2
    # the first search built the index and showed it as the turn's progress
    progress = [c["text"] for c in contents if c["type"] == "progress" and c["state"] == "running"]
    assert any(t.startswith("Indexing ") and t.endswith(" files…") for t in progress)


async def test_an_answer_from_an_unchecked_stored_index_says_so(door, llm):
    code = door.engine.code_index
    previous = CodeIndex(code.folders, code.db_path)  # what a previous session left on disk
    await previous.ensure_built()
    await previous.close()
    code.background_files = 0  # as in a big workspace: the stored index is checked in the background
    llm.enqueue(Reply([ToolCall("s1", "eca__search_symbols", json.dumps({"query": "ConfigLoader"}))]),
                Reply.text("ok"))
    prompt = asyncio.create_task(door.client.request("chat/prompt", {"chatId": "c", "message": "where?"}))
    await finished(door, prompt)
    lines = tool_result(llm, 1).splitlines()
    assert lines[1].startswith("code/src/config.py:5  class ConfigLoader")
    assert lines[-1].startswith("(note: answered from the stored index as of ") and "background" in lines[-1]
    await code.wait_for_refresh()
    assert code.ready


async def test_vector_search_reports_reranking(door, llm):
    pytest.importorskip("sentence_transformers")
    llm.enqueue(Reply([ToolCall("v1", "eca__vector_search", json.dumps({"query": "read settings from a json file",
                                                                        "limit": 2}))]), Reply.text("ok"))
    prompt = asyncio.create_task(door.client.request("chat/prompt", {"chatId": "c", "message": "find"}))
    await finished(door, prompt)
    result = tool_result(llm, 1)
    assert result.splitlines()[1].startswith("code/src/config.py:1-18  (")
    done = next(c for c in door.contents("c") if c["type"] == "toolCalled" and c["id"] == "v1")
    assert done["details"]["stage"] == "reranking" and done["details"]["resultsCount"] == 2


async def test_the_tools_are_not_offered_when_the_content_index_is_off(tmp_path, llm):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "eca").mkdir()
    (tmp_path / "config" / "eca" / "config.json").write_text(json.dumps({"index": False}))
    async with session(tmp_path, llm, methods=("tool/serverUpdated",)) as harness:
        await harness.client.notify("initialized")
        await harness.until(lambda m, p: m == "tool/serverUpdated")
        assert harness.engine.code_index is None
        offered = harness.engine.toolbox.offered_tools("agent")
        assert not {"eca__search_symbols", "eca__search_text", "eca__vector_search"} & set(offered)
        assert "eca__grep" in offered
