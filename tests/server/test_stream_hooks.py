"""The engine hooks the session stream hands in (nothing in engine/tools imports the server): a chat's delegate
(commands run elsewhere, writes applied elsewhere, a system-prompt note) for that chat only, and the write tools'
rationale and acceptance criteria in their details."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reply, ToolCall
from eca_notebook.tools.base import CURRENT_TOOL_CALL, ChatDelegate, CommandOutcome, CommandRequest

pytestmark = pytest.mark.timeout(120)
MODEL = "p/m"


class Recorder:
    def __init__(self) -> None:
        self.contents: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        if method == "chat/contentReceived":
            self.contents.append((params["chatId"], params["content"]))

    def of(self, chat_id: str, kind: str) -> list[dict[str, Any]]:
        return [c for chat, c in self.contents if chat == chat_id and c["type"] == kind]


@pytest.fixture
async def engine(tmp_path: Path, workspace: Path, llm):
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "OLLAMA_API_URL": "http://127.0.0.1:9"}
    options = {"providers": {"p": {"api": "openai-chat", "url": llm.url, "key": "k-test-12345678",
                                   "models": {"m": {}}}},
               "defaultModel": MODEL, "localModel": False,
               "toolCall": {"approval": {"byDefault": "allow"}}}
    engine = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=options, env=env))
    await engine.start()
    try:
        yield engine
    finally:
        await engine.aclose()


async def run_turn(engine: Engine, chat_id: str, message: str) -> None:
    result = await engine.prompt(ChatPromptParams(chat_id=chat_id, message=message, model=MODEL))
    assert result.status == "prompting", result
    chat = engine.chats[chat_id]
    if chat.task is not None:
        await asyncio.wait_for(chat.task, 60)


def shell(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "eca__shell_command", json.dumps({"command": command}))


async def test_run_command_delegate_for_its_chat_only(engine: Engine, llm, workspace: Path) -> None:
    seen: list[CommandRequest] = []

    async def run_command(request: CommandRequest) -> CommandOutcome:
        seen.append(request)
        return CommandOutcome(exit_code=2, stdout="Remote-OUT\n", stderr="Remote-ERR\n", duration_ms=3)

    engine.set_chat_delegate("remote", ChatDelegate(run_command=run_command, system_note=lambda: "Note-XYZ"))
    recorder = Recorder()
    engine.add_listener(recorder)
    llm.enqueue(Reply([shell("call_1", "echo local-run > made.txt")]), Reply.text("ok"))
    await run_turn(engine, "remote", "run it")
    assert len(seen) == 1 and seen[0].command == "echo local-run > made.txt"
    assert seen[0].cwd == str(workspace) and seen[0].chat_id == "remote" and seen[0].tool_call_id == "call_1"
    assert seen[0].env == {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    assert seen[0].timeout == 60
    assert not (workspace / "made.txt").exists()  # nothing ran here
    called = recorder.of("remote", "toolCalled")[0]
    assert called["error"] is True and called["outputs"][0]["text"] == "Exit code: 2\n\nRemote-OUT\nRemote-ERR\n"
    body = json.dumps(llm.requests[1].body)
    assert "Remote-OUT" in body and "Note-XYZ" in body

    # another chat on the same engine is untouched: its command runs here, without the note
    llm.enqueue(Reply([shell("call_2", "echo here > made.txt")]), Reply.text("ok"))
    await run_turn(engine, "panel", "run it")
    assert len(seen) == 1 and (workspace / "made.txt").read_text() == "here\n"
    assert "Note-XYZ" not in json.dumps(llm.requests[3].body)

    engine.clear_chat_delegate("remote", ChatDelegate())  # not its delegate: kept
    assert "remote" in engine.chat_delegates
    engine.clear_chat_delegate("remote")
    assert engine.chat_delegates == {}


async def test_run_command_timeouts_and_refusals_reach_the_model(engine: Engine, llm) -> None:
    async def never(request: CommandRequest) -> CommandOutcome:
        raise TimeoutError

    async def refused(request: CommandRequest) -> CommandOutcome:
        raise PermissionError("no commands here")

    recorder = Recorder()
    engine.add_listener(recorder)
    for chat_id, runner, expected in (("t", never, "Command timed out after 60000 ms"),
                                      ("r", refused, "The command was not run: no commands here")):
        engine.set_chat_delegate(chat_id, ChatDelegate(run_command=runner))
        llm.enqueue(Reply([shell(f"call_{chat_id}", "true")]), Reply.text("ok"))
        await run_turn(engine, chat_id, "run")
        called = recorder.of(chat_id, "toolCalled")[0]
        assert called["error"] is True and called["outputs"][0]["text"].startswith(expected)


async def test_file_delegate_gets_the_call_id_and_rationale_travels(engine: Engine, llm, workspace: Path) -> None:
    writes: list[tuple[Path, str, str | None]] = []

    class Files:
        async def read_text(self, path: Path) -> str | None:
            return None

        async def write_text(self, path: Path, content: str) -> bool:
            writes.append((path, content, CURRENT_TOOL_CALL.get()))
            return True

    engine.set_chat_delegate("remote", ChatDelegate(fs=Files()))
    recorder = Recorder()
    engine.add_listener(recorder)
    (workspace / "a.txt").write_text("one\n")
    args = {"path": "a.txt", "original_content": "one", "new_content": "two", "rationale": "Say two",
            "acceptance_criteria": ["a.txt says two"]}
    llm.enqueue(Reply([ToolCall("call_e", "eca__edit_file", json.dumps(args))]), Reply.text("ok"))
    await run_turn(engine, "remote", "edit")
    assert writes == [(workspace / "a.txt", "two\n", "call_e")]
    assert (workspace / "a.txt").read_text() == "one\n"  # the delegate took the write
    run = recorder.of("remote", "toolCallRun")[0]
    assert run["details"]["rationale"] == "Say two" and run["details"]["acceptanceCriteria"] == ["a.txt says two"]
    assert run["arguments"]["rationale"] == "Say two"

    # without reasons the arguments stay as they were (no null keys)
    llm.enqueue(Reply([ToolCall("call_w", "eca__write_file", json.dumps({"path": "b.txt", "content": "b\n"}))]),
                Reply.text("ok"))
    await run_turn(engine, "panel", "write")
    run = recorder.of("panel", "toolCallRun")[0]
    assert run["arguments"] == {"path": "b.txt", "content": "b\n"} and "rationale" not in run["details"]
    assert (workspace / "b.txt").read_text() == "b\n"
    assert CURRENT_TOOL_CALL.get() is None


async def test_notebook_cell_edit_carries_the_reasons(workspace: Path) -> None:
    import nbformat

    from eca_notebook.tools.base import ToolContext
    from eca_notebook.tools.notebook import NotebookEditCellTool

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    (workspace / "n.ipynb").write_text(nbformat.writes(nb))
    args = {"path": "n.ipynb", "cell_id": nb.cells[0].id, "source": "x = 2", "rationale": "Two is right",
            "acceptance_criteria": ["x == 2"]}
    prepared = await NotebookEditCellTool().prepare(args, ToolContext(workspace_folders=[workspace]))
    assert prepared.error is None, prepared.error
    assert prepared.details is not None
    assert prepared.details["rationale"] == "Two is right" and prepared.details["acceptanceCriteria"] == ["x == 2"]
    assert "rationale" in NotebookEditCellTool().parameters["properties"]
