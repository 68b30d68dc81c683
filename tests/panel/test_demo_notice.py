"""The embedded model says what it is (issue #30 item 2), in a real JupyterLab with no provider configured: the first
answer of a chat shows, once, that this is a small offline demo model, with a "Connect a model" button that opens
the provider setup; the chat's next answer does not repeat it, a new chat does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.providers import local

from ._lab import LABEXTENSION, Lab, lab_env, screenshot
from .conftest import _require_browser
from .test_panel import send

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.local,
    pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message),
]

NOTICE = ".eca-Message.eca-mod-system:has(.eca-ConnectModelButton)"


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm):
    """The module's lab on the embedded model: no provider is the default (as after ``make lab`` with no key)."""
    _require_browser()
    assert (LABEXTENSION / "package.json").is_file(), "the lab extension is not built (extension/scripts/build.py)"
    env = lab_env(lab_home, llm.url, ECA_CONFIG=json.dumps({"defaultModel": local.MODEL_ID}))
    server = Lab(root=workspace, env=env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def finished(page, answers: int) -> None:
    """Wait until the chat has `answers` finished answers (the composer's Send is back each time)."""
    page.wait_for_function(
        "n => document.querySelectorAll('.eca-Message.eca-mod-assistant').length >= n"
        " && !document.querySelector('.eca-Progress')", arg=answers, timeout=240_000)


def test_the_demo_model_notice_is_shown_once_per_chat_and_opens_the_setup(page, lab):
    from ._lab import open_panel

    open_panel(page, lab)
    send(page, "Say hi.")
    notice = page.locator(NOTICE)
    notice.wait_for(timeout=240_000)
    assert "small offline demo model" in notice.inner_text()
    finished(page, 1)
    send(page, "Say hi again.")
    finished(page, 2)
    assert page.locator(NOTICE).count() == 1  # once per chat
    notice.scroll_into_view_if_needed()
    screenshot(page, "30-demo-model-notice")

    notice.get_by_role("button", name="Connect a model").click()
    page.get_by_role("region", name="Connect a model").wait_for()
    assert not page.eca_errors, page.eca_errors  # type: ignore[attr-defined]
