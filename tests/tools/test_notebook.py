"""The notebook tools on real ``.ipynb`` files (the file backend, no front end): what the model reads, the per-cell
diffs the user approves, validated atomic writes with provenance, stale edits refused, undo, old notebooks without
cell ids, running cells through a ``CellRunner``, and a kill in the middle of a write."""

from __future__ import annotations

import base64
import datetime
import json
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import nbformat
import pytest

from eca_notebook.protocol import NotebookCell, NotebookCellRun
from eca_notebook.tools.base import Prepared, ToolContext, ToolResult
from eca_notebook.tools.notebook import (
    NotebookDeleteCellTool,
    NotebookEditCellTool,
    NotebookInsertCellTool,
    NotebookMoveCellTool,
    NotebookReadTool,
    NotebookRunCellsTool,
    notebook_tools,
)

from .conftest import write

ANSI_TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[3], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m y \x1b[38;5;241m=\x1b[39m x \x1b[38;5;241m/\x1b[39m "
    "\x1b[38;5;241m0\x1b[39m",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 80).decode()  # ~20 KB of image, as base64
HTML = "<table>" + "<tr><td>1</td><td>2</td></tr>" * 200 + "</table>"


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace_folders=[ws], chat_id="chat-1", tool_call_id="call-1")


def make_notebook(path: Path) -> list[str]:
    """Five cells: markdown; code with stdout and a result; code with an error (ANSI traceback); a plot; a table."""
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [
        v4.new_markdown_cell("# Analysis\nLoads the data."),
        v4.new_code_cell("x = 10\nprint(x)\nx * 2", execution_count=1, outputs=[
            v4.new_output("stream", name="stdout", text="10\n"),
            v4.new_output("execute_result", data={"text/plain": "20"}, execution_count=1)]),
        v4.new_code_cell("y = x / 0", execution_count=2, outputs=[
            v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=ANSI_TRACEBACK)]),
        v4.new_code_cell("plt.plot([1, 2])", execution_count=3, outputs=[
            v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"})]),
        v4.new_code_cell("df", execution_count=4, outputs=[
            v4.new_output("execute_result", data={"text/html": HTML}, execution_count=4)]),
    ]
    nbformat.write(nb, path)
    return [c.id for c in nb.cells]


async def call(tool: Any, args: Any, ctx: ToolContext) -> tuple[Prepared, ToolResult]:
    prepared = await tool.prepare(args, ctx)
    return prepared, await tool.run(prepared, ctx)


def cells(path: Path) -> list[Any]:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return list(nb.cells)


def sources(path: Path) -> list[str]:
    return [c.source for c in cells(path)]


@pytest.fixture
def nb_path(ws: Path) -> Path:
    return ws / "analysis.ipynb"


@pytest.fixture
def ids(nb_path: Path) -> list[str]:
    return make_notebook(nb_path)


# -- reading ------------------------------------------------------------------------------------------------------


async def test_read_lists_every_cell_with_id_index_count_and_summarised_outputs(nb_path, ids, ctx) -> None:
    prepared, result = await call(NotebookReadTool(), {"path": "analysis.ipynb"}, ctx)
    assert prepared.error is None and prepared.summary == 'Reading notebook "analysis.ipynb"'
    assert prepared.paths == [nb_path] and not prepared.outside_workspace
    out = result.output
    assert not result.error
    assert out.startswith("Notebook analysis.ipynb: 5 cells (read from the .ipynb file)\n\n")
    assert f"### cell 0 · id {ids[0]} · markdown\n# Analysis\nLoads the data." in out
    assert f"### cell 1 · id {ids[1]} · code · [1]\nx = 10\nprint(x)\nx * 2\n--- outputs\n[stdout] 10\n[result] 20" \
        in out
    # the error: name, value and the traceback's lines, without terminal colours
    assert f"### cell 2 · id {ids[2]} · code · [2]\ny = x / 0\n--- outputs\n[error] ZeroDivisionError: division by " \
           "zero\n" in out
    assert "\x1b" not in out
    assert "----> 1 y = x / 0" in out and "ZeroDivisionError                         Traceback" in out
    # the image by type and size, never its base64
    assert re.search(r"\[display\] <image/png, \d+(\.\d)? KB> <Figure size 640x480 with 1 Axes>", out)
    assert PNG[:60] not in out and PNG[-60:] not in out
    # the HTML table by type and size
    assert re.search(r"\[result\] <text/html, \d+(\.\d)? KB>", out)
    assert "<table>" not in out and "<td>" not in out
    assert len(out) < 2500  # a ~30 KB notebook, read in a few hundred words


async def test_read_filters_by_cell_ids_and_by_start_end(nb_path, ids, ctx) -> None:
    _, some = await call(NotebookReadTool(), {"path": str(nb_path), "cell_ids": [ids[3], ids[1]]}, ctx)
    shown = re.findall(r"### cell (\d+) · id (\S+)", some.output)
    assert shown == [("1", ids[1]), ("3", ids[3])]  # in notebook order, with their real indices
    assert "5 cells" in some.output  # the title still counts them all

    _, middle = await call(NotebookReadTool(), {"path": "analysis.ipynb", "start": 1, "end": 3}, ctx)
    assert re.findall(r"### cell (\d+)", middle.output) == ["1", "2"]
    _, tail = await call(NotebookReadTool(), {"path": "analysis.ipynb", "start": 3}, ctx)
    assert re.findall(r"### cell (\d+)", tail.output) == ["3", "4"]
    _, head = await call(NotebookReadTool(), {"path": "analysis.ipynb", "end": 1}, ctx)
    assert re.findall(r"### cell (\d+)", head.output) == ["0"]


async def test_read_of_an_unknown_cell_id_names_the_ids_there_are(nb_path, ids, ctx) -> None:
    prepared, result = await call(NotebookReadTool(), {"path": "analysis.ipynb", "cell_ids": ["nope"]}, ctx)
    assert prepared.error is not None and prepared.error.startswith("notebook_read: no cell with id 'nope' in "
                                                                    "analysis.ipynb; its cells are: ")
    assert all(i in prepared.error for i in ids)
    assert result.error and result.output == prepared.error


async def test_outputs_over_the_budget_shrink_but_every_source_is_listed(ws, ctx) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell(f"step_{i}()", execution_count=i + 1, outputs=[
        v4.new_output("stream", name="stdout", text="".join(f"log line {j} of step {i}\n" for j in range(150)))])
        for i in range(10)]
    path = ws / "logs.ipynb"
    nbformat.write(nb, path)
    assert path.stat().st_size > 40_000
    ctx.max_output_bytes = 6000
    _, result = await call(NotebookReadTool(), {"path": "logs.ipynb"}, ctx)
    out = result.output
    assert len(out.encode()) <= 6000
    assert all(f"step_{i}()" in out for i in range(10))  # every cell's source
    assert all(f"### cell {i} · id {nb.cells[i].id}" in out for i in range(10))
    assert "characters cut" in out and "log line 0 of step 9" in out  # outputs cut in the middle, head kept
    assert "not shown" not in out


async def test_sources_over_the_budget_say_how_to_read_the_rest(ws, ctx) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell(f"# cell {i}\n" + "value = compute(" + "'x', " * 40 + ")") for i in range(60)]
    path = ws / "long.ipynb"
    nbformat.write(nb, path)
    ctx.max_output_bytes = 4000
    _, result = await call(NotebookReadTool(), {"path": "long.ipynb"}, ctx)
    out = result.output
    assert len(out.encode()) <= 4000
    note = re.search(r"\[(\d+) more cells not shown \(of 60\): read them with start=(\d+)\]$", out)
    assert note, out[-300:]
    first_missing = int(note.group(2))
    assert 0 < first_missing < 60 and int(note.group(1)) == 60 - first_missing
    assert f"# cell {first_missing - 1}\n" in out and f"# cell {first_missing}\n" not in out
    _, rest = await call(NotebookReadTool(), {"path": "long.ipynb", "start": first_missing}, ctx)
    assert f"### cell {first_missing} · id {nb.cells[first_missing].id}" in rest.output


async def test_many_short_source_lines_still_say_how_to_read_the_rest(ws, ctx) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("\n".join(f"a{j} = {j}" for j in range(6))) for _ in range(400)]  # 3,200 lines
    nbformat.write(nb, ws / "many.ipynb")
    _, result = await call(NotebookReadTool(), {"path": "many.ipynb"}, ctx)  # ~31 KB: under the 50 KB budget
    assert "line_offset" not in result.output
    assert re.search(r"read them with start=\d+\]$", result.output), result.output[-200:]


async def test_multibyte_sources_over_the_byte_budget_say_how_to_read_the_rest(ws, ctx) -> None:
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_markdown_cell("数据分析，" * 40) for _ in range(200)]  # 40 K characters, 120 KB
    nbformat.write(nb, ws / "cjk.ipynb")
    _, result = await call(NotebookReadTool(), {"path": "cjk.ipynb"}, ctx)
    assert re.search(r"read them with start=\d+\]$", result.output), result.output[-200:]


# -- changing -----------------------------------------------------------------------------------------------------


def assert_provenance(cell: Any, tool: str, action: str) -> None:
    made = cell.metadata["eca"]
    assert set(made) == {"chatId", "toolCallId", "tool", "action", "at"}  # which call, never what was said
    assert (made["chatId"], made["toolCallId"], made["tool"], made["action"]) == ("chat-1", "call-1", tool, action)
    at = datetime.datetime.fromisoformat(made["at"])
    assert abs((datetime.datetime.now(datetime.UTC) - at).total_seconds()) < 60


async def test_edit_shows_a_cell_diff_then_writes_a_valid_notebook_keeping_outputs(nb_path, ids, ctx) -> None:
    before = cells(nb_path)
    prepared, result = await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[2],
                                                          "source": "y = x / 2"}, ctx)
    assert prepared.summary == 'Editing cell 3 of "analysis.ipynb"', "numbered as JupyterLab numbers it (from 1)"
    details = prepared.details
    assert details is not None
    assert {k: details[k] for k in ("type", "path", "cellId", "linesAdded", "linesRemoved")} == {
        "type": "fileChange", "path": str(nb_path), "cellId": ids[2], "linesAdded": 1, "linesRemoved": 1}
    assert details["diff"].startswith(f"--- a/analysis.ipynb (cell 3, id {ids[2]})\n"
                                      f"+++ b/analysis.ipynb (cell 3, id {ids[2]})\n")
    assert "-y = x / 0\n+y = x / 2\n" in details["diff"] and "No newline" not in details["diff"]

    assert not result.error, result.output
    assert result.output == (f"Edited cell 3 (index 2, id {ids[2]}) — written to the .ipynb file (validated with "
                             "nbformat, replaced atomically).")
    assert result.details == dict(details, undoable=True) and result.undo is not None
    after = cells(nb_path)  # validates
    assert [c.id for c in after] == ids
    assert after[2].source == "y = x / 2"
    assert_provenance(after[2], "notebook_edit_cell", "edited")
    for old, new in zip(before, after, strict=True):
        assert new.get("outputs") == old.get("outputs")  # every cell keeps its outputs (the edited one too)
        if new.id != ids[2]:
            assert new == old
    assert not list(nb_path.parent.glob(".*eca-tmp"))


async def test_editing_to_the_same_source_is_refused(nb_path, ids, ctx) -> None:
    prepared, _ = await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[2],
                                                      "source": "y = x / 0"}, ctx)
    assert prepared.error == f"notebook_edit_cell: cell {ids[2]} already has this source; nothing to change"


@pytest.mark.parametrize(("where", "position"), [
    ({"after_cell_id": 0}, 1), ({"before_cell_id": 0}, 0), ({"after_cell_id": 4}, 5), ({"before_cell_id": 2}, 2),
    ({"index": 3}, 3), ({"index": 99}, 5), ({}, 5),
])
async def test_insert_after_before_at_an_index_or_at_the_end(nb_path, ids, ctx, where, position) -> None:
    args = {"path": "analysis.ipynb", "source": "Loads the data.\nThen plots it.", "cell_type": "markdown"}
    args.update({k: ids[v] if k.endswith("cell_id") else v for k, v in where.items()})
    prepared, result = await call(NotebookInsertCellTool(), args, ctx)
    assert not result.error, result.output
    after = cells(nb_path)
    new = after[position]
    assert [c.id for c in after if c.id != new.id] == ids
    assert new.cell_type == "markdown" and new.source == "Loads the data.\nThen plots it."
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", new.id) and new.id not in ids
    assert result.output.startswith(f"Inserted a markdown cell at index {position} (cell {position + 1}) with id "
                                    f"{new.id} — written to")
    assert prepared.details is not None and prepared.details["cellId"] == new.id
    assert f"(new markdown cell {position + 1}, id {new.id})" in prepared.details["diff"]
    assert "@@ -0,0 +1,2 @@\n+Loads the data.\n+Then plots it.\n" in prepared.details["diff"]
    assert prepared.details["linesAdded"] == 2 and prepared.details["linesRemoved"] == 0
    assert result.details is not None and result.details["undoable"] is True
    assert_provenance(new, "notebook_insert_cell", "inserted")
    assert "attachments" not in new


async def test_an_inserted_code_cell_is_unexecuted(nb_path, ids, ctx) -> None:
    _, result = await call(NotebookInsertCellTool(), {"path": "analysis.ipynb", "source": "z = 3"}, ctx)
    assert not result.error
    new = cells(nb_path)[-1]
    assert (new.cell_type, new.source, new.execution_count, new.outputs) == ("code", "z = 3", None, [])


async def test_insert_takes_one_place_only(nb_path, ids, ctx) -> None:
    prepared, _ = await call(NotebookInsertCellTool(), {"path": "analysis.ipynb", "source": "z", "index": 1,
                                                        "after_cell_id": ids[0]}, ctx)
    assert prepared.error == "notebook_insert_cell: give one of after_cell_id, before_cell_id or index"


async def test_delete_shows_the_removed_source_and_keeps_the_other_cells(nb_path, ids, ctx) -> None:
    before = cells(nb_path)
    prepared, result = await call(NotebookDeleteCellTool(), {"path": "analysis.ipynb", "cell_id": ids[1]}, ctx)
    assert prepared.details is not None and prepared.details["cellId"] == ids[1]
    assert "-x = 10\n-print(x)\n-x * 2\n" in prepared.details["diff"]
    assert (prepared.details["linesAdded"], prepared.details["linesRemoved"]) == (0, 3)
    assert f"(cell 2, id {ids[1]}, deleted)" in prepared.details["diff"]
    assert not result.error
    assert result.output.startswith(f"Deleted cell 2 (index 1, id {ids[1]}) — written to the .ipynb")
    assert result.details is not None and result.details["undoable"] is True
    assert cells(nb_path) == before[:1] + before[2:]


async def test_move_shows_the_new_order(nb_path, ids, ctx) -> None:
    before = cells(nb_path)
    prepared, result = await call(NotebookMoveCellTool(), {"path": "analysis.ipynb", "cell_id": ids[0],
                                                          "index": 9}, ctx)
    assert prepared.summary == 'Moving cell 1 to position 5 in "analysis.ipynb"'
    assert prepared.details is not None and prepared.details["cellId"] == ids[0]
    diff = prepared.details["diff"]
    assert "(cell order)" in diff and f"-markdown {ids[0]}: # Analysis\n" in diff
    assert f"+markdown {ids[0]}: # Analysis\n" in diff
    assert not result.error
    assert result.output.startswith(f"Moved cell {ids[0]} from index 0 to 4 (now cell 5) — written to")
    assert cells(nb_path) == before[1:] + before[:1]


async def test_moving_a_cell_to_where_it_is_is_refused(nb_path, ids, ctx) -> None:
    prepared, _ = await call(NotebookMoveCellTool(), {"path": "analysis.ipynb", "cell_id": ids[4], "index": 7}, ctx)
    assert prepared.error == f"notebook_move_cell: cell {ids[4]} is already at index 4"


# -- clear errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", notebook_tools(), ids=lambda t: t.name)
async def test_a_path_that_is_not_a_notebook_is_refused_naming_the_tool(ws, ctx, tool) -> None:
    write(ws / "notes.txt", "hello")
    args = {"path": "notes.txt", "cell_id": "a", "cell_ids": ["a"], "source": "x", "index": 0}
    args = {k: v for k, v in args.items() if k in tool.Args.model_fields}
    prepared, result = await call(tool, args, ctx)
    assert prepared.error == (f"{tool.name}: notes.txt is not a notebook (.ipynb); use the file tools for other "
                              "files")
    assert result.error and result.output == prepared.error


@pytest.mark.parametrize(("tool", "args"), [
    (NotebookEditCellTool(), {"cell_id": "nope", "source": "x"}),
    (NotebookDeleteCellTool(), {"cell_id": "nope"}),
    (NotebookMoveCellTool(), {"cell_id": "nope", "index": 0}),
    (NotebookInsertCellTool(), {"after_cell_id": "nope", "source": "x"}),
    (NotebookInsertCellTool(), {"before_cell_id": "nope", "source": "x"}),
    (NotebookRunCellsTool(), {"cell_ids": ["nope"]}),
], ids=lambda x: getattr(x, "name", ""))
async def test_an_unknown_cell_id_is_refused_listing_the_cells(nb_path, ids, ctx, tool, args) -> None:
    before = nb_path.read_bytes()
    prepared, result = await call(tool, {"path": "analysis.ipynb", **args}, ctx)
    assert prepared.error is not None
    assert prepared.error.startswith(f"{tool.name}: no cell with id 'nope' in analysis.ipynb; its cells are: "
                                     f"{ids[0]}, {ids[1]}")
    assert "(read the notebook to see them)" in prepared.error
    assert result.error and nb_path.read_bytes() == before


@pytest.mark.parametrize(("tool", "args", "says"), [
    (NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": "a"}, "source"),
    (NotebookMoveCellTool(), {"path": "analysis.ipynb", "cell_id": "a", "index": -1}, "index"),
    (NotebookReadTool(), {"path": "analysis.ipynb", "start": "first"}, "start"),
    (NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": []}, "cell_ids"),
    (NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": ["a"], "timeout_seconds": 0}, "timeout"),
    (NotebookInsertCellTool(), {"path": "analysis.ipynb", "source": "x", "cell_type": "python"}, "cell_type"),
    (NotebookReadTool(), "{not json", "not valid JSON"),
    (NotebookReadTool(), [1, 2], "JSON object"),
], ids=lambda x: getattr(x, "name", ""))
async def test_invalid_arguments_are_refused_naming_the_tool(nb_path, ids, ctx, tool, args, says) -> None:
    prepared, result = await call(tool, args, ctx)
    assert prepared.error is not None and prepared.error.startswith(f"{tool.name}: ") and says in prepared.error
    assert result.error


async def test_a_missing_or_broken_notebook_or_no_path_is_a_clear_error(ws, ctx) -> None:
    prepared, _ = await call(NotebookReadTool(), {"path": "gone.ipynb"}, ctx)
    assert prepared.error == f"notebook_read: notebook not found: {ws / 'gone.ipynb'}"
    write(ws / "broken.ipynb", '{"cells": [')
    prepared, _ = await call(NotebookReadTool(), {"path": "broken.ipynb"}, ctx)
    assert prepared.error is not None and prepared.error.startswith("notebook_read: broken.ipynb is not a valid "
                                                                    "notebook")
    prepared, _ = await call(NotebookEditCellTool(), {"cell_id": "a", "source": "x"}, ctx)
    assert prepared.error == "notebook_edit_cell: which notebook? pass `path` (a .ipynb file)"


async def test_without_a_path_the_sessions_notebook_is_used(nb_path, ids, ws) -> None:
    ctx = ToolContext(workspace_folders=[ws], default_notebook=nb_path)
    _, result = await call(NotebookReadTool(), {}, ctx)
    assert result.output.startswith("Notebook analysis.ipynb: 5 cells")


async def test_a_notebook_outside_the_workspace_is_flagged(tmp_path, ctx) -> None:
    outside = tmp_path / "outside.ipynb"
    make_notebook(outside)
    prepared, _ = await call(NotebookReadTool(), {"path": str(outside)}, ctx)
    assert prepared.error is None and prepared.outside_workspace


@pytest.mark.parametrize("tool", notebook_tools(), ids=lambda t: t.name)
async def test_outside_the_workspace_nothing_is_looked_at_before_approval(ws, ctx, tool) -> None:
    """No existence oracle: before the user approved, an outside notebook that exists, one that does not, one that
    is a directory and one whose cell does not exist all get the same answer — a call that asks, with no diff."""
    outside = ws.parent / "outside.ipynb"
    ids = make_notebook(outside)
    (ws.parent / "folder.ipynb").mkdir()
    args = {"cell_id": ids[1], "cell_ids": [ids[1]], "source": "z = 1", "index": 0}
    args = {k: v for k, v in args.items() if k in tool.Args.model_fields}
    seen = []
    for name, cell in (("outside", ids[1]), ("missing", ids[1]), ("folder", ids[1]), ("outside", "nope")):
        given = {**args, **({"cell_id": cell} if "cell_id" in args else {}),
                 **({"cell_ids": [cell]} if "cell_ids" in args else {})}
        prepared = await tool.prepare({"path": f"../{name}.ipynb", **given}, ctx)
        assert prepared.error is None and prepared.outside_workspace and prepared.details is None, prepared
        assert prepared.paths == [ws.parent / f"{name}.ipynb"]
        seen.append(prepared.summary.replace(f"{name}.ipynb", "X"))
    assert len(set(seen)) == 1 and "outside the workspace" in seen[0]
    # once approved, it is read (and a change made against what is there)
    prepared = await tool.prepare({"path": "../missing.ipynb", **args}, ctx)
    result = await tool.run(prepared, ctx)
    assert result.error and "notebook not found" in result.output


async def test_an_approved_outside_notebook_is_read_and_changed_with_its_diff(ws, ctx) -> None:
    outside = ws.parent / "outside.ipynb"
    ids = make_notebook(outside)
    _, result = await call(NotebookReadTool(), {"path": "../outside.ipynb"}, ctx)
    assert not result.error and "5 cells" in result.output and "x = 10" in result.output
    _, result = await call(NotebookEditCellTool(), {"path": "../outside.ipynb", "cell_id": ids[2],
                                                   "source": "y = x / 2"}, ctx)
    assert not result.error, result.output
    assert result.details is not None and "-y = x / 0\n+y = x / 2\n" in result.details["diff"]
    assert sources(outside)[2] == "y = x / 2"


async def test_only_a_cell_this_engine_signed_reads_as_written_by_the_assistant(nb_path, ids, ws) -> None:
    key = b"k" * 32
    ctx = ToolContext(workspace_folders=[ws], chat_id="chat-1", tool_call_id="call-1", provenance_key=key)
    await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[1], "source": "x = 11"}, ctx)
    await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[3], "source": "plt.plot([3])"}, ctx)
    made = cells(nb_path)[1].metadata["eca"]
    assert made["toolCallId"] == "call-1" and len(made["sig"]) == 64

    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[0].metadata["eca"] = {"chatId": "chat-1", "toolCallId": "call-1", "tool": "notebook_edit_cell",
                                   "action": "edited", "at": made["at"]}  # forged: no signature
    nb.cells[2].metadata["eca"] = dict(made)  # a real signature copied onto another cell
    nb.cells[3].source = "plt.plot([4])"  # the signed cell changed by someone else since
    nb.cells[4].metadata["eca"] = {**made, "sig": "0" * 64}  # a made-up signature
    nbformat.write(nb, nb_path)

    _, result = await call(NotebookReadTool(), {"path": "analysis.ipynb"}, ctx)
    headers = [line for line in result.output.splitlines() if line.startswith("### cell")]
    assert ["written by the assistant" in h for h in headers] == [False, True, False, False, False], headers
    _, result = await call(NotebookReadTool(), {"path": "analysis.ipynb"},
                           ToolContext(workspace_folders=[ws], provenance_key=b"o" * 32))  # another engine's key
    assert "written by the assistant" not in result.output


# -- the file changed between the diff and the write -------------------------------------------------------------


def edit_on_disk(path: Path, index: int, source: str) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.cells[index].source = source
    nbformat.write(nb, path)


async def test_another_cell_changed_since_the_diff_the_edit_still_applies(nb_path, ids, ctx) -> None:
    tool = NotebookEditCellTool()
    prepared = await tool.prepare({"path": "analysis.ipynb", "cell_id": ids[2], "source": "y = x / 2"}, ctx)
    edit_on_disk(nb_path, 1, "x = 99  # the user's")
    result = await tool.run(prepared, ctx)
    assert not result.error, result.output
    assert sources(nb_path)[1:3] == ["x = 99  # the user's", "y = x / 2"]


async def test_the_same_cell_changed_since_the_diff_is_refused_and_the_file_untouched(nb_path, ids, ctx) -> None:
    tool = NotebookEditCellTool()
    prepared = await tool.prepare({"path": "analysis.ipynb", "cell_id": ids[2], "source": "y = x / 2"}, ctx)
    edit_on_disk(nb_path, 2, "y = x / 3  # the user's")
    on_disk = nb_path.read_bytes()
    result = await tool.run(prepared, ctx)
    assert result.error and result.undo is None
    assert result.output.startswith(f"notebook_edit_cell: cell {ids[2]} changed since the diff was made; nothing was "
                                    "applied")
    assert f"Cell {ids[2]} now reads:\n```\ny = x / 3  # the user's\n```" in result.output
    assert nb_path.read_bytes() == on_disk


async def test_a_cell_deleted_since_the_diff_is_refused(nb_path, ids, ctx) -> None:
    tool = NotebookDeleteCellTool()
    prepared = await tool.prepare({"path": "analysis.ipynb", "cell_id": ids[1]}, ctx)
    edit_on_disk(nb_path, 1, "changed")
    result = await tool.run(prepared, ctx)
    assert result.error and "changed since the diff was made" in result.output
    assert len(cells(nb_path)) == 5


async def test_a_notebook_deleted_since_the_diff_is_a_clear_error(nb_path, ids, ctx) -> None:
    tool = NotebookEditCellTool()
    prepared = await tool.prepare({"path": "analysis.ipynb", "cell_id": ids[2], "source": "y = 1"}, ctx)
    nb_path.unlink()
    result = await tool.run(prepared, ctx)
    assert result.error and result.output == f"notebook_edit_cell: notebook not found: {nb_path}"
    assert not nb_path.exists()


async def test_another_writer_between_the_read_and_the_write_is_an_error_result(nb_path, ids, ctx, monkeypatch
                                                                                ) -> None:
    import eca_notebook.tools.notebook as module

    tool = NotebookEditCellTool()
    prepared = await tool.prepare({"path": "analysis.ipynb", "cell_id": ids[2], "source": "y = x / 2"}, ctx)
    real_read = module._read_file

    def read_then_someone_saves(path: Path) -> dict[str, Any]:
        doc = real_read(path)
        edit_on_disk(path, 1, "x = 99  # saved by JupyterLab meanwhile")
        return doc

    monkeypatch.setattr(module, "_read_file", read_then_someone_saves)
    try:
        result = await tool.run(prepared, ctx)
    except Exception as exc:  # noqa: BLE001 - what the bug looks like
        raise AssertionError(f"tool.run raised {type(exc).__name__}: {exc}") from None
    assert result.error and result.output.startswith("notebook_edit_cell: ")
    assert sources(nb_path)[1:3] == ["x = 99  # saved by JupyterLab meanwhile", "y = x / 0"]  # theirs, kept


async def test_a_folder_swapped_for_a_symlink_is_refused_as_an_error_result(ws, ctx) -> None:
    folder = ws / "data"
    folder.mkdir()
    path = folder / "analysis.ipynb"
    ids = make_notebook(path)
    tool = NotebookEditCellTool()
    _, done = await call(tool, {"path": "data/analysis.ipynb", "cell_id": ids[1], "source": "x = 1"}, ctx)
    assert done.undo is not None
    prepared = await tool.prepare({"path": "data/analysis.ipynb", "cell_id": ids[2], "source": "y = x / 2"}, ctx)
    folder.rename(ws / "elsewhere")
    folder.symlink_to(ws / "elsewhere")  # e.g. a git checkout, or a command approved in another chat
    moved = (ws / "elsewhere" / "analysis.ipynb").read_bytes()
    try:
        result = await tool.run(prepared, ctx)
    except Exception as exc:  # noqa: BLE001 - what the bug looks like
        raise AssertionError(f"tool.run raised {type(exc).__name__}: {exc}") from None
    assert result.error and result.output.startswith("notebook_edit_cell: ")
    try:
        await done.undo()
    except ValueError:
        pass
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"undo raised {type(exc).__name__}: {exc}") from None
    assert (ws / "elsewhere" / "analysis.ipynb").read_bytes() == moved


# -- undo ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "args"), [
    (NotebookEditCellTool(), {"cell_id": 1, "source": "x = 11\nprint(x)"}),
    (NotebookInsertCellTool(), {"after_cell_id": 2, "source": "print(y)"}),
    (NotebookDeleteCellTool(), {"cell_id": 3}),
    (NotebookMoveCellTool(), {"cell_id": 4, "index": 0}),
], ids=lambda x: getattr(x, "name", ""))
async def test_undo_restores_the_file(nb_path, ids, ctx, tool, args) -> None:
    original = nb_path.read_bytes()
    before = cells(nb_path)
    args = {k: ids[v] if k.endswith("cell_id") else v for k, v in args.items()}
    _, result = await call(tool, {"path": "analysis.ipynb", **args}, ctx)
    assert not result.error and result.undo is not None
    assert cells(nb_path) != before
    message = await result.undo()
    assert message == "Undone: analysis.ipynb is back as it was before this change (written to the .ipynb file)."
    assert cells(nb_path) == before  # ids, sources, outputs, metadata (provenance gone), order
    assert nb_path.read_bytes() == original


async def test_undo_after_the_cell_changed_again_is_refused(nb_path, ids, ctx) -> None:
    _, result = await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[2],
                                                    "source": "y = x / 2"}, ctx)
    assert result.undo is not None
    edit_on_disk(nb_path, 2, "y = x / 4  # the user's")
    on_disk = nb_path.read_bytes()
    with pytest.raises(ValueError, match=f"cell {ids[2]} was changed after this edit") as refused:
        await result.undo()
    assert "y = x / 4  # the user's" in str(refused.value)
    assert nb_path.read_bytes() == on_disk


# -- notebooks written before cell ids (nbformat 4.4) -------------------------------------------------------------

OLD = {
    "nbformat": 4, "nbformat_minor": 4,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Old notebook\n", "from 2019"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["import math\n", "math.pi"],
         "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                      "data": {"text/plain": ["3.141592653589793"]}}]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "source": ["print('hi')"], "outputs": []},
    ],
}


async def test_a_notebook_without_ids_is_read_and_edited_by_idx_ids(ws, ctx) -> None:
    path = write(ws / "old.ipynb", json.dumps(OLD, indent=1))
    original = path.read_bytes()
    _, read = await call(NotebookReadTool(), {"path": "old.ipynb"}, ctx)
    assert "### cell 0 · id idx0 · markdown\n# Old notebook\nfrom 2019" in read.output
    assert "### cell 1 · id idx1 · code · [1]\nimport math\nmath.pi\n--- outputs\n[result] 3.141592653589793" \
        in read.output
    assert "### cell 2 · id idx2 · code\nprint('hi')" in read.output
    assert path.read_bytes() == original  # reading writes nothing

    _, edited = await call(NotebookEditCellTool(), {"path": "old.ipynb", "cell_id": "idx2",
                                                    "source": "print('hello')"}, ctx)
    assert not edited.error, edited.output
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    assert [c.id for c in nb.cells] == ["idx0", "idx1", "idx2"]  # the ids the model saw stay valid
    assert [c.source for c in nb.cells] == ["# Old notebook\nfrom 2019", "import math\nmath.pi", "print('hello')"]
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "3.141592653589793"
    assert nb.metadata.kernelspec.name == "python3"

    _, moved = await call(NotebookMoveCellTool(), {"path": "old.ipynb", "cell_id": "idx0", "index": 2}, ctx)
    assert not moved.error
    assert [c.id for c in cells(path)] == ["idx1", "idx2", "idx0"]


# -- running cells ------------------------------------------------------------------------------------------------


class Runner:
    """A ``CellRunner`` standing in for a kernel: answers from a script, remembering what it was asked."""

    def __init__(self, runs: list[NotebookCellRun] | None = None, refuse: str | None = None) -> None:
        self.runs = runs or []
        self.refuse = refuse
        self.asked: list[tuple[Path, list[NotebookCell], list[str], float]] = []

    async def run(self, path: Path, cells: list[NotebookCell], cell_ids: list[str], timeout: float
                  ) -> list[NotebookCellRun]:
        self.asked.append((path, cells, cell_ids, timeout))
        if self.refuse:
            raise ValueError(self.refuse)
        return self.runs


async def test_running_without_a_front_end_or_a_runner_says_to_open_the_notebook(nb_path, ids, ctx) -> None:
    prepared, result = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": [ids[1]]}, ctx)
    assert prepared.error is None and prepared.summary == 'Running cell 2 of "analysis.ipynb"'  # numbered from 1
    assert result.error
    assert result.output == ("notebook_run_cells: no kernel to run this notebook in: open it in JupyterLab "
                             "(or run %eca in it)")


async def test_running_through_a_cell_runner_shows_statuses_and_outputs(nb_path, ids, ws) -> None:
    runner = Runner([
        NotebookCellRun(id=ids[1], index=1, status="ok", execution_count=5,
                        outputs=[{"output_type": "stream", "name": "stdout", "text": "10\n"}]),
        NotebookCellRun(id=ids[2], index=2, status="error", execution_count=6,
                        outputs=[{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                                  "traceback": ANSI_TRACEBACK}]),
        NotebookCellRun(id=ids[3], index=3, status="not-run"),
    ])
    ctx = ToolContext(workspace_folders=[ws], cell_runner=runner)
    prepared, result = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": ids[1:4],
                                                           "timeout_seconds": 30}, ctx)
    assert prepared.summary == 'Running cells 2, 3, 4 of "analysis.ipynb"'  # indexes 1-3, numbered from 1
    [(path, seen, asked, timeout)] = runner.asked
    assert path == nb_path and asked == ids[1:4] and timeout == 30.0
    assert [c.id for c in seen] == ids and seen[2].source == "y = x / 0"
    out = result.output
    assert result.error  # a cell failed: the call is reported as failed
    assert out.startswith("Ran in a kernel of its own (outputs saved to the .ipynb file):\n\n")
    assert f"### cell 1 · id {ids[1]} · ok · [5]\n[stdout] 10\n\n" in out
    assert f"### cell 2 · id {ids[2]} · error · [6]\n[error] ZeroDivisionError: division by zero\n" in out
    assert "----> 1 y = x / 0" in out and "\x1b" not in out
    assert out.endswith(f"### cell 3 · id {ids[3]} · not-run")


async def test_a_runs_plots_are_attached_for_the_model(nb_path, ids, ws) -> None:
    import base64
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(out, format="PNG")
    runner = Runner([NotebookCellRun(id=ids[1], index=1, status="ok", execution_count=5, outputs=[
        {"output_type": "display_data", "data": {"image/png": base64.b64encode(out.getvalue()).decode(),
                                                 "text/plain": "<Figure size 640x480>"}}])])
    ctx = ToolContext(workspace_folders=[ws], cell_runner=runner)
    _, result = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": [ids[1]]}, ctx)
    assert not result.error
    [image] = result.images
    assert (image.media_type, image.data, image.name) == ("image/png", out.getvalue(), "cell 1 image 1")
    assert result.output.endswith("\n\nImages attached, in order: cell 1 image 1.")


async def test_a_clean_run_is_not_an_error_and_says_when_there_was_no_output(nb_path, ids, ws) -> None:
    runner = Runner([NotebookCellRun(id=ids[1], index=1, status="ok", execution_count=1)])
    ctx = ToolContext(workspace_folders=[ws], cell_runner=runner)
    _, result = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": [ids[1]]}, ctx)
    assert not result.error
    assert result.output.endswith(f"### cell 1 · id {ids[1]} · ok · [1]\n(no output)")
    assert runner.asked[0][3] == 120.0  # the default timeout


async def test_a_runner_that_cannot_run_the_notebook_gives_its_reason(nb_path, ids, ws) -> None:
    runner = Runner(refuse="no kernel named 'julia-1.9' is installed")
    ctx = ToolContext(workspace_folders=[ws], cell_runner=runner)
    _, result = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": [ids[1]]}, ctx)
    assert result.error
    assert result.output == "notebook_run_cells: no kernel named 'julia-1.9' is installed"


# -- a front end that does not have the notebook open -------------------------------------------------------------


class ClosedFrontEnd:
    """A ``NotebookAccess`` with no notebook open: every answer sends the tools to the file."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def get_cells(self, path: Path) -> list[NotebookCell] | None:
        self.asked.append(f"get_cells {path.name}")
        return None

    async def apply_edit(self, path: Path, edits: Any, *, chat_id: str | None, tool_call_id: str | None) -> Any:
        raise AssertionError("not open: never asked to apply")

    async def run_cells(self, path: Path, cell_ids: list[str], timeout: float) -> Any:
        from eca_notebook.protocol import NotebookRunCellsResult

        self.asked.append(f"run_cells {path.name}")
        return NotebookRunCellsResult(open=False)


async def test_a_front_end_without_the_notebook_open_leaves_it_to_the_file(nb_path, ids, ws) -> None:
    front = ClosedFrontEnd()
    ctx = ToolContext(workspace_folders=[ws], notebooks=front)
    _, read = await call(NotebookReadTool(), {"path": "analysis.ipynb"}, ctx)
    assert "(read from the .ipynb file)" in read.output
    _, edited = await call(NotebookEditCellTool(), {"path": "analysis.ipynb", "cell_id": ids[2], "source": "y = 1"},
                           ctx)
    assert "written to the .ipynb file" in edited.output and sources(nb_path)[2] == "y = 1"
    _, ran = await call(NotebookRunCellsTool(), {"path": "analysis.ipynb", "cell_ids": [ids[1]]}, ctx)
    assert ran.error and "open it in JupyterLab" in ran.output
    assert "run_cells analysis.ipynb" in front.asked


# -- a kill during the write --------------------------------------------------------------------------------------

CRASH = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from eca_notebook.tools.base import ToolContext
    from eca_notebook.tools.notebook import NotebookEditCellTool

    path, cell_id, where = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    real = getattr(os, where)

    def die(*args, **kwargs):
        if where == "fsync":
            os.write(2, b"killed at fsync\\n")
        else:
            os.write(2, b"killed at replace\\n")
        os.kill(os.getpid(), signal.SIGKILL)

    async def main():
        ctx = ToolContext(workspace_folders=[path.parent], chat_id="c", tool_call_id="t")
        tool = NotebookEditCellTool()
        prepared = await tool.prepare({"path": str(path), "cell_id": cell_id, "source": "y = x / 2"}, ctx)
        assert prepared.error is None, prepared.error
        setattr(os, where, die)  # only now: reading and preparing ran as usual
        result = await tool.run(prepared, ctx)
        print("survived:", result.output)

    asyncio.run(main())
""")


@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_a_kill_during_the_write_leaves_the_old_notebook_intact(nb_path, ids, where) -> None:
    original = nb_path.read_bytes()
    proc = subprocess.run([sys.executable, "-c", CRASH, str(nb_path), ids[2], where], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)
    assert f"killed at {where}" in proc.stderr
    assert nb_path.read_bytes() == original
    nbformat.validate(nbformat.read(nb_path, as_version=4))
    # What a SIGKILL can leave: the temp file the new notebook was being written to (nothing runs to remove it).
    # It is hidden and does not end in .ipynb, so neither Jupyter's file browser nor a glob for notebooks sees it.
    left = sorted(p.name for p in nb_path.parent.iterdir() if p != nb_path)
    assert len(left) <= 1, left
    for name in left:
        assert re.fullmatch(r"\.analysis\.ipynb\.[0-9a-f]{8}\.eca-tmp", name), name
    assert list(nb_path.parent.glob("*.ipynb")) == [nb_path]


async def test_a_duplicated_cell_id_gets_an_id_that_lasts_from_read_to_edit(ws, ctx) -> None:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "id": "same"}
    doc = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
           "cells": [dict(cell, source="a = 1"), dict(cell, source="b = 2")]}  # e.g. cells pasted between files
    write(ws / "dup.ipynb", json.dumps(doc))
    _, read = await call(NotebookReadTool(), {"path": "dup.ipynb"}, ctx)
    second = re.findall(r"### cell 1 · id (\S+)", read.output)[0]
    assert second != "same"
    _, edited = await call(NotebookEditCellTool(), {"path": "dup.ipynb", "cell_id": second, "source": "b = 3"}, ctx)
    assert not edited.error, edited.output


async def test_a_cell_index_given_as_the_id_names_that_cell(ws, ctx) -> None:
    v4 = nbformat.v4
    nbformat.write(v4.new_notebook(cells=[v4.new_code_cell("a = 1"), v4.new_code_cell("b = 2")]), ws / "ix.ipynb")
    prepared, result = await call(NotebookEditCellTool(), {"path": "ix.ipynb", "cell_id": "1", "source": "b = 3"},
                                  ctx)
    assert not result.error, result.output
    assert [c.source for c in nbformat.read(ws / "ix.ipynb", as_version=4).cells] == ["a = 1", "b = 3"]
    _, missing = await call(NotebookEditCellTool(), {"path": "ix.ipynb", "cell_id": "7", "source": "x"}, ctx)
    assert missing.error and "no cell with id '7'" in missing.output
