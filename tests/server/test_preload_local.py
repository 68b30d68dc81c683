"""The extension loads the embedded model in the background when it is the default (no provider configured)."""

from __future__ import annotations

import json

import pytest

from eca_notebook.providers import local

from .test_preload import extension, wait_done


@pytest.fixture
def eca_env(eca_env, monkeypatch):
    monkeypatch.setenv("ECA_CONFIG", json.dumps({"localModel": True}))
    for name in ("OPENAI_API_KEY", "OPENAI_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_API_URL", "http://127.0.0.1:9")
    return eca_env


@pytest.mark.local
@pytest.mark.timeout(300)
@pytest.mark.skipif(not local.local_model_status().available, reason=local.local_model_status().message)
async def test_the_embedded_default_is_loaded_in_the_background(jp_serverapp, api):
    await jp_serverapp._post_start()  # what `jupyter server` runs once its loop is up (pytest-jupyter doesn't)
    app = extension(jp_serverapp)
    status, _ = await api("GET", "health")  # the server answers while the model loads
    assert status == 200
    assert await wait_done(app._preload) == local.MODEL_ID
    runtime = local.get_local_runtime()
    assert runtime.running
    await app.stop_extension()
    assert not runtime.running
