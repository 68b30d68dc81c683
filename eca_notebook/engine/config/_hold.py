"""What of a workspace's own ``.eca/config.json`` waits for the user's trust before it applies, and how the trust
question names it (workspace/_trust.py decides when a folder is trusted; config/_layers.py builds the config
without these parts).

Why: a cloned repository's config file is the attacker's. Beyond running commands (MCP servers, hooks — held by
name elsewhere) it could send data out or take the user's secrets without running anything:

* point a provider at its own URL — the user's configured provider (their key follows in ``Authorization``) or a
  provider of its own whose ``key``/``headers`` read ``${env:OPENAI_API_KEY}`` or ``${netrc:github.com}``;
  ``extraHeaders``/``extraPayload`` of a model go to the provider too (a payload may name remote tools);
* read an environment variable, a netrc password or a file (a ``.env`` the user added to the clone, which their
  own rules may keep the model from reading) into any string that is sent somewhere (an agent's prompt, a header,
  an MCP server's env);
* switch off or replace the user's own hooks (``{"hooks": {"guard": null}}``);
* name skill folders outside the workspace (``"skills": [{"path": "~/other"}]``), which the model may then read
  without asking.

Its ``customTools`` are commands too (tools/custom.py): they are left out whole, so a tool of the user's own with the
same name stays as the user wrote it.

Until the folder is trusted the engine uses the config built with each workspace layer's :func:`held_view` instead
of the layer: those values are left out, so what the user's own layers say applies. MCP servers stay in the view —
they are held by name until trusted (mcp/_manager.py), the same entry either way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...protocol import JsonObject
from ._catalog import BUILTIN_PROVIDERS
from ._providers import env_prefix

__all__ = ["CONNECTION_KEYS", "SECRET_REF", "held_providers", "held_view", "hook_changes", "outside_skills",
           "provider_items", "ref_items", "secret_refs", "secret_words"]

#: ``${env:NAME[:default]}``, ``${netrc:[login@]machine}`` and ``${file:path}``: a secret (or a file the user may
#: keep from the model, a ``.env`` they added to the clone) read into a workspace's string.
SECRET_REF = re.compile(r"\$\{(env|netrc|file):([^}]*)\}")
#: A provider's fields that decide where requests go and which credentials they carry.
CONNECTION_KEYS = ("api", "url", "key", "headers", "completionUrlRelativePath", "completion_url_relative_path")
_MODEL_CONNECTION_KEYS = ("extraHeaders", "extra_headers", "extraPayload", "extra_payload")
_KEPT = ("mcpServers", "mcp_servers")  # held by name until trusted (engine/workspace/_trust.py, mcp/_manager.py)
_LEFT_OUT = ("hooks", "netrcFile", "customTools")
_DROP = object()


def _ref_name(kind: str, arg: str) -> str:
    if kind == "env":
        return arg.split(":", 1)[0].strip()
    return arg.strip()


def secret_refs(value: Any, where: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """Every ``${env:}``/``${netrc:}`` in *value*'s strings: (dotted location, kind, variable or machine)."""
    found: list[tuple[str, str, str]] = []
    if isinstance(value, str):
        found += [(".".join(where), m.group(1), _ref_name(m.group(1), m.group(2))) for m in SECRET_REF.finditer(value)]
    elif isinstance(value, Mapping):
        for key, item in value.items():
            found += secret_refs(item, (*where, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += secret_refs(item, (*where, str(i)))
    return found


def _without_refs(value: Any) -> Any:
    """*value* without the strings that read a secret (a list holding one is left out whole)."""
    if isinstance(value, str):
        return _DROP if SECRET_REF.search(value) else value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            kept = _without_refs(item)
            if kept is not _DROP:
                out[key] = kept
        return out
    if isinstance(value, list):
        items = [_without_refs(item) for item in value]
        return _DROP if any(item is _DROP for item in items) else items
    return value


def _user_providers(below: Mapping[str, Any]) -> Mapping[str, Any]:
    providers = below.get("providers")
    return providers if isinstance(providers, Mapping) else {}


def held_providers(layer: Mapping[str, Any], below: Mapping[str, Any]) -> dict[str, JsonObject]:
    """Provider id → the part of the workspace's entry held: its connection fields (and its models' extra headers
    and payloads); the whole entry when the provider is the workspace's own (neither built in nor the user's)."""
    providers = layer.get("providers")
    if not isinstance(providers, Mapping):
        return {}
    mine = _user_providers(below)
    out: dict[str, JsonObject] = {}
    for pid, entry in providers.items():
        if not isinstance(entry, Mapping):
            continue
        part: JsonObject = {k: entry[k] for k in CONNECTION_KEYS if k in entry}
        models = entry.get("models")
        if isinstance(models, Mapping):
            extras: JsonObject = {str(m): {k: v[k] for k in _MODEL_CONNECTION_KEYS if k in v}
                                  for m, v in models.items() if isinstance(v, Mapping)}
            extras = {m: e for m, e in extras.items() if e}
            if extras:
                part["models"] = extras
        if part:
            own = str(pid) not in mine and str(pid) not in BUILTIN_PROVIDERS
            out[str(pid)] = dict(entry) if own else part
    return out


def outside_skills(layer: Mapping[str, Any], folder: Path | None) -> list[str]:
    """The ``skills`` entries of a workspace layer that name a folder outside the workspace *folder* (through ``~``,
    an absolute path, ``..`` or a symlink): the skills found there make their folders readable without asking
    (workspace/_skills.py ``read_roots``), so they wait for trust. Without *folder*, every entry that is not a plain
    relative path."""
    entries = layer.get("skills")
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        raw = entry.get("path") if isinstance(entry, Mapping) else entry
        if not isinstance(raw, str) or not raw.strip():
            continue
        text = raw.strip()
        if folder is None:
            outside = text.startswith(("/", "~")) or ".." in Path(text).parts
        else:
            path = Path(os.path.expanduser(text))
            try:
                root = folder.resolve()
                target = (path if path.is_absolute() else folder / path).resolve()
                outside = target != root and root not in target.parents
            except (OSError, RuntimeError):
                outside = True
        if outside:
            out.append(text)
    return out


def held_view(layer: Mapping[str, Any], below: Mapping[str, Any], folder: Path | None = None) -> JsonObject:
    """*layer* (a workspace file as written, before its dynamic strings are resolved) without what waits for trust:
    its hooks, its ``customTools``, its providers' connection fields (a provider of its own, whole), every value
    reading a secret or a file (``${env:}``, ``${netrc:}``, ``${file:}``), ``netrcFile`` and its ``skills`` entries
    outside the workspace *folder*. *below*: the user's own layers merged, to tell their providers from the
    workspace's. ``mcpServers`` is kept as written (held by name)."""
    held = held_providers(layer, below)
    mine = _user_providers(below)
    own = tuple(f"{pid}/" for pid in held if pid not in mine and pid not in BUILTIN_PROVIDERS)
    out: JsonObject = {}
    for key, value in layer.items():
        if key in _LEFT_OUT:
            continue
        if key in _KEPT:
            out[key] = value
            continue
        if key == "providers" and isinstance(value, Mapping):
            value = _providers_view(value, held, mine)
        if key == "skills" and isinstance(value, list):
            outside = set(outside_skills(layer, folder))
            value = [e for e in value
                     if str((e.get("path") if isinstance(e, Mapping) else e) or "").strip() not in outside]
        kept = _without_refs(_without_models(value, own) if own else value)
        if kept is not _DROP and not (key in _MODEL_KEYS and isinstance(kept, str) and kept.startswith(own or ("\0",))):
            out[key] = kept
    return out


_MODEL_KEYS = ("defaultModel", "model")


def _without_models(value: Any, own: tuple[str, ...]) -> Any:
    """*value* without the model choices (``defaultModel``, ``model``) naming a provider of the workspace's own
    that is held: the user's own choice applies, not the first model found."""
    if isinstance(value, Mapping):
        return {k: _without_models(v, own) for k, v in value.items()
                if not (k in _MODEL_KEYS and isinstance(v, str) and v.startswith(own))}
    if isinstance(value, list):
        return [_without_models(v, own) for v in value]
    return value


def _providers_view(providers: Mapping[str, Any], held: Mapping[str, Any], mine: Mapping[str, Any]) -> JsonObject:
    out: JsonObject = {}
    for pid, entry in providers.items():
        if pid not in held or not isinstance(entry, Mapping):
            out[pid] = entry
            continue
        if pid not in mine and pid not in BUILTIN_PROVIDERS and any(k in entry for k in CONNECTION_KEYS):
            continue  # the workspace's own provider: it does not exist until trusted
        kept = {k: v for k, v in entry.items() if k not in CONNECTION_KEYS}
        models = kept.get("models")
        if isinstance(models, Mapping):
            kept["models"] = {m: ({k: x for k, x in v.items() if k not in _MODEL_CONNECTION_KEYS}
                                  if isinstance(v, Mapping) else v) for m, v in models.items()}
        out[pid] = kept
    return out


def hook_changes(layer: Mapping[str, Any], below: Mapping[str, Any]) -> list[str]:
    """The user's own hooks the workspace removes (``null``) or replaces, in words for the trust question."""
    hooks, mine = layer.get("hooks"), below.get("hooks")
    if not isinstance(hooks, Mapping) or not isinstance(mine, Mapping):
        return []
    out = []
    for name, entry in hooks.items():
        if mine.get(name) is None:
            continue
        out.append(f"removes your hook '{name}'" if entry is None else f"replaces your hook '{name}'")
    return out


def secret_words(kind: str, name: str) -> str:
    """A reference in words for the trust question: "environment variable X", "file .env", "your netrc password for
    github.com"."""
    if kind == "file":
        return f"file {name}"
    return f"environment variable {name}" if kind == "env" else f"your netrc password for {name}"


def provider_items(layer: Mapping[str, Any], below: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """What the workspace's providers would send where, one item each: "sends your openai key and your chats to
    http://evil.example/v1 (your provider 'openai')"."""
    out = []
    providers = layer.get("providers")
    mine = _user_providers(below)
    for pid, part in held_providers(layer, below).items():
        entry = providers[pid] if isinstance(providers, Mapping) else {}
        found = mine.get(pid)
        user: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        builtin = BUILTIN_PROVIDERS.get(pid)
        own = pid not in mine and builtin is None
        url = entry.get("url") if isinstance(entry.get("url"), str) else None
        current = (user.get("url") if isinstance(user.get("url"), str) else None) or \
            env.get(f"{env_prefix(pid)}_API_URL") or (builtin.default_url if builtin else None)
        target = url or current or "(no URL)"
        sends: list[str] = []
        user_key = bool(user.get("key")) or bool(env.get(f"{env_prefix(pid)}_API_KEY"))
        if own and "key" not in entry and user_key:
            sends.append(f"your {env_prefix(pid)}_API_KEY")
        elif not own and user_key and "key" not in entry and (url is not None and url != current):
            sends.append(f"your {pid} key")
        for _, kind, name in secret_refs(part):
            words = secret_words(kind, name)
            if words not in sends:
                sends.append(words)
        what = " and ".join([*sends, "your chats"])
        origin = f"provider '{pid}' of this workspace" if own else f"your provider '{pid}'"
        models = entry.get("models")
        extras = isinstance(models, Mapping) and any(
            isinstance(m, Mapping) and any(k in m for k in _MODEL_CONNECTION_KEYS) for m in models.values())
        changed = [k for k in CONNECTION_KEYS if k in entry] + (["a model's extra headers/payload"] if extras else [])
        out.append(f"sends {what} to {target} ({origin}; sets {', '.join(changed)})")
    return out


def _place(location: str) -> str:
    parts = location.split(".")
    if len(parts) >= 2 and parts[0] in ("agent", "behavior"):
        rest = ".".join(parts[2:])
        if rest in ("systemPrompt", "prompts.chat"):
            return f"the prompt of agent '{parts[1]}'"
        return f"agent '{parts[1]}' ({rest})" if rest else f"agent '{parts[1]}'"
    if len(parts) >= 2 and parts[0] in _KEPT:
        return f"MCP server '{parts[1]}' ({'.'.join(parts[2:])})"
    return location


def _in_held_provider(location: str, held: Mapping[str, Mapping[str, Any]]) -> bool:
    parts = location.split(".")
    if len(parts) < 3 or parts[0] != "providers" or parts[1] not in held:
        return False
    part = held[parts[1]]
    if parts[2] != "models":
        return parts[2] in part
    models = part.get("models")
    model = models.get(parts[3]) if isinstance(models, Mapping) and len(parts) >= 5 else None
    return isinstance(model, Mapping) and parts[4] in model


def ref_items(layer: Mapping[str, Any], below: Mapping[str, Any]) -> list[str]:
    """The secrets the workspace's strings read, but those its held providers send (:func:`provider_items` names
    them): "reads environment variable OPENAI_API_KEY into the prompt of agent 'x'"."""
    out = []
    held = held_providers(layer, below)
    for location, kind, name in secret_refs(layer):
        if _in_held_provider(location, held):
            continue
        item = f"reads {secret_words(kind, name)} into {_place(location)}"
        if item not in out:
            out.append(item)
    return out
