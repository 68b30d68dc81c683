"""A notebook as nbformat JSON, edited the way the front end edits its model: validate every edit, then apply all.

The file backend (``notebook.py``) and its tests use it; JupyterLab's panel applies the same
:class:`~eca_notebook.protocol.NotebookCellEdit` list to its live model (``extension/src/notebookAccess.ts``), so
the rules here — ids must exist, a ``replace``/``delete`` must find the source the user saw — are the contract both
follow.

Cells without an ``id`` (files written before nbformat 4.5) get ``idx<N>`` from their position when read; the first
edit writes those ids into the file, upgraded to 4.5, so the ids the model saw stay valid afterwards.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from ..protocol import NotebookCell, NotebookCellEdit

__all__ = ["EditRefused", "apply_edits", "cell_views", "ensure_ids", "inverse_edits", "new_cell_id"]


class EditRefused(Exception):
    """An edit list that cannot be applied as asked; ``cells`` is the current state of the cells it named."""

    def __init__(self, message: str, cells: list[NotebookCell] | None = None) -> None:
        super().__init__(message)
        self.cells = cells or []


def new_cell_id() -> str:
    """An id in nbformat's alphabet (``^[a-zA-Z0-9-_]+$``, 1–64 characters), short enough to read in a diff."""
    return secrets.token_hex(4)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def ensure_ids(nb: dict[str, Any]) -> bool:
    """Give every cell an id — ``idx<N>`` by position when missing, ``<id>-<N>`` for a repeated one — the same on
    every read, so the ids the model saw still name the cells on its next call; True when any was changed."""
    missing = False
    seen: set[str] = set()
    for index, cell in enumerate(nb.get("cells", [])):
        given = cell.get("id")
        if not isinstance(given, str) or not given:
            cell["id"] = f"idx{index}"
            missing = True
        elif given in seen:
            cell["id"] = f"{given[:56]}-{index}"
            missing = True
        seen.add(cell["id"])
    if missing:
        nb["nbformat"], nb["nbformat_minor"] = 4, max(5, int(nb.get("nbformat_minor", 5)))
    return missing


def cell_views(nb: dict[str, Any]) -> list[NotebookCell]:
    """The cells as the protocol describes them (source joined, outputs only for code cells)."""
    views = []
    for index, cell in enumerate(nb.get("cells", [])):
        code = cell.get("cell_type") == "code"
        views.append(NotebookCell(
            id=str(cell.get("id") or f"idx{index}"), index=index, cell_type=cell.get("cell_type", "code"),
            source=_source(cell), execution_count=cell.get("execution_count") if code else None,
            outputs=list(cell.get("outputs") or []) if code else None, metadata=dict(cell.get("metadata") or {}),
            attachments=copy.deepcopy(cell["attachments"]) if not code and cell.get("attachments") else None,
        ))
    return views


def _find(cells: list[dict[str, Any]], cell_id: str | None) -> int:
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return index
    raise EditRefused(f"no cell with id {cell_id!r} in this notebook")


def _check(cells: list[dict[str, Any]], edit: NotebookCellEdit, views: list[NotebookCell]) -> None:
    if edit.action == "insert":
        return
    index = _find(cells, edit.cell_id)
    if edit.expected_source is not None and _source(cells[index]) != edit.expected_source:
        raise EditRefused(f"cell {edit.cell_id} changed since the diff was made; nothing was applied",
                          [views[index]])


def _new_cell(edit: NotebookCellEdit) -> dict[str, Any]:
    kind = edit.cell_type or "code"
    cell: dict[str, Any] = {"id": edit.new_cell_id or new_cell_id(), "cell_type": kind,
                            "metadata": copy.deepcopy(edit.metadata or {}), "source": edit.source or ""}
    if kind == "code":
        cell["execution_count"] = edit.execution_count
        cell["outputs"] = copy.deepcopy(edit.outputs or [])
    elif edit.attachments:
        cell["attachments"] = copy.deepcopy(edit.attachments)
    return cell


def _merge_metadata(cell: dict[str, Any], metadata: dict[str, Any]) -> None:
    """Top-level keys of *metadata* replace the cell's; a ``None`` value removes the key (an undo does that)."""
    target = cell.setdefault("metadata", {})
    for key, value in metadata.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = copy.deepcopy(value)


def apply_edits(nb: dict[str, Any], edits: list[NotebookCellEdit]) -> dict[str, Any]:
    """A new notebook with *edits* applied in order; raises :class:`EditRefused` (and changes nothing) when one
    names an unknown cell or finds a cell changed since its diff was made."""
    out = copy.deepcopy(nb)
    cells: list[dict[str, Any]] = out.setdefault("cells", [])
    for edit in edits:
        _check(cells, edit, cell_views(out))
        if edit.action == "replace":
            cell = cells[_find(cells, edit.cell_id)]
            cell["source"] = edit.source or ""
            if edit.metadata:
                _merge_metadata(cell, edit.metadata)
        elif edit.action == "insert":
            index = len(cells) if edit.index is None else max(0, min(edit.index, len(cells)))
            anchored = [i for i, c in enumerate(cells) if edit.anchor_cell_id and c.get("id") == edit.anchor_cell_id]
            if anchored:
                index = anchored[0] + (1 if edit.anchor == "after" else 0)
            cells.insert(index, _new_cell(edit))
        elif edit.action == "delete":
            del cells[_find(cells, edit.cell_id)]
        elif edit.action == "move":
            cell = cells.pop(_find(cells, edit.cell_id))
            index = len(cells) if edit.index is None else max(0, min(edit.index, len(cells)))
            cells.insert(index, cell)
    return out


def inverse_edits(before: list[NotebookCell], edits: list[NotebookCellEdit]) -> list[NotebookCellEdit]:
    """The edits that undo *edits* applied to a notebook whose cells were *before* (each inserted cell must carry
    its ``new_cell_id``). Each ``replace``/``delete`` of the undo expects what the edit wrote, so an undo never
    overwrites a cell changed after the edit."""
    cells = list(before)
    undo: list[NotebookCellEdit] = []
    for edit in edits:
        if edit.action == "replace":
            old = next(c for c in cells if c.id == edit.cell_id)
            restore = {key: (old.metadata or {}).get(key) for key in edit.metadata or {}}
            undo.append(NotebookCellEdit(action="replace", cell_id=old.id, expected_source=edit.source or "",
                                         source=old.source, metadata=restore or None))
            cells = [c.model_copy(update={"source": edit.source or ""}) if c.id == old.id else c for c in cells]
        elif edit.action == "insert":
            index = len(cells) if edit.index is None else max(0, min(edit.index, len(cells)))
            anchored = [i for i, c in enumerate(cells) if edit.anchor_cell_id and c.id == edit.anchor_cell_id]
            if anchored:
                index = anchored[0] + (1 if edit.anchor == "after" else 0)
            new = NotebookCell(id=edit.new_cell_id or "", index=index, cell_type=edit.cell_type or "code",
                               source=edit.source or "")
            undo.append(NotebookCellEdit(action="delete", cell_id=new.id, expected_source=new.source))
            cells.insert(index, new)
        elif edit.action == "delete":
            index = next(i for i, c in enumerate(cells) if c.id == edit.cell_id)
            old = cells.pop(index)
            undo.append(NotebookCellEdit(action="insert", new_cell_id=old.id, index=index, cell_type=old.cell_type,
                                         source=old.source, outputs=old.outputs, execution_count=old.execution_count,
                                         metadata=old.metadata, attachments=old.attachments))
        elif edit.action == "move":
            index = next(i for i, c in enumerate(cells) if c.id == edit.cell_id)
            cell = cells.pop(index)
            cells.insert(len(cells) if edit.index is None else max(0, min(edit.index, len(cells))), cell)
            undo.append(NotebookCellEdit(action="move", cell_id=cell.id, index=index))
    undo.reverse()
    return undo
