"""The panel while an answer runs, in a real browser against a real ``jupyter lab`` and the scripted LLM server: Steer
(the button or Alt+Enter) sends guidance that waits above the box as a pending steer (× takes it back) and joins the
model's next request after the current tool call; a background job the model started shows in the chat's jobs strip
and Kill ends it (its process is gone)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import COMPOSER, completion_bodies, send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def processes_running(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != b"Z":
            found.append(int(name))
    return found


def test_steer_waits_removable_and_joins_the_next_request(page, lab, llm, workspace: Path):
    (workspace / "steer.py").write_text("print('hi')\n")
    edit = {"path": "steer.py", "original_content": "print('hi')", "new_content": "print('hello')"}
    # the first round's call waits for approval: the answer runs as long as the test needs
    llm.enqueue(Reply([Text("Editing."), ToolCall("call_st", "eca__edit_file", json.dumps(edit))]),
                Reply.text("Done, with pandas."))
    open_panel(page, lab, workspace="steer")
    send(page, "Please edit steer.py")
    card = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    card.wait_for()
    before = len(completion_bodies(llm))

    box = page.locator(COMPOSER)
    box.fill("use pandas, not csv")
    page.locator(".eca-steer:not([disabled])").click()
    wait_until(lambda: box.input_value() == "", message="Steer to take the text")
    box.fill("drop this one")
    box.press("Alt+Enter")
    steers = page.locator(".eca-Steer")
    wait_until(lambda: steers.count() == 2, message="both steers pending")
    assert "use pandas, not csv" in steers.nth(0).inner_text()
    screenshot(page, "pending-steer")
    steers.nth(1).locator(".eca-Queued-remove").click()
    wait_until(lambda: steers.count() == 1, message="the removed steer to go")
    assert len(completion_bodies(llm)) == before, "no request while the call waits"

    card.locator(".eca-approve").click()
    page.get_by_text("Done, with pandas.").wait_for()
    page.locator(".eca-Message.eca-mod-user", has_text="use pandas, not csv").wait_for()
    wait_until(lambda: steers.count() == 0, message="the steer taken in")
    bodies = completion_bodies(llm)
    assert "use pandas, not csv" not in bodies[before - 1], "not in the request before the boundary"
    assert "use pandas, not csv" in bodies[-1]
    assert not any("drop this one" in b for b in bodies), "the removed steer never reached the model"
    assert page.eca_errors == []


def test_a_background_job_shows_in_the_strip_and_kill_ends_it(page, lab, llm):
    marker = "sleep 3017"  # (an unusual duration: finds the job's process by its command line)
    command = {"command": f"echo started; {marker}", "background": "trainer"}
    llm.enqueue(Reply([ToolCall("call_bg", "eca__shell_command", json.dumps(command))]),
                Reply.text("The trainer runs in the background."))
    open_panel(page, lab, workspace="jobs")
    send(page, "Start the trainer in the background")
    card = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    card.wait_for()  # asked like any shell command
    card.locator(".eca-approve").click()
    page.get_by_text("The trainer runs in the background.").wait_for()
    job = page.locator(".eca-Job")
    job.wait_for()
    assert "trainer" in job.inner_text() and marker in job.inner_text()
    wait_until(lambda: processes_running(marker), message="the job's process")
    screenshot(page, "jobs-strip")
    job.locator(".eca-Job-kill").click()
    wait_until(lambda: job.count() == 0, message="the killed job to leave the strip")
    wait_until(lambda: not processes_running(marker), message="the job's process to end")
    assert page.eca_errors == []
