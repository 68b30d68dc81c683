"""How a ``%eca`` reaches its notebook: the page that shows it (over a comm), or the kernel itself.

The notebook tools need a front end to change an open notebook as the user's own edit (undoable, no "file changed
on disk" dialog). The kernel's engine has no connection to JupyterLab's panel, but the kernel has one to the page
showing its notebook: Jupyter comms. The panel extension registers the comm target ``eca-notebook`` on every
notebook kernel and answers the same ``notebook/getCells`` / ``notebook/applyEdit`` / ``notebook/runCells`` requests
the panel's WebSocket does, so cells land exactly where the model asks, not only next to the running cell.

Where no such page answers (the classic notebook, VS Code, nbclient/papermill), :class:`CommNotebookAccess` answers
"not open" and the tools use the ``.ipynb`` file; :class:`KernelCellRunner` then runs the kernel's *own* notebook's
cells in its namespace.

Two pages may show one kernel (two browser tabs): each answers the comm's opening, the first one is kept, and
requests name it (``page``) so no edit is applied twice.

Comm messages from the page reach the kernel between cells (or during an async cell), like the widget's approval
clicks. A run of the kernel's *own* notebook's cells while a ``%eca --wait`` cell waits is refused rather than
deadlocking (the page would queue them behind that cell); another notebook's cells run in their own kernel, so they
go ahead where the page can answer during a waiting cell (ipykernel 7 and later).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..protocol import (
    JsonObject,
    NotebookApplyEditParams,
    NotebookApplyEditResult,
    NotebookCell,
    NotebookCellEdit,
    NotebookCellRun,
    NotebookGetCellsParams,
    NotebookGetCellsResult,
    NotebookRunCellsParams,
    NotebookRunCellsResult,
)
from ..tools.notebook import run_in_order
from ._display import ipykernel_major
from ._kernel_tools import run_in_namespace

__all__ = ["COMM_TARGET", "CommNotebookAccess", "KernelCellRunner", "notebook_path"]

log = logging.getLogger(__name__)

COMM_TARGET = "eca-notebook"
READY_TIMEOUT = 5.0  # the page answers the comm's opening at once when the panel extension is loaded
RETRY_AFTER = 30.0  # after no page answered: try again later (the page may have been reloaded meanwhile)
REQUEST_TIMEOUT = 60.0
RUN_GRACE = 30.0


def notebook_path(shell: Any) -> Path | None:
    """The notebook this kernel runs for: Jupyter's ``__session__`` (``JPY_SESSION_NAME``), VS Code's
    ``__vsc_ipynb_file__``; None in a console or a plain script."""
    ns = getattr(shell, "user_ns", {}) or {}
    for value in (ns.get("__session__"), ns.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(value, str) and value.endswith(".ipynb"):
            path = Path(value).expanduser()
            if path.is_absolute() and path.is_file():
                return path
    return None


class CommNotebookAccess:
    """:class:`~eca_notebook.tools.notebook.NotebookAccess` through a comm to the page showing the notebook."""

    def __init__(self, *, waiting: Callable[[], bool] = lambda: False, enabled: Callable[[], bool] = lambda: True,
                 create_comm: Callable[..., Any] | None = None,
                 own_notebook: Callable[[], Path | None] = lambda: None) -> None:
        self.waiting = waiting
        self.own_notebook = own_notebook  # the kernel's own notebook (None: unknown)
        self.enabled = enabled  # False in headless runs (nbclient): no page, don't wait for one
        self._create_comm = create_comm
        self._comm: Any = None
        self._ready: asyncio.Future[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._unavailable_until = 0.0
        self._page: str | None = None  # the page that answered first: every request is addressed to it

    # -- the comm ----------------------------------------------------------------------------------------------

    async def _connect(self) -> bool:
        if self._comm is not None and self._ready is not None and self._ready.done():
            return True
        if time.monotonic() < self._unavailable_until or not self.enabled():
            return False
        loop = asyncio.get_running_loop()
        if self._ready is None or self._ready.done():
            self._ready = loop.create_future()
            try:
                create: Any = self._create_comm
                if create is None:
                    import comm as comm_package

                    create = comm_package.create_comm
                comm = create(target_name=COMM_TARGET, data={"version": 1})
            except Exception as exc:  # noqa: BLE001 - no kernel, no comm support: the file path
                log.info("no comm to the notebook's page: %s", exc)
                self._unavailable_until = time.monotonic() + RETRY_AFTER
                return False
            comm.on_msg(lambda msg: self._on_msg(loop, msg))
            comm.on_close(lambda msg: loop.call_soon_threadsafe(self._closed))
            self._comm = comm
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT)
        except TimeoutError:  # (before OSError: TimeoutError is one)
            log.info("the notebook's page did not answer the %s comm: using the file", COMM_TARGET)
            self._drop()
            return False
        except OSError:  # the page closed the comm: no handler there
            return False
        return True

    def _on_msg(self, loop: asyncio.AbstractEventLoop, msg: dict[str, Any]) -> None:
        data = ((msg or {}).get("content") or {}).get("data") or {}
        loop.call_soon_threadsafe(self._dispatch, data)

    def _dispatch(self, data: JsonObject) -> None:
        if data.get("type") == "ready":
            if self._ready is not None and not self._ready.done():
                self._page = str(data.get("page") or "")
                self._ready.set_result(None)
            return
        request_id = data.get("id", -1)
        future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        if "error" in data:
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else None
            future.set_exception(OSError(str(message or error)))
        else:
            future.set_result(data.get("result"))

    def _closed(self) -> None:
        """The page closed the comm (JupyterLab closes one whose target nobody registered: no panel extension)."""
        self._comm = None
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(OSError("the notebook's page has no eca-notebook handler"))
            self._unavailable_until = time.monotonic() + RETRY_AFTER
        for future in self._pending.values():
            if not future.done():
                future.set_exception(OSError("the notebook's page closed the connection"))
        self._pending.clear()

    def _drop(self) -> None:
        comm, self._comm, self._ready = self._comm, None, None
        self._unavailable_until = time.monotonic() + RETRY_AFTER
        if comm is not None:
            try:
                comm.close()
            except Exception:  # noqa: BLE001 - already closed
                pass

    async def _request(self, method: str, params: JsonObject, timeout: float) -> Any:
        id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        try:
            self._comm.send({"id": id, "method": method, "params": params, "page": self._page})
            return await asyncio.wait_for(future, timeout)
        except (TimeoutError, asyncio.CancelledError):
            if self._comm is not None:  # the page interrupts a run it was asked for
                self._comm.send({"type": "cancel", "id": id, "page": self._page})
            raise
        finally:
            self._pending.pop(id, None)

    # -- NotebookAccess ------------------------------------------------------------------------------------------

    async def get_cells(self, path: Path) -> list[NotebookCell] | None:
        if not await self._connect():
            return None
        try:
            raw = await self._request("notebook/getCells", NotebookGetCellsParams(path=str(path)).dump(),
                                      REQUEST_TIMEOUT)
            result = NotebookGetCellsResult.model_validate(raw or {})
        except Exception as exc:  # noqa: BLE001 - read the file instead
            log.info("notebook/getCells over the comm failed: %s", exc)
            return None
        return list(result.cells) if result.open else None

    async def apply_edit(self, path: Path, edits: list[NotebookCellEdit], *, chat_id: str | None,
                         tool_call_id: str | None) -> NotebookApplyEditResult:
        if not await self._connect():
            return NotebookApplyEditResult(open=False)
        params = NotebookApplyEditParams(path=str(path), edits=edits, chat_id=chat_id, tool_call_id=tool_call_id)
        try:
            raw = await self._request("notebook/applyEdit", params.dump(), REQUEST_TIMEOUT)
        except Exception as exc:
            raise OSError(f"the notebook's page could not apply the edit: {exc}") from None
        return NotebookApplyEditResult.model_validate(raw or {})

    async def run_cells(self, path: Path, cell_ids: list[str], timeout: float) -> NotebookRunCellsResult:
        if not await self._connect():
            return NotebookRunCellsResult(open=False)
        if self.waiting() and self._blocked_by_the_waiting_cell(path):
            return NotebookRunCellsResult(open=True, error="a %eca cell is waiting for this prompt, so the kernel "
                                                           "cannot run other cells now; run %eca without --wait")
        params = NotebookRunCellsParams(path=str(path), cell_ids=cell_ids, timeout_ms=int(timeout * 1000))
        try:
            raw = await self._request("notebook/runCells", params.dump(), timeout + RUN_GRACE)
        except TimeoutError:
            return NotebookRunCellsResult(open=True, error=f"the cells did not finish within {timeout:g} s")
        except Exception as exc:
            raise OSError(f"the notebook's page could not run the cells: {exc}") from None
        return NotebookRunCellsResult.model_validate(raw or {})


    def _blocked_by_the_waiting_cell(self, path: Path) -> bool:
        """Would running `path`'s cells wait for the ``%eca --wait`` cell that waits for this very run? Yes for the
        kernel's own notebook (or an unknown one): the page sends them to this kernel, behind that cell. Another
        notebook's cells run in another kernel (the page's, or one of their own when it is not open); the page's
        answer reaches a waiting cell from ipykernel 7 on (on older ones comm messages wait for the cell too)."""
        own = self.own_notebook()
        return own is None or own.resolve() == path.resolve() or ipykernel_major() < 7


class KernelCellRunner:
    """Runs this kernel's own notebook's cells in its namespace, when no page answers (outputs are returned to
    the model, not saved: the file belongs to whatever front end shows it). The code runs on the kernel's thread
    like ``run_python``, so the timeout is not enforced here: the kernel's Interrupt stops a runaway cell.

    Another notebook's cells never run in this namespace: they go to *fallback* (a kernel of their own)."""

    def __init__(self, shell: Any, notebook: Callable[[], Path | None], fallback: Any = None) -> None:
        self.shell = shell
        self.notebook = notebook
        self.fallback = fallback

    async def aclose(self) -> None:
        if self.fallback is not None:
            await self.fallback.aclose()

    async def run(self, path: Path, cells: list[NotebookCell], cell_ids: list[str], timeout: float
                  ) -> list[NotebookCellRun]:
        own = self.notebook()
        if own is None or own.resolve() != path.resolve():
            if self.fallback is None:
                raise ValueError(f"this kernel runs {own.name if own else 'no notebook'}, not {path.name}: open "
                                 f"{path.name} in JupyterLab to run its cells")
            runs: list[NotebookCellRun] = await self.fallback.run(path, cells, cell_ids, timeout)
            return runs
        return await run_in_order(cells, cell_ids, self._run_one)

    async def _run_one(self, cell: NotebookCell) -> NotebookCellRun:
        output, failed = run_in_namespace(self.shell, cell.source)
        kind: JsonObject = {"output_type": "stream", "name": "stdout", "text": output}
        if failed:
            last = output.strip().splitlines()[-1] if output.strip() else "Error"
            name, _, value = last.partition(": ")
            kind = {"output_type": "error", "ename": name, "evalue": value, "traceback": [*output.splitlines()]}
        return NotebookCellRun(id=cell.id, index=cell.index, status="error" if failed else "ok", outputs=[kind])
