"""Warming the first ``%eca`` up while the user types it.

Why: ``%load_ext eca_notebook`` imports almost nothing (it must stay cheap), so the first ``%eca`` used to import
the client, the engine, the providers, the tools, pydantic's ~100 protocol models and ipywidgets before anything
appeared — most of a second on a two-core machine, on top of the model's own time. After the cell that loaded the
extension has finished, a background thread imports those modules, so the first ``%eca`` finds them loaded (or
waits on Python's import lock for the one still loading, never importing it twice).

Only imports happen here: no engine starts, no file or network is touched. A failure is left for the real import
on the first ``%eca`` to report.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import Any

__all__ = ["WARM_MODULES", "warm_up_after_this_cell"]

log = logging.getLogger(__name__)

#: What the first ``%eca`` imports, heaviest paths first.
WARM_MODULES: tuple[str, ...] = (
    "eca_notebook.notebook._session",
    "eca_notebook.client",
    "eca_notebook.engine",
    "eca_notebook.providers._http",
    "eca_notebook.providers.openai_chat",
    "eca_notebook.providers.openai_responses",
    "eca_notebook.providers.anthropic",
    "eca_notebook.providers.ollama",
    "eca_notebook.tools.fs",
    "eca_notebook.tools.search",
    "eca_notebook.tools.shell",
    "eca_notebook.tools.editor",
    "eca_notebook.tools.plan",
    "eca_notebook.notebook.widgets",
    "eca_notebook.notebook._fallback",
    # httpx imports its transport (httpcore) and the async backend (anyio's asyncio one) on the first client/request
    "httpcore",
    "anyio._backends._asyncio",
)


def _import_all() -> None:
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # the first %eca imports it again and reports the error properly
            log.debug("warming %s failed", name, exc_info=True)


def warm_up_after_this_cell(ipython: Any) -> None:
    """Import :data:`WARM_MODULES` in a daemon thread once the current cell has run (IPython's ``post_run_cell``),
    so the cell that loads the extension returns at once."""
    events = getattr(ipython, "events", None)
    if events is None:
        return

    def start(*_: Any) -> None:
        try:
            events.unregister("post_run_cell", start)
        except ValueError:
            pass
        threading.Thread(target=_import_all, name="eca-warm-up", daemon=True).start()

    events.register("post_run_cell", start)
