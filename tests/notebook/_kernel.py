"""A real kernel for the notebook door's tests: started with ``%eca`` loaded against the scripted LLM server, and
driven as a front end drives it (execute requests, iopub collected, widget clicks as comm messages).

Shared by the modules that need one (``test_kernel.py``, ``test_rewrite.py``): each starts its own, module-scoped.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eca_notebook.testing.llm_server import ScriptedLLMServer
from tests._kernels import ipc_kernel_manager, remove_ipc_dir

from .conftest import engine_env


class Kernel:
    def __init__(self, km: Any, kc: Any) -> None:
        self.km, self.kc = km, kc
        self.workspace: Path | None = None
        self.path: Path | None = None  # the notebook the kernel runs for
        self.iopub: list[dict[str, Any]] = []

    def pump(self, timeout: float = 0.05) -> None:
        while True:
            try:
                self.iopub.append(self.kc.get_iopub_msg(timeout=timeout))
            except queue.Empty:
                return

    def execute(self, code: str, *, allow_stdin: bool = True, timeout: float = 60) -> dict[str, Any]:
        """Send an execute_request and return its reply once its outputs are in: the reply comes on the shell
        channel, the outputs on iopub, and iopub may lag behind on a busy machine — the kernel's ``status: idle``
        for the request is the end of them (iopub traffic keeps being collected)."""
        msg_id = self.kc.execute(code, allow_stdin=allow_stdin)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_shell_msg(timeout=0.05)
            except queue.Empty:
                self.pump(0.01)
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                self.wait_for(lambda: any(m["msg_type"] == "status" and m["content"].get("execution_state") == "idle"
                                          and m["parent_header"].get("msg_id") == msg_id for m in self.iopub),
                              timeout=max(1.0, deadline - time.monotonic()))
                reply["msg_id"] = msg_id
                return reply
        raise AssertionError(f"no reply to {code!r}")

    def outputs(self, msg_id: str) -> list[dict[str, Any]]:
        return [m for m in self.iopub if m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] in ("stream", "display_data", "execute_result", "error")]

    def comm_states(self) -> dict[str, dict[str, Any]]:
        """Every widget's latest state, from comm_open and comm_msg updates."""
        states: dict[str, dict[str, Any]] = {}
        for m in self.iopub:
            if m["msg_type"] == "comm_open":
                states[m["content"]["comm_id"]] = dict(m["content"]["data"].get("state") or {})
            elif m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update":
                states.setdefault(m["content"]["comm_id"], {}).update(m["content"]["data"]["state"])
        return states

    def wait_for(self, predicate, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.05)
            value = predicate()
            if value:
                return value
        raise AssertionError("condition not reached in time")

    def click(self, comm_id: str) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id,
                                               "data": {"method": "custom", "content": {"event": "click"}}})
        self.kc.shell_channel.send(msg)


@contextlib.contextmanager
def running_kernel(root: Path, llm: ScriptedLLMServer, *, notebook: Path | None = None) -> Iterator[Kernel]:
    """A kernel in ``root/project`` with an isolated HOME under ``root/home``, ``%eca`` loaded; *notebook* is the
    notebook Jupyter says it runs for (``JPY_SESSION_NAME``), if any. Shut down on exit."""
    home = root / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    (home / ".cache").mkdir(parents=True, exist_ok=True)
    workspace = root / "project"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_URL")) and k != "ECA_CONFIG"}
    env.update(engine_env(home, llm))
    env.pop("ECA_NOTEBOOK_DISPLAY", None)
    if notebook is not None:
        env["JPY_SESSION_NAME"] = str(notebook)
    km = ipc_kernel_manager(kernel_name="python3")
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(env=env, cwd=str(workspace))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kernel = Kernel(km, kc)
        kernel.workspace = workspace
        kernel.path = notebook
        reply = kernel.execute("%load_ext eca_notebook")
        assert reply["content"]["status"] == "ok", reply["content"]
        yield kernel
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        remove_ipc_dir(km)
