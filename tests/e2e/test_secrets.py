"""Acceptance test of the one redaction (issue #12, item 2): a secret configured in every place one can live never
appears in any byte the server writes — stdout (every protocol message), stderr, the log file, or any file under the
test's HOME (saved chats, the chat index, …) — whichever door it would have left through.

The doors driven: chat contents (prompts, provider errors that echo keys, a tool result that prints the config file
holding them), saved chats and their replay after a restart, ``/doctor``, ``tool/serverUpdated`` for failing MCP
servers (stdio and HTTP), connection errors and their retry log lines, and debug logging both to a file and stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Error, Reply, Text, ToolCall

from .conftest import SECRET_ANTHROPIC, SECRET_OPENAI, server_env

pytestmark = pytest.mark.e2e

# One distinct value per place a secret can live. None is shaped like a well-known key, so only the registry of
# configured values (not the pattern pass) can catch the ones that are not in a URL.
SECRETS = {
    "provider key (config)": "pk-Zq81-provider-config-key",
    "provider key (${env:…})": "pk-Wm27-provider-env-referenced",
    "provider URL password": "pw-Hx55-url-password",
    "provider URL query": "qv-Tt93-url-query-value",
    "provider header": "hv-Rr46-provider-header-value",
    "MCP env": "me-Kk12-mcp-env-value",
    "MCP header": "mh-Pp70-mcp-header-value",
    "MCP URL token": "mu-Bb38-mcp-url-token",
    "OpenAI key (env)": SECRET_OPENAI,
    "Anthropic key (env)": SECRET_ANTHROPIC,
}
S = SECRETS


def _config(llm_url: str) -> dict:
    host = llm_url.split("://", 1)[1]
    leak = ("import os, sys; sys.stderr.write('starting with ' + os.environ['MCP_SECRET'] + '\\n'); "
            "sys.stderr.flush(); sys.exit(3)")
    return {
        "localModel": False,
        "providers": {
            # a working provider whose key, header and URL userinfo are all secrets
            "keyed": {"api": "openai-chat", "url": f"http://alice:{S['provider URL password']}@{host}/v1",
                      "key": S["provider key (config)"], "headers": {"X-Team-Auth": S["provider header"]},
                      "models": {"m1": {}}},
            "envkeyed": {"api": "openai-chat", "url": llm_url, "key": "${env:ECA_TEST_VALUE_A}", "models": {"m2": {}}},
            # nothing listens on port 9: connection errors (and their retries) name this URL
            "down": {"api": "openai-chat", "url": f"http://bob:{S['provider URL password']}@127.0.0.1:9/v1"
                                                  f"?api_key={S['provider URL query']}",
                     "models": {"m3": {}}},
        },
        "mcpServers": {
            "stdio-fails": {"command": sys.executable, "args": ["-c", leak],
                            "env": {"MCP_SECRET": S["MCP env"]}},
            "http-fails": {"url": f"http://127.0.0.1:9/mcp?token={S['MCP URL token']}",
                           "headers": {"Authorization": f"Bearer {S['MCP header']}"}},
        },
        "toolCall": {"approval": {"byDefault": "allow"}},
    }


async def _finished(eca, chat: str, start: int) -> None:
    """A prompt's end: ``progress finished`` (a command like /doctor answers without a turn, so no status change)."""
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["chatId"] == chat
                       and m.params["content"] == {"type": "progress", "state": "finished", "text": ""},
                       start=start, timeout=120)


def _everything_written(eca, home: Path, extra_files: list[Path]) -> dict[str, str]:
    """Every byte the server wrote, by where it went."""
    out = {"stdout": "\n".join(json.dumps([m.method, m.params]) for m in eca.messages), "stderr": eca.stderr}
    for path in [*extra_files, *home.rglob("*")]:
        if path.is_file():
            out[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return out


def _assert_clean(written: dict[str, str]) -> None:
    leaks = [(where, what) for where, text in written.items() for what, secret in SECRETS.items() if secret in text]
    assert leaks == [], leaks


async def test_secrets_configured_everywhere_never_leave_the_process(spawn, llm, workspace, home, tmp_path):
    config_file = workspace / ".eca" / "config.json"  # a config layer the model can read with read_file
    config_file.parent.mkdir()
    config_file.write_text(json.dumps(_config(llm.url)))
    # the user trusts the workspace, so its own looser approvals apply (engine/workspace/_trust.py)
    (home / ".config" / "eca").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "eca" / "config.json").write_text(json.dumps({"trustedWorkspaces": [str(workspace)]}))
    env = server_env(home, llm, ECA_TEST_VALUE_A=S["provider key (${env:…})"])
    log_file = tmp_path / "server.log"

    llm.enqueue(
        # the model reads the config file (a tool result sent back to the model and shown in the chat)…
        Reply([ToolCall("call-1", "eca__read_file", json.dumps({"path": ".eca/config.json"}))]),
        # …and echoes keys back in its answer
        Reply([Text(f"your key is {S['provider key (config)']} and {S['provider header']}")]),
        # a provider error body echoing keys of every provider
        Reply([Error(400, f"invalid key {S['provider key (config)']}; also tried {SECRET_ANTHROPIC}, "
                          f"{S['provider key (${env:…})']} and {S['provider URL password']}")]),
    )
    eca = await spawn("--log-level", "debug", "--log-file", str(log_file), env=env)
    await eca.initialize(workspace)
    await eca.wait_for(lambda m: m.method == "tool/serverUpdated" and m.params.get("name") == "stdio-fails"
                       and m.params.get("status") == "failed", timeout=60)
    await eca.wait_for(lambda m: m.method == "tool/serverUpdated" and m.params.get("name") == "http-fails"
                       and m.params.get("status") == "failed", timeout=60)

    chat = (await eca.request("chat/prompt", {"message": f"my key {S['provider key (config)']} is in the config",
                                              "model": "keyed/m1"}))["chatId"]
    await eca.wait_idle(chat, timeout=60)
    for message, model in [("again", "keyed/m1"), ("other", "down/m3"), ("/doctor", None)]:
        mark = len(eca.messages)
        # "again" attaches the config file as a context: read from disk, like a tool result
        contexts = [{"type": "file", "path": str(config_file)}] if message == "again" else []
        await eca.request("chat/prompt", {"chatId": chat, "message": message, "contexts": contexts,
                                          **({"model": model} if model else {})}, timeout=120)
        await _finished(eca, chat, mark)
    await eca.request("chat/list", {})
    assert await eca.shutdown() == 0

    # the doors were really used: the echoes, the failures and the report all reached the client
    shown = [c.get("text", "") for _, c in eca.contents(chat) if c["type"] == "text"]
    assert any("your key is ***" in t for t in shown), shown
    assert any(t.startswith("Error:") and "invalid key" in t for t in shown), shown
    assert any("cannot connect to down" in t for t in shown), shown
    assert any("Providers:" in t and "MCP servers:" in t for t in shown), shown
    called = [c for _, c in eca.contents(chat) if c["type"] == "toolCalled"]
    assert called and '"providers"' in called[0]["outputs"][0]["text"]
    messages = [m for r in llm.requests if r.method == "POST" for m in r.body.get("messages", [])]
    sent_back = "".join(m.get("content") or "" for m in messages if m.get("role") == "tool")
    assert '"providers"' in sent_back  # the tool result went back to the model…
    for what in ("provider key (config)", "provider header", "provider URL password", "MCP env", "MCP header",
                 "MCP URL token"):
        assert S[what] not in sent_back, what  # …without the secrets it printed
    context = [m["content"] for m in messages if m.get("role") == "user" and "again" in (m.get("content") or "")]
    assert context and '"providers"' in context[-1]  # so did the file context…
    for what in ("provider header", "provider URL password", "MCP env", "MCP header", "MCP URL token"):
        assert S[what] not in context[-1], what  # …redacted too
    assert "retrying" in log_file.read_text()

    # a restart replays the saved chat, logging to stderr this time
    again = await spawn("--log-level", "debug", env=env)
    await again.initialize(workspace)
    assert (await again.request("chat/open", {"chatId": chat}))["found"] is True
    mark = len(again.messages)
    await again.request("chat/prompt", {"chatId": chat, "message": "/doctor"})
    await _finished(again, chat, mark)
    assert await again.shutdown() == 0

    _assert_clean(_everything_written(eca, home, [log_file]))
    _assert_clean(_everything_written(again, home, []))
