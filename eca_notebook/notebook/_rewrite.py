"""``%eca rewrite <cell> <instruction>``: rewrite one cell of this notebook and propose it as a per-cell diff.

The cell, named first (required, so a prompt that merely starts with "rewrite" stays a prompt):

* ``In[n]`` — the cell that ran as ``In[n]`` (found by its execution count, else by its source);
* ``prev`` (or ``previous``) — the cell run just before this ``%eca`` (``In[-2]``);
* ``#<cell-id>`` — a cell by its notebook id (as ``notebook_read`` shows them).

The rewrite model (``rewrite.model``, else the chat's model) rewrites the cell's source as the instruction says; the
new source is then proposed in the current chat as a ``notebook_edit_cell`` call — the same per-cell diff card with
Approve / Reject (and Undo) as any change the assistant proposes, applied through the notebook's page when JupyterLab
has it open, else to the ``.ipynb``. The exchange joins the chat, so "now also add a docstring" follows on.

Where nobody can click (markdown output: nbclient, papermill, a terminal) the proposal is shown and rejected, unless
``-y`` approves it (``%eca -y rewrite In[3] …``). Like a prompt it runs in the background; ``-w`` waits for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._parse import MagicRequest

if TYPE_CHECKING:
    from ._session import NotebookSession

__all__ = ["REWRITE_USAGE", "Cell", "find_cell", "rewrite", "split_target"]

log = logging.getLogger(__name__)

REWRITE_USAGE = """\
%eca rewrite <cell> <instruction>     rewrite a cell and propose the change as a diff to approve
  <cell>: In[n] (the cell run as In[n]) | prev (the cell run before this one) | #<cell-id>
  e.g.  %eca rewrite In[3] vectorize the loop      %eca -y rewrite prev add type hints (approve at once)"""

_TARGET = re.compile(r"In\[(\d+)\]|(prev|previous)|#([A-Za-z0-9_-]{1,64})")


def split_target(argument: str) -> tuple[str, str] | None:
    """``"In[3] add hints"`` → ``("In[3]", "add hints")``; None when the first word names no cell."""
    words = argument.strip().split(None, 1)
    if not words or _TARGET.fullmatch(words[0]) is None:
        return None
    return words[0], (words[1].strip() if len(words) > 1 else "")


@dataclass(frozen=True)
class Cell:
    """The notebook cell to rewrite."""

    id: str
    source: str
    label: str  # how the user named it ("In[3]", "the previous cell", "#abc")


def _file_cells(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    cells = []
    for cell in doc.get("cells") or ():
        source = cell.get("source", "")
        cells.append({"id": cell.get("id"), "source": "".join(source) if isinstance(source, list) else source,
                      "cell_type": cell.get("cell_type"), "execution_count": cell.get("execution_count")})
    return cells


async def _cells(engine: Any, path: Path) -> list[dict[str, Any]]:
    """The notebook's cells as the page shows them (unsaved edits included), else as the file has them."""
    access = engine.notebook_access
    if access is not None:
        try:
            live = await access.get_cells(path)
        except Exception:  # no page answered: the file
            log.debug("notebook page unavailable for %s", path, exc_info=True)
            live = None
        if live is not None:
            return [c.dump() if hasattr(c, "dump") else dict(c) for c in live]
    return await asyncio.to_thread(_file_cells, path)


def _history(shell: Any) -> list[str]:
    """Each execution's input as typed (``In`` holds the transformed input: magics rewritten)."""
    manager = getattr(shell, "history_manager", None)
    raw = getattr(manager, "input_hist_raw", None)
    if isinstance(raw, list) and raw:
        return raw
    return list(shell.user_ns.get("In") or [])


async def find_cell(shell: Any, engine: Any, path: Path, target: str) -> Cell:
    """The cell ``target`` names (see the module docstring); LookupError saying why when there is none."""
    cells = await _cells(engine, path)
    match = _TARGET.fullmatch(target)
    assert match is not None
    number, previous, cell_id = match.groups()
    if cell_id is not None:
        for cell in cells:
            if cell.get("id") == cell_id:
                return Cell(cell_id, cell.get("source") or "", f"#{cell_id}")
        raise LookupError(f"no cell with id {cell_id!r} in {path.name}")
    history = _history(shell)
    if number is not None:
        count, label = int(number), f"In[{number}]"
    else:
        count, label = len(history) - 2, "the previous cell"
    if not 0 < count < len(history):
        raise LookupError(f"{label} has not run in this kernel")
    source = history[count]
    code = [c for c in cells if c.get("cell_type") == "code" and c.get("id")]
    for cell in code:  # the cell that ran as In[count] still shows that count
        if cell.get("execution_count") == count and (cell.get("source") or "").strip() == source.strip():
            return Cell(cell["id"], cell.get("source") or "", label)
    same = [c for c in code if (c.get("source") or "").strip() == source.strip()]
    if same:
        return Cell(same[-1]["id"], same[-1].get("source") or "", label)
    raise LookupError(f"{label} is not in {path.name} as it ran (edited since, or the notebook is not saved?); "
                      "name the cell by its id instead: %eca rewrite #<cell-id> …")


async def rewrite(session: NotebookSession, request: MagicRequest) -> Any:
    """Resolve the cell, put the view in the cell's output, and run the rewrite (in the background, or waited
    for with ``-w`` and where there is no widget)."""
    parsed = split_target(request.argument)
    if parsed is None or not parsed[1]:
        print(REWRITE_USAGE)
        return None
    target, instruction = parsed
    try:
        client = await session.ensure_client()
    except Exception as exc:
        print(f"%eca: could not start the assistant: {exc}", file=sys.stderr)
        return None
    engine = client.engine
    path = engine.default_notebook
    if path is None:
        print("%eca rewrite: this kernel runs no saved notebook (a console or script): nothing to rewrite.",
              file=sys.stderr)
        return None
    try:
        cell = await find_cell(session.shell, engine, Path(path), target)
    except (LookupError, OSError, ValueError) as exc:
        print(f"%eca rewrite: {exc}", file=sys.stderr)
        return None
    mode = session.mode()
    try:
        chat_id = session._resolve_chat(request)
    except ValueError as exc:
        print(f"%eca: {exc}", file=sys.stderr)
        return None
    shown = f"Rewrite {cell.label}: {instruction}"
    view = session._new_view(mode, "markdown")
    view.begin_turn(chat_id, shown)
    answer = True if request.yes else (None if mode == "widget" else False)
    job = _run(session, engine, view, chat_id, Path(path), cell, instruction, shown, answer)
    if request.wait or mode != "widget":
        session._waiting += 1
        try:
            await job
        finally:
            session._waiting -= 1
        return None
    session.loops.spawn(job, "%eca rewrite")
    return None


async def _run(session: NotebookSession, engine: Any, view: Any, chat_id: str, path: Path, cell: Cell,
               instruction: str, shown: str, answer: bool | None) -> None:
    from ..protocol import InlinePosition, InlineRange, RewritePromptParams
    from ..protocol.errors import RpcError
    from ..providers.base import ProviderError

    lines = cell.source.split("\n")
    whole = InlineRange(start=InlinePosition(line=1, character=1),
                        end=InlinePosition(line=len(lines), character=len(lines[-1]) + 1))
    params = RewritePromptParams(id=uuid.uuid4().hex, text=cell.source, prompt=instruction, path=str(path),
                                 range=whole)
    lock = session._locks.setdefault(chat_id, asyncio.Lock())
    try:
        async with lock:
            session.views.setdefault(chat_id, []).append(view)
            try:
                _, text = await engine.rewrite_text(params)
                if not text.strip():
                    view.note("The model gave no rewrite.", error=True)
                    return
                if text.strip() == cell.source.strip():
                    view.note("The model left the cell as it is.")
                    return
                if answer is False:
                    view.note("Nobody can approve here: the change is shown, not made (`%eca -y rewrite …` makes "
                              "it).")
                _, task = engine.propose_tool_call(chat_id, "notebook_edit_cell",
                                                   {"path": str(path), "cell_id": cell.id, "source": text},
                                                   shown, answer=answer)
                await task
            finally:
                views = session.views.get(chat_id, [])
                if view in views:
                    views.remove(view)
    except asyncio.CancelledError:
        view.note("Stopped.")
        raise
    except ProviderError as exc:
        view.note(f"Error: {exc.message}", error=True)
    except (RpcError, ValueError, TimeoutError) as exc:
        view.note(f"Error: {exc}", error=True)
    except Exception as exc:
        log.exception("%%eca rewrite failed")
        view.note(f"Error: {type(exc).__name__}: {exc}", error=True)
    finally:
        view.finish()
