"""Reviewing a change in the panel, in a real browser: a three-place edit taken hunk by hunk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, ToolCall

from ._lab import open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OLD = "".join(f"line {i}\n" for i in range(1, 41))
NEW = OLD.replace("line 2\n", "line two\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")


def test_an_edit_touching_three_places_is_taken_hunk_by_hunk(page, lab, llm, workspace: Path):
    target = workspace / "notes.txt"
    target.write_text(OLD)
    llm.enqueue(Reply([ToolCall("h_1", "eca__write_file", json.dumps({"path": "notes.txt", "content": NEW}))]),
                Reply.text("Kept your choice."))
    open_panel(page, lab, workspace="hunks")
    page.locator(".eca-new-chat").click()
    send(page, "tidy notes.txt")
    card = page.locator('.eca-ToolCard[data-tool-call-id="h_1"][data-tool-state="waiting"]')
    card.wait_for()
    toggles = card.locator(".eca-hunk-toggle")
    toggles.nth(2).wait_for()
    assert toggles.count() == 3 and all(toggles.nth(i).is_checked() for i in range(3))
    assert "@@ -18,6 +18,7 @@" in card.locator('.eca-Hunk[data-hunk-id="h2"]').inner_text()
    assert card.locator(".eca-approve").inner_text() == "Approve"
    card.locator('.eca-hunk-toggle[data-hunk-id="h1"]').uncheck()
    card.locator('.eca-hunk-toggle[data-hunk-id="h3"]').uncheck()
    assert card.locator(".eca-approve").inner_text() == "Approve 1 of 3 hunks"
    screenshot(page, "review-01-one-hunk-chosen")
    assert target.read_text() == OLD, "nothing is written before approval"

    card.locator(".eca-approve").click()
    done = page.locator('.eca-ToolCard[data-tool-call-id="h_1"][data-tool-state="done"]')
    done.wait_for()
    wait_until(lambda: target.read_text() == OLD.replace("line 20\n", "line 20\nextra\n"),
               message="exactly the chosen hunk on disk")
    page.get_by_text("Kept your choice.").wait_for()
    left_out = done.locator(".eca-Hunk.eca-mod-left-out")
    assert left_out.count() == 2 and "not applied" in left_out.first.inner_text()
    assert done.locator(".eca-hunk-toggle").count() == 0, "no checkboxes once decided"
    told = json.dumps(llm.requests[-1].body)
    assert "Applied: h2" in told and "Not applied" in told
    screenshot(page, "review-02-applied")
    assert not page.eca_errors, page.eca_errors
