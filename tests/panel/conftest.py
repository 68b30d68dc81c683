"""Fixtures for the panel's browser tests: one real ``jupyter lab`` per module (the real server extension and the
repository's built lab extension, isolated dirs), a scripted LLM server, and Debian's Chromium via Playwright.

The tests skip when ``/usr/bin/chromium`` is missing — except under CI (``CI`` set), where a missing browser is a
setup error that must fail loudly (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import ScriptedLLMServer

from ._lab import ARTIFACTS, LABEXTENSION, Lab, chromium_available, lab_env, launch_browser, screenshot

#: Before any lab of this run: in a parallel run every worker collects (imports this) before any test starts.
_IMPORTED = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _require_browser() -> None:
    if chromium_available():
        return
    if os.environ.get("CI"):
        pytest.fail("/usr/bin/chromium is missing (CI must install Debian's chromium: apt-get install -y chromium)")
    pytest.skip("/usr/bin/chromium is not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def llm():
    server = ScriptedLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def lab_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lab-home")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "README.md").write_text("# demo project\n")
    return root


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm: ScriptedLLMServer, request):
    _require_browser()
    assert (LABEXTENSION / "package.json").is_file(), "the lab extension is not built (extension/scripts/build.py)"
    for old in ARTIFACTS.glob("jupyter-lab-*.log"):  # the logs of earlier runs, not of the other workers' labs
        try:
            if old.stat().st_mtime < _IMPORTED:
                old.unlink()
        except FileNotFoundError:
            pass
    # a module that tests ghost text says so (INLINE_COMPLETION = True); elsewhere it is off (see lab_env)
    inline = bool(getattr(request.module, "INLINE_COMPLETION", False))
    server = Lab(root=workspace, env=lab_env(lab_home, llm.url, inline_completion=inline))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(lab: Lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = launch_browser(playwright)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser, llm: ScriptedLLMServer, request):
    llm.clear()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)  # a loaded two-core machine: every wait is on a condition, so be generous
    errors: list[str] = []

    def on_error(error) -> None:
        # Uncaught errors from the panel's own code (its chunks are served from .../eca-notebook/static/); JupyterLab's
        # own (e.g. "Failed to fetch" while the server restarts) are not ours to assert on.
        if "eca-notebook" in (getattr(error, "stack", "") or ""):
            errors.append(f"{error}\n{error.stack}")

    page.on("pageerror", on_error)
    page.eca_errors = errors  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            try:
                screenshot(page, f"FAILED-{request.node.name}")
            except Exception:  # the page may be gone; the failure itself is what matters
                pass
        context.close()
