"""The kernels of the notebooks open in JupyterLab, for the engine's live-kernel tools (``tools/live_kernel.py``).

Why here: the kernel client lives in the Jupyter server, next to the kernels — the session manager knows which kernel
a notebook's page uses, the kernel manager holds its connection info and tracks its execution state from IOPub. So the
tools work for every chat of the panel (the engine is in this process) without a round trip through the browser,
and nothing below the doors imports jupyter_server: this module implements the small ``NotebookKernels`` protocol.

One shell-only ``AsyncKernelClient`` of our own per kernel (its own session id: the user's front ends ignore its
messages), one request at a time. Busy means the server's tracked ``execution_state`` is ``busy`` — the user's cell
is running; a request is never sent then (it would queue behind the cell). A short grace period covers the status
lagging behind a request that just ended (ours, or the front end's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import time
from pathlib import Path
from typing import Any

from ..protocol import JsonObject
from ..tools.live_kernel import KernelBusy, NoKernel

__all__ = ["JupyterKernels"]

log = logging.getLogger(__name__)

BUSY_GRACE = 0.5  # seconds a "busy" state may take to turn idle before a request is refused as busy


class JupyterKernels:
    """:class:`~eca_notebook.tools.live_kernel.NotebookKernels` over a ``ServerApp``'s session and kernel managers."""

    def __init__(self, session_manager: Any, kernel_manager: Any, root_dir: str | os.PathLike[str]) -> None:
        self.sessions = session_manager
        self.kernels = kernel_manager
        self.root = Path(os.path.realpath(os.path.expanduser(str(root_dir))))
        self._clients: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def _kernel_id(self, notebook: Path) -> str:
        path = Path(os.path.realpath(notebook)) if notebook.is_absolute() else self.root / notebook
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            raise NoKernel(f"{notebook.name} is outside the Jupyter root") from None
        for session in await self.sessions.list_sessions():
            if str(session.get("path", "")).lstrip("/") == relative and session.get("kernel"):
                kernel_id = str(session["kernel"]["id"])
                if kernel_id in self.kernels:
                    return kernel_id
        raise NoKernel(f"{path.name} has no running kernel (open it in JupyterLab and start its kernel)")

    def _client(self, kernel_id: str) -> Any:
        for gone in [k for k in self._clients if k not in self.kernels]:  # kernels shut down since
            with contextlib.suppress(Exception):
                self._clients.pop(gone).stop_channels()
            self._locks.pop(gone, None)
        client = self._clients.get(kernel_id)
        if client is None:
            from jupyter_client.asynchronous.client import AsyncKernelClient

            client = AsyncKernelClient()
            client.load_connection_info(self.kernels.get_kernel(kernel_id).get_connection_info())
            client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
            self._clients[kernel_id] = client
        return client

    async def _wait_idle(self, kernel_id: str) -> None:
        deadline = time.monotonic() + BUSY_GRACE
        while True:
            state = getattr(self.kernels.get_kernel(kernel_id), "execution_state", "idle")
            if state == "dead":
                raise NoKernel("the notebook's kernel is dead (restart it)")
            if state != "busy":
                return
            if time.monotonic() >= deadline:
                raise KernelBusy()
            await asyncio.sleep(0.05)

    async def evaluate(self, notebook: Path, expression: str, *, timeout: float) -> JsonObject:
        kernel_id = await self._kernel_id(notebook)
        lock = self._locks.setdefault(kernel_id, asyncio.Lock())
        try:  # our own request (another chat's) may be running there: a short wait, as for a busy status
            await asyncio.wait_for(lock.acquire(), BUSY_GRACE)
        except TimeoutError:
            raise KernelBusy() from None
        try:
            await self._wait_idle(kernel_id)
            client = self._client(kernel_id)
            msg_id = client.execute("", silent=True, store_history=False, allow_stdin=False,
                                    user_expressions={"eca": expression}, reply=False)
            reply = await self._reply(client, msg_id, timeout)
        finally:
            lock.release()
        content = reply.get("content") or {}
        if content.get("status") != "ok":
            return {"status": "error", "ename": content.get("ename", "Error"), "evalue": content.get("evalue", "")}
        result = (content.get("user_expressions") or {}).get("eca")
        return result if isinstance(result, dict) else {"status": "error", "ename": "NoAnswer", "evalue": ""}

    @staticmethod
    async def _reply(client: Any, msg_id: str, timeout: float) -> dict[str, Any]:
        """The shell reply to *msg_id* (earlier requests' late replies are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            try:
                msg: dict[str, Any] = await client.get_shell_msg(timeout=left)
            except Exception as exc:  # queue.Empty from jupyter_client
                if type(exc).__name__ == "Empty":
                    raise TimeoutError from None
                raise
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                return msg

    async def interrupt(self, notebook: Path) -> None:
        with contextlib.suppress(Exception):
            result = self.kernels.interrupt_kernel(await self._kernel_id(notebook))
            if inspect.isawaitable(result):
                await result

    def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            with contextlib.suppress(Exception):
                client.stop_channels()
