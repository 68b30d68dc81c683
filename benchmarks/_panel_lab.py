"""What the panel benchmarks share: a JupyterLab on a scratch workspace with the scripted LLM server, Chromium on
the side panel with a notebook open, and the percentile summary they print.

``notebook_lab`` owns the whole set-up and tear-down (kernels shut down through the server first, so none linger),
so each benchmark is only its measurement.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eca_notebook.testing.llm_server import ScriptedLLMServer
from tests.panel._lab import Lab, lab_env, launch_browser, open_panel
from tests.panel.test_notebook_tools import open_notebook

TIMEOUT_MS = 60_000


@dataclass
class PanelLab:
    page: Any  # playwright's Page, on the side panel with the notebook open
    lab: Lab
    llm: ScriptedLLMServer
    root: Path  # the workspace (the lab's root)


def percentiles(values: list[float]) -> dict[str, float]:
    """n, p50, p95 (nearest rank) and max of *values*; NaN for an empty list."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50": float("nan"), "p95": float("nan"), "max": float("nan")}
    middle = len(ordered) // 2
    p50 = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    p95 = ordered[min(len(ordered) - 1, max(0, -(-95 * len(ordered) // 100) - 1))]  # nearest rank
    return {"n": len(ordered), "p50": p50, "p95": p95, "max": ordered[-1]}


def shut_down_kernels(lab: Lab) -> None:
    """Shut the notebook's kernel down through the server before stopping it: on SIGINT the server exits without
    waiting for its kernels, which then linger until they notice their parent is gone."""
    try:
        with urllib.request.urlopen(lab.url("api/kernels"), timeout=10) as response:
            kernels = json.load(response)
        for kernel in kernels:
            request = urllib.request.Request(lab.url(f"api/kernels/{kernel['id']}"), method="DELETE")
            urllib.request.urlopen(request, timeout=30).close()
    except OSError as error:  # the server is gone already: lab.stop() has nothing left to wait for either
        print(f"could not shut the kernels down: {error}", file=sys.stderr)


@contextlib.contextmanager
def notebook_lab(workspace: str, notebook: str, setup: Callable[[Path], None], *,
                 inline_completion: bool = False) -> Iterator[PanelLab]:
    """A lab on a temporary workspace that *setup* fills (it must write *notebook*), Chromium on the panel (workspace
    label *workspace*) with *notebook* open; everything stopped on exit."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "workspace"
        root.mkdir()
        setup(root)
        llm = ScriptedLLMServer().start()
        lab = Lab(root=root, env=lab_env(Path(tmp) / "home", llm.url, inline_completion=inline_completion))
        try:
            lab.start()
            with sync_playwright() as playwright:
                browser = launch_browser(playwright, quick=False)
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.set_default_timeout(TIMEOUT_MS)
                    open_panel(page, lab, workspace=workspace)
                    open_notebook(page, notebook)
                    yield PanelLab(page=page, lab=lab, llm=llm, root=root)
                finally:
                    browser.close()
        finally:
            if lab.proc is not None:
                shut_down_kernels(lab)
            lab.stop()
            llm.stop()
