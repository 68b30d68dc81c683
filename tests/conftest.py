"""Fixtures shared by every test directory. A directory that needs something different (a module-scoped server,
another workspace layout) defines its own fixture of the same name, which overrides these."""

from __future__ import annotations

from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import ScriptedLLMServer


@pytest.fixture
def llm():
    """The scripted LLM server: a real HTTP server on 127.0.0.1 speaking every provider's wire format."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An isolated HOME (tests never read or write the real ~/.config or ~/.cache)."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "README.md").write_text("# demo project\n")
    return ws
