"""The issue's repro through a real ``eca-notebook server`` (issue #12, 1): approve "Creating file sub/x.txt" after
``sub`` was swapped for a symlink to an outside folder — the chat and the model get an error, nothing lands outside.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_chat import completion_requests
from .test_server_tools import call, of_type, prompt, tool_results_sent, wait_tool_run

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("tool", ["write_file", "edit_file", "move_file"])
async def test_swapped_directory_is_refused_at_write_time(tool, spawn, llm, workspace, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "sub").mkdir()
    (workspace / "a.txt").write_text("moved\n")
    args = {
        "write_file": {"path": "sub/x.txt", "content": "secret plans\n"},
        "edit_file": {"path": "sub/x.txt", "original_content": "", "new_content": "secret plans\n"},
        "move_file": {"source": "a.txt", "destination": "sub/x.txt"},
    }[tool]
    llm.enqueue(Reply([call(tool, args)]), Reply.text("ok"))
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "do it", model="openai/gpt-4.1")
    run = await wait_tool_run(eca)
    assert run["manualApproval"] is True
    shutil.rmtree(workspace / "sub")  # meanwhile: another process, a git checkout, another chat's command
    (workspace / "sub").symlink_to(outside, target_is_directory=True)
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "call_1"})
    await eca.wait_idle(chat_id)
    [called] = of_type(eca.contents(chat_id), "toolCalled")
    text = called["outputs"][0]["text"]
    assert called["error"] is True and "refused" in text and "outside the workspace" in text
    assert not text.startswith(("Created", "Moved"))
    assert list(outside.iterdir()) == []
    [sent] = tool_results_sent("openai-responses", completion_requests(llm)[1].body)
    assert "refused" in sent
