"""Preloading the embedded model: only when it will answer (no provider is the default, localModel on)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eca_notebook.engine import preload_default_model
from eca_notebook.providers import local
from eca_notebook.testing.llm_server import ScriptedLLMServer


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
            "OLLAMA_API_URL": "http://127.0.0.1:9", **extra}


def runtime_running() -> bool:
    status = local.local_model_status()
    return status.available and local.get_local_runtime(status.model_path).running


async def test_nothing_is_loaded_when_a_real_provider_is_the_default(home: Path, workspace: Path,
                                                                    llm: ScriptedLLMServer):
    config = {"providers": {"fake": {"api": "openai-chat", "url": llm.url, "models": {"m1": {}}}}}
    assert await preload_default_model([workspace], env=env_for(home, ECA_CONFIG=json.dumps(config))) is None
    config["defaultModel"] = "fake/m1"
    assert await preload_default_model([workspace], env=env_for(home, ECA_CONFIG=json.dumps(config))) is None
    assert not runtime_running()


async def test_nothing_is_loaded_when_local_model_is_off(home: Path, workspace: Path):
    for value in (False, {"enabled": False}):
        env = env_for(home, ECA_CONFIG=json.dumps({"localModel": value}))
        assert await preload_default_model([workspace], env=env) is None
    assert not runtime_running()


@pytest.mark.local
@pytest.mark.timeout(300)
@pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message)
async def test_the_embedded_default_is_loaded(home: Path, workspace: Path):
    try:
        assert await preload_default_model([workspace], env=env_for(home)) == local.MODEL_ID
        assert runtime_running()
    finally:
        await local.shutdown_local_runtimes()
    assert not runtime_running()
