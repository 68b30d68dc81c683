"""Fixtures for the notebook door: a real IPython shell with ``%eca`` loaded, a session whose engine talks to the
scripted LLM server, and an isolated HOME/XDG tree (never the real ~/.config or ~/.cache).

``run_cell`` executes a cell the way ipykernel does (async cells awaited on the running loop), so the in-process
tests exercise the same code path as a real kernel; ``tests/notebook/test_kernel.py`` then checks the real thing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.notebook import _magics
from eca_notebook.notebook._session import NotebookSession
from eca_notebook.testing.llm_server import ScriptedLLMServer

MODEL = "scripted/demo"


@pytest.fixture(scope="module")
def _server():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def llm(_server: ScriptedLLMServer) -> ScriptedLLMServer:
    _server.clear()
    return _server


def engine_env(home: Path, llm: ScriptedLLMServer) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OLLAMA_API_URL": "http://127.0.0.1:9",  # nothing listens: no Ollama discovery
        "ECA_CONFIG": json.dumps({
            # (a variant for %eca -v; sent only when a prompt selects it)
            "providers": {"scripted": {"api": "openai-chat", "url": llm.url, "models": {"demo": {
                "variants": {"quick": {"reasoning_effort": "low"}}}}}},
            "defaultModel": MODEL,
            "localModel": False,
        }),
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(home if name == "HOME" else home / (".config" if "CONFIG" in name else ".cache")))
    monkeypatch.delenv("ECA_NOTEBOOK_DISPLAY", raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "data.csv").write_text("a,b\n1,2\n")
    return ws


@pytest.fixture
def shell(home: Path, llm: ScriptedLLMServer, workspace: Path):
    """The IPython shell with ``%eca`` loaded and a fresh session (user namespace cleared before and after)."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.reset(new_session=False)
    ip.run_line_magic("load_ext", "eca_notebook")
    session = NotebookSession(ip, workspace=workspace, env=engine_env(home, llm))
    _magics._state["session"] = session
    ip.eca_session = session  # handy in tests
    yield ip
    ip.run_line_magic("unload_ext", "eca_notebook")
    ip.reset(new_session=False)
    for name in ("rl_next_input",):
        if hasattr(ip, name):
            delattr(ip, name)


@pytest.fixture
def session(shell) -> NotebookSession:
    return shell.eca_session


async def run_cell(shell: Any, code: str) -> Any:
    """Execute a cell like ipykernel's ``do_execute``: transform, then await async cells on the running loop."""
    transformed = shell.transform_cell(code)
    if shell.should_run_async(code, transformed_cell=transformed, preprocessing_exc_tuple=None):
        return await shell.run_cell_async(code, transformed_cell=transformed, preprocessing_exc_tuple=None)
    return shell.run_cell(code)


@pytest.fixture
async def closing(session: NotebookSession):
    """For async tests: close the session's client on the test's loop before the loop goes away."""
    yield session
    await session.aclose()
