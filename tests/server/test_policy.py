"""Persisting an approval policy: the merged config must equal the policy that was PUT, whatever the lower layers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.engine.config import load_config
from eca_notebook.server._policy import PolicyFileError, layer_for, persist_approval, policy_file

POLICY = {"byDefault": "deny", "allow": {"eca__grep": {"argsMatchers": {}}}, "ask": {},
          "deny": {"eca__shell_command": {"argsMatchers": {"command": ["rm .*"]}}}, "risk": {"low": "allow"}}


def effective(folders: list[Path]) -> dict:
    return load_config(workspace_folders=folders).config.tool_call.approval.model_dump(by_alias=True, mode="json")


def test_layer_nulls_out_rules_from_below():
    below = {"allow": {"eca__read_file", "eca__grep"}, "ask": set(), "deny": {"x"}, "risk": {"high"}}
    assert layer_for(POLICY, below) == {
        "byDefault": "deny",
        "allow": {"eca__read_file": None, "eca__grep": {"argsMatchers": {}}},
        "ask": {},
        "deny": {"x": None, "eca__shell_command": {"argsMatchers": {"command": ["rm .*"]}}},
        "risk": {"high": None, "low": "allow"},  # the risk map is replaced like the rule maps
    }


async def test_persisted_policy_is_exactly_what_loads_back(eca_env, tmp_path):
    home = eca_env
    global_config = home / ".config" / "eca" / "config.json"
    global_config.parent.mkdir(parents=True)
    # a lower layer with its own rules, and a workspace file that had removed a default
    global_config.write_text(json.dumps({"toolCall": {"approval": {"ask": {"eca__move_file": {}}}}}))
    folder = tmp_path / "ws"
    (folder / ".eca").mkdir(parents=True)
    (folder / ".eca" / "config.json").write_text(json.dumps(
        {"toolCall": {"approval": {"allow": {"eca__directory_tree": None}}}, "chatRetentionDays": 3}))
    engine = Engine(EngineOptions(workspace_folders=[folder]))
    try:
        assert "eca__move_file" in effective([folder])["ask"]
        path = persist_approval(engine, [folder], POLICY)
    finally:
        await engine.aclose()
    assert path == folder / ".eca" / "config.json" == policy_file([folder])
    assert effective([folder]) == POLICY
    saved = json.loads(path.read_text())
    assert saved["chatRetentionDays"] == 3
    assert not [p for p in path.parent.iterdir() if p.name != "config.json"]  # no temp file left behind


async def test_the_last_folder_decides_and_keeps_its_file_mode(eca_env, tmp_path):
    first, last = tmp_path / "one", tmp_path / "two"
    for folder in (first, last):
        (folder / ".eca").mkdir(parents=True)
    (first / ".eca" / "config.json").write_text(json.dumps({"toolCall": {"approval": {"deny": {"y": {}}}}}))
    (last / ".eca" / "config.json").write_text("{}")
    os.chmod(last / ".eca" / "config.json", 0o600)
    engine = Engine(EngineOptions(workspace_folders=[first, last]))
    try:
        persist_approval(engine, [first, last], POLICY)
    finally:
        await engine.aclose()
    assert effective([first, last]) == POLICY  # "y" from the first folder's file is nulled in the last one
    assert (last / ".eca" / "config.json").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("content", ["{ broken", "[1, 2]"])
async def test_a_broken_file_is_left_alone(eca_env, tmp_path, content):
    folder = tmp_path / "ws"
    (folder / ".eca").mkdir(parents=True)
    (folder / ".eca" / "config.json").write_text(content)
    engine = Engine(EngineOptions(workspace_folders=[folder]))
    try:
        with pytest.raises(PolicyFileError):
            persist_approval(engine, [folder], POLICY)
    finally:
        await engine.aclose()
    assert (folder / ".eca" / "config.json").read_text() == content
