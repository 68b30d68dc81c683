"""The MCP config writer (engine/_mcp_admin.py): the owning file only, every other key kept, atomic, clear refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine._mcp_admin import ConfigEditError, edit_config_file


def put(name: str, entry: dict[str, Any]):
    def edit(servers: dict[str, Any]) -> bool:
        servers[name] = entry
        return True

    return edit


def test_new_file_and_folder_are_created(tmp_path: Path):
    path = tmp_path / "ws" / ".eca" / "config.json"
    assert edit_config_file(path, put("demo", {"command": "demo"}))
    assert json.loads(path.read_text()) == {"mcpServers": {"demo": {"command": "demo"}}}


def test_other_keys_and_their_order_are_kept(tmp_path: Path):
    path = tmp_path / "config.json"
    original = {"providers": {"openai": {"key": "sk-x"}}, "mcpServers": {"old": {"url": "http://h"}}, "z": [1, None]}
    path.write_text(json.dumps(original))
    os.chmod(path, 0o600)
    edit_config_file(path, put("new", {"command": "c", "args": ["-v"]}))
    data = json.loads(path.read_text())
    assert list(data) == ["providers", "mcpServers", "z"]
    assert data["providers"] == original["providers"] and data["z"] == [1, None]
    assert data["mcpServers"] == {"old": {"url": "http://h"}, "new": {"command": "c", "args": ["-v"]}}
    assert path.stat().st_mode & 0o777 == 0o600  # a private file stays private
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]  # no temp file left behind


def test_no_change_writes_nothing(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text('{"a": 1}')
    before = path.stat().st_mtime_ns, path.stat().st_ino
    assert not edit_config_file(path, lambda servers: False)
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before


@pytest.mark.parametrize("text", ['{\n  // my keys\n  "a": 1\n}', '{"a": 1,}', '{"a": /* x */ 1}'])
def test_a_file_with_comments_is_refused_untouched(tmp_path: Path, text: str):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigEditError) as info:
        edit_config_file(path, put("demo", {"command": "demo"}))
    assert info.value.code == "config-file" and "comments" in info.value.message and str(path) in info.value.message
    assert path.read_text() == text


@pytest.mark.parametrize(("text", "why"), [("{oops", "invalid JSON"), ("[1]", "JSON object"),
                                           ('{"mcpServers": []}', "not an object")])
def test_broken_files_are_refused_untouched(tmp_path: Path, text: str, why: str):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigEditError) as info:
        edit_config_file(path, put("demo", {"command": "demo"}))
    assert why in info.value.message
    assert path.read_text() == text


def test_a_failing_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "config.json"
    path.write_text('{"a": 1}')

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ConfigEditError) as info:
        edit_config_file(path, put("demo", {"command": "demo"}))
    assert "cannot write" in info.value.message
    assert path.read_text() == '{"a": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]


def test_remove_keeps_the_rest(tmp_path: Path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}, "x": 1}))
    assert edit_config_file(path, lambda servers: servers.pop("a", None) is not None)
    assert json.loads(path.read_text()) == {"mcpServers": {"b": {"command": "b"}}, "x": 1}
