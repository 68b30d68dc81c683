"""The live kernel of a notebook open in JupyterLab, through the real server extension: ``@`` offers its variables
(a DataFrame with its shape), attaching one sends its columns, dtypes and head; ``list_variables`` answers with the
kernel's variables; a read while the user's cell runs answers "kernel busy" at once; ``run_python`` asks first."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from jupyter_client.asynchronous import AsyncKernelClient

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from .test_ws import prompt

pytest.importorskip("pandas")

NOTEBOOK = "analysis.ipynb"


@pytest.fixture
async def kernel(jp_fetch, jp_serverapp, workspace):
    """A session for analysis.ipynb, as JupyterLab opens one, with a kernel client to run the user's cells."""
    (workspace / NOTEBOOK).write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    response = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": NOTEBOOK, "name": NOTEBOOK, "type": "notebook", "kernel": {"name": "python3"}}))
    kernel_id = json.loads(response.body)["kernel"]["id"]
    manager = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    client = AsyncKernelClient()
    client.load_connection_info(manager.get_connection_info())
    client.start_channels(hb=False)  # a heartbeat missed on a loaded machine is not a dead kernel
    await client.wait_for_ready(timeout=120)
    client.server_kernel = manager
    yield client
    client.stop_channels()


async def run_cell(client, code: str) -> None:
    reply = await client.execute_interactive(code, timeout=120, store_history=True)
    assert reply["content"]["status"] == "ok", reply["content"]


def tool_output(sock, chat_id: str, call_id: str) -> dict:
    return next(c for role, c in sock.contents(chat_id) if c["type"] == "toolCalled" and c["id"] == call_id)


async def test_at_offers_the_live_dataframe_and_attaching_it_sends_its_columns(connect, llm, kernel, workspace):
    await run_cell(kernel, "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'revenue': [1.5, 2.0]})")
    sock = await connect()
    await sock.initialize()
    notebook = {"type": "file", "path": NOTEBOOK}
    found = (await sock.request("chat/queryContext", {"query": "sal", "contexts": [notebook]}))["contexts"]
    variables = [c for c in found if c.get("server") == "kernel"]
    assert [c["name"] for c in variables] == ["sales"]
    assert variables[0]["description"] == "DataFrame shape=(2, 2)"
    # nothing leaked into the user's namespace or history
    await run_cell(kernel, "assert not [n for n in globals() if n.startswith('_eca')], 'probe names left behind'")

    llm.enqueue(Reply([Text("Revenue is a float column.")]))
    chat_id = await prompt(sock, "what columns does @sales have?", contexts=[variables[0], notebook])
    await sock.wait_idle(chat_id)
    sent = json.dumps(llm.requests[-1].body)
    assert "region" in sent and "revenue" in sent and "float64" in sent and "### `sales`" in sent


async def test_list_variables_from_a_panel_chat_and_kernel_busy(connect, llm, kernel, workspace):
    await run_cell(kernel, "threshold = 42\nnames = ['a', 'b']")
    llm.enqueue(Reply([ToolCall("list-1", "eca__list_variables", "{}")]), Reply([Text("Two variables.")]))
    sock = await connect()
    await sock.initialize()
    chat_id = await prompt(sock, "what is defined?", contexts=[{"type": "file", "path": NOTEBOOK}])
    await sock.wait_idle(chat_id)
    listed = tool_output(sock, chat_id, "list-1")
    assert listed["error"] is False, listed
    text = listed["outputs"][0]["text"]
    assert "threshold: int (value=42)" in text and "names: list" in text

    # the user's cell runs for a long time: a read answers at once instead of queueing behind it
    long_cell = asyncio.ensure_future(kernel.execute_interactive("import time; time.sleep(60)", timeout=120))
    state = lambda: kernel.server_kernel.execution_state  # noqa: E731 - the server's tracked state
    deadline = time.monotonic() + 60
    while state() != "busy":
        assert time.monotonic() < deadline, "the long cell never started"
        await asyncio.sleep(0.05)
    llm.enqueue(Reply([ToolCall("list-2", "eca__inspect_variable", '{"name": "threshold"}')]),
                Reply([Text("Busy.")]))
    start = len(sock.messages)
    chat_id = await prompt(sock, "and now?", chatId=chat_id, contexts=[{"type": "file", "path": NOTEBOOK}])
    await sock.wait_idle(chat_id, start=start)
    busy = tool_output(sock, chat_id, "list-2")
    assert busy["error"] is True and "kernel busy — try again when the cell finishes" in busy["outputs"][0]["text"]
    assert not long_cell.done()  # answered while the cell still ran
    await kernel.server_kernel.interrupt_kernel()
    await long_cell


async def test_run_python_asks_first_then_runs_in_the_notebook_kernel(connect, llm, kernel, workspace):
    llm.enqueue(Reply([ToolCall("run-1", "eca__run_python", json.dumps({"code": "x = 6 * 7\nprint('hi')\nx"}))]),
                Reply([Text("It is 42.")]))
    sock = await connect()
    await sock.initialize()
    chat_id = await prompt(sock, "compute", contexts=[{"type": "file", "path": NOTEBOOK}])
    await sock.wait_for("chat/contentReceived", lambda p: p["content"].get("text") == "Waiting for tool call approval")
    await sock.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "run-1"})
    await sock.wait_idle(chat_id)
    ran = tool_output(sock, chat_id, "run-1")
    assert ran["error"] is False and ran["outputs"][0]["text"] == "hi\nOut: 42"
    reply = await kernel.execute_interactive("assert x == 42", timeout=60)
    assert reply["content"]["status"] == "ok"  # it ran in the user's namespace


async def test_a_value_that_hangs_the_probe_does_not_keep_the_kernel(connect, kernel, workspace):
    """Typing ``@sl`` describes the kernel's variables: a value whose ``shape`` (or ``__len__``, ``__repr__``) never
    returns — a lazy remote dataset, an object a notebook loaded — must not leave the probe running in the user's
    kernel past its timeout, with every cell the user runs next queued behind it."""
    await run_cell(kernel, "import time\nclass Lazy:\n    @property\n    def shape(self):\n        time.sleep(600)\n"
                           "slow = Lazy()")
    sock = await connect()
    await sock.initialize()
    found = (await sock.request("chat/queryContext", {"query": "sl", "contexts": [{"type": "file", "path": NOTEBOOK}]}))
    assert not [c for c in found["contexts"] if c.get("server") == "kernel"]  # the kernel did not answer in time
    reply = await kernel.execute_interactive("after = 1", timeout=60)  # the user's next cell runs
    assert reply["content"]["status"] == "ok"
