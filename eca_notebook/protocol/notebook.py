"""Notebook documents: the server asks the client that has a notebook open to read, change and run its cells.

Why requests to the client, not writes to the ``.ipynb``: a notebook open in JupyterLab lives in the front end's
document model. Changing it there means the edit is on the user's undo stack (Ctrl+Z), there is no "file changed on
disk" dialog, and collaborators see it. So the engine's notebook tools ask the client (``notebook/getCells``,
``notebook/applyEdit``, ``notebook/runCells``, like ``editor/getDiagnostics``); a client answers ``open: false`` for a
notebook it does not have open, and the engine then works on the file. Clients advertise the capability with
``capabilities.codeAssistant.editor.notebooks``.

Paths are absolute file-system paths on the server's machine; a client matches them against the notebooks it has
open (JupyterLab knows its notebooks relative to the server root, so it compares the path's tail).

``outputs`` are nbformat v4 output objects as JSON (``stream``, ``execute_result``, ``display_data``, ``error``): a
foreign schema we pass through untouched; the engine summarises them for the model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import ChatId, EcaModel, JsonObject

__all__ = [
    "CellType",
    "ChatToolCallUndoParams",
    "ChatToolCallUndoResult",
    "NotebookApplyEditParams",
    "NotebookApplyEditResult",
    "NotebookCell",
    "NotebookCellEdit",
    "NotebookCellRun",
    "NotebookGetCellsParams",
    "NotebookGetCellsResult",
    "NotebookRunCellsParams",
    "NotebookRunCellsResult",
]

CellType = Literal["code", "markdown", "raw"]


class NotebookCell(EcaModel):
    """One cell as the client (or the file) has it now."""

    id: str
    #: 0-based position in the notebook.
    index: int
    cell_type: CellType
    source: str
    execution_count: int | None = None
    #: nbformat v4 output objects (code cells only).
    outputs: list[JsonObject] | None = None
    #: The cell's metadata (nbformat ``metadata``); the engine's provenance is under ``eca``.
    metadata: JsonObject | None = None
    #: nbformat ``attachments`` of a markdown or raw cell (pasted images), kept so an undone delete restores them.
    attachments: JsonObject | None = None


class NotebookGetCellsParams(EcaModel):
    """``notebook/getCells`` (server → client): every cell of a notebook the client has open."""

    path: str


class NotebookGetCellsResult(EcaModel):
    """The client's answer: ``open: false`` when it does not have the notebook open (the engine reads the file)."""

    open: bool
    cells: list[NotebookCell] = Field(default_factory=list)


class NotebookCellEdit(EcaModel):
    """One change to a notebook. An edit list is applied in order, all or nothing.

    - ``replace``: set the source of ``cellId`` (refused when the cell's source is not ``expectedSource``);
    - ``insert``: a new cell at ``index`` with ``newCellId``, ``cellType``, ``source`` (and, when an undo restores a
      deleted cell, its ``outputs``, ``executionCount`` and ``attachments``);
    - ``delete``: remove ``cellId`` (refused when its source is not ``expectedSource``);
    - ``move``: move ``cellId`` to ``index`` (the position it has after the move).

    ``metadata`` is merged into the cell's metadata (the engine's provenance, under ``eca``).
    """

    action: Literal["replace", "insert", "delete", "move"]
    cell_id: str | None = None
    #: The source the user saw in the diff: an edit of a cell that changed since is refused, never overwrites.
    expected_source: str | None = None
    source: str | None = None
    cell_type: CellType | None = None
    index: int | None = None
    #: ``insert`` next to a cell: right ``after`` / ``before`` it wherever it is when applied (cells added above it
    #: meanwhile do not shift the new cell away); ``index`` when that cell is gone.
    anchor_cell_id: str | None = None
    anchor: Literal["before", "after"] | None = None
    new_cell_id: str | None = None
    outputs: list[JsonObject] | None = None
    execution_count: int | None = None
    metadata: JsonObject | None = None
    attachments: JsonObject | None = None


class NotebookApplyEditParams(EcaModel):
    """``notebook/applyEdit`` (server → client): apply ``edits`` to an open notebook, as one undoable change."""

    path: str
    edits: list[NotebookCellEdit]
    chat_id: ChatId | None = None
    tool_call_id: str | None = None


class NotebookApplyEditResult(EcaModel):
    """``applied: false`` with ``error`` when refused (a stale cell, an unknown id); ``open: false`` when the client
    does not have the notebook open."""

    open: bool
    applied: bool = False
    error: str | None = None
    #: After a refusal: the current state of the cells the edits named, so the model can see what changed.
    cells: list[NotebookCell] | None = None


class NotebookRunCellsParams(EcaModel):
    """``notebook/runCells`` (server → client): run cells in the notebook's kernel, in order, stopping at the first
    error. ``$/cancelRequest`` (or the timeout) interrupts the kernel."""

    path: str
    cell_ids: list[str]
    timeout_ms: int | None = None


class NotebookCellRun(EcaModel):
    """What running one cell gave: its outputs, and how it ended."""

    id: str
    index: int
    status: Literal["ok", "error", "timeout", "not-run"]
    execution_count: int | None = None
    outputs: list[JsonObject] = Field(default_factory=list)


class NotebookRunCellsResult(EcaModel):
    """The runs in order; ``error`` when nothing could run (no kernel, unknown cell)."""

    open: bool
    runs: list[NotebookCellRun] = Field(default_factory=list)
    error: str | None = None


class ChatToolCallUndoParams(EcaModel):
    """``chat/toolCallUndo`` (client → server): undo what a finished tool call changed (its ``toolCalled`` details
    say ``undoable: true``)."""

    chat_id: ChatId
    tool_call_id: str


class ChatToolCallUndoResult(EcaModel):
    """``undone: false`` with a ``message`` saying why (already undone, changed since, unknown call)."""

    undone: bool
    message: str
