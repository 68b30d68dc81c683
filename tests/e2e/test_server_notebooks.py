"""The notebook tools through a real ``eca-notebook server`` whose client has no notebook front end: the file path
(nbformat, validated, atomic), runs in a kernel of the notebook's own with outputs saved, undo over the wire —
the loop "make this notebook run top to bottom" as an editor user gets it."""

from __future__ import annotations

import json

import nbformat
import pytest

from eca_notebook.testing.llm_server import Reply

from .test_server_tools import call, completion_requests, of_type, prompt, tool_results_sent, wait_tool_run

pytestmark = pytest.mark.e2e


def broken_notebook(path) -> list[str]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("total = 10"), nbformat.v4.new_code_cell("parts = 0"),
                nbformat.v4.new_code_cell("share = total / parts\nprint(share)")]
    nbformat.write(nb, path)
    return [c.id for c in nb.cells]


async def approve(eca, chat_id: str, call_id: str) -> dict:
    run = await wait_tool_run(eca, call_id)
    assert run["manualApproval"] is True, run
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": call_id})
    return run


async def test_run_read_the_error_fix_and_rerun_on_a_closed_notebook(spawn, llm, workspace):
    path = workspace / "report.ipynb"
    ids = broken_notebook(path)
    llm.enqueue(
        Reply([call("notebook_run_cells", {"path": "report.ipynb", "cell_ids": ids}, "run1")]),
        Reply([call("notebook_edit_cell", {"path": "report.ipynb", "cell_id": ids[1], "source": "parts = 4"},
                    "edit1")]),
        Reply([call("notebook_run_cells", {"path": "report.ipynb", "cell_ids": ids}, "run2")]),
        Reply.text("The notebook runs top to bottom now: `parts` was 0."),
    )
    eca = await spawn()
    await eca.initialize(workspace)
    chat_id = await prompt(eca, "make this notebook run top to bottom", model="openai/gpt-4.1")
    await approve(eca, chat_id, "run1")
    edit = await approve(eca, chat_id, "edit1")
    assert edit["details"]["cellId"] == ids[1] and "-parts = 0\n+parts = 4\n" in edit["details"]["diff"]
    await approve(eca, chat_id, "run2")
    await eca.wait_idle(chat_id, timeout=240)

    called = {c["id"]: c for c in of_type(eca.contents(chat_id), "toolCalled")}
    first = called["run1"]["outputs"][0]["text"]
    assert called["run1"]["error"] is True
    assert "in a kernel of its own" in first and "ZeroDivisionError" in first and "error" in first
    assert "written to the .ipynb file" in called["edit1"]["outputs"][0]["text"]
    second = called["run2"]["outputs"][0]["text"]
    assert called["run2"]["error"] is False and "[stdout] 2.5" in second
    # the model was sent the traceback of the first run
    sent = tool_results_sent("openai-responses", completion_requests(llm)[1].body)
    assert any("ZeroDivisionError: division by zero" in s for s in sent)

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[1].source == "parts = 4" and nb.cells[1].metadata["eca"]["toolCallId"] == "edit1"
    assert nb.cells[2].outputs[0]["text"] == "2.5\n"  # the run's outputs were saved for the user

    undone = await eca.request("chat/toolCallUndo", {"chatId": chat_id, "toolCallId": "edit1"})
    assert undone["undone"] is True, undone
    assert nbformat.read(path, as_version=4).cells[1].source == "parts = 0"
    assert (await eca.request("chat/toolCallUndo", {"chatId": chat_id, "toolCallId": "edit1"}))["undone"] is False
    assert json.loads(path.read_text())["nbformat_minor"] >= 5
