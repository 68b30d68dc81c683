"""``@git`` in the JupyterLab panel's composer, in a real browser against a real ``jupyter lab`` whose root is a git
repository: typing ``@git`` offers the git contexts described by the server, choosing one attaches a chip, and the
prompt reaches the scripted model with the repository's state.

A module of its own because the lab's root must be a repository here, and must not be one for the other panel
tests (a blank ``@`` would then offer ``@git`` too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply

from ..engine.contexts.test_context_git import make_repo
from ._lab import screenshot
from .test_panel import complete_in_composer, completion_bodies

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("git-workspace"))


def test_typing_at_git_offers_it_and_attaches_a_chip(page, lab, llm, workspace: Path):
    llm.enqueue(Reply.text("Your branch looks good."))
    box = complete_in_composer(page, lab, "git-context", "review @git", "git:diff")
    whole = page.locator(".eca-Completion", has=page.locator(".eca-Completion-label", has_text="git")).first
    assert whole.locator(".eca-Completion-label").inner_text() == "git"
    assert whole.locator(".eca-Completion-detail").inner_text().startswith("main · 2 staged, 1 modified, 1 untracked")
    labels = page.locator(".eca-Completion-label").all_inner_texts()
    assert labels[:4] == ["git", "git:status", "git:diff", "git:log"], labels
    screenshot(page, "git-context-completion")
    whole.click()  # a click picks the item whatever has the focus
    chip = page.locator(".eca-Chip:not(.eca-mod-auto)", has_text="git")
    chip.wait_for()
    assert chip.get_attribute("title", timeout=5_000).startswith("main · ")
    assert box.input_value() == "review @git ", box.input_value()
    box.press("Enter")
    page.get_by_text("Your branch looks good.").wait_for()
    body = completion_bodies(llm)[-1]
    assert "Branch: main" in body and "staged_new.py" in body and "Commit number 3" in body
    assert "unstaged change" in body, "the working diff was sent"
    assert not page.eca_errors, page.eca_errors
