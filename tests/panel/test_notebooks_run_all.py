"""Every shipped notebook (``notebooks/*.ipynb``) runs with Run All in a real JupyterLab, as a user runs it after
``make lab`` — not only headless under nbclient (``tests/notebooks``), where ``%eca`` waits for its answer.

In JupyterLab ``%eca`` returns at once and its answer streams into a widget, so a cell that reads what the answer
did (the scripted model's request log, a variable the model created, a file it changed) runs while the answer is
still on its way unless the tutorial waits for it (``%eca -w``). Run All is started from the Run menu; the test then
waits until the kernel is idle with every code cell numbered, saves the notebook, and asserts that no cell failed
(besides those tagged ``raises-exception``), no ``%eca`` answer is still running, and the outputs each tutorial
promises are on the page.

One lab for the module (its root a copy of ``notebooks/``, so the tutorials' files stay out of the repository); each
notebook gets a fresh kernel, shut down after its test.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import urllib.request
from pathlib import Path

import nbformat
import pytest

from ._lab import ARTIFACTS, ROOT, Lab, screenshot
from .test_notebook_tools import accept_kernel_dialog, kernel_ready
from .test_panel import open_file, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
#: each notebook gets a fresh kernel in the lab and leaves nothing behind: a parallel run may spread them over workers
SPREAD_OVER_WORKERS = True

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

#: What each tutorial shows once Run All is over, as text on the page (cell outputs, widgets included).
EXPECTED: dict[str, list[str]] = {
    "01-engine-tour.ipynb": ["def add(a, b):", "reasonStarted", "status='prompting'"],
    "02-quickstart.ipynb": ["A list comprehension builds a list", "Sorted descending", "type: list",
                            "def median(values):", "Started a new chat", "Selected model: demo/model", "Subcommands:"],
    "03-tools-and-approvals.ipynb": ["defines greet(name)", 'return f"Hello, {name}!"', "91.33"],
    "04-batch-prompts.ipynb": ["What is the total amount?", "summary.md written: False", "peak in flight: 2",
                               "Yes: same engine, same protocol."],
    "05-data-analysis.ipynb": ["north sells the most", "shape: (8, 3) (rows, columns)", "north    120  140      20",
                               "The column is called sales", "raised the exception below"],
    "06-configuring-a-provider.ipynb": ["llamacpp/qwen3", "I am qwen3", "/v1/chat/completions model: qwen3",
                                        "Answered by big-model", "the key was sent: True"],
    "07-fix-a-notebook.ipynb": ["[error] KeyError: 'west'", "outputs: {'north': 0.48, 'south': 0.32, 'east': 0.2}",
                                "written by: notebook_edit_cell in tool call edit-1", "back as it was"],
    "08-batch-at-scale.ipynb": ["sent to the model this run: 2 — resumed from the store: 2",
                                "first rounds sent: ['ann', 'bo', 'cy', 'dee']"],
    "09-plots-and-vision.ipynb": ["zig-zags back and forth", "image part: data:image/png;base64,",
                                  "text part: What is wrong with this chart? @fig"],
}

STATE_JS = f"""() => {{
    const panel = document.querySelector('{PANEL}');
    if (!panel) return null;
    const status = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
    return {{status: status && status.getAttribute('data-status'), prompts}};
}}"""
#: the text of every output area (textContent: JupyterLab may skip rendering cells scrolled out of view)
OUTPUTS_JS = f"""() => [...document.querySelectorAll('{PANEL} .jp-Cell')]
    .map(cell => (cell.querySelector('.jp-OutputArea') || {{}}).textContent || '')"""
#: %eca widgets still running: their Stop button is shown until the answer is over
RUNNING_JS = f"""() => [...document.querySelectorAll('{PANEL} .eca-chat button')]
    .filter(b => b.textContent.trim() === 'Stop' && getComputedStyle(b).display !== 'none').length"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of notebooks/ (with its data): the lab's root, as `make lab` opens notebooks/."""
    root = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(ROOT / "notebooks", root, dirs_exist_ok=True)
    return root


def shut_down_kernels(lab: Lab) -> None:
    """End every kernel of the lab (each notebook gets a fresh one), through Jupyter's REST API."""
    with urllib.request.urlopen(lab.url("api/kernels"), timeout=30) as response:
        kernels = json.load(response)
    for kernel in kernels:
        request = urllib.request.Request(lab.url(f"api/kernels/{kernel['id']}"), method="DELETE")
        urllib.request.urlopen(request, timeout=60).close()


def kernel_idle(page, code_cells: int = 0) -> bool:
    state = page.evaluate(STATE_JS)
    return bool(state and kernel_ready(page) and len(state["prompts"]) >= code_cells)


def run_all(page, code_cells: int = 0) -> None:
    """Run ▸ Run All Cells, from the menu bar, as a user would — once the kernel is up and every one of the
    notebook's `code_cells` is on the page (a kernel still starting on a busy machine makes JupyterLab ask which
    kernel to use: a user picks the default). A Run All before JupyterLab has the kernel runs nothing — the toolbar
    already says idle then (see ``kernel_ready``) — and cost a 30-second wait before the second try in most first
    runs."""
    first = page.locator(f"{PANEL} .jp-CodeCell .jp-InputPrompt").first
    for _attempt in range(3):
        wait_until(lambda: accept_kernel_dialog(page) and kernel_idle(page, code_cells), timeout=180, interval=0.5,
                   message="the notebook's kernel to be idle")
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            wait_until(lambda: first.text_content().strip() != "[ ]:", timeout=30, message="the first cell to run")
            return
        except AssertionError:
            continue
    raise AssertionError("Run All ran nothing")


def finished(page) -> bool:
    """Run All is over: the kernel is idle, no cell waits to run (`[*]`) and no answer is still streaming. (A cell
    that fails stops Run All: the cells after it keep `[ ]`, which the test reports.)"""
    accept_kernel_dialog(page)
    state = page.evaluate(STATE_JS)
    return bool(state and state["status"] == "idle" and state["prompts"]
                and not any("*" in p for p in state["prompts"]) and page.evaluate(RUNNING_JS) == 0)


def save(page, path: Path) -> nbformat.NotebookNode:
    """Save the notebook (Ctrl+S) and read what JupyterLab wrote (once it is all written)."""
    before = path.stat().st_mtime_ns
    page.locator(f"{PANEL} .jp-Notebook").click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    saved: list[nbformat.NotebookNode] = []

    def written() -> bool:
        if path.stat().st_mtime_ns == before:
            return False
        try:
            saved[:] = [nbformat.read(path, as_version=4)]
        except Exception:  # noqa: BLE001 - still being written
            return False
        return True

    wait_until(written, timeout=60, interval=0.2, message="the notebook to be saved")
    return saved[0]


def restart_and_run_all(page) -> None:
    """Kernel ▸ Restart Kernel and Run All Cells…, confirmed (the dialog is accepted by `finished`)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Kernel$")).click()
    page.get_by_role("menuitem", name=re.compile(r"^Restart Kernel and Run All Cells")).click()


def run_all_and_check(page, workspace: Path, path: Path) -> str:
    """Open the notebook `path` (a copy of it in the lab's root `workspace`) in the current page, Run All, wait until
    it is over and assert that it went through; the text of its outputs."""
    open_file(page, path.name)
    page.locator(f"{PANEL} .jp-Cell").first.wait_for()  # (attached: a tutorial's first cells may be collapsed)
    cells = nbformat.read(path, as_version=4).cells
    code_cells = sum(c.cell_type == "code" for c in cells)
    # opened and connected to its kernel, a tutorial has no unsaved changes yet: its metadata is what JupyterLab
    # and the kernel write (the walk saw both tabs marked changed before anything ran, "Python 3" rewritten)
    wait_until(lambda: accept_kernel_dialog(page) and kernel_idle(page, code_cells), timeout=180, interval=0.5,
               message="the notebook's kernel to be idle")
    # (the kernel writes its Python's version: a machine with another Python than the notebooks were saved with
    # gets a changed notebook, rightly)
    if nbformat.read(path, as_version=4).metadata.get("language_info", {}).get("version") == platform.python_version():
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current")
        assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), f"{path.name} opens with unsaved changes"
    run_all(page, code_cells)
    shipped = {c.id for c in cells}  # (`%eca -o code` adds a cell, not run)
    for attempt in range(2):
        wait_until(lambda: finished(page), timeout=600, interval=0.5, message=f"Run All of {path.name} to finish")
        nb = save(page, workspace / path.name)
        stopped = any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
        if stopped or attempt or all(c.execution_count for c in nb.cells if c.cell_type == "code" and c.id in shipped):
            break
        # Run All ended early with no error: JupyterLab's kernel dialog (a kernel slow to start on a busy
        # machine) took the kernel away in the middle; a user would restart and run all again
        restart_and_run_all(page)
    screenshot(page, f"run-all-{path.stem}")
    text = "\n".join(page.evaluate(OUTPUTS_JS))
    failed = [(i, "".join(o.get("traceback", []))[-2000:]) for i, cell in enumerate(nb.cells)
              if "raises-exception" not in cell.get("metadata", {}).get("tags", [])
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not failed, f"{path.name}: cells failed under Run All: {failed}"
    # a traceback printed to stderr (e.g. a %eca turn that failed in the background) is a failure too
    printed = [(i, o["text"][-2000:]) for i, cell in enumerate(nb.cells) for o in cell.get("outputs", [])
               if o.get("name") == "stderr" and "Traceback" in o.get("text", "")]
    assert not printed, f"{path.name}: tracebacks printed under Run All: {printed}"
    unrun = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.id in shipped and not c.execution_count]
    assert not unrun, f"{path.name}: cells Run All never ran: {unrun}"
    return text


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_run_all_in_jupyterlab(page, lab: Lab, workspace: Path, path: Path):
    try:
        page.goto(lab.page_url(f"lab/workspaces/run-all-{path.stem}") + "&reset", wait_until="domcontentloaded")
        page.locator(".jp-DirListing-item").first.wait_for()
        text = run_all_and_check(page, workspace, path)
        missing = [expected for expected in EXPECTED.get(path.name, []) if expected not in text]
        assert not missing, f"{path.name}: not on the page after Run All: {missing}"
        assert not page.eca_errors, page.eca_errors
    finally:
        try:  # what the page showed, to read after a failure
            (ARTIFACTS / f"run-all-{path.stem}.txt").write_text("\n".join(page.evaluate(OUTPUTS_JS)))
        finally:
            shut_down_kernels(lab)
