"""The newcomer's walk (issue #30), as a test, in the configuration ``make lab`` gives a new user: no key, no provider,
the embedded SmolLM2 model, JupyterLab opened on ``notebooks/``.

Open ``05-data-analysis.ipynb``, Run All, open the ECA panel with that notebook active (the panel attaches it), ask
what the notebook does, ask for ``is_prime``, add a cell that raises and ask for a fix, then ghost text: Alt+\\ at the
end of ``def fahrenheit_to_celsius(f):`` and again after Enter. Asserted is what a user would see, never what the tiny
model writes nor how long it takes (``benchmarks/bench_first_contact.py`` measures that): Run All goes through, every
answer finishes (no endless spinner), at most one failed tool card, no answer that repeats a line three times or more,
the demo-model notice, and ghost text both times. Screenshots of each step land in ``test-artifacts/panel/``.
"""

from __future__ import annotations

import collections
import re
import shutil
from pathlib import Path

import pytest

from eca_notebook.providers import local

from ._lab import LABEXTENSION, ROOT, Lab, lab_env, open_panel, screenshot
from .conftest import _require_browser
from .test_inline import GHOST, STATS_JS, ghost_text, type_into
from .test_notebooks_run_all import PANEL, run_all_and_check
from .test_panel import send, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.local,
    pytest.mark.timeout(1800),  # a two-core machine: the model loads on first use, four generations and two more
    pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message),
]

INLINE_COMPLETION = True  # ghost text on, as in a user's lab
NOTEBOOK = ROOT / "notebooks" / "05-data-analysis.ipynb"
NOTICE = ".eca-Message.eca-mod-system:has(.eca-ConnectModelButton)"
ANSWER = ".eca-Message.eca-mod-assistant"
QUESTIONS = [
    "What does this notebook do?",
    "Write a Python function is_prime(n) that returns True if n is prime.",
    "My last cell raises an error. Explain it and fix it.",
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A copy of notebooks/ (with its data): `make lab` opens JupyterLab there."""
    root = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(ROOT / "notebooks", root, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm):
    """The lab as `make lab` starts it for someone with no key: no provider URL or key in the environment and no
    ECA_CONFIG, so the embedded model is the default (isolated dirs as every panel test's)."""
    _require_browser()
    assert (LABEXTENSION / "package.json").is_file(), "the lab extension is not built (extension/scripts/build.py)"
    env = lab_env(lab_home, llm.url, inline_completion=True)
    for name in [k for k in env if k.endswith(("_API_KEY", "_API_URL")) or k == "ECA_CONFIG"]:
        del env[name]
    server = Lab(root=workspace, env=env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def answered(page, count: int) -> bool:
    """`count` answers in the chat and the last one is over: no progress line, the composer's Send is back."""
    return (page.locator(ANSWER).count() >= count and page.locator(".eca-Progress").count() == 0
            and page.locator(".eca-send").count() > 0)


def degenerate(text: str) -> list[str]:
    """What makes an answer a small model's degenerate loop: a line of 20 characters or more (not a `return False`)
    repeated three times or more, or a short chunk repeated six times in a row ("00:00:00-00:00:00-…")."""
    counts = collections.Counter(line.strip() for line in text.splitlines() if len(line.strip()) >= 20)
    found = [line for line, n in counts.items() if n >= 3]
    found += [m.group(0)[:80] for m in re.finditer(r"(.{2,20}?)\1{5,}", text) if m.group(1).strip()]
    return found


REPEATING = "kept repeating itself"  # the engine's repetition guard stopped the answer
ATTEMPTS = 3


def ask(page, question: str, shot: str, problems: list[str]) -> None:
    """Ask and wait until the answer is over (an answer that never ends fails here); what a user would find wrong
    with it goes to `problems` (the walk goes on, so one run shows every step).

    The embedded model samples (temperature 0.8: lower ones loop more, see providers/local.py), so one answer in a
    few of a 135M model can still run in circles; a user who meets one asks again in a new chat, and so does the
    walk — up to ``ATTEMPTS`` times. A loop every time, an empty answer or one that never ends is a failure."""
    found: list[str] = []
    for attempt in range(ATTEMPTS):
        if attempt:
            page.locator(".eca-new-chat").click()
            wait_until(lambda: page.locator(ANSWER).count() == 0, timeout=60, message="a new chat")
        count = page.locator(ANSWER).count() + 1
        stops = page.get_by_text(REPEATING).count()
        send(page, question)
        wait_until(lambda: answered(page, count), timeout=600, interval=0.5, message=f"the answer to {question!r}")
        screenshot(page, shot if not attempt else f"{shot}-again-{attempt}")
        text = page.locator(ANSWER).nth(count - 1).inner_text()
        if not text.strip():
            problems.append(f"an empty answer to {question!r}")
            return
        found = degenerate(text) + (["stopped: the model kept repeating itself"]
                                    if page.get_by_text(REPEATING).count() > stops else [])
        if not found:
            return
    problems.append(f"a degenerate answer to {question!r}, {ATTEMPTS} times: {found}")


def add_cell(page, source: str) -> None:
    """A new code cell at the end of the open notebook (select the last cell, B, type), left in edit mode."""
    page.locator(f"{PANEL} .jp-Cell").last.locator(".jp-InputPrompt, .jp-InputArea-prompt").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    editor = page.locator(f"{PANEL} .jp-Cell").last.locator(".cm-content")
    editor.click()
    if source:
        type_into(editor, source)


def test_the_newcomers_walk_on_the_embedded_model(page, lab: Lab, workspace: Path):
    page.goto(lab.page_url("lab/workspaces/first-contact") + "&reset", wait_until="domcontentloaded")
    page.locator(".jp-DirListing-item").first.wait_for()

    # 1. Run All on the tutorial goes through
    run_all_and_check(page, workspace, NOTEBOOK)
    screenshot(page, "walk-01-run-all")

    # 2. the panel, with the notebook open: three questions in one chat
    problems: list[str] = []
    open_panel(page, lab)
    ask(page, QUESTIONS[0], "walk-02-what-does-this-notebook-do", problems)
    notice = page.locator(NOTICE)
    assert notice.count() == 1, "the embedded model says what it is"
    assert "small offline demo model" in notice.inner_text()
    ask(page, QUESTIONS[1], "walk-03-is-prime", problems)

    add_cell(page, "df.groupby('region')['sale'].sum()")
    page.keyboard.press("Shift+Enter")
    page.locator(f"{PANEL} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                 has_text="KeyError").last.wait_for(timeout=120_000)
    ask(page, QUESTIONS[2], "walk-04-fix-the-error", problems)

    failed = page.locator('.eca-ToolCard[data-tool-state="failed"]').count()
    if failed > 1:
        problems.append(f"a failed-tool loop: {failed} failed tool cards")
    assert notice.count() == 1, "the notice is shown once per chat"

    # 3. ghost text: Alt+\ at the end of a def line, then Enter on a new line
    add_cell(page, "")
    editor = page.locator(f"{PANEL} .jp-Cell").last.locator(".cm-content")
    type_into(editor, "def fahrenheit_to_celsius(f):")
    editor.press("Alt+\\")
    wait_until(lambda: ghost_text(page).strip() != "", timeout=300, interval=0.5,
               message=f"ghost text after Alt+\\ ({page.evaluate(STATS_JS)})")
    screenshot(page, "walk-05-ghost-alt-backslash")
    editor.press("Escape")
    wait_until(lambda: page.locator(GHOST).count() == 0, timeout=30, message="Escape to dismiss the ghost text")
    editor.click()
    page.keyboard.press("End")
    editor.press("Enter")
    wait_until(lambda: ghost_text(page).strip() != "", timeout=300, interval=0.5,
               message=f"ghost text after Enter ({page.evaluate(STATS_JS)})")
    screenshot(page, "walk-06-ghost-after-enter")
    assert not problems, problems
    assert not page.eca_errors, page.eca_errors  # type: ignore[attr-defined]
