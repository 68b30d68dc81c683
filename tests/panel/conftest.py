"""Fixtures for the panel's browser tests: one real ``jupyter lab`` per module (the real server extension and the
repository's built lab extension, isolated dirs), a scripted LLM server, and Debian's Chromium via Playwright.

The tests skip when ``/usr/bin/chromium`` is missing — except under CI (``CI`` set), where a missing browser is a
setup error that must fail loudly (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import ScriptedLLMServer

from ._lab import (
    ARTIFACTS,
    LABEXTENSION,
    PAGE_HOST,
    Lab,
    chromium_available,
    lab_env,
    launch_browser,
    launch_context,
    screenshot,
)

PAGE_ORIGIN = f"http://{PAGE_HOST}"
#: Before any lab of this run: in a parallel run every worker collects (imports this) before any test starts.
_IMPORTED = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
    if report.when == "call" and report.failed:
        report.sections.append(("what the browser, the model and the lab saw", _failure_context(item.funcargs)))


#: The page's text where answers appear: the open notebook's outputs (a ``%eca`` widget) and the side panel.
_VISIBLE_JS = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output, #eca-chat-panel .eca-MessageList')]
    .map(node => node.innerText.trim()).filter(Boolean).join('\\n---\\n')"""


def _failure_context(funcargs: dict) -> str:
    """What a failure on CI needs to be understood without its artifacts (CI shows only its output): the text the
    page shows, the requests the model received, and the end of the lab's log. Each part best-effort and short."""
    parts = []
    page, llm, lab = funcargs.get("page"), funcargs.get("llm"), funcargs.get("lab")
    if page is not None:
        try:
            text = re.sub(r"\n\s*\n+", "\n", page.evaluate(_VISIBLE_JS))
            parts.append("page:\n" + (text if len(text) <= 1200 else f"{text[:600]}\n[…]\n{text[-600:]}"))
        except Exception as exc:  # noqa: BLE001 - the page may be gone; the failure itself is what matters
            parts.append(f"page: unreadable ({exc})")
    if isinstance(llm, ScriptedLLMServer):
        requests = llm.requests
        parts.append(f"model: {len(requests)} request(s), {llm.pending} queued reply(ies) left; the last ones:")
        parts.extend(f"  {r.method} {r.path} {_last_user_text(r.body)}" for r in requests[-4:])
    if isinstance(lab, Lab):
        parts.append("lab log:\n" + lab.log_tail(1500))
    return "\n".join(parts)


def _last_user_text(body) -> str:
    """The last user message of a completion request (OpenAI chat or responses shape), for a one-line summary."""
    if not isinstance(body, dict):
        return ""
    for message in reversed(body.get("messages") or body.get("input") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
            return f"user: {str(content)[-80:]!r}"
    return ""


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


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory) -> Path:
    """One browser profile per worker, reused by each module's browser in turn (see ``_lab.launch_context``)."""
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def playwright(lab: Lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="module")
def browser_context(playwright, lab: Lab, chromium_profile: Path):
    """The module's browser: its pages reach the module's lab at ``lab.page_url``. Its first tab (blank) stays open
    while the tests open and close theirs: with no tab left Chromium ends its processes, and the next page load
    compiled JupyterLab again (3.3 s of CPU instead of 2.3, measured)."""
    context = launch_context(playwright, lab, chromium_profile)
    context.keeper = context.pages[0] if context.pages else context.new_page()
    try:
        yield context
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser(playwright, lab: Lab):
    """A second browser, for a test that needs a context of its own (another user's tab): no shared storage."""
    instance = launch_browser(playwright, lab)
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture
def page(browser_context, llm: ScriptedLLMServer, request):
    llm.clear()
    context = browser_context
    page = context.new_page()
    _fresh_origin(context, page)
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
        for other in list(context.pages):  # the test's pages; the module's browser stays, with its cache
            if other is not context.keeper:
                other.close()


#: What a test's page must not inherit from the module's earlier tests (cookies, the panel's last open chat in local
#: storage…): all of the lab origin's storage. The HTTP cache is not among them: sharing it is the point.
_ORIGIN_STORAGE = "cookies,local_storage,session_storage,indexeddb,websql,service_workers,cache_storage,file_systems"


def _fresh_origin(context, page) -> None:
    """Clear what the lab origin keeps in the browser, as a new browser context would start (CDP's Storage domain:
    it works before the page has loaded anything)."""
    session = context.new_cdp_session(page)
    try:
        session.send("Storage.clearDataForOrigin", {"origin": PAGE_ORIGIN, "storageTypes": _ORIGIN_STORAGE})
    finally:
        session.detach()
