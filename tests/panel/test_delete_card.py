"""A ``delete_file`` call in the panel (real JupyterLab, Chromium): the waiting card shows the deletion — a
"deleted" label and every line removed — nothing is deleted before Approve, and Undo on the finished card brings
the file back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_deletion_card_is_labelled_approved_and_undone(page, lab, llm, workspace: Path):
    target = workspace / "obsolete.txt"
    target.write_text("first line\nsecond line\n")
    llm.enqueue(Reply([ToolCall("call_del", "eca__delete_file", json.dumps({"path": "obsolete.txt"}), chunks=2)]),
                Reply.text("Deleted obsolete.txt."))
    open_panel(page, lab, workspace="delete")
    send(page, "Delete obsolete.txt")
    card = page.locator('.eca-ToolCard[data-tool-state="waiting"]')
    card.wait_for()
    assert card.locator(".eca-Diff-kind-deleted").inner_text() == "deleted"
    body = card.locator(".eca-Diff-body").inner_text()
    assert "+++ /dev/null" in body and "-first line" in body and "-second line" in body
    assert card.locator(".eca-Diff-stat-removed").inner_text() == "-2"
    assert target.exists(), "nothing is deleted before approval"
    screenshot(page, "delete-waiting")
    card.locator(".eca-approve").click()
    done = page.locator('.eca-ToolCard[data-tool-state="done"]')
    done.wait_for()
    wait_until(lambda: not target.exists(), message="the file deleted")
    done.locator(".eca-undo").click()
    wait_until(lambda: target.exists(), timeout=60, message="the file restored by Undo")
    assert target.read_text() == "first line\nsecond line\n"
    assert not page.eca_errors, page.eca_errors
