"""Offline inline completion and rewrite: with no key and no provider, ``eca-notebook server`` completes and
rewrites with the embedded model (SmolLM2-135M: the tests assert structure and speed of the path, never wisdom)."""

from __future__ import annotations

import json

import pytest

from eca_notebook.providers.local import MODEL_ID, local_model_status

from .conftest import server_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local,
    pytest.mark.timeout(400),  # real generations on a busy 2-core machine
    pytest.mark.skipif(not local_model_status().available, reason=local_model_status().message),
]


def offline_env(home):
    return server_env(home, None, OLLAMA_API_URL="http://127.0.0.1:9", ECA_CONFIG=json.dumps({}))


async def test_completion_and_rewrite_on_the_embedded_model(spawn, home, workspace):
    eca = await spawn(env=offline_env(home))
    eca.endpoint.register("rewrite/contentReceived", lambda params: eca._record("rewrite/contentReceived", params))
    init = await eca.initialize(workspace)
    assert init["chatDefaultModel"] == MODEL_ID

    doc = "def add(a, b):\n    return \n"
    answers = []
    for version in range(3):  # the first one loads the model
        answers.append(await eca.request("completion/inline", {
            "docText": doc, "docVersion": version, "position": {"line": 2, "character": 12}}, timeout=300))
    for answer in answers:
        if "items" in answer:
            [item] = answer["items"]
            assert item["text"].strip() and "\n\n" not in item["text"]
            assert item["range"]["start"] == {"line": 2, "character": 12}
        else:  # the tiny model may find nothing: an info, never a failure
            assert answer["error"]["type"] == "info", answer

    result = await eca.request("rewrite/prompt", {
        "id": "r1", "text": "def add(a,b):\n  return a+b", "prompt": "Add type hints.",
        "range": {"start": {"line": 1, "character": 1}, "end": {"line": 2, "character": 15}}})
    assert result == {"status": "prompting", "model": MODEL_ID}
    await eca.wait_for(lambda m: m.method == "rewrite/contentReceived" and m.params["content"]["type"] == "finished",
                       timeout=300)
    kinds = [p["content"]["type"] for p in eca.of("rewrite/contentReceived")]
    assert kinds[0] == "started" and kinds[-1] == "finished" and "error" not in kinds
    assert "text" in kinds
