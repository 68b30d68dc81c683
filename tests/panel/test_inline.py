"""Inline completion (ghost text) and "Rewrite with ECA…" in a real browser: ghost text in a notebook cell — asked
with the preceding cells and the kernel's live variables — that Tab accepts, and the same in a file editor; a
keystroke cancelling the pending request (``$/cancelRequest`` on the wire, the model's stream closed by the server);
a rewrite of a selection streamed as a diff that Accept applies as one undoable change; Stop and Reject from the
cell's context menu."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Delay, Reply, Stall, Text

from ._lab import open_panel, screenshot
from .test_notebook_tools import open_notebook, run_cell, write_notebook
from .test_panel import open_file, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INLINE_COMPLETION = True  # the lab of this module has ghost text on (conftest: off elsewhere)

TAG = "<ECA_TAG>"  # where the engine's completion prompt marks the cursor
GHOST = ".jp-GhostText"
STATS_JS = "() => window.__ecaInline && Object.assign({}, window.__ecaInline.stats)"


SOURCES_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell')].map(cell =>
    [...cell.querySelectorAll('.cm-line')].map(line => {
        const copy = line.cloneNode(true);
        copy.querySelectorAll('.jp-GhostText, .cm-widgetBuffer').forEach(node => node.remove());
        return copy.textContent.replace(/\u200b/g, '');
    }).join('\\n'))"""


def sources(page) -> list[str]:
    """The cells' text as the editors show it, line by line (empty lines included; ghost text left out)."""
    return page.evaluate(SOURCES_JS)


def cell_editor(page, index: int):
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(index).locator(".cm-content")


def type_into(editor, text: str) -> None:
    """A key at a time, each sent to the editor itself (JupyterLab may move the focus at its own pace)."""
    for char in text:
        editor.press({" ": "Space", "\n": "Enter"}.get(char, char))


def posts(llm) -> list[str]:
    return [json.dumps(r.body, ensure_ascii=False) for r in llm.requests if r.method == "POST"]


def record_frames(page) -> list[dict]:
    """Every JSON-RPC message the page sends on the ECA WebSocket (call before the page loads)."""
    sent: list[dict] = []

    def on_socket(ws) -> None:
        if "/api/eca/" in ws.url:
            ws.on("framesent", lambda payload: sent.append(json.loads(payload)) if isinstance(payload, str) else None)

    page.on("websocket", on_socket)
    return sent


def sent(page, frames: list[dict], predicate, timeout: float = 30.0) -> list[dict]:
    """The recorded frames matching `predicate`, once there is one. Playwright delivers its events only while the
    test is inside a Playwright call: wait in the page, not in time.sleep."""
    found: list[dict] = []

    def check() -> bool:
        page.wait_for_timeout(50)
        found[:] = [f for f in frames if predicate(f)]
        return bool(found)

    wait_until(check, timeout=timeout, message="a message on the ECA WebSocket")
    return found


def ghost_text(page) -> str:
    return page.evaluate(f"() => (document.querySelector('{GHOST}') || {{}}).innerText || ''")


def test_ghost_text_in_a_notebook_cell_is_asked_with_context_and_tab_accepts_it(page, lab, llm, workspace: Path):
    write_notebook(workspace / "ghost.ipynb", "prices = [3.5, 4.25, 10.0]\nlabel = 'fruit'", "")
    llm.enqueue_when(f"total = su{TAG}", Reply.text("m(prices)"))
    open_panel(page, lab, workspace="inline-notebook")
    open_notebook(page, "ghost.ipynb")
    run_cell(page, 0)
    wait_until(lambda: "[1]" in cells_prompt(page, 0), timeout=60, message="the first cell to have run")

    editor = cell_editor(page, 1)
    editor.click()
    type_into(editor, "total = s")
    # The first request starts the look at the kernel (and may not wait for it); the next one has its answer.
    wait_until(lambda: page.evaluate("() => window.__ecaInline.kernels.inspections") >= 1, timeout=60,
               message="the kernel's namespace to be inspected")
    type_into(editor, "u")
    page.locator(GHOST).wait_for(state="visible", timeout=60_000)
    wait_until(lambda: ghost_text(page) == "m(prices)", message="the ghost text")
    screenshot(page, "inline-ghost-text")
    [asked] = [body for body in posts(llm) if f"total = su{TAG}" in body]
    assert "prices = [3.5, 4.25, 10.0]" in asked, "the preceding cell is in the request"
    assert "# prices: list len 3" in asked and "# label: str len 5" in asked, "so are the kernel's variables"
    assert "'fruit'" not in asked.split("Live variables")[-1].split("Earlier cells")[0], "a string's value is not"

    editor.press("Tab")
    wait_until(lambda: sources(page)[1] == "total = sum(prices)", message="Tab to accept the suggestion")
    assert page.locator(GHOST).count() == 0
    stats = page.evaluate(STATS_JS)
    assert stats["suggested"] >= 1 and stats["requests"] >= 1, stats
    assert page.eca_errors == []


def cells_prompt(page, index: int) -> str:
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(index)
    return cell.locator(".jp-InputPrompt").inner_text()


def test_ghost_text_in_a_file_editor(page, lab, llm, workspace: Path):
    (workspace / "geometry.py").write_text("import math\n\n\ndef area(r):\n    return \n")
    asks = f"circumference(r):\\n    return 2 * {TAG}"
    llm.enqueue_when(asks, Reply.text("math.pi * r"))
    open_panel(page, lab, workspace="inline-file")
    open_file(page, "geometry.py")
    editor = page.locator(".jp-FileEditor .cm-content").first
    editor.wait_for()
    editor.click()
    editor.press("Control+End")
    type_into(editor, "\ndef circumference(r):\n")
    type_into(editor, "return 2 * ")
    page.locator(GHOST).wait_for(state="visible", timeout=60_000)
    wait_until(lambda: ghost_text(page) == "math.pi * r", message="the ghost text")
    editor.press("Tab")
    wait_until(lambda: "return 2 * math.pi * r" in editor.inner_text(), message="Tab to accept the suggestion")
    # (a loaded machine may let JupyterLab's debounce ask twice at this position: each one names the file)
    asked = [body for body in posts(llm) if asks in body]
    assert asked and all("geometry.py" in body for body in asked), "the file's path is sent"


def test_ghost_text_after_enter_under_a_def_line_and_before_a_closed_bracket(page, lab, llm, workspace: Path):
    """JupyterLab asks by itself only after a keystroke that leaves code left of the cursor: Enter after
    ``def …:`` used to get nothing (issue #30). Now the new line asks, and so does ``print(|)``, the end of a line
    where JupyterLab closed the bracket."""
    write_notebook(workspace / "enter.ipynb", "", "")
    # (the new line's indentation is CodeMirror's: matched loosely, the request's text is checked below)
    llm.enqueue_when("fahrenheit_to_celsius(f):\\n", Reply.text("return (f - 32) * 5 / 9"))
    llm.enqueue_when(f"print(f{TAG})", Reply.text("ahrenheit_to_celsius(212)"))
    frames = record_frames(page)
    open_panel(page, lab, workspace="inline-enter")
    open_notebook(page, "enter.ipynb")
    editor = cell_editor(page, 0)
    editor.click()
    type_into(editor, "def fahrenheit_to_celsius(f):\n")
    page.locator(GHOST).wait_for(state="visible", timeout=60_000)
    wait_until(lambda: ghost_text(page).strip() == "return (f - 32) * 5 / 9", message="the ghost text on the new line")
    [request] = sent(page, frames, lambda f: f.get("method") == "completion/inline"
                     and f["params"]["docText"].startswith("def fahrenheit_to_celsius(f):\n"))
    assert request["params"]["docText"].strip(" ") == "def fahrenheit_to_celsius(f):\n", request
    assert request["params"]["position"]["line"] == 2
    editor.press("Tab")
    # indented into the def's body, whether or not the editor indented the new line (after `(f):` it does not)
    wait_until(lambda: sources(page)[0] == "def fahrenheit_to_celsius(f):\n    return (f - 32) * 5 / 9",
               message="Tab to accept it")

    editor = cell_editor(page, 1)
    editor.click()
    type_into(editor, "print()")  # as with JupyterLab's auto-closed brackets on: the cursor before the ")"
    editor.press("ArrowLeft")
    type_into(editor, "f")
    wait_until(lambda: ghost_text(page) == "ahrenheit_to_celsius(212)", timeout=60, message="the ghost text in print()")
    assert page.eca_errors == []


def test_typing_cancels_the_pending_request(page, lab, llm, workspace: Path):
    write_notebook(workspace / "cancel.ipynb", "")
    llm.enqueue_when(f"value = 4{TAG}", Reply([Stall(60), Text("2")]))
    frames = record_frames(page)
    open_panel(page, lab, workspace="inline-cancel")
    open_notebook(page, "cancel.ipynb")
    editor = cell_editor(page, 0)
    editor.click()
    type_into(editor, "value = 4")
    wait_until(lambda: any(f"value = 4{TAG}" in body for body in posts(llm)), timeout=60,
               message="the model to be asked (and stall)")
    [request] = sent(page, frames, lambda f: f.get("method") == "completion/inline"
                     and f["params"]["docText"] == "value = 4")
    assert request["params"]["position"] == {"line": 1, "character": 10}, "1-based line and character"

    # a keystroke: the pending request is cancelled (the new line's own request finds nothing here)
    llm.enqueue_when(f"value = 4\\n{TAG}", Reply.text(""))
    editor.press("Enter")

    sent(page, frames, lambda f: f.get("method") == "$/cancelRequest" and f["params"] == {"id": request["id"]})
    assert llm.wait_for_disconnect(timeout=30), "the server closed the model's stream when the request was cancelled"
    stats = page.evaluate(STATS_JS)
    assert stats["cancelled"] >= 1 and stats["suggested"] == 0, stats
    assert page.locator(GHOST).count() == 0
    assert sources(page)[0].startswith("value = 4")


def select_line(editor, line: int) -> None:
    """Select line `line` (1-based) of a CodeMirror editor with the keyboard, as a user would: from its very start
    (Home would stop at the indentation), to its end."""
    editor.press("Control+Home")
    for _ in range(line - 1):
        editor.press("ArrowDown")
    editor.press("Shift+End")


def test_rewrite_of_a_selection_shows_a_diff_and_accept_applies_it(page, lab, llm, workspace: Path):
    source = "import math\n\ndef area(r):\n    return 3.14 * r * r\n\nprint(area(2))"
    write_notebook(workspace / "rewrite.ipynb", source)
    llm.enqueue_when("use math.pi and a power", Reply([Text("    return math.pi"), Delay(0.4), Text(" * r ** 2")]))
    frames = record_frames(page)
    open_panel(page, lab, workspace="rewrite-selection")
    open_notebook(page, "rewrite.ipynb")
    editor = cell_editor(page, 0)
    editor.click()
    select_line(editor, 4)
    editor.press("Control+k")

    dialog = page.locator(".eca-RewriteDialog")
    dialog.wait_for()
    assert "Selection in rewrite.ipynb · cell 1" in dialog.inner_text()
    box = dialog.locator(".eca-RewriteDialog-input")
    box.fill("use math.pi and a power")
    box.press("Enter")

    page.locator('.eca-RewriteDialog[data-phase="done"]').wait_for(timeout=60_000)
    diff = dialog.locator(".eca-Diff-body").inner_text()
    assert "-    return 3.14 * r * r" in diff and "+    return math.pi * r ** 2" in diff, diff
    screenshot(page, "rewrite-diff")
    [prompt] = sent(page, frames, lambda f: f.get("method") == "rewrite/prompt")
    assert prompt["params"]["text"] == "    return 3.14 * r * r"
    assert prompt["params"]["prompt"] == "use math.pi and a power"
    assert prompt["params"]["path"] == "rewrite.ipynb#cell-1"
    assert prompt["params"]["range"] == {"start": {"line": 4, "character": 1}, "end": {"line": 4, "character": 24}}
    assert any("use math.pi and a power" in body and "3.14 * r * r" in body for body in posts(llm))

    dialog.locator(".eca-rewrite-accept").click()
    dialog.wait_for(state="detached")
    expected = source.replace("3.14 * r * r", "math.pi * r ** 2")
    wait_until(lambda: sources(page)[0] == expected, message="the rewrite to be applied")
    editor.press("Control+z")  # one undoable change
    wait_until(lambda: sources(page)[0] == source, message="one Ctrl+Z to undo the whole rewrite")
    assert page.eca_errors == []


def test_rewrite_of_a_cell_from_the_context_menu_can_be_stopped_and_rejected(page, lab, llm, workspace: Path):
    source = "for i in range(len(xs)):\n    print(xs[i])"
    write_notebook(workspace / "stop.ipynb", "xs = [1, 2]", source)
    llm.enqueue_when("iterate directly", Reply([Text("for x in xs:"), Stall(60), Text("\n    print(x)")]))
    frames = record_frames(page)
    open_panel(page, lab, workspace="rewrite-stop")
    open_notebook(page, "stop.ipynb")
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(1)
    cell.locator(".jp-InputPrompt").click()  # command mode: the whole cell
    cell.locator(".jp-InputPrompt").click(button="right")
    page.locator(".lm-Menu-item", has_text="Rewrite with ECA…").click()

    dialog = page.locator(".eca-RewriteDialog")
    dialog.wait_for()
    assert "Cell: stop.ipynb · cell 2" in dialog.inner_text()
    dialog.locator(".eca-RewriteDialog-input").fill("iterate directly")
    dialog.locator(".eca-rewrite-submit").click()
    wait_until(lambda: "+for x in xs:" in dialog.locator(".eca-Diff-body").inner_text(), timeout=60,
               message="the first streamed line in the diff")
    screenshot(page, "rewrite-streaming")
    dialog.locator(".eca-rewrite-stop").click()

    page.locator('.eca-RewriteDialog[data-phase="done"]').wait_for(timeout=60_000)
    [prompt] = sent(page, frames, lambda f: f.get("method") == "rewrite/prompt")
    assert prompt["params"]["text"] == source
    sent(page, frames, lambda f: f.get("method") == "rewrite/stop" and f["params"] == {"id": prompt["params"]["id"]})
    assert llm.wait_for_disconnect(timeout=30), "stopping ended the model's stream"
    assert "Stopped" in dialog.inner_text()

    page.keyboard.press("Escape")  # the focus stayed in the dialog: Escape rejects
    dialog.wait_for(state="detached")
    assert sources(page)[1] == source, "Reject leaves the cell alone"
    assert page.eca_errors == []


def test_rewrite_of_a_whole_file_from_the_file_editor_context_menu(page, lab, llm, workspace: Path):
    (workspace / "names.py").write_text("names = []\nfor n in people:\n    names.append(n.upper())\n")
    # the instruction picks the reply: clicking into the editor may ask for ghost text first (CI saw that request
    # take a FIFO reply, and the rewrite failed with "no scripted reply queued")
    llm.enqueue_when("a list comprehension", Reply([Text("```python\nnames = [n.upper() for n in people]\n```")]))
    frames = record_frames(page)
    open_panel(page, lab, workspace="rewrite-file")
    open_file(page, "names.py")
    editor = page.locator(".jp-FileEditor .cm-content").first
    editor.wait_for()
    editor.click()
    editor.click(button="right")
    page.locator(".lm-Menu-item", has_text="Rewrite with ECA…").click()

    dialog = page.locator(".eca-RewriteDialog")
    dialog.wait_for()
    assert "File: names.py" in dialog.inner_text()
    box = dialog.locator(".eca-RewriteDialog-input")
    box.fill("a list comprehension")
    box.press("Enter")
    page.locator('.eca-RewriteDialog[data-phase="done"]').wait_for(timeout=60_000)
    diff = dialog.locator(".eca-Diff-body").inner_text()
    assert "+names = [n.upper() for n in people]" in diff and "```" not in diff, "the fences were replaced away"
    [prompt] = sent(page, frames, lambda f: f.get("method") == "rewrite/prompt")
    assert prompt["params"]["path"] == "names.py"
    assert prompt["params"]["text"] == "names = []\nfor n in people:\n    names.append(n.upper())\n"

    dialog.locator(".eca-rewrite-accept").press("Enter")  # Accept has the focus once the rewrite is over
    dialog.wait_for(state="detached")
    lines = "() => [...document.querySelectorAll('.jp-FileEditor .cm-line')].map(line => line.textContent)"
    wait_until(lambda: page.evaluate(lines) == ["names = [n.upper() for n in people]", ""],
               message="the whole file to be rewritten, its final newline kept")
    assert page.eca_errors == []
