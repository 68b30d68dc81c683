from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import ScriptedLLMServer
from eca_notebook.tools.base import Prepared, Tool, ToolContext, ToolResult

HAS_RG = shutil.which("rg") is not None
HAS_GIT = shutil.which("git") is not None


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace folder (its own directory, so tmp_path/outside can sit next to it)."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace_folders=[ws])


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


async def call(tool: Tool, args: Any, ctx: ToolContext) -> tuple[Prepared, ToolResult]:
    prepared = tool.prepare(args, ctx)
    result = await tool.run(prepared, ctx)
    return prepared, result


def all_dead(pids: list[int], within: float = 5.0) -> bool:
    """True once none of `pids` is alive. SIGKILL is delivered asynchronously, so a loaded machine may need a moment:
    poll (bounded) instead of checking once."""
    import time

    deadline = time.monotonic() + within
    while any(pid_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its parent to reap it counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
async def door(tmp_path: Path, llm: ScriptedLLMServer):
    """A server connection (the code-search and navigation tools' door) on a workspace with code, initialized."""
    from ..retrieval.conftest import make_workspace
    from ..serving.test_server_connection import session

    make_workspace(tmp_path / "code")
    async with session(tmp_path, llm, methods=("chat/contentReceived", "tool/serverUpdated")) as harness:
        await harness.client.notify("initialized")
        await harness.until(lambda m, p: m == "tool/serverUpdated")
        yield harness
