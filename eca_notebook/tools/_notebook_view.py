"""A notebook's cells as the model reads them: every source whole, outputs summarised within a budget.

Why summarise: a notebook's JSON is mostly outputs — base64 images, HTML tables, long logs — that cost the model
tokens and tell it little. Text and errors are what it needs to fix a notebook, so they are kept (long ones cut in
the middle, where a log is least informative); images and HTML are named by type and size. When the whole notebook
still does not fit, outputs shrink first and only then are cells left out, with a note saying how to read them.

The images themselves go to the model too, beside the text (:func:`output_images`): a plot is what a data scientist
asks about. At most :data:`MAX_IMAGES` per call, each checked like any image (``eca_notebook._images``); the engine
then keeps a request's images within its budget, or describes them to a model that cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .._images import IMAGE_MEDIA_TYPES, ImageError, ImagePart, image_from_base64
from .._text import human_size
from ..protocol import JsonObject, NotebookCell, NotebookCellRun

__all__ = ["MAX_IMAGES", "output_images", "render_cells", "render_outputs", "render_runs"]

#: The most output images one notebook_read / notebook_run_cells call attaches (the first ones, in cell order).
MAX_IMAGES = 8

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TEXT_TYPES = ("text/plain", "text/markdown", "application/json")
# Per-output character caps tried in turn until the notebook fits the budget; 0 = the output's type only.
_CAPS = (2000, 600, 160, 0)
_TRACEBACK_LINES = 20


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    head = cap * 2 // 3
    tail = cap - head
    return f"{text[:head]}\n… [{len(text) - cap} characters cut] …\n{text[-tail:]}"


def _output(output: JsonObject, cap: int) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = _text(output.get("text", ""))
        body = _cut(text.rstrip("\n"), cap) if cap else f"{len(text)} characters"
        return f"[{output.get('name', 'stdout')}] {body}"
    if kind == "error":
        head = f"[error] {output.get('ename', 'Error')}: {output.get('evalue', '')}"
        if not cap:
            return head
        traceback = output.get("traceback")
        lines = [_ANSI.sub("", str(line)) for line in (traceback if isinstance(traceback, list) else [])]
        trace = "\n".join(lines).splitlines()[-_TRACEBACK_LINES:]
        return head + ("\n" + _cut("\n".join(trace), cap * 2) if trace else "")
    data = output.get("data")
    if not isinstance(data, dict):  # (a notebook is a file anyone may have written)
        data = {}
    parts = []
    for mime, value in data.items():
        size = len(_text(value)) if not isinstance(value, dict) else len(str(value))
        if mime.startswith(("image/", "application/pdf")) and not mime.endswith("svg+xml"):
            size = size * 3 // 4  # base64 in the notebook: the size of the image itself
        if mime in _TEXT_TYPES and cap:
            parts.append(_cut(_text(value).rstrip("\n"), cap))
            break
        parts.append(f"<{mime}, {human_size(size)}>")
    label = "result" if kind == "execute_result" else "display"
    return f"[{label}] " + " ".join(parts) if parts else f"[{label}]"


def render_outputs(outputs: Sequence[JsonObject], cap: int = _CAPS[0]) -> str:
    """One block per output: streams and errors as text, rich data by its text form or its type and size."""
    return "\n".join(_output(o, cap) for o in outputs)


def _header(cell: NotebookCell, ours: bool) -> str:
    count = f" · [{cell.execution_count}]" if cell.execution_count is not None else ""
    made_by = " · written by the assistant" if ours else ""
    return f"### cell {cell.index} · id {cell.id} · {cell.cell_type}{count}{made_by}"


def _cell(cell: NotebookCell, cap: int | None, ours: bool = False) -> str:
    head = _header(cell, ours)
    block = f"{head}\n{cell.source}" if cell.source else f"{head}\n(empty)"
    if cap is not None and cell.outputs:
        block += "\n--- outputs\n" + render_outputs(cell.outputs, cap)
    return block


def _size(text: str) -> tuple[int, int]:
    """What the output caps count: UTF-8 bytes and lines."""
    return len(text.encode("utf-8")), text.count("\n") + 1


def render_cells(title: str, cells: Sequence[NotebookCell], budget: int, *, total: int,
                 max_lines: int = 2000, ours: Callable[[NotebookCell], bool] | None = None) -> str:
    """*title*, then the cells; outputs shrink through the caps until it fits *budget* UTF-8 bytes and *max_lines*
    lines, then cells are dropped from the end with a note naming the first one left out (so the tool's own cut,
    which knows nothing of cells, never has to happen). *ours* says which cells the assistant wrote (the engine's
    signed record, never the file's word for it); without it no cell is said to be."""
    mine = [ours is not None and ours(c) for c in cells]
    blocks: list[str] = []
    for cap in _CAPS:
        blocks = [_cell(c, cap, m) for c, m in zip(cells, mine, strict=True)]
        size, lines = _size("\n\n".join([title, *blocks]))
        if size <= budget and lines <= max_lines:
            return "\n\n".join([title, *blocks])
    kept: list[str] = [title]
    size, lines = _size(title)
    for cell, block in zip(cells, blocks, strict=True):
        block_size, block_lines = _size(block)
        if size + block_size + 2 > budget - 200 or lines + block_lines + 1 > max_lines - 2:
            rest = len(cells) - (len(kept) - 1)
            kept.append(f"[{rest} more cells not shown (of {total}): read them with start={cell.index}]")
            break
        kept.append(block)
        size, lines = size + block_size + 2, lines + block_lines + 1
    return "\n\n".join(kept)


def render_runs(runs: Sequence[NotebookCellRun]) -> str:
    """What running cells gave, a block per cell: its status, execution count and outputs."""
    blocks = []
    for run in runs:
        count = f" · [{run.execution_count}]" if run.execution_count is not None else ""
        block = f"### cell {run.index} · id {run.id} · {run.status}{count}"
        if run.outputs:
            block += "\n" + render_outputs(run.outputs)
        elif run.status == "ok":
            block += "\n(no output)"
        blocks.append(block)
    return "\n\n".join(blocks)


def output_images(cells: Sequence[NotebookCell | NotebookCellRun]) -> tuple[list[ImagePart], str]:
    """The PNG, JPEG, GIF and WebP images in *cells*' outputs (at most :data:`MAX_IMAGES`), named ``cell 3 image
    1``, and a line for the model naming them (and any left out or refused); ``""`` when there are none."""
    images: list[ImagePart] = []
    problems: list[str] = []
    more = 0
    for cell in cells:
        number = 0
        for output in cell.outputs or []:
            data = output.get("data") or {}
            for mime, value in (data.items() if isinstance(data, dict) else ()):
                if mime not in IMAGE_MEDIA_TYPES or not isinstance(value, (str, list)):
                    continue
                number += 1
                if len(images) >= MAX_IMAGES:
                    more += 1
                    continue
                try:
                    images.append(image_from_base64(_text(value), media_type=mime,
                                                    name=f"cell {cell.index} image {number}"))
                except ImageError as exc:
                    problems.append(str(exc))
    if not images and not problems:
        return [], ""
    line = ("Images attached, in order: " + ", ".join(i.name for i in images) + ".") if images else ""
    if more:
        line += f" {more} more images not attached (read fewer cells at a time to see them)."
    for problem in problems:
        line += f" Image not attached: {problem}."
    return images, line.strip()
