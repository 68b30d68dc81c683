"""``%eca rewrite <cell> <instruction>`` in a real kernel running for a saved notebook: the rewrite is proposed as
the notebook tools' per-cell diff, Approve applies it to the notebook, ``-y`` in a headless run applies it at once;
and the parsing that keeps "rewrite the README" a prompt."""

from __future__ import annotations

import json

import pytest

from eca_notebook.notebook._parse import parse_magic
from eca_notebook.notebook._rewrite import split_target
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text

from ._kernel import Kernel, running_kernel

AREA = "def area(r):\n    return 3.14 * r * r"
REWRITTEN = "import math\n\ndef area(r):\n    return math.pi * r * r"


def test_parse_rewrite_needs_a_cell_first():
    assert parse_magic("rewrite In[3] add type hints").command == "rewrite"
    assert parse_magic("rewrite In[3] add type hints").argument == "In[3] add type hints"
    assert parse_magic("-y rewrite prev x").yes is True
    assert parse_magic("rewrite #c-1 x").command == "rewrite"
    assert parse_magic("rewrite the README in French").command == "prompt"  # no cell named: a prompt
    cell = parse_magic("rewrite In[2]", "make it\nfaster")
    assert (cell.command, cell.argument) == ("rewrite", "In[2]\nmake it\nfaster")
    assert split_target("In[2]\nmake it\nfaster") == ("In[2]", "make it\nfaster")
    assert split_target("the README") is None


def notebook(cells: list[str]) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [{"id": f"cell-{i}", "cell_type": "code", "source": source, "metadata": {}, "outputs": [],
                       "execution_count": None} for i, source in enumerate(cells)]}


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, llm):
    root = tmp_path_factory.mktemp("rewrite")
    path = root / "project" / "geo.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(notebook(["%load_ext eca_notebook", AREA, "%eca rewrite prev use math.pi"])))
    with running_kernel(root, llm, notebook=path) as k:
        yield k


def cell_source(path, cell_id: str) -> str:
    cells = json.loads(path.read_text())["cells"]
    return next("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in cells if c["id"] == cell_id)


@pytest.mark.slow
def test_rewrite_proposes_a_cell_diff_and_approve_applies_it(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    kernel.path.write_text(json.dumps(notebook(["%load_ext eca_notebook", AREA, "%eca rewrite prev use math.pi"])))
    assert kernel.execute(AREA)["content"]["status"] == "ok"
    llm.enqueue(Reply([Text("```python\n"), Text(REWRITTEN + "\n"), Text("```")]))
    start = len(kernel.iopub)

    reply = kernel.execute("%eca rewrite prev use math.pi")
    assert reply["content"]["status"] == "ok"

    def approve_button():
        for m in kernel.iopub[start:]:
            if m["msg_type"] == "comm_open" and m["content"]["data"].get("state", {}).get("description") == "Approve":
                return m["content"]["comm_id"]
        return None

    button = kernel.wait_for(approve_button, timeout=120)
    states = kernel.wait_for(lambda: [s for s in kernel.comm_states().values()
                                      if "+    return math.pi * r * r" in str(s.get("value", ""))])
    assert "-    return 3.14 * r * r" in str(states[0]["value"])  # the per-cell diff card
    assert cell_source(kernel.path, "cell-1") == AREA  # nothing changes before the approval
    [request] = [r for r in llm.requests if r.method == "POST"]
    assert request.body["messages"][-1]["content"] == "use math.pi"
    assert "return 3.14 * r * r" in request.body["messages"][0]["content"]

    kernel.click(button)
    kernel.wait_for(lambda: cell_source(kernel.path, "cell-1") == REWRITTEN, timeout=120)


@pytest.mark.slow
def test_headless_rewrite_with_yes_applies_at_once(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    kernel.path.write_text(json.dumps(notebook(["x = 1", "total = 0\nfor v in [1, 2, 3]:\n    total += v"])))
    run = kernel.execute("total = 0\nfor v in [1, 2, 3]:\n    total += v", allow_stdin=False)
    count = run["content"]["execution_count"]
    llm.enqueue(Reply.text("total = sum([1, 2, 3])"))

    reply = kernel.execute(f"%eca -y rewrite In[{count}] use sum", allow_stdin=False)

    assert reply["content"]["status"] == "ok"
    assert cell_source(kernel.path, "cell-1") == "total = sum([1, 2, 3])"
    shown = [o["content"]["data"] for o in kernel.outputs(reply["msg_id"]) if o["msg_type"] == "display_data"]
    assert shown and "+total = sum([1, 2, 3])" in shown[-1]["text/plain"]


@pytest.mark.slow
def test_a_cell_that_is_not_in_the_notebook_is_explained(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    kernel.path.write_text(json.dumps(notebook(["x = 1"])))
    kernel.execute("y = 2", allow_stdin=False)

    reply = kernel.execute("%eca rewrite prev make it 3", allow_stdin=False)

    text = "".join(o["content"].get("text", "") for o in kernel.outputs(reply["msg_id"]) if o["msg_type"] == "stream")
    assert "is not in geo.ipynb as it ran" in text
    assert [r for r in llm.requests if r.method == "POST"] == []


def test_rewind_on_a_prompt_in_the_widget_takes_the_chat_back(kernel: Kernel, llm: ScriptedLLMServer):
    """Not a rewrite, but the same door: the chat widget's Rewind (clicked twice: it asks first) is chat/rollback,
    and the widgets showing the chat redraw from the engine's replay."""
    llm.clear()
    llm.enqueue(Reply.text("ONE"), Reply.text("TWO"), Reply.text("THREE"))
    assert kernel.execute("%eca -w --new FIRST-PROMPT")["content"]["status"] == "ok"
    start = len(kernel.iopub)
    assert kernel.execute("%eca -w SECOND-PROMPT")["content"]["status"] == "ok"

    def rewind_button():
        for m in kernel.iopub[start:]:
            if m["msg_type"] == "comm_open" and m["content"]["data"].get("state", {}).get("description") == "Rewind":
                return m["content"]["comm_id"]
        return None

    button = kernel.wait_for(rewind_button, timeout=120)
    kernel.click(button)  # asks first
    kernel.wait_for(lambda: "Confirm rewind" in str(kernel.comm_states()[button].get("description")), timeout=60)
    clicked = len(kernel.iopub)
    kernel.click(button)

    def redrawn():  # a prompt drawn after the click, from the replay: the first one
        opened = {m["content"]["comm_id"] for m in kernel.iopub[clicked:] if m["msg_type"] == "comm_open"}
        return any("› FIRST-PROMPT" in str(state.get("value")) for comm, state in kernel.comm_states().items()
                   if comm in opened)

    kernel.wait_for(redrawn, timeout=120)

    # Fork on the redrawn prompt: the widget then shows the new chat, drawn from its replay
    fork = kernel.wait_for(lambda: next((m["content"]["comm_id"] for m in kernel.iopub[clicked:]
                                         if m["msg_type"] == "comm_open"
                                         and m["content"]["data"].get("state", {}).get("description") == "Fork"),
                                        None), timeout=60)
    clicked = len(kernel.iopub)
    kernel.click(fork)
    kernel.wait_for(redrawn, timeout=120)
    assert not any("Could not fork" in str(state.get("value")) for state in kernel.comm_states().values())

    assert kernel.execute("%eca -w THIRD-PROMPT")["content"]["status"] == "ok"
    body = json.dumps([r for r in llm.requests if r.method == "POST"][-1].body)
    assert "FIRST-PROMPT" in body and "ONE" in body and "THIRD-PROMPT" in body
    assert "SECOND-PROMPT" not in body and "TWO" not in body  # the rewound turn is gone from the history
