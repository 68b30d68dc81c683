"""Connecting a model (engine/provider_setup.py): the user's file written 0600 atomically and merged, the key never
handed back, ``${env:NAME}``, and the one-token Test in every wire format against the scripted LLM server."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.provider_setup import (
    ConfigEditError,
    ProviderDraft,
    SetupError,
    check_connection,
    list_models,
    provider_summaries,
    remove_provider,
    save_provider,
)
from eca_notebook.testing.llm_server import Error, Reply, ScriptedLLMServer, Text

KEY = "sk-proj-PANELKEY-0123456789abcdef"


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.sent.append((method, params))

    def updates(self) -> list[dict[str, Any]]:
        return [p["chat"] for m, p in self.sent if m == "config/updated"]


@pytest.fixture
def llm():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
async def engine(env, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    engine = Engine(EngineOptions(workspace_folders=[workspace], env={**env, "ECA_CONFIG": '{"localModel": false}'}))
    yield engine
    await engine.aclose()


def user_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "eca" / "config.json"


def compatible(llm: ScriptedLLMServer, **kw: Any) -> ProviderDraft:
    fields: dict[str, Any] = {"kind": "openai-compatible", "id": "my-server", "url": llm.url + "/v1", "key": KEY,
                              "models": ["qwen3"], **kw}
    return ProviderDraft(**fields)


async def test_saved_provider_is_merged_into_the_user_file_0600_and_applied(engine, env, llm):
    path = user_file(env)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"x": {"command": "x", "disabled": True}}, "chatRetentionDays": 3,
                                "providers": {"other": {"api": "openai-chat", "url": "http://127.0.0.1:1",
                                                        "models": {"m": {}}}}}))
    os.chmod(path, 0o644)
    recorder = Recorder()
    engine.add_listener(recorder)

    written = await save_provider(engine, compatible(llm), default_model="my-server/qwen3")

    assert written == path
    assert path.stat().st_mode & 0o777 == 0o600  # narrowed: it holds a key now
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # atomic: no temp file left
    data = json.loads(path.read_text())
    assert data["mcpServers"] == {"x": {"command": "x", "disabled": True}} and data["chatRetentionDays"] == 3
    assert data["providers"]["other"]["url"] == "http://127.0.0.1:1"
    assert data["providers"]["my-server"] == {"api": "openai-chat", "url": llm.url + "/v1", "key": KEY,
                                              "models": {"qwen3": {}}}
    assert data["defaultModel"] == "my-server/qwen3"
    # the engine took it at once: the clients got the new model, selected
    update = recorder.updates()[-1]
    assert "my-server/qwen3" in update["models"] and update["selectModel"] == "my-server/qwen3"
    assert KEY not in json.dumps(recorder.sent)
    assert not (engine.workspace_folders[0] / ".eca").exists()  # never the workspace's file
    provider, info = engine.registry.resolve("my-server/qwen3")
    assert info.name == "qwen3" and provider is not None
    # the summary never holds the key
    [other, mine] = await provider_summaries(engine)
    assert mine.id == "my-server" and mine.kind == "openai-compatible" and mine.key_source == "config"
    assert mine.key_hint == "sk-proj-…cdef" and KEY not in json.dumps(asdict(mine))
    assert "sk-proj-…cdef" in engine.doctor() and KEY not in engine.doctor()
    assert other.key_source is None


async def test_a_new_user_file_is_created_0600(engine, env, llm):
    await save_provider(engine, ProviderDraft(kind="openai", key=KEY), default_model="openai/gpt-4.1")
    path = user_file(env)
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {"providers": {"openai": {"key": KEY}}, "defaultModel": "openai/gpt-4.1"}
    assert engine.selected_model == "openai/gpt-4.1"


async def test_key_named_by_environment_variable(env, tmp_path, llm):
    engine = Engine(EngineOptions(env={**env, "ECA_CONFIG": '{"localModel": false}', "MY_LLM_KEY": KEY}))
    try:
        await save_provider(engine, compatible(llm, key=None, key_env="MY_LLM_KEY"), default_model="my-server/qwen3")
        data = json.loads(user_file(env).read_text())
        assert data["providers"]["my-server"]["key"] == "${env:MY_LLM_KEY}"
        assert KEY not in user_file(env).read_text()
        assert engine.registry.providers["my-server"].key == KEY
        [summary] = await provider_summaries(engine)
        assert summary.key_source == "env" and summary.key_env == "MY_LLM_KEY"
        llm.enqueue(Reply([Text("ok")]))
        result = await check_connection(engine, ProviderDraft(kind="openai-compatible", id="my-server"), "qwen3")
        assert result.ok, result
        assert llm.requests[-1].headers["authorization"] == f"Bearer {KEY}"  # the saved key, not sent by the form
        with pytest.raises(SetupError) as info:
            await check_connection(engine, compatible(llm, key=None, key_env="NOT_SET_ANYWHERE"), "qwen3")
        assert info.value.field == "key_env" and "not set" in info.value.message
    finally:
        await engine.aclose()


async def test_saving_again_without_a_key_keeps_the_saved_one(engine, env, llm):
    await save_provider(engine, compatible(llm))
    await save_provider(engine, compatible(llm, key=None, models=["other"]))
    entry = json.loads(user_file(env).read_text())["providers"]["my-server"]
    assert entry["key"] == KEY and list(entry["models"]) == ["qwen3", "other"]


@pytest.mark.parametrize(("kind", "path", "auth", "limit"), [
    ("openai", "/v1/responses", ("authorization", f"Bearer {KEY}"), ("max_output_tokens", 16)),
    ("anthropic", "/v1/messages", ("x-api-key", KEY), ("max_tokens", 1)),
    ("openai-compatible", "/v1/chat/completions", ("authorization", f"Bearer {KEY}"), ("max_tokens", 1)),
    ("ollama", "/api/chat", None, ("options", {"num_predict": 1})),
])
async def test_check_connection_in_each_wire_format(engine, llm, kind, path, auth, limit):
    llm.enqueue(Reply([Text("OK")]))
    draft = ProviderDraft(kind=kind, id="scripted" if kind == "openai-compatible" else None, url=llm.url,
                          key=None if kind == "ollama" else KEY)
    result = await check_connection(engine, draft, "some-model")
    assert result.ok, result
    [request] = llm.requests
    assert request.path == path and request.body["model"] == "some-model"
    if auth is not None:
        assert request.headers[auth[0]] == auth[1]
    key, value = limit
    assert request.body[key] == value if key != "options" else request.body[key]["num_predict"] == 1


async def test_failures_are_the_providers_own_words_without_the_key(engine, llm):
    llm.enqueue(Reply([Error(401, f"Incorrect API key provided: {KEY}")]))
    result = await check_connection(engine, compatible(llm), "qwen3")
    assert not result.ok and result.status == 401
    assert "401" in result.message and "Incorrect API key provided" in result.message and KEY not in result.message

    result = await check_connection(engine, compatible(llm, url="http://127.0.0.1:9"), "qwen3")
    assert not result.ok and "cannot connect" in result.message

    result = await check_connection(engine, compatible(llm, url=llm.url + "/wrong/path"), "qwen3")
    assert not result.ok and result.status == 404 and "404" in result.message
    assert len(llm.requests) == 1  # no retries: one request for the 401 (the 404 was not a completion endpoint)


@pytest.mark.parametrize(("draft", "field", "code"), [
    (ProviderDraft(kind="openai-compatible", id="lan", url="http://192.168.1.20:8000", key=KEY), "url",
     "insecure-url"),
    (ProviderDraft(kind="openai-compatible", id="x", url="ftp://127.0.0.1/", key=KEY), "url", "invalid"),
    (ProviderDraft(kind="openai-compatible", id="x", url="http://u:p@127.0.0.1/"), "url", "invalid"),
    (ProviderDraft(kind="openai-compatible", id="openai", url="http://127.0.0.1:1"), "id", "invalid"),
    (ProviderDraft(kind="openai-compatible", url="http://127.0.0.1:1"), "id", "invalid"),
    (ProviderDraft(kind="openai", key="sk-${cmd:touch /tmp/pwned}"), "key", "invalid"),
    (ProviderDraft(kind="openai", key=KEY, key_env="OPENAI_API_KEY"), "key", "invalid"),
    (ProviderDraft(kind="ollama", url="http://127.0.0.1:11434", key=KEY), "key", "invalid"),
])
async def test_refused_drafts_write_nothing(engine, env, draft, field, code):
    with pytest.raises(SetupError) as info:
        await save_provider(engine, draft)
    assert (info.value.field, info.value.code) == (field, code)
    assert not user_file(env).exists()


async def test_plain_http_to_another_machine_needs_a_confirmation_loopback_does_not(engine, env):
    lan = ProviderDraft(kind="openai-compatible", id="lan", url="http://192.168.1.20:8000/v1", key=KEY,
                        models=["m"], allow_insecure=True)
    await save_provider(engine, lan)
    await save_provider(engine, ProviderDraft(kind="openai-compatible", id="here", url="http://localhost:8000",
                                              key=KEY, models=["m"]))
    assert set(json.loads(user_file(env).read_text())["providers"]) == {"lan", "here"}
    # a later change without a new key still sends the saved one: still needs the confirmation
    with pytest.raises(SetupError):
        await save_provider(engine, ProviderDraft(kind="openai-compatible", id="lan", url="http://192.168.1.21/v1"))


async def test_a_file_with_comments_is_refused_untouched(engine, env):
    path = user_file(env)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // mine\n  "chatRetentionDays": 3\n}')
    with pytest.raises(ConfigEditError) as info:
        await save_provider(engine, ProviderDraft(kind="openai", key=KEY))
    assert "comments" in info.value.message
    assert path.read_text() == '{\n  // mine\n  "chatRetentionDays": 3\n}'


async def test_pure_config_is_refused(env):
    engine = Engine(EngineOptions(env=env, initialization_options={"pureConfig": True, "localModel": False}))
    try:
        with pytest.raises(SetupError) as info:
            await save_provider(engine, ProviderDraft(kind="openai", key=KEY))
        assert info.value.code == "pure-config"
    finally:
        await engine.aclose()
    assert not user_file(env).exists()


async def test_ollama_models_listed_from_the_daemon_and_saved_without_a_key(engine, env):
    with ScriptedLLMServer(ollama_models=["llama3.2:1b", "qwen3:4b"]) as ollama:
        listing = await list_models(engine, "ollama", ollama.url)
        assert listing.reachable and listing.models == ["llama3.2:1b", "qwen3:4b"]
        await save_provider(engine, ProviderDraft(kind="ollama", url=ollama.url), default_model="ollama/qwen3:4b")
        assert json.loads(user_file(env).read_text())["providers"] == {"ollama": {"api": "ollama", "url": ollama.url}}
        assert engine.selected_model == "ollama/qwen3:4b"
        assert {"ollama/llama3.2:1b", "ollama/qwen3:4b"} <= set(engine.registry.models())
    with ScriptedLLMServer(ollama_models=[]) as empty:
        listing = await list_models(engine, "ollama", empty.url)
        assert listing.reachable and listing.models == [] and "ollama pull" in listing.message
    listing = await list_models(engine, "ollama", "http://127.0.0.1:9")
    assert not listing.reachable and "No Ollama answered at http://127.0.0.1:9" in listing.message


async def test_an_openai_compatible_server_without_a_model_list_says_type_it(engine, llm):
    listing = await list_models(engine, "openai-compatible", llm.url)
    assert not listing.reachable and listing.models == [] and "type the model name" in listing.message
    assert (await list_models(engine, "anthropic")).models[0].startswith("claude")


async def test_remove_provider_and_its_default(engine, env, llm):
    await save_provider(engine, compatible(llm), default_model="my-server/qwen3")
    assert await remove_provider(engine, "my-server")
    assert json.loads(user_file(env).read_text()) == {"providers": {}}
    assert "my-server/qwen3" not in engine.registry.models()
    assert not await remove_provider(engine, "my-server")
