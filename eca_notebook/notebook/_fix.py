"""``%eca fix``: explain and fix the last exception the user saw.

The prompt carries the traceback (without IPython's own frames and ANSI colours) and the source of the cell that
raised it, found through IPython's map of cell file names to execution counts. It is sent as it is (no ``{expr}``
interpolation or ``@name`` mentions: code and tracebacks are full of braces and at-signs).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from typing import TYPE_CHECKING, Any

from ._parse import MagicRequest

if TYPE_CHECKING:
    from ._session import NotebookSession

__all__ = ["FIX_PROMPT", "fix", "last_exception"]

FIX_PROMPT = ("The code in my notebook raised the exception below. Explain briefly what went wrong and propose a "
              "fix (corrected code in a fenced block).")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


async def fix(session: NotebookSession, request: MagicRequest) -> Any:
    """Start (or, when it must wait, run) the prompt that asks for a fix of the last exception."""
    error = last_exception(session.shell)
    if error is None:
        print("No exception to fix yet: run the failing cell first, then %eca fix.")
        return None
    summary, details = error
    prompt = FIX_PROMPT + (f"\n\nNote from the user: {request.argument}" if request.argument else "")
    fix_request = MagicRequest(prompt=f"{prompt}\n\n{details}", model=request.model, behavior=request.behavior,
                               chat=request.chat, new=request.new, format=request.format, wait=request.wait,
                               yes=request.yes)
    plan = session.plan(fix_request, can_wait=True, raw=True,
                        shown=f"fix: {summary}" + (f" — {request.argument}" if request.argument else ""))
    if plan is not None:
        await session.start(plan)
    return None


def last_exception(shell: Any) -> tuple[str, str] | None:
    """The last exception the user saw: ``(one-line summary, traceback + the source of the cell that raised it)``."""
    value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if value is None:
        return None
    tb = value.__traceback__
    while tb is not None and _is_ipython_frame(tb.tb_frame.f_code.co_filename) and tb.tb_next is not None:
        tb = tb.tb_next  # IPython's own frames (run_code's exec) say nothing about the user's error
    text = _ANSI.sub("", "".join(traceback.format_exception(type(value), value, tb))).strip()
    parts = [f"Traceback:\n```\n{text}\n```"]
    cell = _failing_cell(shell, tb)
    if cell is not None:
        number, source = cell
        parts.append(f"The cell In[{number}] that raised it:\n```python\n{source.rstrip()}\n```")
    summary = "".join(traceback.format_exception_only(type(value), value)).strip().splitlines()[-1]
    return summary, "\n\n".join(parts)


def _is_ipython_frame(filename: str) -> bool:
    return f"{os.sep}IPython{os.sep}core{os.sep}" in filename


def _failing_cell(shell: Any, tb: Any) -> tuple[int, str] | None:
    """The notebook cell the traceback went through last (IPython maps its cell file names to execution counts)."""
    mapping = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    history = shell.user_ns.get("In") or []
    found = None
    while tb is not None:
        number = mapping.get(tb.tb_frame.f_code.co_filename)
        if isinstance(number, int) and 0 < number < len(history):
            found = (number, history[number])
        tb = tb.tb_next
    return found
