"""Config files edited while the engine runs: the new config applies without a restart (models, behaviours, approval
rules) and every client gets ``config/updated``; a broken edit keeps the previous config and says why."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine._config_watch import ConfigWatcher, watched_files
from eca_notebook.testing.llm_server import Reply, ToolCall

from ..e2e.conftest import server_env, start_server
from ..serving.test_server_connection import Harness


def write(path: Path, data: Any) -> None:
    """Write the way editors save: a new file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(data if isinstance(data, str) else json.dumps(data))
    os.replace(tmp, path)


def updates(h: Harness) -> list[dict[str, Any]]:
    return [p for m, p in h.log if m == "config/updated"]


async def next_update(h: Harness, after: int) -> dict[str, Any]:
    await h.until(lambda m, p: len(updates(h)) > after)
    return updates(h)[after]["chat"]


def native_tool(h: Harness, name: str) -> dict[str, Any]:
    native = [p for m, p in h.log if m == "tool/serverUpdated" and p["type"] == "native"][-1]
    return next(t for t in native["tools"] if t["name"] == name)


def test_watched_files_are_the_global_and_workspace_files(tmp_path: Path):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_CACHE_HOME": str(tmp_path / "c")}
    engine = Engine(EngineOptions(workspace_folders=[tmp_path / "ws"], env=env,
                                  initialization_options={"localModel": False}))
    assert watched_files(engine.loaded) == [tmp_path / "xdg" / "eca" / "config.json",
                                            tmp_path / "ws" / ".eca" / "config.json"]
    given = Engine(EngineOptions(workspace_folders=[], env=env, config_file=tmp_path / "mine.json",
                                 initialization_options={"localModel": False}))
    assert watched_files(given.loaded) == [tmp_path / "mine.json"]
    pure = Engine(EngineOptions(workspace_folders=[tmp_path], env=env,
                                initialization_options={"localModel": False, "pureConfig": True}))
    assert watched_files(pure.loaded) == []


def test_watcher_sees_creation_edits_and_replacement(tmp_path: Path):
    path = tmp_path / "config.json"
    watcher = ConfigWatcher([path], lambda: None)
    assert not watcher.changed()
    path.write_text("{}")
    assert watcher.changed() and not watcher.changed()
    path.write_text('{"a": 1}')
    assert watcher.changed()
    write(path, '{"a": 2}')  # same size, new inode
    assert watcher.changed()
    path.unlink()
    assert watcher.changed()


async def test_an_edited_workspace_config_applies_and_clients_get_config_updated(connected: Harness, llm,
                                                                                tmp_path: Path):
    h = connected
    seen = len(updates(h))
    assert updates(h)[-1]["chat"]["selectModel"] == "fake/m1"
    config = tmp_path / ".eca" / "config.json"
    write(config, {"defaultModel": "fake/m2", "behavior": {"review": {}},
                   "toolCall": {"approval": {"allow": {"eca__write_file": {}}, "deny": {"eca__shell_command": {}}}}})
    chat = await next_update(h, seen)
    assert chat["selectModel"] == "fake/m2" and "review" in chat["behaviors"]
    await h.until(lambda m, p: m == "tool/serverUpdated" and p["type"] == "native"
                  and native_tool(h, "shell_command").get("disabled") is True)

    # the new approval rule decides the next call (once the workspace is trusted): write_file runs without asking
    assert [w.approvals for w in h.engine.trust.held()] == [["eca__write_file"]]
    await h.engine.trust.trust()
    llm.enqueue(Reply([ToolCall("w1", "eca__write_file", json.dumps({"path": "new.txt", "content": "x"}))]),
                Reply.text("written"))
    chat_id = (await h.client.request("chat/prompt", {"message": "write it"}))["chatId"]
    await h.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"})
    run = next(c for c in h.contents(chat_id) if c["type"] == "toolCallRun")
    assert run["manualApproval"] is False and (tmp_path / "new.txt").read_text() == "x"
    assert llm.requests[-1].body["model"] == "m2"

    # a broken edit: the previous config stays, and the user is told which file and why
    seen = len(updates(h))
    write(config, '{"defaultModel": "fake/m1",')
    await h.until(lambda m, p: m == "$/showMessage" and "Config change not applied" in p["message"]
                  and str(config) in p["message"] and "invalid JSON" in p["message"])
    assert len(updates(h)) == seen
    assert h.engine.config.default_model == "fake/m2" and "review" in h.engine.behaviors()

    # fixed: applies again — here a new model in a provider of the workspace file
    write(config, {"providers": {"fake": {"models": {"m3": {}}}}, "defaultModel": "fake/m3"})
    chat = await next_update(h, seen)
    assert "fake/m3" in chat["models"] and chat["selectModel"] == "fake/m3"
    assert "review" not in chat["behaviors"]
    assert native_tool(h, "shell_command").get("disabled") is None


async def test_a_model_the_client_chose_is_kept_across_a_reload(connected: Harness, tmp_path: Path):
    h = connected
    await h.client.notify("chat/selectedModelChanged", {"model": "fake/m2"})
    await h.client.request("chat/list", {})  # answered after the notification was handled
    assert h.engine.selected_model == "fake/m2"
    seen = len(updates(h))
    write(tmp_path / ".eca" / "config.json", {"welcomeMessage": "Hello again"})
    chat = await next_update(h, seen)
    assert chat["welcomeMessage"] == "Hello again" and chat["selectModel"] == "fake/m2"


async def test_rewriting_a_file_with_the_same_content_sends_nothing(connected: Harness, tmp_path: Path):
    h = connected
    config = tmp_path / ".eca" / "config.json"
    seen = len(updates(h))
    write(config, {"welcomeMessage": "Hi"})
    assert (await next_update(h, seen))["welcomeMessage"] == "Hi"
    write(config, {"welcomeMessage": "Hi"})  # a new file, the same config
    assert await h.engine.reload_config() is False
    assert len(updates(h)) == seen + 1


async def test_global_config_edit_reaches_a_stdio_client(home: Path, llm, workspace: Path):
    """``$XDG_CONFIG_HOME/eca/config.json`` edited under a running ``eca-notebook server``."""
    eca = await start_server(server_env(home, llm))
    try:
        await eca.initialize(workspace)
        await eca.wait_for(lambda m: m.method == "config/updated")
        seen = len(eca.of("config/updated"))
        write(home / ".config" / "eca" / "config.json", {"behavior": {"docs": {}}, "defaultBehavior": "plan",
                                                         "welcomeMessage": "Edited while running"})
        await eca.wait_for(lambda m: m.method == "config/updated" and "docs" in m.params["chat"]["behaviors"],
                           start=0)
        chat = eca.of("config/updated")[seen]["chat"]
        assert chat["welcomeMessage"] == "Edited while running" and chat["selectBehavior"] == "plan"
        assert await eca.shutdown() == 0
    finally:
        await eca.kill()
