"""The notebook as the agent's workspace, in a real browser: the panel reads an open notebook, runs its cells, edits
one as a per-cell diff the user approves — applied to the open document (no reload, no "file changed" dialog),
undone from the tool card or with Ctrl+Z — refuses a stale diff, inserts where asked; and a ``%eca`` in the
notebook reaches the same page over the ``eca-notebook`` comm."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import completion_bodies, open_file, send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CELLS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')]
    .map(cell => (cell.querySelector('.cm-content') || {}).innerText || '')"""
OUTPUTS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')]
    .map(cell => (cell.querySelector('.jp-OutputArea') || {}).innerText || '')"""


def write_notebook(path: Path, *sources: str, ids: list[str] | None = None) -> list[str]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    for cell, cell_id in zip(nb.cells, ids or [], strict=False):
        cell.id = cell_id
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return [c.id for c in nb.cells]


def cells(page) -> list[str]:
    return [text.replace("\u200b", "").rstrip("\n") for text in page.evaluate(CELLS_JS)]


def open_notebook(page, name: str) -> None:
    """Open it from the file browser and wait until its kernel is idle (runs must not race the kernel's start)."""
    open_file(page, name)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").first.wait_for()
    wait_until(lambda: kernel_ready(page), timeout=120, message="the notebook's kernel to be idle")


#: The notebook's kernel is there, connected and idle. Not the toolbar's indicator alone: it says idle from the
#: start, before JupyterLab has a kernel (the status bar then reads "No Kernel | Initializing"), and a cell run then
#: does nothing — a first Shift+Enter or Run All was lost that way, and waited out a retry.
KERNEL_READY_JS = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    const status = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
    const kernel = [...document.querySelectorAll('#jp-main-statusbar .jp-StatusBar-TextItem')]
        .map(item => item.textContent.trim()).find(text => / \\| [A-Z][a-z]+$/.test(text));
    return Boolean(status && status.getAttribute('data-status') === 'idle' && kernel
                   && !kernel.startsWith('No Kernel') && kernel.endsWith(' | Idle'));
}"""


def kernel_ready(page) -> bool:
    return bool(page.evaluate(KERNEL_READY_JS))


def run_cell(page, index: int) -> None:
    """Select cell `index` (command mode, by its prompt) and press Shift+Enter; again if the key went elsewhere
    (JupyterLab moving the focus at its own pace, or its kernel dialog taking it) — until the cell shows it ran or is
    running."""
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    for _attempt in range(5):
        wait_until(lambda: accept_kernel_dialog(page), timeout=60, message="no dialog over the notebook")
        try:
            prompt.click(timeout=20_000)
        except PlaywrightTimeout:
            continue  # a dialog opened in between: dismissed on the next round
        page.keyboard.press("Shift+Enter")
        try:
            wait_until(lambda: any(ch.isdigit() or ch == "*" for ch in prompt.inner_text()), timeout=10,
                       message=f"cell {index} to run")
            return
        except AssertionError:
            continue
    raise AssertionError(f"cell {index} never ran")


def accept_kernel_dialog(page) -> bool:
    """True when no dialog covers the page. A kernel still starting on a busy machine makes JupyterLab ask which
    kernel to use (even after the notebook looked idle): a user picks the default. Any other dialog is a failure,
    named by its text."""
    dialog = page.locator(".jp-Dialog")
    if not dialog.count():
        return True
    text = dialog.first.inner_text()
    if "Select Kernel" in text or "kernel" in text.lower():
        button = dialog.first.locator(".jp-mod-accept")
        if button.count():
            button.first.click()
        return False
    raise AssertionError(f"an unexpected dialog covers the notebook: {text!r}")


def card(page, call_id: str):
    return page.locator(f'.eca-ToolCard[data-tool-call-id="{call_id}"]')


def approve(page, call_id: str) -> None:
    page.locator(f'.eca-ToolCard[data-tool-call-id="{call_id}"][data-tool-state="waiting"]').wait_for()
    card(page, call_id).locator(".eca-approve").click()


def no_dialog(page) -> bool:
    return page.locator(".jp-Dialog").count() == 0


def test_fix_a_notebook_from_the_panel_then_undo(page, lab, llm, workspace: Path):
    path = workspace / "analysis.ipynb"
    ids = write_notebook(path, 'sales = {"north": 120, "south": 80, "east": 50}',
                         "total = sum(sales.values())\nprint(total)",
                         'share = {region: sales[region] / sales["west"] for region in sales}\nprint(share)')
    on_disk = path.read_text()
    fixed = "share = {region: round(sales[region] / total, 2) for region in sales}\nprint(share)"
    nb = {"path": "analysis.ipynb"}
    llm.enqueue(
        Reply([ToolCall("read-1", "eca__notebook_read", json.dumps(nb))]),
        Reply([ToolCall("run-1", "eca__notebook_run_cells", json.dumps({**nb, "cell_ids": ids}))]),
        Reply([Text("Cell 3 divides by a missing key."),
               ToolCall("edit-1", "eca__notebook_edit_cell", json.dumps({**nb, "cell_id": ids[2], "source": fixed}))]),
        Reply([ToolCall("run-2", "eca__notebook_run_cells", json.dumps({**nb, "cell_ids": ids}))]),
        Reply([Text("Fixed: it runs top to bottom now.")]),
    )
    open_panel(page, lab, workspace="fix-notebook")
    open_notebook(page, "analysis.ipynb")
    send(page, "Make analysis.ipynb run top to bottom")

    page.locator('.eca-ToolCard[data-tool-call-id="read-1"][data-tool-state="done"]').wait_for()
    approve(page, "run-1")
    page.locator('.eca-ToolCard[data-tool-call-id="run-1"][data-tool-state="failed"]').wait_for()
    assert "KeyError" in page.evaluate(OUTPUTS_JS)[2]  # the run happened in the open notebook, outputs and all

    edit = card(page, "edit-1")
    page.locator('.eca-ToolCard[data-tool-call-id="edit-1"][data-tool-state="waiting"]').wait_for()
    diff = edit.locator(".eca-Diff-body").inner_text()
    assert '-share = {region: sales[region] / sales["west"] for region in sales}' in diff
    assert "+share = {region: round(sales[region] / total, 2) for region in sales}" in diff
    assert f"cell {ids[2]}" in edit.locator(".eca-Diff-title").inner_text()
    screenshot(page, "nb-01-cell-diff-waiting")
    assert cells(page)[2].startswith("share = {region: sales[region] /"), "nothing changes before approval"
    edit.locator(".eca-approve").click()
    wait_until(lambda: cells(page)[2] == fixed, timeout=60, message="the approved edit in the open notebook")
    approve(page, "run-2")
    page.locator('.eca-ToolCard[data-tool-call-id="run-2"][data-tool-state="done"]').wait_for()
    wait_until(lambda: "0.48" in page.evaluate(OUTPUTS_JS)[2], message="the re-run's output")
    page.get_by_text("Fixed: it runs top to bottom now.").wait_for()
    assert no_dialog(page), "no 'file changed on disk' dialog"
    assert path.read_text() == on_disk, "the open document changed, not the file behind JupyterLab's back"
    bodies = completion_bodies(llm)
    assert "KeyError: 'west'" in bodies[2], "the model received the run's error"
    assert "written by" not in bodies[1]
    screenshot(page, "nb-02-fixed")

    edit.locator(".eca-undo").click()
    page.locator('.eca-ToolCard.eca-mod-undone[data-tool-call-id="edit-1"]').wait_for()
    wait_until(lambda: cells(page)[2].startswith("share = {region: sales[region] / sales"), timeout=60,
               message="Undo on the tool card to restore the cell")
    assert edit.locator(".eca-undo").count() == 0
    screenshot(page, "nb-03-undone")
    assert not page.eca_errors, page.eca_errors


def test_stale_diff_insert_where_asked_and_ctrl_z(page, lab, llm, workspace: Path):
    path = workspace / "steps.ipynb"
    ids = write_notebook(path, "a = 1", "b = 2")
    llm.enqueue(
        Reply([ToolCall("edit-1", "eca__notebook_edit_cell",
                        json.dumps({"path": "steps.ipynb", "cell_id": ids[1], "source": "b = 3"}))]),
        Reply([Text("The cell changed meanwhile; I left it.")]),
    )
    open_panel(page, lab, workspace="stale")
    open_notebook(page, "steps.ipynb")
    send(page, "Set b to 3 in steps.ipynb")
    page.locator('.eca-ToolCard[data-tool-call-id="edit-1"][data-tool-state="waiting"]').wait_for()
    # the user edits that cell while the diff waits
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").nth(1)
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    wait_until(lambda: cells(page)[1] == "b = 2  # mine", message="the user's typing")
    card(page, "edit-1").locator(".eca-approve").click()
    page.locator('.eca-ToolCard[data-tool-call-id="edit-1"][data-tool-state="failed"]').wait_for()
    card(page, "edit-1").locator(".eca-ToolCard-output summary").wait_for()
    assert "changed since the diff was made" in card(page, "edit-1").locator(".eca-ToolCard-output pre").inner_text()
    page.get_by_text("The cell changed meanwhile").wait_for()
    assert cells(page)[1] == "b = 2  # mine", "a stale diff never overwrites the user's text"
    assert "b = 2  # mine" in completion_bodies(llm)[-1], "the model sees the cell as it is now"

    llm.clear()
    llm.enqueue(
        Reply([ToolCall("ins-1", "eca__notebook_insert_cell",
                        json.dumps({"path": "steps.ipynb", "after_cell_id": ids[0], "source": "c = a + 1"}))]),
        Reply([ToolCall("edit-2", "eca__notebook_edit_cell",
                        json.dumps({"path": "steps.ipynb", "cell_id": ids[0], "source": "a = 10"}))]),
        Reply([Text("Inserted and edited.")]),
    )
    send(page, "Add c after the first cell, and set a to 10")
    approve(page, "ins-1")
    wait_until(lambda: cells(page) == ["a = 1", "c = a + 1", "b = 2  # mine"], timeout=60,
               message="the new cell right after the first")
    approve(page, "edit-2")
    wait_until(lambda: cells(page)[0] == "a = 10", timeout=60, message="the edit of the first cell")
    page.get_by_text("Inserted and edited.").wait_for()
    screenshot(page, "nb-04-inserted-and-edited")

    # Ctrl+Z in the edited cell's editor undoes the assistant's edit, like the user's own typing
    first = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").first
    first.click()
    page.keyboard.press("Control+z")
    wait_until(lambda: cells(page)[0] == "a = 1", timeout=30, message="Ctrl+Z to undo the assistant's edit")
    assert no_dialog(page)
    assert not page.eca_errors, page.eca_errors


def test_eca_in_the_notebook_reaches_its_page(page, lab, llm, workspace: Path):
    path = workspace / "magic.ipynb"
    write_notebook(path, "x = 41", "%load_ext eca_notebook\n%eca -n print x in a new cell after the first one",
                   ids=["first", "ask"])
    llm.enqueue(
        Reply([ToolCall("ins-1", "eca__notebook_insert_cell",
                        json.dumps({"after_cell_id": "first", "source": "print(x + 1)"}))]),
        Reply([Text("Added a cell that prints it.")]),
    )
    open_panel(page, lab, workspace="in-kernel")
    open_notebook(page, "magic.ipynb")
    for index in (0, 1):  # select each cell and Shift+Enter, as a user would
        run_cell(page, index)
    widget_card = page.locator(".eca-card", has_text="notebook_insert_cell")

    def card_or_kernel_dialog() -> bool:
        # a kernel still starting makes JupyterLab ask which kernel to use: a user picks the default
        dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count():
            dialog.locator(".jp-mod-accept").click()
        return widget_card.count() > 0

    wait_until(card_or_kernel_dialog, timeout=90, message="the %eca widget's tool card")
    # the card appears as the call is prepared; its diff comes with the approval request (later on a busy machine)
    wait_until(lambda: "+print(x + 1)" in widget_card.inner_text(), timeout=90, message="the card's diff")
    widget_card.locator("button", has_text="Approve").first.click()  # (then "Approve for session")
    wait_until(lambda: cells(page)[:2] == ["x = 41", "print(x + 1)"], timeout=120,
               message="the %eca's cell at the position asked, through the page")
    page.get_by_text("Added a cell that prints it.").wait_for()
    widget_card.get_by_text("Output", exact=True).click()
    wait_until(lambda: "applied to the notebook open in JupyterLab" in widget_card.inner_text(),
               message="the result saying which path was used")
    assert "print(x + 1)" not in path.read_text(), "applied to the open document, not the file"
    screenshot(page, "nb-05-eca-magic")
    widget_card.locator(".eca-undo").click()
    wait_until(lambda: "print(x + 1)" not in cells(page), timeout=60, message="Undo on the widget's card")
    assert cells(page)[0] == "x = 41"
    assert not page.eca_errors, page.eca_errors


def test_stop_interrupts_a_running_cell(page, lab, llm, workspace: Path):
    path = workspace / "slow.ipynb"
    ids = write_notebook(path, "import time", "time.sleep(600)\nprint('never')")
    llm.enqueue(Reply([ToolCall("run-1", "eca__notebook_run_cells",
                                json.dumps({"path": "slow.ipynb", "cell_ids": ids}))]))
    open_panel(page, lab, workspace="stop-run")
    open_notebook(page, "slow.ipynb")
    send(page, "Run slow.ipynb")
    approve(page, "run-1")
    page.locator('.eca-ToolCard[data-tool-call-id="run-1"][data-tool-state="running"]').wait_for()
    wait_until(lambda: "*" in page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-InputPrompt")
               .nth(1).inner_text(), message="the slow cell to be running")
    page.locator(".eca-stop").click()
    page.locator('.eca-ToolCard[data-tool-call-id="run-1"][data-tool-state="failed"]').wait_for()
    wait_until(lambda: "KeyboardInterrupt" in page.evaluate(OUTPUTS_JS)[1], timeout=60,
               message="Stop to interrupt the kernel")
    page.locator(".eca-send").wait_for()  # the chat is idle again
    assert not page.eca_errors, page.eca_errors
