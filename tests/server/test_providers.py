"""Connect a model over REST (server/_providers.py), through real HTTP against a real Jupyter server: saved to the
user's file, applied to the WebSocket clients at once, the key write-only, Jupyter auth and origin checks."""

from __future__ import annotations

import json
import logging
import os

from eca_notebook.server import _schemas as s
from eca_notebook.testing.llm_server import Error, Reply, ScriptedLLMServer, Text

from .test_handlers import EVIL, login_cookie  # noqa: F401 - a fixture
from .test_rest import assert_error, check

KEY = "sk-or-PANEL-SECRET-0123456789abcdef"


def user_file(home):
    return home / ".config" / "eca" / "config.json"


async def test_connect_test_and_use_an_openai_compatible_server(api, connect, eca_env, workspace, caplog):
    caplog.set_level(logging.DEBUG)
    sock = await connect()
    await sock.initialize()
    with ScriptedLLMServer() as mine:
        mine.enqueue(Reply([Text("OK")]))
        status, tested = await api("POST", "providers", "my-server", "test",
                                   body={"kind": "openai-compatible", "url": mine.url + "/v1", "key": KEY,
                                         "model": "qwen3"})
        assert status == 200 and check(s.ConnectionTest, tested)["ok"], tested
        assert mine.requests[-1].headers["authorization"] == f"Bearer {KEY}"

        start = len(sock.messages)
        status, saved = await api("PUT", "providers", "my-server",
                                  body={"kind": "openai-compatible", "url": mine.url + "/v1", "key": KEY,
                                        "models": ["qwen3"], "default_model": "my-server/qwen3"})
        assert status == 200, saved
        check(s.ProviderSetup, saved)
        [info] = saved["providers"]
        assert info == {"id": "my-server", "kind": "openai-compatible", "url": mine.url + "/v1",
                        "key_source": "config", "key_hint": "sk-or-…cdef", "models": ["qwen3"]}
        assert saved["current"] == saved["default"] == "my-server/qwen3"
        assert saved["config_file"] == "~/.config/eca/config.json"
        path = user_file(eca_env)
        assert path.stat().st_mode & 0o777 == 0o600 and json.loads(path.read_text())["providers"]["my-server"][
            "key"] == KEY
        # the panel's picker follows at once
        update = await sock.wait_for("config/updated", lambda p: p["chat"]["selectModel"] == "my-server/qwen3",
                                     start=start)
        assert "my-server/qwen3" in update["chat"]["models"]

        # the next prompt goes to that server, with the key
        mine.enqueue(Reply([Text("answer from my server")]))
        await sock.request("chat/prompt", {"chatId": "c1", "message": "hello mine"})
        await sock.wait_idle("c1")
        prompt = mine.requests[-1]
        assert prompt.headers["authorization"] == f"Bearer {KEY}" and "hello mine" in json.dumps(prompt.body)
        assert ("assistant", {"type": "text", "text": "answer from my server"}) in sock.contents("c1")

        # the key never comes back: not in the list, not to the WebSocket, not in the logs
        status, listed = await api("GET", "providers")
        assert status == 200 and check(s.ProviderSetup, listed)["providers"] == saved["providers"]
        assert KEY not in json.dumps(listed) and KEY not in json.dumps(sock.messages)
        assert KEY not in caplog.text

        # a Test of the saved provider uses the saved key; a refusal is the provider's words
        mine.enqueue(Reply([Error(401, "Incorrect API key provided")]))
        status, failed = await api("POST", "providers", "my-server", "test",
                                   body={"kind": "openai-compatible", "model": "qwen3"})
        assert status == 200 and not failed["ok"] and failed["status"] == 401, failed
        assert "Incorrect API key provided" in failed["message"]
        assert mine.requests[-1].headers["authorization"] == f"Bearer {KEY}"

        status, removed = await api("DELETE", "providers", "my-server")
        assert status == 200 and removed["providers"] == [] and "my-server/qwen3" not in removed["models"]
        assert_error(*await api("DELETE", "providers", "my-server"), 404)


async def test_unreachable_and_refused_drafts(api, eca_env, workspace):
    status, failed = await api("POST", "providers", "x", "test",
                               body={"kind": "openai-compatible", "url": "http://127.0.0.1:9", "model": "m"})
    assert status == 200 and not failed["ok"] and "cannot connect" in failed["message"]

    status, body = await api("PUT", "providers", "lan",
                             body={"kind": "openai-compatible", "url": "http://10.1.2.3:8000", "key": KEY,
                                   "models": ["m"]})
    assert_error(status, body, 400, loc=["url"], message="unencrypted")
    assert body["details"][0]["type"] == "insecure-url" and KEY not in json.dumps(body)
    status, body = await api("PUT", "providers", "lan",
                             body={"kind": "openai-compatible", "url": "file:///etc/passwd", "models": ["m"]})
    assert_error(status, body, 400, loc=["url"])
    status, body = await api("PUT", "providers", "openai", body={"kind": "openai", "key": KEY, "extra": 1})
    assert_error(status, body, 400, loc=["extra"])
    assert not user_file(eca_env).exists()

    user_file(eca_env).parent.mkdir(parents=True)
    user_file(eca_env).write_text('{"chatRetentionDays": 3, // mine\n}')
    status, body = await api("PUT", "providers", "openai", body={"kind": "openai", "key": KEY})
    assert_error(status, body, 409, message="comments")
    assert user_file(eca_env).read_text() == '{"chatRetentionDays": 3, // mine\n}'


async def test_ollama_models_are_listed(api, workspace):
    with ScriptedLLMServer(ollama_models=["llama3.2:1b"]) as ollama:
        status, listing = await api("GET", "providers", "ollama", "models", params={"url": ollama.url})
        assert status == 200 and check(s.ProviderModels, listing)["models"] == ["llama3.2:1b"], listing
    status, listing = await api("GET", "providers", "ollama", "models", params={"url": "http://127.0.0.1:9"})
    assert status == 200 and not listing["reachable"] and "No Ollama answered" in listing["message"]


async def test_providers_need_jupyter_auth_and_the_same_origin(api, login_cookie, jp_http_port, eca_env,  # noqa: F811
                                                               workspace):
    body = {"kind": "openai", "key": KEY}
    for headers in ({"Authorization": ""}, {"Authorization": "token wrong-token"}):
        assert (await api("PUT", "providers", "openai", body=body, headers=headers))[0] == 403
        assert (await api("GET", "providers", headers=headers))[0] == 403
    same = f"http://127.0.0.1:{jp_http_port}"
    xsrf = {"Authorization": "", "Cookie": login_cookie + "; _xsrf=abc", "X-XSRFToken": "abc"}
    assert (await api("PUT", "providers", "openai", body=body, headers={**xsrf, "Origin": EVIL}))[0] == 403
    no_xsrf = {"Authorization": "", "Cookie": login_cookie, "Origin": same}
    assert (await api("PUT", "providers", "openai", body=body, headers=no_xsrf))[0] == 403
    assert not user_file(eca_env).exists()
    status, saved = await api("PUT", "providers", "openai", body=body, headers={**xsrf, "Origin": same})
    assert status == 200, saved
    assert os.stat(user_file(eca_env)).st_mode & 0o777 == 0o600
