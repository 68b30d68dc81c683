"""Persisting a workspace's approval policy (``toolCall.approval``) into ``<workspace>/.eca/config.json``.

Why it is more than "write the object": config layers deep-merge and rule maps merge key by key, so writing only
the new ``allow`` map would keep every rule the lower layers (defaults, global config) set. A PUT *replaces* the
policy, so each rule present below but absent from the new policy is written as ``null``, which the config loader
reads as "remove". The rest of the file is kept (merged, not overwritten); the write is atomic (temp file, fsync,
rename), so a crash leaves the old file. A file that is not valid JSON(C) is never overwritten: the caller answers
409 and the user fixes it. Comments in a JSONC file are not preserved (the file is rewritten as plain JSON).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._fileio import atomic_write
from ..engine import Engine
from ..engine.config import load_config, parse_jsonc
from ..protocol import JsonObject

__all__ = ["PolicyFileError", "persist_approval", "policy_file"]

# The maps a PUT replaces key by key (``risk``: level → allow/ask/deny, replaced the same way as the rule maps).
RULE_KINDS = ("allow", "ask", "deny", "risk")


class PolicyFileError(Exception):
    """The workspace config file exists but cannot be merged into (not JSON, not an object)."""


def policy_file(folders: Sequence[Path]) -> Path:
    """The file that decides: the last workspace folder's config is the last (winning) layer."""
    return Path(folders[-1]) / ".eca" / "config.json"


def _read(path: Path) -> JsonObject:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyFileError(f"cannot read {path.name}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = parse_jsonc(text)
    except json.JSONDecodeError as exc:
        raise PolicyFileError(f".eca/config.json is not valid JSON ({exc.msg}, line {exc.lineno}): fix or remove "
                              "it before changing the policy here") from None
    if not isinstance(data, dict):
        raise PolicyFileError(".eca/config.json does not contain a JSON object")
    return data


def _rules_below(engine: Engine, folders: Sequence[Path]) -> dict[str, set[str]]:
    """Rule keys the layers under the workspace file contribute (what a replacing policy must null out)."""
    below = load_config(
        workspace_folders=list(folders[:-1]),
        initialization_options=engine.options.initialization_options,
        config_file=engine.options.config_file,
        env=engine.env,
    )
    tool_call = below.raw.get("toolCall")
    approval = tool_call.get("approval") if isinstance(tool_call, dict) else None
    if not isinstance(approval, dict):
        approval = {}
    return {kind: {k for k, v in rules.items() if v is not None} if isinstance(rules := approval.get(kind), dict)
            else set() for kind in RULE_KINDS}


def layer_for(approval: JsonObject, below: dict[str, set[str]]) -> JsonObject:
    """The ``toolCall.approval`` object to write so that the merged result is exactly *approval*."""
    layer: JsonObject = {"byDefault": approval["byDefault"]}
    for kind in RULE_KINDS:
        rules = approval.get(kind)
        new = rules if isinstance(rules, dict) else {}  # (a validated ApprovalPolicy's: always an object)
        layer[kind] = {**{key: None for key in sorted(below.get(kind, ())) if key not in new}, **new}
    return layer


def persist_approval(engine: Engine, folders: Sequence[Path], approval: JsonObject) -> Path:
    """Merge *approval* into the workspace config file, atomically. Blocking: run it in a thread."""
    path = policy_file(folders)
    data = _read(path)
    tool_call = data.get("toolCall")
    tool_call = dict(tool_call) if isinstance(tool_call, dict) else {}
    tool_call["approval"] = layer_for(approval, _rules_below(engine, folders))
    data["toolCall"] = tool_call
    _atomic_write_json(path, data)
    return path


def _atomic_write_json(path: Path, data: Any) -> None:
    """The policy file, written all-or-nothing (temp file + rename) with its permission bits kept (a new one gets the
    umask's: it is the user's workspace file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


