"""Running the cells of a notebook no front end has open: a kernel of its own, as nbclient/papermill would.

The ECA stdio door (an editor without a notebook front end) and the panel's engine for a notebook that is not open
in JupyterLab have no kernel to run a cell in. :class:`OwnKernelRunner` starts one per notebook on its first run —
the kernel its metadata names, in the notebook's folder — and keeps it for the session, so cells run one after the
other share their state like in Jupyter. The outputs are saved into the ``.ipynb`` (validated, atomic), so the user
opening it later sees what the model saw. The engine shuts the kernels down when it closes.

A timeout or a Stop interrupts the kernel (the cell fails with ``KeyboardInterrupt``, the kernel lives on).

On POSIX the kernels talk over Unix sockets in a private directory (mode 0700, removed at close), not TCP: no other
user of the machine can reach them, and no other process can take a port between jupyter_client choosing it and the
kernel binding it (which kills the kernel with "Address already in use" on a busy machine).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .._fileio import atomic_write
from ..protocol import JsonObject, NotebookCell, NotebookCellRun
from .notebook import run_in_order

__all__ = ["OwnKernelRunner"]

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0
_SOCKET_PATH_MAX = 104  # sun_path: 108 bytes on Linux, 104 on macOS and the BSDs (with the NUL)
_OUTPUT_TYPES = ("stream", "execute_result", "display_data", "error")


class OwnKernelRunner:
    """A :class:`~eca_notebook.tools.notebook.CellRunner` with one kernel per notebook path."""

    def __init__(self) -> None:
        self._kernels: dict[Path, tuple[Any, Any]] = {}
        self._locks: dict[Path, asyncio.Lock] = {}
        self._sockets: str | None = None  # the private directory of the kernels' Unix sockets (POSIX)
        self._started = 0

    def _transport(self) -> dict[str, str]:
        """The next kernel's transport: Unix sockets of its own on POSIX, TCP where zmq has no IPC (Windows) or
        where the temporary directory's path is too long for a socket's (``sun_path``: 104 bytes on macOS)."""
        if os.name != "posix":
            return {}
        if self._sockets is None:
            self._sockets = tempfile.mkdtemp(prefix="eca-kernels-")
        self._started += 1
        prefix = os.path.join(self._sockets, str(self._started))
        if len(os.fsencode(prefix)) + len("-65535") >= _SOCKET_PATH_MAX:
            return {}
        return {"transport": "ipc", "ip": prefix}

    async def _kernel(self, path: Path) -> tuple[Any, Any]:
        found = self._kernels.get(path)
        if found is not None and await found[0].is_alive():
            return found
        try:
            from jupyter_client.manager import AsyncKernelManager
        except ImportError:
            raise ValueError("running a notebook that is not open in JupyterLab needs jupyter_client "
                             "(pip install 'eca-notebook[notebook]')") from None
        import nbformat

        nb: Any = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        name = ((nb.metadata.get("kernelspec") or {}).get("name")) or "python3"
        manager = AsyncKernelManager(kernel_name=name, **self._transport())
        # nothing inherited: in the stdio door our stdout is the ECA stream, which a kernel must never write to, and
        # in a notebook the kernel's start-up warnings would land in the user's cell
        await manager.start_kernel(cwd=str(path.parent), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=START_TIMEOUT)
        except Exception:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
            raise
        self._kernels[path] = (manager, client)
        return manager, client

    async def run(self, path: Path, cells: list[NotebookCell], cell_ids: list[str], timeout: float
                  ) -> list[NotebookCellRun]:
        path = path.resolve()
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:  # one run at a time per notebook, as in Jupyter
            manager, client = await self._kernel(path)
            runs = await run_in_order(cells, cell_ids, lambda cell: self._run_one(manager, client, cell, timeout))
            await asyncio.to_thread(_save_outputs, path, runs)
            return runs

    async def _run_one(self, manager: Any, client: Any, cell: NotebookCell, timeout: float) -> NotebookCellRun:
        from nbformat.v4 import output_from_msg

        outputs: list[JsonObject] = []

        def hook(msg: JsonObject) -> None:
            if msg.get("msg_type") in _OUTPUT_TYPES:
                outputs.append(dict(output_from_msg(msg)))  # type: ignore[no-untyped-call]

        status = "ok"
        count = None
        try:
            reply = await client.execute_interactive(cell.source, output_hook=hook, timeout=timeout,
                                                     allow_stdin=False, store_history=True)
        except TimeoutError:
            await manager.interrupt_kernel()
            status = "timeout"
        except asyncio.CancelledError:  # Stop: interrupt what the kernel is doing, then stop as asked
            await manager.interrupt_kernel()
            raise
        else:
            content = reply.get("content") or {}
            count = content.get("execution_count")
            status = "ok" if content.get("status") == "ok" else "error"
        return NotebookCellRun(id=cell.id, index=cell.index, status=status,  # type: ignore[arg-type]
                               execution_count=count, outputs=outputs)

    async def aclose(self) -> None:
        kernels, self._kernels = self._kernels, {}
        for manager, client in kernels.values():
            try:
                client.stop_channels()
                await manager.shutdown_kernel(now=True)
            except Exception:  # noqa: BLE001 - shutting down anyway
                log.debug("kernel shutdown failed", exc_info=True)
        sockets, self._sockets = self._sockets, None
        if sockets is not None:
            shutil.rmtree(sockets, ignore_errors=True)


def _save_outputs(path: Path, runs: list[NotebookCellRun]) -> None:
    """Write the runs' outputs and execution counts into the file (the cells as they are now, matched by id)."""
    import nbformat

    nb: Any = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    by_id = {run.id: run for run in runs if run.status != "not-run"}
    changed = False
    for cell in nb.cells:
        run = by_id.get(cell.get("id"))
        if run is not None and cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(o) for o in run.outputs]  # type: ignore[no-untyped-call]
            cell.execution_count = run.execution_count
            changed = True
    if changed:
        nbformat.validate(nb)
        atomic_write(path, nbformat.writes(nb) + "\n")  # type: ignore[no-untyped-call]
