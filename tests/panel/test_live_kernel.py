"""The live kernel and one-click actions in a real browser against a real ``jupyter lab``: ``@`` lists a DataFrame a
run cell defined and attaching it sends its columns; ``list_variables`` from a panel chat answers with the kernel's
variables; a read while a long cell runs answers "kernel busy" at once; "Fix with ECA" under a traceback sends the
traceback and the cell and leads to an approved per-cell fix; "Insert below" on an answer's code block adds one cell
that a single undo removes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from ._lab import open_panel, screenshot
from .test_notebook_tools import approve, cells, open_notebook, run_cell, write_notebook
from .test_panel import COMPOSER, completion_bodies, send, type_keys, wait_for_completion, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROMPTS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')]
    .map(cell => (cell.querySelector('.jp-InputPrompt') || {}).innerText || '')"""


def prompt_of(page, index: int) -> str:
    return page.evaluate(PROMPTS_JS)[index]


def run_and_wait(page, index: int) -> None:
    run_cell(page, index)
    wait_until(lambda: any(ch.isdigit() for ch in prompt_of(page, index)), timeout=120,
               message=f"cell {index} to finish")


def tool_output_sent(llm, call_id: str) -> str:
    """The tool result the model was sent for *call_id* (the last request that carries it)."""
    for body in reversed(completion_bodies(llm)):
        if call_id in body:
            return body
    raise AssertionError(f"no request carried {call_id}")


def test_at_lists_a_live_dataframe_and_attaching_it_sends_its_columns(page, lab, llm, workspace: Path):
    pytest.importorskip("pandas")
    write_notebook(workspace / "sales.ipynb", "import pandas as pd\n"
                   "sales = pd.DataFrame({'region': ['north', 'south'], 'revenue': [120.5, 80.0]})")
    llm.enqueue(Reply.text("Two columns: region and revenue."))
    open_panel(page, lab, workspace="live-at")
    open_notebook(page, "sales.ipynb")
    run_and_wait(page, 0)
    box = page.locator(COMPOSER)
    box.click()
    type_keys(box, "what is in @sal")
    wait_for_completion(page, box, "DataFrame shape=(2, 2)")
    item = page.locator(".eca-Completion", has_text="DataFrame shape=(2, 2)").first
    assert item.locator(".eca-Completion-label").inner_text() == "sales"
    screenshot(page, "live-kernel-at-completion")
    item.click()
    page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="sales").wait_for()
    assert box.input_value() == "what is in @sales ", box.input_value()
    box.press("Enter")
    page.get_by_text("Two columns: region and revenue.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "what is in @sales" in body and "### `sales`" in body
    assert "region" in body and "revenue" in body and "float64" in body and "north" in body
    assert not page.eca_errors, page.eca_errors


def test_list_variables_then_kernel_busy_while_a_long_cell_runs(page, lab, llm, workspace: Path):
    write_notebook(workspace / "vars.ipynb", "threshold = 42\nnames = ['a', 'b']", "import time\ntime.sleep(300)")
    llm.enqueue(Reply([ToolCall("list-1", "eca__list_variables", "{}")]), Reply([Text("You have two variables.")]))
    open_panel(page, lab, workspace="live-vars")
    open_notebook(page, "vars.ipynb")
    run_and_wait(page, 0)
    send(page, "What variables do I have?")
    page.locator('.eca-ToolCard[data-tool-call-id="list-1"][data-tool-state="done"]').wait_for()
    page.get_by_text("You have two variables.").wait_for()
    sent = tool_output_sent(llm, "list-1")
    assert "threshold: int (value=42)" in sent and "names: list (len=2" in sent

    llm.clear()
    llm.enqueue(Reply([ToolCall("list-2", "eca__inspect_variable", '{"name": "threshold"}')]),
                Reply([Text("The kernel is busy right now.")]))
    run_cell(page, 1)
    wait_until(lambda: "*" in prompt_of(page, 1), timeout=60, message="the long cell to run")
    send(page, "And what is threshold now?")
    page.locator('.eca-ToolCard[data-tool-call-id="list-2"][data-tool-state="failed"]').wait_for()
    page.get_by_text("The kernel is busy right now.").wait_for()
    sent = tool_output_sent(llm, "list-2")
    assert "kernel busy" in sent and "try again when the cell finishes" in sent
    assert "*" in prompt_of(page, 1), "answered while the user's cell still runs"
    screenshot(page, "live-kernel-busy")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").click(position={"x": 5, "y": 5})
    page.keyboard.press("i")
    page.keyboard.press("i")  # interrupt the long cell (command mode I, I)
    wait_until(lambda: "*" not in prompt_of(page, 1), timeout=120, message="the interrupted cell to stop")
    assert not page.eca_errors, page.eca_errors


def test_fix_with_eca_on_a_traceback_leads_to_an_approved_cell_fix(page, lab, llm, workspace: Path):
    ids = write_notebook(workspace / "broken.ipynb", 'sales = {"north": 120, "south": 80}', 'print(sales["west"])')
    fixed = 'print(sales.get("west", 0))'
    llm.enqueue(
        Reply([Text("The key 'west' is missing."),
               ToolCall("edit-1", "eca__notebook_edit_cell",
                        json.dumps({"path": "broken.ipynb", "cell_id": ids[1], "source": fixed}))]),
        Reply([Text("Fixed: it falls back to 0.")]),
    )
    open_panel(page, lab, workspace="live-fix")
    open_notebook(page, "broken.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    button = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(1).locator(".eca-FixButton")
    button.wait_for()
    # under the traceback, on one line, the traceback as wide as before (not squeezed by a button to its right)
    place = button.evaluate("""b => {
        const row = b.parentElement.getBoundingClientRect();
        const out = b.parentElement.querySelector('.jp-OutputArea-output').getBoundingClientRect();
        const prompt = b.parentElement.querySelector('.jp-OutputArea-prompt').getBoundingClientRect();
        const me = b.getBoundingClientRect();
        const label = document.createRange();
        label.selectNodeContents(b);
        return {under: me.top >= out.bottom - 1, oneLine: label.getClientRects().length === 1,
                fullWidth: out.width >= row.width - prompt.width - 1};
    }""")
    assert place == {"under": True, "oneLine": True, "fullWidth": True}, place
    screenshot(page, "fix-with-eca-button")
    button.click()
    approve(page, "edit-1")
    wait_until(lambda: cells(page)[1] == fixed, timeout=60, message="the approved fix in the open notebook")
    page.get_by_text("Fixed: it falls back to 0.").wait_for()
    first = completion_bodies(llm)[0]
    assert "Fix the error in cell 2" in first and "KeyError" in first and "'west'" in first
    assert 'print(sales[\\"west\\"])' in first  # the cell's source, as JSON in the request body
    assert "broken.ipynb" in first
    screenshot(page, "fix-with-eca-fixed")
    assert not page.eca_errors, page.eca_errors


def test_insert_below_adds_one_cell_that_one_undo_removes(page, lab, llm, workspace: Path):
    write_notebook(workspace / "insert.ipynb", "a = 1", "b = 2")
    llm.enqueue(Reply.text("Try this:\n\n```python\nprint('inserted by ECA')\n```\n"))
    open_panel(page, lab, workspace="live-insert")
    open_notebook(page, "insert.ipynb")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputPrompt").first.click()
    send(page, "Print something")
    insert = page.locator('.eca-CodeAction[data-eca-code-action="insert"]')
    insert.wait_for()
    assert page.locator('.eca-CodeAction[data-eca-code-action="replace"]').count() == 1
    assert page.locator('.eca-CodeAction[data-eca-code-action="copy"]').count() == 1
    # In the narrow side panel the three buttons are wider than the answer: they wrap, none is pushed off its row's
    # left edge (a right-aligned row that does not wrap overflows to the left, where nothing scrolls to them).
    outside = page.evaluate("""() => [...document.querySelectorAll('.eca-CodeActions')].flatMap(row => {
        const box = row.getBoundingClientRect();
        return [...row.children].filter(b => {
            const r = b.getBoundingClientRect();
            return r.left < box.left - 0.5 || r.right > box.right + 0.5;
        }).map(b => b.textContent);
    })""")
    assert outside == [], f"code actions outside their row: {outside}"
    insert.click()
    wait_until(lambda: cells(page) == ["a = 1", "print('inserted by ECA')", "b = 2"], timeout=30,
               message="one new cell below the active one")
    screenshot(page, "insert-below")
    # one undo (command mode Z: the notebook's undo) takes it back
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputPrompt").first.click()
    page.keyboard.press("z")
    wait_until(lambda: cells(page) == ["a = 1", "b = 2"], timeout=30, message="one undo to remove the cell")
    assert not page.eca_errors, page.eca_errors


def test_add_an_image_output_to_chat_sends_the_image_and_replace_cell_undoes(page, lab, llm, workspace: Path):
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    png = base64.b64encode(buffer.getvalue()).decode()
    write_notebook(workspace / "chart.ipynb",
                   f"from IPython.display import Image, display\ndisplay(Image(data={buffer.getvalue()!r}))", "x = 1")
    llm.enqueue(Reply.text("The bars are red.\n\n```python\nx = 2\n```\n"))
    open_panel(page, lab, workspace="live-image")
    open_notebook(page, "chart.ipynb")
    run_and_wait(page, 0)
    output = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(0).locator(".jp-OutputArea-child")
    output.locator("img").wait_for()
    output.first.click(button="right")
    page.locator(".lm-Menu-item", has_text="Add Output to ECA Chat").click()
    page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="chart.ipynb cell 1").wait_for()
    screenshot(page, "add-image-output-to-chat")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputPrompt").nth(1).click()  # active: cell 2
    send(page, "What is wrong with this chart?")
    page.get_by_text("The bars are red.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "input_image" in body and f"data:image/png;base64,{png}" in body  # the image part, as the API takes it

    page.locator('.eca-CodeAction[data-eca-code-action="replace"]').click()
    wait_until(lambda: cells(page)[1] == "x = 2", timeout=30, message="the active cell replaced")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").nth(1).click()
    page.keyboard.press("Control+z")
    wait_until(lambda: cells(page)[1] == "x = 1", timeout=30, message="one Ctrl+Z to restore the cell")
    assert len(cells(page)) == 2
    assert not page.eca_errors, page.eca_errors


def test_eca_widget_code_blocks_get_the_same_actions(page, lab, llm, workspace: Path):
    write_notebook(workspace / "widget_code.ipynb", "x = 1", "%load_ext eca_notebook\n%eca -n give me code")
    llm.enqueue(Reply.text("Here:\n\n```python\nprint('from the widget')\n```\n"))
    open_panel(page, lab, workspace="live-widget")
    open_notebook(page, "widget_code.ipynb")
    run_and_wait(page, 0)
    run_and_wait(page, 1)
    chat = page.locator(".eca-chat")
    insert = chat.locator('.eca-CodeAction[data-eca-code-action="insert"]')
    insert.wait_for(timeout=120_000)
    before = len(cells(page))
    insert.click()  # the click makes the %eca cell the active one: the code goes right below it
    wait_until(lambda: len(cells(page)) == before + 1, timeout=30, message="one new cell")
    assert cells(page)[2] == "print('from the widget')", cells(page)
    assert "print('from the widget')" in chat.locator("pre").first.inner_text()
    screenshot(page, "widget-code-insert")
    assert not page.eca_errors, page.eca_errors


def test_explain_an_output_from_its_context_menu(page, lab, llm, workspace: Path):
    write_notebook(workspace / "explain.ipynb", "print('\\x1b[31mtotal: 17 rows dropped\\x1b[0m')")
    llm.enqueue(Reply.text("17 rows had missing values."))
    open_panel(page, lab, workspace="live-explain")
    open_notebook(page, "explain.ipynb")
    run_and_wait(page, 0)
    output = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(0).locator(".jp-OutputArea-child")
    output.first.wait_for()
    output.first.click(button="right")
    page.locator(".lm-Menu-item", has_text="Explain with ECA").wait_for()
    assert page.locator(".lm-Menu-item:visible", has_text="Fix with ECA").count() == 0, "Fix is for errors only"
    page.locator(".lm-Menu-item", has_text="Explain with ECA").click()
    page.get_by_text("17 rows had missing values.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "Explain this output of cell 1 of explain.ipynb" in body and "total: 17 rows dropped" in body
    assert "\\u001b" not in body, "colours removed"
    assert not page.eca_errors, page.eca_errors
