"""The JupyterLab side panel in a real browser (Debian's Chromium through Playwright) against a real ``jupyter lab``
running the real server extension and the repository's built lab extension, with the scripted LLM server as the
model. Screenshots of the main states go to ``test-artifacts/panel/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from eca_notebook.testing.llm_server import Delay, Reasoning, Reply, Stall, Text, ToolCall, Usage

from ._lab import DEFAULT_MODEL, built_remote_entry, loaded_remote_entries, open_panel, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

COMPOSER = ".eca-Composer-input"


FOCUSED = "() => document.activeElement && document.activeElement.classList.contains('eca-Composer-input')"


def send(page, text: str) -> None:
    """Type a prompt and press Enter once the composer can send (the Send button is enabled: connected, not
    running), then wait until the box clears. JupyterLab may move the focus to the main area at its own pace (after
    a layout restore or a reconnection): an Enter that provably went elsewhere (the focus left the composer and the
    text is still there) is retried; one that reached the composer and did not send fails the test."""
    box = page.locator(COMPOSER)
    for _attempt in range(3):
        box.fill(text)
        page.locator(".eca-send:not([disabled])").wait_for()
        box.press("Enter")
        wait_until(lambda: box.input_value() == "" or not page.evaluate(FOCUSED), timeout=30,
                   message=f"the prompt {text!r} to be sent")
        if box.input_value() == "":
            return
    raise AssertionError(f"the composer kept losing the focus while sending {text!r}")


def send_after_reconnect(page, text: str) -> None:
    """Like :func:`send`, right after the server came back: on a loaded machine the panel may drop the fresh
    connection again (its handshake outlived its ceiling while the new server started) and reconnect, and an Enter
    pressed in that gap is ignored (as it should be: Send is disabled, the banner says reconnecting) and leaves the
    text in the box. Enter again once the panel is connected; a prompt sent twice would show twice (checked by the
    caller's reply count)."""
    box = page.locator(COMPOSER)
    box.fill(text)
    for _attempt in range(4):
        page.locator('.eca-ChatApp[data-connection="open"] .eca-send:not([disabled])').wait_for(timeout=60_000)
        box.press("Enter")
        try:
            wait_until(lambda: box.input_value() == "", timeout=30, message=f"the prompt {text!r} to be sent")
            return
        except AssertionError:
            if box.input_value() != text:
                raise
    raise AssertionError(f"Enter never sent {text!r} though the panel was connected: {page.eca_errors}")


def type_keys(box, text: str) -> None:
    """Type into `box` a key at a time, as a user would, each key sent to the box itself: ``Locator.press`` focuses
    it first, so a focus move by JupyterLab meanwhile (a notebook taking the focus once its kernel is up, at its own
    pace on a busy machine) cannot send the rest of the keys to another widget, where they would be commands."""
    for char in text:
        box.press("Space" if char == " " else char)
    assert box.input_value().endswith(text), box.input_value()


def wait_for_completion(page, box, label: str, timeout: float = 120.0) -> None:
    """Wait for the completion item `label`. JupyterLab may take the focus away after the last key (a notebook whose
    kernel just came up focuses its cell), which closes the popup, and a query typed before the panel knew a
    just-opened notebook's cells finds none: then retype the last key in the composer, as a user would, so the query
    runs again. Fails when the item never shows."""
    item = page.locator(".eca-Completion", has_text=label)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            item.wait_for(timeout=5_000)
            return
        except PlaywrightTimeoutError:
            last = box.input_value()[-1]
            box.press("End")
            box.press("Backspace")
            box.press("Space" if last == " " else last)
    raise AssertionError(f"the completion {label!r} never showed")


def complete_in_composer(page, lab, workspace: str, typed: str, label: str):
    """Open the panel on the JupyterLab `workspace`, type `typed` into the composer a key at a time and wait for the
    completion item `label` (what a user does before picking from the ``@`` or ``/`` list); the composer."""
    open_panel(page, lab, workspace=workspace)
    box = page.locator(COMPOSER)
    box.click()
    type_keys(box, typed)
    wait_for_completion(page, box, label)
    return box


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05, message: str = "condition"):
    """Poll ``predicate`` until it is true. The pause grows from ``interval`` to at most 0.25 s (or ``interval``,
    when larger): a condition met at once is seen at once, and a long wait (a model answering) does not cost a round
    trip through Playwright, the page and back every 50 ms — about 10 ms of CPU each, on a machine the suite keeps
    busy."""
    deadline = time.monotonic() + timeout
    pause, longest = interval, max(interval, 0.25)
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
        pause = min(pause * 1.5, longest)
    raise AssertionError(f"timed out waiting for {message}")


def open_file(page, name: str) -> None:
    """Open a file from the file browser (double click), as a user would."""
    page.locator(".jp-DirListing-item", has_text=name).first.dblclick()
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name).wait_for()


def completion_bodies(llm) -> list[str]:
    return [json.dumps(r.body) for r in llm.requests if r.method == "POST"]


def test_prompt_streams_tool_call_is_approved_and_chat_survives_reload(page, lab, llm, workspace: Path):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    edit = {"path": "hello.py", "original_content": "print('hi')", "new_content": "print('hello')"}
    llm.enqueue(
        Reply([Reasoning("Looking at hello.py first."), Text("I'll "), Delay(0.5), Text("fix "), Delay(0.5),
               Text("`hello.py`."), Delay(0.3),
               ToolCall("call_1", "eca__edit_file", json.dumps(edit), chunks=2), Usage(1200, 34)]),
        Reply([Text("Done: it now prints "), Delay(0.2), Text("**hello**.")]),
    )
    open_panel(page, lab, workspace="chat")
    loaded = loaded_remote_entries(page)
    assert len(loaded) == 1 and loaded[0].split("/")[-1].startswith(built_remote_entry()), (
        f"the page runs another build of the panel than the repository's: {loaded}")
    assert page.locator(".eca-ModelPicker").input_value() == DEFAULT_MODEL, "model picker fed by config/updated"
    agents = page.locator(".eca-AgentPicker")
    assert agents.get_attribute("aria-label") == "Agent"
    assert agents.input_value() == "code" and "plan" in agents.inner_text()
    screenshot(page, "01-panel-open")

    send(page, "Please fix hello.py")
    assistant = page.locator(".eca-Message.eca-mod-assistant").first
    assistant.wait_for()
    seen: list[str] = []

    def streamed_fully() -> bool:
        text = assistant.inner_text().strip()
        if text and (not seen or seen[-1] != text):
            seen.append(text)
            if len(seen) == 2:
                screenshot(page, "02-streaming")
        return text.endswith("hello.py.")

    wait_until(streamed_fully, message="the streamed text")
    assert len(seen) >= 2, f"the reply arrived in one piece, not streamed: {seen}"
    assert all(seen[-1].startswith(partial.rstrip()) for partial in seen), seen
    assert page.locator(".eca-Message.eca-mod-assistant code").first.inner_text() == "hello.py", "markdown rendered"
    reasoning = page.locator(".eca-Reasoning")
    assert "Thought for" in reasoning.locator("summary").inner_text()
    assert not reasoning.locator(".eca-Reasoning-text").is_visible(), "reasoning starts collapsed"
    reasoning.locator("summary").click()
    assert reasoning.locator(".eca-Reasoning-text").inner_text() == "Looking at hello.py first."

    card = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    card.wait_for()
    diff = card.locator(".eca-Diff-body").inner_text()
    assert "-print('hi')" in diff and "+print('hello')" in diff
    assert target.read_text() == "print('hi')\n", "nothing is written before approval"
    assert "tokens" in page.locator(".eca-Usage").inner_text()
    screenshot(page, "03-waiting-for-approval")

    card.locator(".eca-approve").click()
    page.locator('.eca-ToolCard[data-tool-state="done"]').wait_for()
    wait_until(lambda: target.read_text() == "print('hello')\n", message="the file change on disk")
    page.get_by_text("it now prints").wait_for()
    page.locator(".eca-send").wait_for()  # the chat is idle again: Stop turned back into Send
    assert page.locator(".eca-ChatHeader-title").inner_text() == "Please fix hello.py"
    screenshot(page, "04-approved-and-done")

    page.reload()
    open_panel(page, lab)
    page.locator(".eca-Message.eca-mod-user", has_text="Please fix hello.py").wait_for()
    page.get_by_text("it now prints").wait_for()
    assert page.locator('.eca-ToolCard[data-tool-state="done"]').count() == 1
    page.locator(".eca-ChatHeader-toggle").click()
    assert page.locator(".eca-ChatList-item", has_text="Please fix hello.py").count() == 1
    screenshot(page, "05-after-reload")
    assert not page.eca_errors, page.eca_errors


def test_completions_contexts_and_commands(page, lab, llm, workspace: Path):
    (workspace / "helpers.py").write_text("def add(a, b):\n    return a + b\n")
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
                   "outputs": [{"output_type": "error", "ename": "NameError", "evalue": "name 'rnage' is not defined",
                                "traceback": []}],
                   "source": "total = sum(rnage(10))"}],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (workspace / "analysis.ipynb").write_text(json.dumps(notebook))
    llm.enqueue(Reply.text("Noted."), Reply.text("Seen the cell."),
                Reply([ToolCall("call_d", "eca__editor_diagnostics", "{}")]), Reply.text("Found the error."))

    # A file open in the editor rides along as a cursor context (the chip can be switched off).
    open_panel(page, lab, workspace="completions")
    open_file(page, "helpers.py")
    auto = page.locator(".eca-Chip.eca-mod-auto")
    auto.wait_for()
    assert "helpers.py" in auto.inner_text()

    box = page.locator(COMPOSER)
    box.click()
    type_keys(box, "explain @READ")
    item = page.locator(".eca-Completion", has_text="README.md")
    item.wait_for()
    assert item.locator(".eca-Completion-detail").inner_text() == "README.md", "relative to the Jupyter root"
    screenshot(page, "06-context-completion")
    box.press("Enter")
    chip = page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="README.md")
    chip.wait_for()
    assert box.input_value() == "explain @README.md ", box.input_value()  # the mention stays, as typed
    box.press("Enter")
    page.get_by_text("Noted.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "# demo project" in body, "the @-attached file was sent as a context"
    assert "<|cursor|>" in body and "def add" in body, "the active editor was sent as a cursor context"

    # Commands complete from chat/queryCommands and run without the model.
    box.click()
    type_keys(box, "/doc")
    page.locator(".eca-Completion", has_text="/doctor").wait_for()
    box.press("Enter")
    assert box.input_value() == "/doctor "
    box.press("Enter")
    page.locator(".eca-Message.eca-mod-system", has_text="Default model").wait_for()

    # Cells of open notebooks complete too, and are sent inline.
    open_file(page, "analysis.ipynb")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()  # kernel started: focus settled
    box.click()
    type_keys(box, "what is @total")
    # the row: the cell's number and first line, then its notebook (relative to the Jupyter root)
    wait_for_completion(page, box, "cell 1 · total = sum(rnage(10))")
    row = page.locator(".eca-Completion", has_text="cell 1 · total = sum(rnage(10))").first
    assert row.locator(".eca-Completion-detail").inner_text() == "analysis.ipynb"
    # a click picks the item whatever has the focus (an Enter may reach the composer after the popup closed, and
    # send the text without the cell); the chip to wait for is the attached one, not the active notebook's
    row.click()
    page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="analysis.ipynb · cell 1").wait_for()
    assert box.input_value() == "what is @analysis.ipynb:cell1 ", box.input_value()
    box.press("Enter")
    page.get_by_text("Seen the cell.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "Cell 1 (code) of analysis.ipynb" in body and "total = sum(rnage(10))" in body

    # editor/getDiagnostics is answered from the open notebooks' error outputs.
    send(page, "any errors?")
    page.get_by_text("Found the error.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "NameError" in body and "cell 1" in body, body[-2000:]
    assert not page.eca_errors, page.eca_errors


def test_stop_reject_new_and_delete(page, lab, llm, workspace: Path):
    llm.enqueue(Reply([Text("Working on it"), Stall(30)]))
    open_panel(page, lab, workspace="stop")
    page.locator(".eca-new-chat").click()
    send(page, "a long task")
    page.get_by_text("Working on it").wait_for()
    page.locator(".eca-stop").click()
    page.locator(".eca-send").wait_for()
    assert llm.wait_for_disconnect(timeout=30), "stopping closed the model's stream"

    llm.enqueue(Reply([ToolCall("call_9", "eca__write_file", json.dumps({"path": "new.txt", "content": "x"}))]),
                Reply.text("OK, I won't."))
    send(page, "write new.txt")
    card = page.locator('.eca-ToolCard[data-tool-call-id="call_9"]')
    card.locator(".eca-reject").click()
    page.locator('.eca-ToolCard[data-tool-call-id="call_9"][data-tool-state="rejected"]').wait_for()
    page.get_by_text("OK, I won't.").wait_for()
    assert not (workspace / "new.txt").exists()

    # A second chat, so the list after the reload has one to wait for: deleting the only chat leaves "No chats yet.",
    # which is also what the list shows before its answer arrives.
    llm.enqueue(Reply.text("Kept."))
    page.locator(".eca-new-chat").click()
    page.locator(".eca-Welcome").wait_for()
    assert page.locator(".eca-ChatHeader-title").inner_text() == "New chat"
    send(page, "keep me")
    page.get_by_text("Kept.").wait_for()
    page.locator(".eca-send").wait_for()
    page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-item", has_text="keep me").wait_for()
    before = page.locator(".eca-ChatList-item .eca-ChatList-title").all_inner_texts()
    assert "a long task" in before

    row = page.locator(".eca-ChatList-item", has_text="a long task")
    row.hover()
    row.locator(".eca-ChatList-delete").click()
    row.wait_for(state="detached")
    page.reload()
    open_panel(page, lab)
    page.locator(".eca-ChatHeader-toggle").click()
    page.locator(".eca-ChatList-item", has_text="keep me").wait_for()
    after = page.locator(".eca-ChatList-item .eca-ChatList-title").all_inner_texts()
    assert "a long task" not in after and len(after) == len(before) - 1, (before, after)
    assert not page.eca_errors, page.eca_errors


def test_two_tabs_share_the_workspace_chats(page, browser, lab, llm):
    llm.enqueue(Reply([Text("Shared "), Delay(0.3), Text("answer.")]))
    other_context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        other = other_context.new_page()
        other.set_default_timeout(60_000)
        open_panel(page, lab, workspace="tab-a")
        open_panel(other, lab, workspace="tab-b")
        page.locator(".eca-new-chat").click()
        send(page, "from tab A")
        page.get_by_text("Shared answer.").wait_for()
        # The other tab learns of the chat as it appears (chat/opened, title) and replays it when opened.
        other.locator(".eca-ChatHeader-toggle").click()
        row = other.locator(".eca-ChatList-item", has_text="from tab A")
        row.wait_for()
        row.click()
        other.locator(".eca-Message.eca-mod-user", has_text="from tab A").wait_for()
        other.get_by_text("Shared answer.").wait_for()
        assert other.locator(".eca-Message.eca-mod-assistant").count() == 1
        screenshot(other, "11-second-tab")
    finally:
        other_context.close()


def test_reconnects_after_a_server_restart(page, lab, llm):
    llm.enqueue(Reply.text("Before the restart."), Reply.text("After the restart."))
    open_panel(page, lab, workspace="restart")
    page.locator(".eca-new-chat").click()
    send(page, "remember me")
    page.get_by_text("Before the restart.").wait_for()
    page.locator(".eca-send").wait_for()

    lab.stop()
    page.locator(".eca-Banner", has_text="reconnecting").wait_for()
    screenshot(page, "07-reconnecting")
    lab.start()
    page.locator('.eca-ChatApp[data-connection="open"]').wait_for(timeout=60_000)
    # The chat was replayed from the new server's saved history, not left half-empty.
    page.get_by_text("Before the restart.").wait_for()
    assert page.locator(".eca-Message.eca-mod-user", has_text="remember me").count() == 1
    send_after_reconnect(page, "still there?")
    page.get_by_text("After the restart.").wait_for()
    assert page.locator(".eca-Message.eca-mod-user", has_text="still there?").count() == 1
    screenshot(page, "08-after-restart")
    assert not page.eca_errors, page.eca_errors


def test_server_messages_become_notifications_and_dark_theme(page, lab, llm):
    open_panel(page, lab, workspace="notify")
    page.locator(".eca-new-chat").click()
    # A model the server does not know: the engine answers with $/showMessage (and a system text in the chat).
    page.evaluate("() => { window.__ecaPanel.client.config.model = 'nope/unknown-model'; }")
    send(page, "hello?")
    page.locator(".Toastify__toast", has_text="nope/unknown-model").wait_for()
    screenshot(page, "09-notification")

    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel").get_by_text("JupyterLab Dark", exact=True).click()
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    background = "() => getComputedStyle(document.querySelector('.eca-ChatPanel')).backgroundColor"
    # the theme's CSS applies a little after the flag flips: wait for the panel's background to turn dark
    page.wait_for_function(f"() => !['rgb(255, 255, 255)', 'rgba(0, 0, 0, 0)'].includes(({background})())")
    assert page.evaluate(background) not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")
    screenshot(page, "10-dark-theme")
    assert not page.eca_errors, page.eca_errors


def test_mcp_servers_are_listed_and_can_be_stopped_and_started(page, llm, tmp_path: Path):
    """Issue 7 in the panel: each MCP server's status from tool/serverUpdated, with Start/Stop. Its own lab: the
    MCP servers are part of the engine's config from the start."""
    import sys

    from ._lab import Lab, lab_env

    root = tmp_path / "mcp-root"
    root.mkdir()
    demo = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"
    config = {"mcpServers": {"demo": {"command": sys.executable, "args": [str(demo)],
                                      "env": {"DEMO_TOKEN": "from-panel-test"}}}}
    own = Lab(root=root, env=lab_env(tmp_path / "home", llm.url, ECA_CONFIG=json.dumps(config)))
    own.start()
    try:
        open_panel(page, own)
        servers = page.locator(".eca-McpServers")
        servers.locator("summary").wait_for(timeout=60_000)
        if not servers.evaluate("el => el.open"):
            servers.locator("summary").click()
        page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(timeout=60_000)
        screenshot(page, "12-mcp-servers")
        page.locator(".eca-McpServer", has_text="demo").get_by_role("button", name="Stop").click()
        page.locator('.eca-McpServer[data-status="stopped"]', has_text="demo").wait_for(timeout=60_000)
        page.locator(".eca-McpServer", has_text="demo").get_by_role("button", name="Start").click()
        page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(timeout=60_000)
        assert "1/1 running" in servers.locator("summary").inner_text()
        assert not page.eca_errors, page.eca_errors
    finally:
        own.stop()
