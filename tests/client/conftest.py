"""Fixtures for the Python client: a scripted LLM server, an isolated HOME/XDG, a workspace, and a started client.

The engine reads keys, URLs and XDG paths from the ``env`` it is given (never from ``os.environ``), so nothing here
touches the real ~/.config or ~/.cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.testing.llm_server import ScriptedLLMServer

MODEL = "fake/m1"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".cache").mkdir(parents=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OLLAMA_API_URL": "http://127.0.0.1:9",  # no Ollama discovery
    }


def provider_config(*servers: tuple[str, ScriptedLLMServer], **extra: Any) -> dict[str, Any]:
    """A config layer with one openai-chat provider per (id, server); models ``<id>/m1`` and ``<id>/m2``."""
    config: dict[str, Any] = {
        "localModel": False,
        "providers": {pid: {"api": "openai-chat", "url": server.url, "models": {"m1": {}, "m2": {}}}
                      for pid, server in servers},
        "defaultModel": f"{servers[0][0]}/m1",
    }
    config.update(extra)
    return config


@pytest.fixture
def config(llm: ScriptedLLMServer) -> dict[str, Any]:
    return provider_config(("fake", llm))


@pytest.fixture
async def client(workspace: Path, env: dict[str, str], config: dict[str, Any]):
    eca = await EcaClient.start(workspace=workspace, config=config, env=env)
    try:
        yield eca
    finally:
        await eca.aclose()
