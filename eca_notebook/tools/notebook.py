"""Notebook tools: the model reads a notebook's cells, edits, inserts, deletes, moves and runs them.

Where a change goes: when a front end has the notebook open (JupyterLab's panel, a ``%eca`` reaching its notebook's
page), through :class:`NotebookAccess` into the live document — on the user's undo stack, no "file changed on disk"
dialog, seen by collaborators. Otherwise into the ``.ipynb`` with nbformat: validated and written atomically, so a
crash or a bad edit never leaves half a notebook. Every result says which of the two it was.

Every change is one per-cell diff the user approves (a ``fileChange`` whose ``path`` is the notebook and ``cellId``
the cell, so every door renders it). What the user saw is what gets applied: the edit carries the source the diff
was made from, and a cell changed since is not overwritten — the call fails and the model is shown the cell as it is
now. An applied change can be undone (``ToolResult.undo``) and the cells it wrote carry ``metadata.eca`` naming the
chat and the tool call.

That provenance is signed (HMAC-SHA256 over the cell's id and source and the record itself, with the engine's own
key, :attr:`ToolContext.provenance_key`): a notebook is a file anyone may have written, so ``notebook_read`` says
"written by the assistant" only for a cell whose signature checks out — a forged ``metadata.eca`` is not believed,
and neither is a real one after the cell was changed by someone else.

A notebook outside the workspace is not looked at before the user approved the call: whether it exists, is a
notebook or has the cell named would otherwise reach the model before anyone was asked (an existence oracle for
any path). Such a call asks with a summary only; it is read — and a change's diff made — once allowed.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import hmac
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from ..protocol import (
    JsonObject,
    NotebookApplyEditResult,
    NotebookCell,
    NotebookCellEdit,
    NotebookCellRun,
    NotebookRunCellsResult,
)
from ._args import ChangeArgs, ToolArgs, change_args, with_reasons
from ._diff import diff_label, unified_diff
from ._files import FileChanged, TargetMoved, fingerprint, guarded_write
from ._notebook_doc import EditRefused, apply_edits, cell_views, ensure_ids, inverse_edits, new_cell_id
from ._notebook_view import output_images, render_cells, render_runs
from ._paths import display, is_inside, outside_as_named, resolve
from ._tool import AsyncNativeTool, ToolError
from .base import Approval, Prepared, ToolContext, ToolResult

__all__ = [
    "CellRunner",
    "NotebookAccess",
    "NotebookDeleteCellArgs",
    "NotebookDeleteCellTool",
    "NotebookEditCellArgs",
    "NotebookEditCellTool",
    "NotebookInsertCellArgs",
    "NotebookInsertCellTool",
    "NotebookMoveCellArgs",
    "NotebookMoveCellTool",
    "NotebookReadArgs",
    "NotebookReadTool",
    "NotebookRunCellsArgs",
    "NotebookRunCellsTool",
    "notebook_tools",
    "run_in_order",
    "written_by_assistant",
]

DEFAULT_RUN_TIMEOUT = 120.0
MAX_RUN_TIMEOUT = 3600.0


class NotebookAccess(Protocol):
    """A front end that has notebooks open. Each method answers ``open: False`` / ``None`` for a notebook it does
    not have open, and the tools then use the file."""

    async def get_cells(self, path: Path) -> list[NotebookCell] | None: ...

    async def apply_edit(self, path: Path, edits: list[NotebookCellEdit], *, chat_id: str | None,
                         tool_call_id: str | None) -> NotebookApplyEditResult: ...

    async def run_cells(self, path: Path, cell_ids: list[str], timeout: float) -> NotebookRunCellsResult: ...


class CellRunner(Protocol):
    """Runs cells of a notebook no front end has open (a kernel of its own); returns one run per cell tried."""

    async def run(self, path: Path, cells: list[NotebookCell], cell_ids: list[str], timeout: float
                  ) -> list[NotebookCellRun]: ...


async def run_in_order(cells: list[NotebookCell], cell_ids: list[str],
                       run_one: Callable[[NotebookCell], Awaitable[NotebookCellRun]]) -> list[NotebookCellRun]:
    """The cells named, in order, through *run_one*, as Jupyter's "run" does: markdown and raw cells are ``ok``
    without running, and after the first cell that does not end ``ok`` the rest are ``not-run``."""
    by_id = {cell.id: cell for cell in cells}
    runs: list[NotebookCellRun] = []
    stopped = False
    for cell_id in cell_ids:
        cell = by_id[cell_id]
        if stopped or cell.cell_type != "code":
            runs.append(NotebookCellRun(id=cell.id, index=cell.index, status="not-run" if stopped else "ok"))
            continue
        run = await run_one(cell)
        runs.append(run)
        stopped = run.status != "ok"
    return runs


# -- where the notebook is ----------------------------------------------------------------------------------------


@dataclass
class _Notebook:
    path: Path
    cells: list[NotebookCell]
    where: str  # "the notebook open in JupyterLab" or "the .ipynb file": what the model is told it read

    def cell(self, cell_id: str) -> NotebookCell:
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        # models often pass the index notebook_read shows ("cell 2") instead of the id: accept it when no id matches
        if cell_id.strip().isdigit() and int(cell_id) < len(self.cells):
            return self.cells[int(cell_id)]
        ids = ", ".join(c.id for c in self.cells[:40])
        raise ToolError(f"no cell with id {cell_id!r} in {self.path.name}; its cells are: {ids or '(none)'} "
                        "(read the notebook to see them)")


def _nbformat() -> Any:
    import nbformat  # lazily: only notebook work needs it (untyped: used through Any)

    return nbformat


def _read_file(path: Path) -> JsonObject:
    """The notebook as v4 JSON, its ids as in the file (``nbformat.read`` would replace missing or duplicate ids
    with random ones on every read, so the ids the model saw would be gone on its next call: see ``ensure_ids``)."""
    try:
        with path.open(encoding="utf-8") as f:
            doc: JsonObject = json.load(f)
        if not isinstance(doc, dict) or not isinstance(doc.get("cells", []), list):
            raise ValueError("not a notebook object")
        if doc.get("nbformat") != 4:  # an old notebook: converted, as Jupyter opens it
            nbformat = _nbformat()
            doc = json.loads(json.dumps(nbformat.convert(nbformat.from_dict(doc), 4)))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ToolError(f"{path.name} is not a valid notebook: {exc}") from None
    ensure_ids(doc)
    return doc


def _write_file(path: Path, doc: JsonObject, ctx: ToolContext, expected: str | None) -> None:
    """Validate, then replace the file atomically — only if it is still what *expected* fingerprints."""
    nbformat = _nbformat()

    node = nbformat.from_dict(doc)
    try:
        nbformat.validate(node)
    except nbformat.ValidationError as exc:
        raise ToolError(f"{path.name} would not be a valid notebook after this edit ({exc.message}); nothing was "
                        "written") from None
    guarded_write(path, nbformat.writes(node) + "\n", ctx.workspace_folders, expected)


async def _open(path: Path, ctx: ToolContext) -> _Notebook:
    if ctx.notebooks is not None:
        cells = await ctx.notebooks.get_cells(path)
        if cells is not None:
            return _Notebook(path, list(cells), where="the notebook open in JupyterLab")
    if not path.is_file():
        raise ToolError(f"notebook not found: {path}")
    doc = await asyncio.to_thread(_read_file, path)
    return _Notebook(path, cell_views(doc), where="the .ipynb file")


async def _apply(path: Path, edits: list[NotebookCellEdit], ctx: ToolContext) -> tuple[str, list[NotebookCellEdit]]:
    """Apply *edits* where the notebook is now; returns where, and the edits that undo them. Raises
    :class:`ToolError` (nothing applied) when refused — with the current source of a cell changed since."""
    if ctx.notebooks is not None:
        before = await ctx.notebooks.get_cells(path)
        if before is not None:
            result = await ctx.notebooks.apply_edit(path, edits, chat_id=ctx.chat_id, tool_call_id=ctx.tool_call_id)
            if result.open:
                if not result.applied:
                    raise ToolError(_refusal(result.error or "the notebook refused the edit", result.cells or []))
                return "applied to the notebook open in JupyterLab (live document, undoable with Ctrl+Z)", \
                    inverse_edits(before, edits)
    if not path.is_file():
        raise ToolError(f"notebook not found: {path}")

    def write() -> list[NotebookCellEdit]:
        stamp = fingerprint(path)
        doc = _read_file(path)
        try:
            new = apply_edits(doc, edits)
        except EditRefused as exc:
            raise ToolError(_refusal(str(exc), exc.cells)) from None
        try:
            _write_file(path, new, ctx, stamp)
        except FileChanged:  # saved by someone else between our read and our write: read again, never clobber
            raise ToolError(f"{path.name} changed while the edit was being written; nothing was written — read "
                            "the notebook again") from None
        except TargetMoved as exc:
            where = f" to {exc.target}" if exc.target is not None else ""
            raise ToolError(f"refused to write {path.name}: {exc.link} has become a symbolic link{where}") from None
        return inverse_edits(cell_views(doc), edits)

    undo = await asyncio.to_thread(write)
    return "written to the .ipynb file (validated with nbformat, replaced atomically)", undo


def _refusal(message: str, cells: list[NotebookCell]) -> str:
    text = message
    for cell in cells:
        text += f"\nCell {cell.id} now reads:\n```\n{cell.source}\n```"
    return text


def _signature(key: bytes, cell_id: str, source: str, made: JsonObject) -> str:
    payload = json.dumps({"cell": cell_id, "source": source, "made": made}, sort_keys=True, ensure_ascii=False)
    return hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()


def _provenance(ctx: ToolContext, tool: str, action: str, cell_id: str, source: str) -> JsonObject:
    """``metadata.eca`` of a cell the assistant wrote: which chat and call, not what was said — signed with the
    engine's key over the cell's id and new source (see :func:`written_by_assistant`)."""
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    made = {"chatId": ctx.chat_id, "toolCallId": ctx.tool_call_id, "tool": tool, "action": action, "at": stamp}
    record: JsonObject = {key: value for key, value in made.items() if value is not None}
    if ctx.provenance_key:
        record["sig"] = _signature(ctx.provenance_key, cell_id, source, dict(record))
    return {"eca": record}


def written_by_assistant(cell: NotebookCell, key: bytes | None) -> bool:
    """Whether *cell* is as a notebook tool of this engine (its *key*) wrote it: its ``metadata.eca`` signature
    checks out for the cell's id and current source. Without a key nothing is vouched for."""
    made = (cell.metadata or {}).get("eca")
    sig = made.get("sig") if isinstance(made, dict) else None
    if not key or not isinstance(made, dict) or not isinstance(sig, str):
        return False
    record = {k: v for k, v in made.items() if k != "sig"}
    try:
        expected = _signature(key, cell.id, cell.source, record)
    except (TypeError, ValueError):  # a record that is not plain JSON: not ours
        return False
    return hmac.compare_digest(sig, expected)


def _cell_diff(nb: _Notebook, ctx: ToolContext, old: str, new: str, cell: str, cell_id: str) -> JsonObject:
    label = f"{diff_label(nb.path, ctx, '')} ({cell})"
    # cell sources rarely end with a newline: compare them as lines, without "\ No newline at end of file" noise
    diff, added, removed = unified_diff(_lines(old), _lines(new), f"a/{label}", f"b/{label}")
    return {"type": "fileChange", "path": str(nb.path), "diff": diff, "linesAdded": added, "linesRemoved": removed,
            "cellId": cell_id}


def _lines(source: str) -> str:
    return source if not source or source.endswith("\n") else source + "\n"


def _outline(cells: list[NotebookCell]) -> str:
    lines = []
    for cell in cells:
        first = next((line for line in cell.source.splitlines() if line.strip()), "")[:70]
        lines.append(f"{cell.cell_type} {cell.id}: {first}\n")
    return "".join(lines)


# -- the tools ----------------------------------------------------------------------------------------------------


class _PathArgs(ToolArgs):
    path: str | None = Field(None, description="The notebook (.ipynb), absolute or relative to the workspace; omit "
                                               "it for the notebook you are working in.")


class _NotebookTool(AsyncNativeTool[Any]):
    """A notebook tool: its ``prepare`` reads the cells (from the front end or the file), then the tool's
    ``_prepare_cells`` works on them."""

    Args: ClassVar[type[_PathArgs]]
    mutates: ClassVar[bool] = True
    default_approval: ClassVar[Approval] = "ask"

    def _path(self, args: _PathArgs, ctx: ToolContext) -> Path:
        if args.path is None or not args.path.strip():
            if ctx.default_notebook is None:
                raise self.fail("which notebook? pass `path` (a .ipynb file)")
            return ctx.default_notebook
        return resolve(args.path, ctx)

    def _check_suffix(self, path: Path, ctx: ToolContext) -> None:
        if path.suffix != ".ipynb":
            raise self.fail(f"{display(path, ctx)} is not a notebook (.ipynb); use the file tools for other files")

    async def _prepare(self, args: Any, ctx: ToolContext) -> Prepared:
        path = self._path(args, ctx)
        if args.path and args.path.strip() and outside_as_named(args.path, path, ctx):
            return self._deferred(args, path, ctx)
        self._check_suffix(path, ctx)
        prepared = self._prepare_cells(args, await _open(path, ctx), ctx)
        prepared.paths = [path]
        prepared.outside_workspace = not is_inside(path, ctx.workspace_folders)
        return prepared

    def _shown_args(self, args: Any) -> JsonObject:
        return dict(args.model_dump())

    def _deferred(self, args: Any, path: Path, ctx: ToolContext) -> Prepared:
        """A notebook the model named outside the workspace: the call asks before anything about the path is looked
        at, so what the model hears before approval is the same for every such path. Only the suffix as written is
        checked; the rest happens in :meth:`_opened`."""
        if Path(args.path.strip()).suffix != ".ipynb":
            raise self.fail(f"{args.path.strip()} is not a notebook (.ipynb); use the file tools for other files")
        return Prepared(args=self._shown_args(args),
                        summary=f'{self.generic_summary}: "{display(path, ctx)}" (outside the workspace: read only '
                                "once you allow this call)",
                        paths=[path], outside_workspace=True, state={"deferred": args})

    async def _opened(self, prepared: Prepared, ctx: ToolContext) -> Prepared:
        """*prepared*, or — for a call deferred by :meth:`_deferred`, now approved — the call prepared only now
        (the notebook read, the change made against it)."""
        state = prepared.state
        if not isinstance(state, dict) or "deferred" not in state:
            return prepared
        path = prepared.paths[0]
        self._check_suffix(path, ctx)
        opened = self._prepare_cells(state["deferred"], await _open(path, ctx), ctx)
        opened.paths, opened.outside_workspace = [path], True
        return opened

    def _prepare_cells(self, args: Any, nb: _Notebook, ctx: ToolContext) -> Prepared:
        raise NotImplementedError


class _ChangeTool(_NotebookTool):
    """A tool whose run applies ``state["edits"]`` and can be undone."""

    verb: ClassVar[str] = ""

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        prepared = await self._opened(prepared, ctx)
        path: Path = prepared.state["path"]
        edits: list[NotebookCellEdit] = prepared.state["edits"]
        where, inverse = await _apply(path, edits, ctx)
        details = dict(prepared.details or {}, undoable=True)
        return ToolResult(output=f"{prepared.state['done']} — {where}.", details=details,
                          undo=_undoer(path, inverse, ctx))


def _undoer(path: Path, inverse: list[NotebookCellEdit], ctx: ToolContext) -> Callable[[], Awaitable[str]]:
    async def undo() -> str:
        try:
            where, _ = await _apply(path, inverse, ctx)
        except (ToolError, OSError) as exc:
            # the refusal speaks of "the diff": here it is the state this change left that is gone
            raise ValueError(str(exc).replace("changed since the diff was made", "was changed after this edit")
                             ) from None
        return f"Undone: {path.name} is back as it was before this change ({where.split(' (')[0]})."

    return undo


class NotebookReadArgs(_PathArgs):
    cell_ids: list[str] | None = Field(None, description="Only these cells (by id).")
    start: int | None = Field(None, ge=0, description="First cell index to show (0-based).")
    end: int | None = Field(None, ge=0, description="Show cells before this index.")


class NotebookReadTool(_NotebookTool):
    name = "notebook_read"
    description = (
        "Read a Jupyter notebook: each cell's id, index, type, execution count and source, with its outputs "
        "summarised (text and errors kept, HTML named by type and size; output images attached for you to see).\n\n"
        "- Use the cell ids it shows with the other notebook_* tools.\n"
        "- `cell_ids`, or `start`/`end` (0-based indices), limit it to some cells."
    )
    Args = NotebookReadArgs
    mutates = False
    default_approval = "allow"
    generic_summary = "Reading notebook"

    def _prepare_cells(self, args: NotebookReadArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        cells = nb.cells
        if args.cell_ids:
            for cell_id in args.cell_ids:
                nb.cell(cell_id)
            cells = [c for c in cells if c.id in set(args.cell_ids)]
        cells = cells[args.start or 0: args.end]
        shown = display(nb.path, ctx)
        title = f"Notebook {shown}: {len(nb.cells)} cells (read from {nb.where})"
        text = render_cells(title, cells, ctx.max_output_bytes, total=len(nb.cells), max_lines=ctx.max_output_lines,
                            ours=lambda cell: written_by_assistant(cell, ctx.provenance_key))
        return Prepared(args=args.model_dump(), summary=f'Reading notebook "{shown}"',
                        state={"text": text, "cells": cells})

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        prepared = await self._opened(prepared, ctx)
        images, line = await asyncio.to_thread(output_images, prepared.state.get("cells") or [])
        text = prepared.state["text"]
        return ToolResult(output=f"{text}\n\n{line}" if line else text, images=images)


class NotebookEditCellArgs(_PathArgs, ChangeArgs):
    cell_id: str = Field(description="The cell to change (its id, from notebook_read).")
    source: str = Field(description="The cell's complete new source.")


class NotebookEditCellTool(_ChangeTool):
    name = "notebook_edit_cell"
    description = (
        "Replace the source of one notebook cell. Pass the complete new source; the user sees the cell's diff and "
        "may reject it. Read the notebook first to get the cell id."
    )
    Args = NotebookEditCellArgs
    generic_summary = "Editing notebook cell"

    def _shown_args(self, args: Any) -> JsonObject:
        return change_args(args)

    def _prepare_cells(self, args: NotebookEditCellArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        cell = nb.cell(args.cell_id)
        if cell.source == args.source:
            raise self.fail(f"cell {cell.id} already has this source; nothing to change")
        edit = NotebookCellEdit(action="replace", cell_id=cell.id, expected_source=cell.source, source=args.source,
                                metadata=_provenance(ctx, self.name, "edited", cell.id, args.source))
        where = f"cell {cell.index + 1}, id {cell.id}"
        return Prepared(
            args=change_args(args), summary=f'Editing cell {cell.index + 1} of "{display(nb.path, ctx)}"',
            details=with_reasons(_cell_diff(nb, ctx, cell.source, args.source, where, cell.id), args),
            state={"path": nb.path, "edits": [edit],
                   "done": f"Edited cell {cell.index + 1} (index {cell.index}, id {cell.id})"},
        )


class NotebookInsertCellArgs(_PathArgs):
    source: str = Field(description="The new cell's source.")
    cell_type: Literal["code", "markdown", "raw"] = Field("code", description="code, markdown or raw.")
    after_cell_id: str | None = Field(None, description="Insert right after this cell.")
    before_cell_id: str | None = Field(None, description="Insert right before this cell.")
    index: int | None = Field(None, ge=0, description="Or: the new cell's 0-based position. Default: at the end.")


class NotebookInsertCellTool(_ChangeTool):
    name = "notebook_insert_cell"
    description = (
        "Insert a new cell (code or markdown) into a notebook: after or before a given cell id, or at an index "
        "(default: at the end). Returns the new cell's id. The user sees it as a diff and may reject it."
    )
    Args = NotebookInsertCellArgs
    generic_summary = "Inserting notebook cell"

    def _prepare_cells(self, args: NotebookInsertCellArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        if sum(x is not None for x in (args.after_cell_id, args.before_cell_id, args.index)) > 1:
            raise self.fail("give one of after_cell_id, before_cell_id or index")
        anchor: Literal["before", "after"] | None = None
        if args.after_cell_id is not None:
            anchor, anchor_id = "after", args.after_cell_id
            index = nb.cell(anchor_id).index + 1
        elif args.before_cell_id is not None:
            anchor, anchor_id = "before", args.before_cell_id
            index = nb.cell(anchor_id).index
        else:
            anchor_id = None
            index = len(nb.cells) if args.index is None else min(args.index, len(nb.cells))
        cell_id = new_cell_id()
        edit = NotebookCellEdit(action="insert", new_cell_id=cell_id, index=index, cell_type=args.cell_type,
                                source=args.source, anchor_cell_id=anchor_id, anchor=anchor,
                                metadata=_provenance(ctx, self.name, "inserted", cell_id, args.source))
        where = f"new {args.cell_type} cell {index + 1}, id {cell_id}"
        return Prepared(
            args=args.model_dump(), summary=f'Inserting a {args.cell_type} cell as cell {index + 1} in '
                                            f'"{display(nb.path, ctx)}"',
            details=_cell_diff(nb, ctx, "", args.source, where, cell_id),
            state={"path": nb.path, "edits": [edit],
                   "done": f"Inserted a {args.cell_type} cell at index {index} (cell {index + 1}) with id {cell_id}"},
        )


class NotebookDeleteCellArgs(_PathArgs):
    cell_id: str = Field(description="The cell to delete.")


class NotebookDeleteCellTool(_ChangeTool):
    name = "notebook_delete_cell"
    description = "Delete one notebook cell (by id). The user sees what is removed and may reject it."
    Args = NotebookDeleteCellArgs
    generic_summary = "Deleting notebook cell"

    def _prepare_cells(self, args: NotebookDeleteCellArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        cell = nb.cell(args.cell_id)
        edit = NotebookCellEdit(action="delete", cell_id=cell.id, expected_source=cell.source)
        where = f"cell {cell.index + 1}, id {cell.id}, deleted"
        return Prepared(
            args=args.model_dump(), summary=f'Deleting cell {cell.index + 1} of "{display(nb.path, ctx)}"',
            details=_cell_diff(nb, ctx, cell.source, "", where, cell.id),
            state={"path": nb.path, "edits": [edit],
                   "done": f"Deleted cell {cell.index + 1} (index {cell.index}, id {cell.id})"},
        )


class NotebookMoveCellArgs(_PathArgs):
    cell_id: str = Field(description="The cell to move.")
    index: int = Field(ge=0, description="Its new 0-based position.")


class NotebookMoveCellTool(_ChangeTool):
    name = "notebook_move_cell"
    description = "Move one notebook cell (by id) to a new 0-based position. The user sees the new cell order."
    Args = NotebookMoveCellArgs
    generic_summary = "Moving notebook cell"

    def _prepare_cells(self, args: NotebookMoveCellArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        cell = nb.cell(args.cell_id)
        index = min(args.index, len(nb.cells) - 1)
        if index == cell.index:
            raise self.fail(f"cell {cell.id} is already at index {index}")
        order = [c for c in nb.cells if c.id != cell.id]
        order.insert(index, cell)
        label = f"{diff_label(nb.path, ctx, '')} (cell order)"
        diff, added, removed = unified_diff(_outline(nb.cells), _outline(order), f"a/{label}", f"b/{label}")
        details: JsonObject = {"type": "fileChange", "path": str(nb.path), "diff": diff, "linesAdded": added,
                               "linesRemoved": removed, "cellId": cell.id}
        edit = NotebookCellEdit(action="move", cell_id=cell.id, index=index)
        return Prepared(
            args=args.model_dump(),
            summary=f'Moving cell {cell.index + 1} to position {index + 1} in "{display(nb.path, ctx)}"',
            details=details,
            state={"path": nb.path, "edits": [edit],
                   "done": f"Moved cell {cell.id} from index {cell.index} to {index} (now cell {index + 1})"},
        )


class NotebookRunCellsArgs(_PathArgs):
    cell_ids: list[str] = Field(min_length=1, description="The cells to run, in order (ids from notebook_read).")
    timeout_seconds: float = Field(DEFAULT_RUN_TIMEOUT, gt=0, le=MAX_RUN_TIMEOUT,
                                   description="Interrupt a cell still running after this many seconds.")


class NotebookRunCellsTool(_NotebookTool):
    name = "notebook_run_cells"
    description = (
        "Run notebook cells in the notebook's kernel, in order, stopping at the first error; returns each cell's "
        "outputs and error (with the traceback). Use it to check a fix: run, read the error, edit, run again."
    )
    Args = NotebookRunCellsArgs
    mutates = False  # runs code, like shell_command: asks by default, not a file edit
    generic_summary = "Running notebook cells"

    def _prepare_cells(self, args: NotebookRunCellsArgs, nb: _Notebook, ctx: ToolContext) -> Prepared:
        cells = [nb.cell(cell_id) for cell_id in args.cell_ids]
        names = ", ".join(str(c.index + 1) for c in cells)  # numbered from 1, as JupyterLab and every other card
        return Prepared(
            args=args.model_dump(),
            summary=f'Running cell{"s" if len(cells) > 1 else ""} {names} of "{display(nb.path, ctx)}"',
            state={"path": nb.path, "ids": [c.id for c in cells]},
        )

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        prepared = await self._opened(prepared, ctx)
        path: Path = prepared.state["path"]
        ids: list[str] = prepared.state["ids"]
        timeout = float(prepared.args.get("timeout_seconds") or DEFAULT_RUN_TIMEOUT)
        result: NotebookRunCellsResult | None = None
        if ctx.notebooks is not None:
            result = await ctx.notebooks.run_cells(path, ids, timeout)
            if not result.open:
                result = None
        if result is not None:
            where = "in the kernel of the notebook open in JupyterLab"
        else:
            if ctx.cell_runner is None:
                raise self.fail("no kernel to run this notebook in: open it in JupyterLab (or run %eca in it)")
            nb = await _open(path, ctx)
            try:
                runs = ctx.cell_runner.run(path, nb.cells, ids, timeout)
                runs = await runs if inspect.isawaitable(runs) else runs
            except ValueError as exc:  # the runner cannot run this notebook: its reason, for the model
                raise self.fail(str(exc)) from None
            result = NotebookRunCellsResult(open=False, runs=runs)
            where = "in a kernel of its own (outputs saved to the .ipynb file)"
        if result.error:
            raise self.fail(result.error)
        failed = any(run.status in ("error", "timeout") for run in result.runs)
        images, line = await asyncio.to_thread(output_images, result.runs)
        text = f"Ran {where}:\n\n" + render_runs(result.runs)
        return ToolResult(output=f"{text}\n\n{line}" if line else text, error=failed, images=images)


def notebook_tools() -> list[Any]:
    """A fresh instance of every notebook tool."""
    return [NotebookReadTool(), NotebookEditCellTool(), NotebookInsertCellTool(), NotebookDeleteCellTool(),
            NotebookMoveCellTool(), NotebookRunCellsTool()]
