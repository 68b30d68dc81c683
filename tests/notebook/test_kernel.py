"""``%eca`` in a real kernel (jupyter_client ``KernelManager`` + ``BlockingKernelClient``), as a front-end sees it.

``allow_stdin=True`` is what JupyterLab sends (live widget mode); ``allow_stdin=False`` is what nbclient and
papermill send (headless: the cell waits and keeps a Markdown answer). A button click is the comm message the
widget front-end sends for it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Delay, Reply, ScriptedLLMServer, Text, ToolCall, Usage

from ._kernel import Kernel, running_kernel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, llm):
    with running_kernel(tmp_path_factory.mktemp("kernel"), llm) as k:
        yield k


def markdown_text(state: dict[str, Any]) -> str | None:
    outputs = state.get("outputs")
    if outputs:
        return outputs[0].get("data", {}).get("text/plain")
    return None


def test_prompt_streams_into_a_widget_while_the_kernel_stays_free(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    llm.enqueue(Reply([Text("Hello "), Delay(1.5), Text("from the kernel"), Usage(3, 4)]))
    start = len(kernel.iopub)
    reply = kernel.execute("%eca say hello")
    assert reply["content"]["status"] == "ok"
    # the cell is done; the answer is not: an unrelated cell runs right away
    other = kernel.execute("6 * 7")
    results = [o for o in kernel.outputs(other["msg_id"]) if o["msg_type"] == "execute_result"]
    assert results[0]["content"]["data"]["text/plain"] == "42"
    assert not any(markdown_text(s) == "Hello from the kernel" for s in kernel.comm_states().values())
    kernel.wait_for(lambda: any(markdown_text(s) == "Hello from the kernel" for s in kernel.comm_states().values()))
    displayed = [m for m in kernel.iopub[start:] if m["msg_type"] == "display_data"
                 and m["parent_header"].get("msg_id") == reply["msg_id"]]
    assert "application/vnd.jupyter.widget-view+json" in displayed[0]["content"]["data"]
    footer = kernel.wait_for(lambda: [s["value"] for s in kernel.comm_states().values()
                                      if "7 tokens this session" in str(s.get("value", ""))])
    assert "eca-footer" in footer[0]


def test_approval_click_in_the_kernel(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    kernel.execute("x = 1")
    llm.enqueue(Reply([ToolCall("k1", "eca__run_python", json.dumps({"code": "x = 2"}))]), Reply.text("set"))
    start = len(kernel.iopub)
    kernel.execute("%eca set x to 2")

    def approve_button():
        for m in kernel.iopub[start:]:
            if m["msg_type"] == "comm_open" and m["content"]["data"]["state"].get("description") == "Approve":
                return m["content"]["comm_id"]
        return None

    def buttons_shown():
        states = kernel.comm_states()
        return any("waiting for your approval" in str(s.get("value", "")) for s in states.values())

    button = kernel.wait_for(approve_button)
    kernel.wait_for(buttons_shown)
    check = kernel.execute("print(x)")
    assert [o["content"]["text"] for o in kernel.outputs(check["msg_id"]) if o["msg_type"] == "stream"] == ["1\n"]
    kernel.click(button)
    kernel.wait_for(lambda: any(markdown_text(s) == "set" for s in kernel.comm_states().values()))
    check = kernel.execute("print(x)")
    assert [o["content"]["text"] for o in kernel.outputs(check["msg_id"]) if o["msg_type"] == "stream"] == ["2\n"]


def test_headless_run_waits_and_keeps_markdown(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    llm.enqueue(Reply([Text("Headless "), Delay(0.3), Text("**answer**")]))
    reply = kernel.execute("%eca -n in a batch run", allow_stdin=False)
    shown = [o["content"]["data"] for o in kernel.outputs(reply["msg_id"]) if o["msg_type"] == "display_data"]
    assert shown and shown[-1]["text/plain"].startswith("Headless **answer**")


def test_fix_with_a_real_exception_and_code_into_the_next_cell(kernel: Kernel, llm: ScriptedLLMServer):
    llm.clear()
    failing = kernel.execute("values = [1, 2]\nvalues[5]\n", allow_stdin=False)
    assert failing["content"]["status"] == "error"
    llm.enqueue(Reply.text("Index 5 is out of range:\n```python\nvalues[-1]\n```"))
    reply = kernel.execute("%eca -o code fix", allow_stdin=True)
    body = llm.requests[-1].body["messages"][-1]["content"]
    assert "IndexError: list index out of range" in body and "values[5]" in body
    payload = reply["content"]["payload"]
    assert payload and payload[0]["source"] == "set_next_input" and payload[0]["text"] == "values[-1]"


def test_kernel_tools_listed_as_native(kernel: Kernel):
    # (the session's client as the next %eca gets it: an earlier answer may have left it to be started again)
    reply = kernel.execute("from eca_notebook.notebook import current_session\n"
                           "client = await current_session().ensure_client()\n"
                           "print(sorted(t['name'] for t in client.tools))")
    outputs = kernel.outputs(reply["msg_id"])
    text = "".join(o["content"].get("text", "") for o in outputs if o["msg_type"] == "stream")
    for name in ("list_variables", "inspect_variable", "run_python", "insert_cell", "replace_cell", "read_file"):
        assert f"'{name}'" in text, (reply["content"], outputs)


def test_load_ext_imports_nothing_heavy():
    """``%load_ext eca_notebook`` is cheap: the engine, httpx, pydantic and ipywidgets wait for the first ``%eca``."""
    import subprocess

    code = ("import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "InteractiveShell.instance().run_line_magic('load_ext', 'eca_notebook')\n"
            "print(sorted(m for m in ('httpx', 'pydantic', 'ipywidgets', 'eca_notebook.engine') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
