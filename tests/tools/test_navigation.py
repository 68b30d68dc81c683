"""The navigation tools (``editor_definition``, ``editor_references``): answered by the content index when no client
can (through a real engine and door), by the editor when it can, and by the index again when the editor cannot."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.protocol import EditorGetDefinitionResult, EditorGetReferencesParams, EditorGetReferencesResult
from eca_notebook.retrieval import CodeIndex
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.navigation import EditorDefinitionTool, EditorReferencesTool, find_symbol_character

from ..retrieval.conftest import make_workspace
from ..serving.test_server_connection import session
from .test_retrieval import finished, tool_result


async def test_without_an_editor_the_engine_answers_from_the_index(door, llm):
    offered = door.engine.toolbox.offered_tools("agent")
    assert {"eca__editor_definition", "eca__editor_references"} <= set(offered)
    llm.enqueue(
        Reply([ToolCall("d1", "eca__editor_definition",
                        json.dumps({"path": "code/src/app.py", "line": 5, "symbol": "load_settings"}))]),
        Reply([ToolCall("r1", "eca__editor_references",
                        json.dumps({"path": "code/src/config.py", "line": 17, "symbol": "load_settings",
                                    "include_declaration": False}))]),
        Reply.text("Defined in config.py, used in app.py."),
    )
    prompt = asyncio.create_task(door.client.request("chat/prompt", {"chatId": "c", "message": "where?"}))
    await finished(door, prompt)
    definition = tool_result(llm, 1).splitlines()
    assert definition[0] == "code/src/config.py:17:5: def load_settings(path):"
    assert "content index" in definition[-1] and len(definition) == 2
    references = tool_result(llm, 2).splitlines()
    assert references[:-1] == [
        "code/src/app.py:1:34: from config import ConfigLoader, load_settings",
        "code/src/app.py:5:16: settings = load_settings(\"app.json\")",
    ]  # the declaration (config.py:17) left out, as asked
    runs = [c for c in door.contents("c") if c["type"] == "toolCallRun"]
    assert [r["manualApproval"] for r in runs] == [False, False]  # read-only: allowed by default


async def test_no_editor_and_no_index_hides_the_tools(tmp_path: Path, llm: ScriptedLLMServer):
    (tmp_path / "config" / "eca").mkdir(parents=True)
    (tmp_path / "config" / "eca" / "config.json").write_text(json.dumps({"index": False}))
    async with session(tmp_path, llm, methods=("tool/serverUpdated",)) as harness:
        await harness.client.notify("initialized")
        await harness.until(lambda m, p: m == "tool/serverUpdated")
        assert harness.engine.code_index is None
        offered = harness.engine.toolbox.offered_tools("agent")
        assert "eca__editor_definition" not in offered and "eca__editor_references" not in offered


@pytest.fixture
async def index(tmp_path: Path):
    ws = make_workspace(tmp_path / "ws")
    idx = CodeIndex([ws], tmp_path / "cache" / "content.sqlite")
    yield idx
    await idx.close()


async def test_an_editor_without_a_language_server_falls_back_to_the_index(index: CodeIndex):
    asked: list[EditorGetReferencesParams] = []

    async def references(params: EditorGetReferencesParams) -> EditorGetReferencesResult:
        asked.append(params)
        return EditorGetReferencesResult(status="no-server", message="no pyright")

    ctx = ToolContext(workspace_folders=index.folders, code_index=index, request_references=references)
    tool = EditorReferencesTool()
    prepared = tool.prepare({"path": "src/config.py", "line": 12, "symbol": "parseConfigFile"}, ctx)
    assert prepared.error is None
    result = await tool.run(prepared, ctx)
    [params] = asked
    assert (params.position.line, params.position.character) == (12, 9)
    lines = result.output.splitlines()
    assert lines[:-1] == ["src/config.py:12:9: def parseConfigFile(self, path: str) -> dict:",
                          "src/config.py:18:27: return ConfigLoader().parseConfigFile(path)"]
    assert "no language server for this file: no pyright" in lines[-1]


async def test_a_starting_editor_is_asked_again_then_answers(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\nprint(x)\n")
    answers: list[dict[str, Any]] = [{"status": "starting"}, {"status": "success", "locations": [
        {"uri": (tmp_path / "a.py").as_uri(),
         "range": {"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 2}}}]}]

    async def definition(params: Any) -> EditorGetDefinitionResult:
        return EditorGetDefinitionResult.model_validate(answers.pop(0))

    ctx = ToolContext(workspace_folders=[tmp_path], request_definition=definition)
    tool = EditorDefinitionTool(poll=0.01)
    result = await tool.run(tool.prepare({"path": "a.py", "line": 2, "symbol": "x"}, ctx), ctx)
    assert result.output == "a.py:1:1: x = 1" and not answers


async def test_a_symbol_not_on_the_line_is_the_models_error(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")

    async def definition(params: Any) -> EditorGetDefinitionResult:
        raise AssertionError("not asked")

    ctx = ToolContext(workspace_folders=[tmp_path], request_definition=definition)
    tool = EditorDefinitionTool()
    result = await tool.run(tool.prepare({"path": "a.py", "line": 1, "symbol": "y"}, ctx), ctx)
    assert result.error and "not found on line 1" in result.output


def test_find_symbol_character_prefers_a_whole_name() -> None:
    assert find_symbol_character("foobar = foo()", "foo") == 10
    assert find_symbol_character("foobar = 1", "foo") == 1  # no whole name: the first occurrence
    assert find_symbol_character("é = greet()", "greet") == 5
    assert find_symbol_character("x = 1", "greet") is None
