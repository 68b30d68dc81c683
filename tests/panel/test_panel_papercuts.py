"""The panel's papercuts a newcomer met (issue #30 item 5), in a real browser against a real ``jupyter lab`` with the
scripted LLM server: Enter while an answer runs queues the message (shown, removable, sent when the turn ends); the
model picker shows readable names; after a reload the chat that was open is open again; the attached cell is the
one last run, with its error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.providers.local import MODEL_ID
from eca_notebook.testing.llm_server import Reply, Stall, Text, ToolCall

from ._lab import DEFAULT_MODEL, Lab, lab_env, open_panel, screenshot
from .test_panel import COMPOSER, completion_bodies, send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm):
    """The usual lab, with the embedded model offered too (its long id in the picker; it is never asked)."""
    from .conftest import _require_browser

    _require_browser()
    config = {"defaultModel": DEFAULT_MODEL}
    server = Lab(root=workspace, env=lab_env(lab_home, llm.url, ECA_CONFIG=json.dumps(config)))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_enter_while_an_answer_runs_queues_the_message_until_the_turn_ends(page, lab, llm, workspace: Path):
    (workspace / "queue.py").write_text("print('hi')\n")
    edit = {"path": "queue.py", "original_content": "print('hi')", "new_content": "print('hello')"}
    # the first turn waits for the tool call's approval: the answer is running for as long as the test needs
    llm.enqueue(Reply([Text("Fixing it."), ToolCall("call_q", "eca__edit_file", json.dumps(edit))]),
                Reply.text("Fixed queue.py."), Reply.text("Docstring added."))
    open_panel(page, lab, workspace="queue")
    send(page, "Please fix queue.py")
    card = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    card.wait_for()

    box = page.locator(COMPOSER)
    for text in ("Then add a docstring", "never mind this one"):
        box.fill(text)
        box.press("Enter")
        wait_until(lambda: box.input_value() == "", message=f"Enter to take {text!r}")
    queued = page.locator(".eca-Queued-item")
    wait_until(lambda: queued.count() == 2, message="both messages shown as queued")
    assert "Then add a docstring" in queued.nth(0).inner_text() and "queued" in queued.nth(0).inner_text().lower()
    screenshot(page, "queued-message")
    queued.nth(1).locator(".eca-Queued-remove").click()
    wait_until(lambda: queued.count() == 1, message="the removed message to go")
    assert len([b for b in completion_bodies(llm) if "Then add a docstring" in b]) == 0, "nothing sent yet"

    card.locator(".eca-approve").click()
    page.get_by_text("Fixed queue.py.").wait_for()
    # the turn ended: the queued message went out by itself, into the same chat
    page.locator(".eca-Message.eca-mod-user", has_text="Then add a docstring").wait_for()
    page.get_by_text("Docstring added.").wait_for()
    wait_until(lambda: queued.count() == 0, message="the queue to be empty")
    bodies = completion_bodies(llm)
    assert any("Then add a docstring" in b for b in bodies)
    assert not any("never mind this one" in b for b in bodies), "the removed message was never sent"
    assert page.locator(".eca-Message.eca-mod-user").count() == 2
    assert page.eca_errors == []


def test_model_picker_shows_readable_names_with_the_full_id_in_the_tooltip(page, lab):
    open_panel(page, lab, workspace="models")
    picker = page.locator(".eca-ModelPicker")
    wait_until(lambda: picker.locator(f'option[value="{MODEL_ID}"]').count() == 1, message="the embedded model")
    option = picker.locator(f'option[value="{MODEL_ID}"]')
    assert option.inner_text() == MODEL_ID.split("/", 1)[1], "the name, its provider being the option group"
    assert option.get_attribute("title") == MODEL_ID
    assert picker.locator('optgroup[label="local"]').count() == 1
    picker.select_option(MODEL_ID)
    wait_until(lambda: picker.get_attribute("title") == f"Model: {MODEL_ID}", message="the full id in the tooltip")
    # the closed picker is wide enough for the chosen name and JupyterLab's arrow: nothing is cut off
    room = page.evaluate("""() => {
        const select = document.querySelector('.eca-ModelPicker');
        const style = getComputedStyle(select);
        const context = document.createElement('canvas').getContext('2d');
        context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const text = context.measureText(select.options[select.selectedIndex].text).width;
        return select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - text;
    }""")
    assert room >= 0, f"the chosen model's name is cut by {-room:.0f}px"
    picker.select_option(DEFAULT_MODEL)  # the selection is the session's: later tests ask the scripted server
    wait_until(lambda: picker.get_attribute("title") == f"Model: {DEFAULT_MODEL}", message="the default model back")
    assert page.eca_errors == []


def test_after_a_reload_the_chat_that_was_open_is_open_again(page, lab, llm):
    llm.enqueue(Reply.text("First answer."), Reply.text("Second answer."), Reply.text("Other answer."),
                Reply([Text("Still working"), Stall(120)]))
    open_panel(page, lab, workspace="reload")
    send(page, "first chat question")
    page.get_by_text("First answer.").wait_for()
    page.locator(".eca-new-chat").click()
    send(page, "second chat question")
    page.get_by_text("Second answer.").wait_for()
    # back to the first chat from the list: that is the one open when the page reloads
    page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-item", has_text="first chat question").click()
    page.get_by_text("First answer.").wait_for()
    # meanwhile another tab, on another JupyterLab workspace of the same browser, opens a chat of its own
    other = page.context.new_page()
    open_panel(other, lab, workspace="reload-other")
    send(other, "other workspace question")
    other.get_by_text("Other answer.").wait_for()
    other.close()
    page.reload()
    open_panel(page, lab)
    page.get_by_text("First answer.").wait_for()
    assert page.locator(".eca-Message.eca-mod-user", has_text="second chat question").count() == 0
    assert page.locator(".eca-Message.eca-mod-user", has_text="other workspace question").count() == 0

    # a chat whose first answer is still running when the page reloads
    page.locator(".eca-new-chat").click()
    send(page, "a long question")
    page.get_by_text("Still working").wait_for()
    page.reload()
    open_panel(page, lab)
    page.locator(".eca-Message.eca-mod-user", has_text="a long question").wait_for()
    page.get_by_text("Still working").wait_for()
    page.locator(".eca-stop").click()
    assert page.eca_errors == []


def test_the_attached_cell_is_the_one_last_run_with_its_traceback(page, lab, llm, workspace: Path):
    """Shift+Enter on a failing cell selects the empty cell below: "My last cell raises an error" must still send
    the cell that ran, numbered as JupyterLab numbers it, with its traceback (issue #30)."""
    from .test_notebook_tools import open_notebook, run_cell, write_notebook

    write_notebook(workspace / "failing.ipynb", "import math\nroot = math.sqrt(16)", "items = []\nitems[-1]", "")
    llm.enqueue(Reply.text("The list is empty: items[-1] has nothing to index."))
    open_panel(page, lab, workspace="last-cell")
    open_notebook(page, "failing.ipynb")
    run_cell(page, 1)  # Shift+Enter: the cell runs, the selection moves to the empty third cell
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(1).locator(
        ".jp-OutputArea-output", has_text="IndexError").wait_for(timeout=60_000)
    chip = page.locator(".eca-Chip.eca-mod-auto")
    wait_until(lambda: "cell 2: items = []" in chip.inner_text(), timeout=30,
               message=f"the chip to name the cell that ran (it reads {chip.inner_text()!r})")
    assert "⚠" in chip.inner_text(), "its last run raised"
    screenshot(page, "last-run-cell-chip")

    send(page, "My last cell raises an error. Explain it and fix it.")
    page.get_by_text("The list is empty").wait_for()
    [body] = [b for b in completion_bodies(llm) if "My last cell raises an error" in b]
    assert "cell 2 (code) of failing.ipynb, which raised the error below" in body, body[-3000:]
    assert "items[-1]" in body and "IndexError: list index out of range" in body
    assert "Traceback" in body, "the traceback itself, not only the error's name"
    assert "\\u001b[" not in body, "without terminal colours"
    assert page.eca_errors == []


def test_the_end_of_a_finished_answer_is_in_view(page, lab, llm):
    """A long answer that ends with a system note (here: cut at the output limit) and the context meter appearing
    under the composer once the turn is over: the list, which was following the answer, still shows its very end —
    the walk found the repetition guard's note clipped by 22 px once the turn ended."""
    from eca_notebook.testing.llm_server import Usage

    long = "\n\n".join(f"Paragraph {i}: the model explains one more thing about the notebook." for i in range(40))
    llm.enqueue(Reply([Text(long), Usage(900, 1000)], stop_reason="max_tokens"))
    open_panel(page, lab, workspace="end-in-view")
    send(page, "Explain everything")
    note = page.locator(".eca-Message", has_text="cut at the model's output limit")
    note.wait_for()
    wait_until(lambda: page.locator(".eca-stop").count() == 0, timeout=60, message="the turn to end")
    page.locator(".eca-ContextMeter").first.wait_for()

    def gap() -> float:
        return page.evaluate("""() => { const el = document.querySelector('.eca-MessageList');
                                          return el.scrollHeight - el.scrollTop - el.clientHeight; }""")

    wait_until(lambda: gap() < 2, timeout=30, message="the list scrolled to its very end")
    screenshot(page, "end-in-view")


def test_a_long_active_context_chip_is_cut_to_the_panel_with_its_whole_label_in_the_title(page, lab, workspace: Path):
    """The walk found "◉ 07-fix-a-notebook.ipynb · cell 11: print(n…" running past the panel's edge."""
    from .test_notebook_tools import open_notebook, run_cell, write_notebook

    name = "a-notebook-with-a-rather-long-descriptive-name.ipynb"
    write_notebook(workspace / name, "print('a first line long enough to need the whole width of the panel')")
    open_panel(page, lab, workspace="long-chip")
    open_notebook(page, name)
    run_cell(page, 0)
    chip = page.locator(".eca-Chip.eca-mod-auto")
    wait_until(lambda: "cell 1" in chip.inner_text(), timeout=30, message="the chip to name the cell")
    box, row = chip.bounding_box(), page.locator(".eca-Chips").bounding_box()
    assert box is not None and row is not None
    assert box["x"] + box["width"] <= row["x"] + row["width"] + 1, (box, row)
    assert chip.evaluate("el => getComputedStyle(el).textOverflow") == "ellipsis"
    assert chip.evaluate("el => el.scrollWidth > el.clientWidth"), "the label is longer than the chip shows"
    assert name in (chip.get_attribute("title") or "")
