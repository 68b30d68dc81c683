"""Fixtures of the engine tests: ``env`` (an isolated HOME and XDG tree for an engine started through the client)
and ``connected`` (an engine behind a ServerConnection over in-memory streams, for the plug-in tests)."""

from pathlib import Path

import pytest

from ..serving.test_server_connection import connected  # noqa: F401  (a fixture, registered by importing it)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of an engine that reads no real ~/.config or ~/.cache and discovers no Ollama."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9"}
