"""Kernels for the suite on IPC sockets, not TCP ports.

jupyter_client picks a kernel's five TCP ports by binding port 0 and closing it; the kernel binds them a moment
later. With three workers, their labs, browsers and servers all opening connections, another process took one of
those ports in between often enough to fail a full run now and then: the kernel died with "Address already in use",
JupyterLab waited for a ``kernel_info`` reply that never came and the test timed out (a clean-clone run at
3c601d5). Unix sockets in
a directory of their own cannot collide. Their paths must fit ``sun_path`` (107 bytes), hence a short directory
under /tmp rather than pytest's deep ``tmp_path``.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

__all__ = ["IPC_KERNELS", "ipc_dir", "ipc_kernel_manager", "ipc_transport", "remove_ipc_dir"]

#: Jupyter config for a server whose kernels use IPC; its runtime dir must be short (:func:`ipc_dir`).
IPC_KERNELS: dict[str, Any] = {"KernelManager": {"transport": "ipc"}}


def ipc_dir() -> str:
    """A new private directory with a short path, for a runtime dir or a kernel's sockets."""
    return tempfile.mkdtemp(prefix="jk-", dir="/tmp")


def ipc_transport(folder: str) -> dict[str, str]:
    """A ``KernelManager``'s settings for sockets in *folder* (from :func:`ipc_dir`)."""
    return {"transport": "ipc", "ip": f"{folder}/k"}


def ipc_kernel_manager(**kwargs: Any) -> Any:
    """A ``KernelManager`` (not started) whose sockets are in a directory of their own (``km.ipc_dir``); call
    :func:`remove_ipc_dir` once it is shut down."""
    from jupyter_client import KernelManager

    folder = ipc_dir()
    manager = KernelManager(**ipc_transport(folder), **kwargs)
    manager.ipc_dir = folder
    return manager


def remove_ipc_dir(manager: Any) -> None:
    """Remove the socket directory of a manager from :func:`ipc_kernel_manager`."""
    shutil.rmtree(manager.ipc_dir, ignore_errors=True)
