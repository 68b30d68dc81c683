"""How the session shows things: live widgets where a front-end renders them, markdown elsewhere.

One place for the detection (interactive front-end or headless executor), for the ipykernel version that decides
whether a waiting cell can still process widget clicks, and for a typed wrapper around IPython's ``display``.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["DISPLAY_ENV", "display_mode_for", "ipykernel_major", "show", "show_markdown", "widgets_available"]

DISPLAY_ENV = "ECA_NOTEBOOK_DISPLAY"  # "widget" | "markdown": overrides the detection below


def ipykernel_major() -> int:
    """ipykernel's major version (0 when it is missing): from 7 on, comms run while a cell awaits."""
    try:
        import ipykernel

        return int(str(getattr(ipykernel, "__version__", "0")).split(".")[0])
    except Exception:
        return 0


def widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except Exception:
        return False
    return True


def display_mode_for(shell: Any) -> str:
    """``widget`` where a front-end can show live widgets, ``markdown`` elsewhere.

    Headless executors (nbclient, and so nbconvert and papermill) send ``execute_request`` with
    ``allow_stdin: false``, while every interactive front-end (JupyterLab, Notebook 7, VS Code) allows stdin;
    that is the signal. ``ECA_NOTEBOOK_DISPLAY`` overrides it."""
    forced = os.environ.get(DISPLAY_ENV, "").strip().lower()
    if forced in ("widget", "markdown"):
        return forced
    kernel = getattr(shell, "kernel", None)
    if kernel is None:  # terminal IPython: nothing renders widgets
        return "markdown"
    if not getattr(kernel, "_allow_stdin", True):
        return "markdown"
    return "widget" if widgets_available() else "markdown"


def show(obj: Any, *, raw: bool = False) -> None:
    """IPython's ``display`` (untyped upstream) for one object."""
    from IPython.display import display

    display(obj, raw=raw)  # type: ignore[no-untyped-call]


def show_markdown(text: str) -> None:
    """Markdown for the notebook, rendered and sanitised here (it names what a workspace config or an MCP server
    said: untrusted, and a kernel's output is trusted by the front-end); the source as plain text for a terminal."""
    from ._untrusted import safe_markdown_html

    show({"text/html": safe_markdown_html(text), "text/plain": text}, raw=True)
