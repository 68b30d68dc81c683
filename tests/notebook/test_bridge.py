"""The kernel side of the ``eca-notebook`` comm: the page's handshake, requests addressed to the page that answered
first, cancellation, a page without the handler, and the kernel's own cell runner."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from eca_notebook.notebook._bridge import COMM_TARGET, CommNotebookAccess, KernelCellRunner, notebook_path
from eca_notebook.protocol import NotebookCell, NotebookCellEdit


class Page:
    """Two browser tabs showing the kernel's notebook: both see every comm message (iopub is a broadcast)."""

    def __init__(self, *, pages: tuple[str, ...] = ("tab-1", "tab-2"), answers: bool = True) -> None:
        self.pages = pages
        self.answers = answers
        self.handled: list[tuple[str, dict[str, Any]]] = []
        self.comm: Comm | None = None

    def create_comm(self, *, target_name: str, data: dict[str, Any]) -> Comm:
        assert target_name == COMM_TARGET and data == {"version": 1}
        self.comm = Comm(self)
        return self.comm


class Comm:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.sent: list[dict[str, Any]] = []
        self._on_msg: Any = None
        self._on_close: Any = None
        self.closed = False

    def on_msg(self, callback: Any) -> None:
        self._on_msg = callback
        if self.page.answers:  # every tab answers the opening
            loop = asyncio.get_running_loop()
            for tab in self.page.pages:
                loop.call_soon(self.reply, {"type": "ready", "page": tab})

    def on_close(self, callback: Any) -> None:
        self._on_close = callback

    def reply(self, data: dict[str, Any]) -> None:
        self._on_msg({"content": {"data": data}})

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)
        if data.get("type") == "cancel" or "method" not in data:
            return
        for tab in self.page.pages:  # each tab sees the request; only the addressed one acts on it
            if data["page"] != tab:
                continue
            self.page.handled.append((tab, data))
            if data["method"] == "notebook/getCells":
                cell = NotebookCell(id="a", index=0, cell_type="code", source="x = 1").dump()
                asyncio.get_running_loop().call_soon(self.reply, {"id": data["id"], "result": {
                    "open": True, "cells": [cell]}})
            elif data["method"] == "notebook/applyEdit":
                asyncio.get_running_loop().call_soon(self.reply, {"id": data["id"], "error": {"message": "read-only"}})
            # notebook/runCells: never answered (a cell that runs forever)

    def close(self) -> None:
        self.closed = True


async def test_requests_go_to_the_first_page_that_answered_only() -> None:
    page = Page()
    access = CommNotebookAccess(create_comm=page.create_comm)
    cells = await access.get_cells(Path("/w/a.ipynb"))
    assert cells is not None and cells[0].source == "x = 1"
    assert [tab for tab, _ in page.handled] == ["tab-1"]  # tab-2 saw it and left it alone
    assert page.handled[0][1]["params"] == {"path": "/w/a.ipynb"}
    await access.get_cells(Path("/w/a.ipynb"))
    assert [tab for tab, _ in page.handled] == ["tab-1", "tab-1"]  # one comm, one handshake


async def test_a_page_error_on_a_write_is_an_oserror_and_reads_fall_back_to_the_file() -> None:
    page = Page()
    access = CommNotebookAccess(create_comm=page.create_comm)
    try:
        await access.apply_edit(Path("/w/a.ipynb"), [NotebookCellEdit(action="delete", cell_id="a")], chat_id="c",
                                tool_call_id="t")
    except OSError as exc:
        assert "read-only" in str(exc)
    else:
        raise AssertionError("a refused write must not pass silently")


async def test_a_run_that_is_stopped_is_cancelled_on_the_page(monkeypatch) -> None:
    page = Page()
    access = CommNotebookAccess(create_comm=page.create_comm)
    task = asyncio.create_task(access.run_cells(Path("/w/a.ipynb"), ["a"], 60))
    while not page.handled:
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert page.comm is not None
    cancel = page.comm.sent[-1]
    assert cancel == {"type": "cancel", "id": page.handled[0][1]["id"], "page": "tab-1"}


async def test_no_page_handler_means_the_file_path_and_no_retry_for_a_while(monkeypatch) -> None:
    monkeypatch.setattr("eca_notebook.notebook._bridge.READY_TIMEOUT", 0.2)
    page = Page(answers=False)
    access = CommNotebookAccess(create_comm=page.create_comm)
    assert await access.get_cells(Path("/w/a.ipynb")) is None
    assert page.comm is not None and page.comm.closed
    first = page.comm
    assert await access.get_cells(Path("/w/a.ipynb")) is None
    assert page.comm is first  # not opened again at once: no 0.2 s wait per tool call


async def test_headless_runs_never_open_a_comm() -> None:
    page = Page()
    access = CommNotebookAccess(create_comm=page.create_comm, enabled=lambda: False)
    assert await access.get_cells(Path("/w/a.ipynb")) is None
    assert page.comm is None


async def test_runs_of_the_kernels_own_notebook_are_refused_while_a_cell_waits_for_the_prompt() -> None:
    page = Page()
    for own in (Path("/w/a.ipynb"), None):  # its own notebook, or one it cannot name: the page would queue them
        access = CommNotebookAccess(create_comm=page.create_comm, waiting=lambda: True, own_notebook=lambda: own)
        result = await access.run_cells(Path("/w/a.ipynb"), ["a"], 5)
        assert result.open and "without --wait" in (result.error or "")
    assert not [data for _, data in page.handled if data["method"] == "notebook/runCells"]


async def test_another_notebooks_cells_run_while_a_cell_waits_for_the_prompt(monkeypatch) -> None:
    """`%eca -y -w Make analysis.ipynb run top to bottom` (notebooks/07 under Run All in JupyterLab): the other
    notebook runs in a kernel of its own, and the page answers a waiting cell from ipykernel 7 on."""
    monkeypatch.setattr("eca_notebook.notebook._bridge.ipykernel_major", lambda: 7)
    page = Page()
    access = CommNotebookAccess(create_comm=page.create_comm, waiting=lambda: True,
                                own_notebook=lambda: Path("/w/tutorial.ipynb"))
    task = asyncio.create_task(access.run_cells(Path("/w/analysis.ipynb"), ["a"], 60))
    while not page.handled and not task.done():
        await asyncio.sleep(0.01)
    assert page.handled, f"refused: {task.result()}"
    assert page.handled[0][1]["method"] == "notebook/runCells"
    assert page.handled[0][1]["params"]["path"] == "/w/analysis.ipynb"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    monkeypatch.setattr("eca_notebook.notebook._bridge.ipykernel_major", lambda: 6)  # its answer would wait too
    result = await access.run_cells(Path("/w/analysis.ipynb"), ["a"], 5)
    assert result.open and "without --wait" in (result.error or "")


class Shell:
    def __init__(self, ns: dict[str, Any]) -> None:
        self.user_ns = ns
        self.display_pub = None


async def test_the_kernel_runs_its_own_notebook_in_its_namespace_and_another_elsewhere(tmp_path: Path) -> None:
    own = tmp_path / "own.ipynb"
    own.write_text("{}")
    shell = Shell({"__session__": str(own)})
    assert notebook_path(shell) == own

    class Elsewhere:
        calls: list[Path] = []

        async def run(self, path, cells, ids, timeout):
            self.calls.append(path)
            return []

    fallback = Elsewhere()
    runner = KernelCellRunner(shell, lambda: notebook_path(shell), fallback)
    cells = [NotebookCell(id="a", index=0, cell_type="code", source="y = 6 * 7\nprint(y)"),
             NotebookCell(id="b", index=1, cell_type="code", source="1/0"),
             NotebookCell(id="c", index=2, cell_type="code", source="z = 1")]
    runs = await runner.run(own, cells, ["a", "b", "c"], 10)
    assert [r.status for r in runs] == ["ok", "error", "not-run"]
    assert shell.user_ns["y"] == 42 and "z" not in shell.user_ns
    assert runs[0].outputs[0]["text"].strip() == "42"
    assert runs[1].outputs[0]["ename"] == "ZeroDivisionError"
    await runner.run(tmp_path / "other.ipynb", cells, ["a"], 10)
    assert fallback.calls == [tmp_path / "other.ipynb"]
