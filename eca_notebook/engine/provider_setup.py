"""Connecting a model from a client: add a provider to the user's own config, test it, make one of its models the
default (what the panel's "Connect a model" view does through the REST API).

Why these rules:

* **The user's file only.** A provider is written to the user layer — ``$XDG_CONFIG_HOME/eca/config.json`` or the
  ``--config-file`` that replaces it — never to a workspace's ``.eca/config.json``: a repository must not be able
  to decide where your prompts (and key) go, and nothing here writes a file of the workspace.
* **The key stays in that file.** It is written with the rest of the file through
  :func:`~eca_notebook._fileio.atomic_write`; the file is made ``0600`` *before* a key goes into it (an existing
  ``0644`` file is narrowed first, so there is no moment where the key is world-readable). Or the user names an
  environment variable and the file holds ``${env:NAME}``. Nothing here returns a key: summaries carry
  :func:`~._providers_config.mask_secret` and where the key comes from. Every key we are handed is registered with
  the process-wide redaction at once, so an error body echoing it (or a log line) shows ``***``.
* **Every other key of the file is kept**, and a file with comments is refused rather than silently stripped of
  them (the same reader as ``mcp/addServer``).
* **http(s) only, and no key in clear text across the network.** A plain ``http://`` URL to a host that is not this
  machine (loopback) may get a key only when the user confirmed it (``allow_insecure``): on a trusted LAN it is
  their call, but it is never silent. A URL with ``user:password@`` is refused (the key field is for that).
* **Test is one tiny request** (one output token — 16 for OpenAI Responses, its minimum), no retries, short
  timeouts, and its error is the provider's own words (HTTP status and message, "cannot connect", wrong URL).
* **The change applies at once**: the engine reloads the config and every client gets ``config/updated`` with the
  new models; the model picked as default is selected too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast
from urllib.parse import urlsplit

import httpx

from .._fileio import PRIVATE_MODE, atomic_write
from .._redact import add_secrets, redact
from ..protocol import JsonObject
from ._config_watch import ConfigOptions
from ._mcp_admin import ConfigEditError, _read_for_edit
from .config import BUILTIN_PROVIDERS, DEFAULT_MODELS, Config, global_config_path, mask_secret

if TYPE_CHECKING:
    from ..protocol import ConfigUpdatedParams
    from .models import ModelRegistry
    from .workspace import WorkspaceTrust

__all__ = [
    "KINDS",
    "OLLAMA_DEFAULT_URL",
    "ConfigEditError",
    "ConnectionResult",
    "ModelListing",
    "ProviderDraft",
    "ProviderHost",
    "ProviderSummary",
    "SetupError",
    "check_connection",
    "check_url",
    "list_models",
    "provider_summaries",
    "remove_provider",
    "save_provider",
    "user_config_file",
]

Kind = Literal["openai", "anthropic", "openai-compatible", "ollama"]
KINDS: tuple[Kind, ...] = ("openai", "anthropic", "openai-compatible", "ollama")

#: Where Ollama's daemon listens by default (``ollama serve``).
OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"

_API: dict[Kind, str] = {"openai": "openai-responses", "anthropic": "anthropic", "openai-compatible": "openai-chat",
                         "ollama": "ollama"}
_KIND_OF_API = {"openai-responses": "openai", "openai": "openai", "anthropic": "anthropic",
                "openai-chat": "openai-compatible", "ollama": "ollama"}
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_MODEL = re.compile(r"^[^\s/][^\s]{0,199}$")
_RESERVED_IDS = {"local"}  # the embedded model's provider

# One read-modify-write of the user's file at a time (every workspace engine of the process shares that file).
_write_lock = threading.Lock()


class ProviderHost(Protocol):
    """The engine as connecting a model sees it: where the user's config file is and whether it is read, the
    providers resolved now (their keys, for a Test without one), the reload that applies a saved file (the trust
    keeping trusted folders trusted across it), the model selection the clients are told of, and the HTTP client a
    connection check uses."""

    @property
    def options(self) -> ConfigOptions:
        """How the engine was started: which config file is the user's own (the one a setup writes)."""
        ...
    @property
    def env(self) -> Mapping[str, str]:
        """The environment keys are read from (a key already there is not written to the file)."""
        ...
    @property
    def config(self) -> Config:
        """The config in effect, to see which providers exist already."""
        ...
    @property
    def registry(self) -> ModelRegistry:
        """The models in effect, to check a new provider answers with a model."""
        ...
    @property
    def trust(self) -> WorkspaceTrust:
        """The workspace's trust: a setup never writes what an untrusted workspace could read back."""
        ...
    @property
    def selected_model(self) -> str | None:
        """The model of new prompts, kept unless the user picks the new one."""
        ...
    @property
    def http(self) -> httpx.AsyncClient:
        """The shared HTTP client a connection test goes through."""
        ...
    async def reload_config(self) -> bool:
        """Re-read the config files after a write; False when nothing changed."""
        ...
    def select_model(self, model: str, chat_id: str | None = None) -> None:
        """Make *model* the one new prompts use (for one chat when *chat_id* is given)."""
        ...
    def broadcast(self, method: str, params: JsonObject) -> None:
        """Send a notification to every client of the engine."""
        ...
    def config_updated(self) -> ConfigUpdatedParams:
        """The ``config/updated`` params clients need after a change (models, agents, selection)."""
        ...


class SetupError(ValueError):
    """A draft that cannot be tested or saved; ``field`` names the form field to show ``message`` next to."""

    def __init__(self, message: str, field: str | None = None, code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code


@dataclass
class ProviderDraft:
    """What the form sends. ``key`` (the secret itself) or ``key_env`` (the name of an environment variable holding
    it); neither keeps the key already saved for this provider. ``models``: names to offer (for OpenAI and
    Anthropic the built-in list is offered anyway; Ollama's are discovered from the daemon)."""

    kind: Kind
    id: str | None = None
    url: str | None = None
    key: str | None = field(default=None, repr=False)
    key_env: str | None = None
    models: list[str] = field(default_factory=list)
    allow_insecure: bool = False

    def provider_id(self) -> str:
        """The config id: the kind for OpenAI, Anthropic and Ollama (the built-ins), the given name otherwise."""
        return self.id or ("" if self.kind == "openai-compatible" else self.kind)


@dataclass
class ProviderSummary:
    """A provider of the user's file as a client may show it: never the key, only ``key_hint`` (masked) and where
    it comes from (``config``: saved in the file; ``env``: ``${env:NAME}`` or ``<ID>_API_KEY``; None: no key)."""

    id: str
    kind: Kind
    url: str | None
    key_source: Literal["config", "env"] | None
    key_env: str | None
    key_hint: str | None
    models: list[str]


@dataclass
class ConnectionResult:
    ok: bool
    message: str
    status: int | None = None


@dataclass
class ModelListing:
    """The models a provider offers (``reachable``: whether we could ask it; ``message`` says what to do if not)."""

    url: str
    reachable: bool
    models: list[str]
    message: str


# -- checking a draft ------------------------------------------------------------------------------------------


def _loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, with_key: bool, allow_insecure: bool) -> str:
    """The URL without a trailing slash; :class:`SetupError` for anything but a plain http(s) URL, and for a key
    sent over http to another machine unless the user confirmed it."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        raise SetupError("not a valid URL", "url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SetupError("the URL must start with http:// or https:// and name a host", "url")
    if parts.username or parts.password:
        raise SetupError("put the key in the key field, not in the URL", "url")
    if parts.scheme == "http" and with_key and not allow_insecure and not _loopback(parts.hostname):
        raise SetupError(f"http:// sends the key unencrypted to {parts.hostname}: use https://, or confirm that "
                         "this network is trusted", "url", code="insecure-url")
    return url.rstrip("/")


def _check(draft: ProviderDraft, *, saved_key: bool, saved: bool = False) -> tuple[str, str | None]:
    """(provider id, URL) of a valid draft, or :class:`SetupError`."""
    if draft.kind not in KINDS:
        raise SetupError(f"unknown provider type {draft.kind!r} (one of {', '.join(KINDS)})", "kind")
    pid = draft.provider_id()
    if draft.kind == "openai-compatible":
        if not pid:
            raise SetupError("give this provider a name (e.g. my-vllm)", "id")
        if not _ID.match(pid):
            raise SetupError("a name is lower-case letters, digits, '-', '_' or '.' (at most 40)", "id")
        if pid in BUILTIN_PROVIDERS or pid in _RESERVED_IDS:
            raise SetupError(f"'{pid}' is a built-in provider: choose another name", "id")
        if not draft.url and not saved:
            raise SetupError("the server's URL is required (e.g. http://127.0.0.1:8000/v1)", "url")
    elif pid != draft.kind:
        raise SetupError(f"a {draft.kind} provider is saved as '{draft.kind}'", "id")
    for name, value in (("key", draft.key), ("url", draft.url), ("models", " ".join(draft.models))):
        if value and "${" in value:  # the loader would read it as a dynamic string (even run a ${cmd:})
            raise SetupError("'${' is not allowed here", name)
    if draft.key is not None and draft.key_env is not None:
        raise SetupError("give the key or the name of an environment variable, not both", "key")
    if draft.key is not None and (not draft.key.strip() or any(c.isspace() for c in draft.key.strip())):
        raise SetupError("the key is empty or contains spaces", "key")
    if draft.key_env is not None and not _ENV_NAME.match(draft.key_env):
        raise SetupError("an environment variable name is letters, digits and '_' (e.g. OPENAI_API_KEY)", "key_env")
    if draft.kind == "ollama" and (draft.key or draft.key_env):
        raise SetupError("Ollama takes no key", "key")
    for name in draft.models:
        if not _MODEL.match(name):
            raise SetupError(f"invalid model name {name[:40]!r}", "models")
    with_key = bool(draft.key or draft.key_env or saved_key)
    url = check_url(draft.url, with_key=with_key, allow_insecure=draft.allow_insecure) if draft.url else None
    return pid, url


# -- the user's file ---------------------------------------------------------------------------------------------


def user_config_file(engine: ProviderHost) -> Path:
    """The user's own config layer: ``--config-file`` when given, else ``$XDG_CONFIG_HOME/eca/config.json``."""
    if engine.options.config_file is not None:
        return Path(engine.options.config_file).expanduser()
    return global_config_path(engine.env)


def _refuse_pure(engine: ProviderHost) -> None:
    if engine.config.pure_config:
        raise SetupError("pureConfig is on: the config files are not read, so a provider saved there would not "
                         "apply", code="pure-config")


def _providers_of(data: Mapping[str, Any], path: Path) -> JsonObject:
    providers = data.get("providers")
    if providers is None:
        return {}
    if not isinstance(providers, dict):
        raise ConfigEditError("config-file", f"{path}: 'providers' is not an object")
    return providers


def _write(path: Path, data: JsonObject, *, private: bool) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if private and path.exists():
            os.chmod(path, PRIVATE_MODE)  # narrowed before the key is in it (atomic_write keeps the mode)
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", private=private)
    except OSError as exc:
        raise ConfigEditError("config-file", f"{path}: cannot write: {exc.strerror or type(exc).__name__}") from None


def _env_name(value: Any) -> str | None:
    match = re.fullmatch(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::[^}]*)?\}", value) if isinstance(value, str) else None
    return match.group(1) if match else None


def _saved_key(engine: ProviderHost, pid: str) -> str | None:
    """The key the engine resolved for *pid* now (from the file, ``${env:}`` or ``<ID>_API_KEY``), for a Test of a
    provider whose key the browser no longer has."""
    provider = engine.registry.providers.get(pid)
    return provider.key if provider is not None else None


def _entry(draft: ProviderDraft, url: str | None, old: Mapping[str, Any]) -> JsonObject:
    """``providers.<id>`` as written: the old entry's other settings kept, ours replaced."""
    entry = dict(old)
    if draft.kind != "openai" and draft.kind != "anthropic":
        entry["api"] = _API[draft.kind]
    elif "api" in entry:
        entry["api"] = _API[draft.kind]
    if url is not None:
        entry["url"] = url
    if draft.key is not None:
        entry["key"] = draft.key.strip()
    elif draft.key_env is not None:
        entry["key"] = f"${{env:{draft.key_env}}}"
    old_models = entry.get("models")
    models: JsonObject = dict(old_models) if isinstance(old_models, dict) else {}
    for name in draft.models:
        models.setdefault(name, {})
    if models:
        entry["models"] = models
    return entry


def _save_file(path: Path, pid: str, draft: ProviderDraft, url: str | None, default_model: str | None) -> None:
    with _write_lock:
        data = _read_for_edit(path)
        providers = dict(_providers_of(data, path))
        old = providers.get(pid)
        entry = providers[pid] = _entry(draft, url, old if isinstance(old, dict) else {})
        data["providers"] = providers
        if default_model is not None:
            data["defaultModel"] = default_model
        key = entry.get("key")
        key_in_file = isinstance(key, str) and _env_name(key) is None
        _write(path, data, private=key_in_file or draft.key is not None)


async def _apply(engine: ProviderHost, select: str | None) -> None:
    """Reload the engine's config now (clients get ``config/updated``) and select *select* when it exists."""
    trusted = engine.trust.trusted_now()  # the user's own edit keeps a trusted workspace trusted (_trust.py)
    await engine.reload_config()
    engine.trust.keep_trusted(trusted)
    if select is not None and select in engine.registry.models() and engine.selected_model != select:
        engine.select_model(select)
        engine.broadcast("config/updated", engine.config_updated().dump())


async def save_provider(engine: ProviderHost, draft: ProviderDraft, *, default_model: str | None = None) -> Path:
    """Write *draft* to the user's config file (and *default_model* as ``defaultModel``, a full ``provider/model``
    id of this provider), reload, and select the default. Returns the file written. Raises :class:`SetupError` for
    a bad draft and :class:`~._mcp_admin.ConfigEditError` for a file we cannot rewrite faithfully."""
    _refuse_pure(engine)
    pid = draft.provider_id()
    saved = _saved_key(engine, pid) if pid else None
    pid, url = _check(draft, saved_key=saved is not None)
    if draft.key:
        add_secrets([draft.key.strip()])
    if default_model is not None:
        prefix, _, name = default_model.partition("/")
        if prefix != pid or not name or not _MODEL.match(name):
            raise SetupError(f"the default model must be one of '{pid}/…'", "default_model")
        known = draft.kind == "ollama" or name in draft.models or name in DEFAULT_MODELS.get(pid, ())
        if not known:
            draft.models = [*draft.models, name]
    path = user_config_file(engine)
    await asyncio.to_thread(_save_file, path, pid, draft, url, default_model)
    await _apply(engine, default_model)
    return path


def _remove_file(path: Path, pid: str) -> bool:
    with _write_lock:
        data = _read_for_edit(path)
        providers = dict(_providers_of(data, path))
        if pid not in providers:
            return False
        del providers[pid]
        data["providers"] = providers
        default = data.get("defaultModel")
        if isinstance(default, str) and default.startswith(pid + "/"):
            del data["defaultModel"]
        _write(path, data, private=False)
        return True


async def remove_provider(engine: ProviderHost, provider_id: str) -> bool:
    """Remove ``providers.<id>`` (and a ``defaultModel`` of it) from the user's file; False when it was not there."""
    _refuse_pure(engine)
    path = user_config_file(engine)
    removed = await asyncio.to_thread(_remove_file, path, provider_id)
    if removed:
        await _apply(engine, None)
    return removed


def _summaries(path: Path, engine: ProviderHost) -> list[ProviderSummary]:
    try:
        data = _read_for_edit(path)
    except ConfigEditError:
        return []
    try:
        providers = _providers_of(data, path)
    except ConfigEditError:
        return []
    out = []
    for pid, entry in providers.items():
        if not isinstance(entry, dict):
            continue
        api = entry.get("api") or (BUILTIN_PROVIDERS[pid].api if pid in BUILTIN_PROVIDERS else None)
        kind = _KIND_OF_API.get(api) if isinstance(api, str) else None
        if kind is None:
            continue
        resolved = engine.registry.providers.get(pid)
        key_env = _env_name(entry.get("key"))
        source: Literal["config", "env"] | None = resolved.key_source if resolved is not None else None
        if key_env is not None:
            source = "env"
        listed = entry.get("models")
        models: list[Any] = list(listed) if isinstance(listed, dict) else []
        out.append(ProviderSummary(
            id=pid, kind=cast(Kind, kind), url=url if isinstance(url := entry.get("url"), str) else None,
            key_source=source, key_env=key_env,
            key_hint=mask_secret(resolved.key) if resolved is not None and resolved.key else None,
            models=[m for m in models if isinstance(m, str)]))
    return out


async def provider_summaries(engine: ProviderHost) -> list[ProviderSummary]:
    """The providers of the user's config file, keys masked."""
    return await asyncio.to_thread(_summaries, user_config_file(engine), engine)


# -- testing and listing -----------------------------------------------------------------------------------------


def _default_url(kind: Kind) -> str | None:
    if kind == "ollama":
        return OLLAMA_DEFAULT_URL
    builtin = BUILTIN_PROVIDERS.get(kind)
    return builtin.default_url if builtin is not None else None


def _resolve_key(engine: ProviderHost, draft: ProviderDraft, pid: str, env: Mapping[str, str]) -> str | None:
    if draft.key:
        return draft.key.strip()
    if draft.key_env:
        value = env.get(draft.key_env)
        if not value:
            raise SetupError(f"{draft.key_env} is not set in the environment of the Jupyter server", "key_env")
        return value
    return _saved_key(engine, pid)


async def check_connection(engine: ProviderHost, draft: ProviderDraft, model: str, *,
                        http: httpx.AsyncClient | None = None) -> ConnectionResult:
    """Send one tiny request to *model* (the provider's own model name) with *draft*'s URL and key (the saved key
    when the draft has none); ``ok`` when the provider answered. Never raises for a provider's failure: the result
    says what went wrong, in the provider's words. :class:`SetupError` for a draft that is not valid."""
    from ..providers import ProviderError, ProviderRequest, ProviderSettings, Timeouts, UserMessage, create_provider

    pid = draft.provider_id()
    saved = _saved_key(engine, pid) if pid else None
    pid, url = _check(draft, saved_key=saved is not None, saved=pid in engine.registry.providers)
    if not model or not _MODEL.match(model):
        raise SetupError("choose a model to test", "model")
    key = _resolve_key(engine, draft, pid, engine.env)
    if key:
        add_secrets([key])
    if url is None:
        saved_provider = engine.registry.providers.get(pid)
        url = saved_provider.url if saved_provider is not None else _default_url(draft.kind)
    assert url is not None
    api = _API[draft.kind]
    settings = ProviderSettings(id=pid, api=cast(Any, api), url=url, key=key, max_retries=0,
                                timeouts=Timeouts(connect=5.0, read=30.0, write=10.0))
    client = http if http is not None else engine.http
    provider = create_provider(settings, client)
    request = ProviderRequest(model=model, messages=[UserMessage("Reply with OK.")],
                              max_tokens=16 if api == "openai-responses" else 1)
    try:
        async for _event in provider.stream(request):
            pass
    except ProviderError as exc:
        return ConnectionResult(ok=False, message=redact(str(exc), [key] if key else []), status=exc.status)
    except (ValueError, httpx.HTTPError) as exc:  # a URL httpx cannot use
        return ConnectionResult(ok=False, message=redact(f"{pid}: {exc}", [key] if key else []))
    return ConnectionResult(ok=True, message=f"{pid}/{model} answered.")


async def list_models(engine: ProviderHost, kind: Kind, url: str | None = None, *, provider_id: str | None = None,
                      key: str | None = None) -> ModelListing:
    """The models a provider offers: Ollama's pulled models (``GET /api/tags``, at *url* or the default
    127.0.0.1:11434), an OpenAI-compatible server's ``GET /v1/models`` when it has one, the built-in list for OpenAI
    and Anthropic. Unreachable is an answer (``reachable=False`` and what to do), not an error."""
    if kind not in KINDS:
        raise SetupError(f"unknown provider type {kind!r}", "kind")
    pid = provider_id or ("" if kind == "openai-compatible" else kind)
    saved = engine.registry.providers.get(pid) if pid else None
    if url:
        url = check_url(url, with_key=False, allow_insecure=True)
    else:
        url = saved.url if saved is not None and kind != "ollama" else _default_url(kind)
        if kind == "ollama" and saved is not None and saved.url != BUILTIN_PROVIDERS["ollama"].default_url:
            url = saved.url  # a URL the user configured, else the daemon's default port
    if url is None:
        return ModelListing("", False, [], "Give the server's URL to list its models.")
    if kind in ("openai", "anthropic"):
        return ModelListing(url, True, list(DEFAULT_MODELS.get(kind, ())), "")
    if kind == "ollama":
        return await _ollama_models(engine.http, url)
    return await _openai_models(engine.http, url, key or (saved.key if saved is not None else None))


async def _ollama_models(http: httpx.AsyncClient, url: str) -> ModelListing:
    base = url.removesuffix("/v1")
    try:
        response = await http.get(base + "/api/tags", timeout=3.0)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return ModelListing(url, False, [], f"No Ollama answered at {url} ({type(exc).__name__}): start it with "
                                           "'ollama serve', or give its URL.")
    try:
        data = response.json() if response.status_code == 200 else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return ModelListing(url, False, [], f"{url} is not an Ollama server (GET /api/tags: HTTP "
                                            f"{response.status_code}).")
    names = [m.get("name") or m.get("model") for m in data.get("models") or () if isinstance(m, dict)]
    models = [n for n in names if isinstance(n, str) and n]
    message = "" if models else "Ollama is running but has no models yet: 'ollama pull llama3.2', then refresh."
    return ModelListing(url, True, models, message)


async def _openai_models(http: httpx.AsyncClient, url: str, key: str | None) -> ModelListing:
    endpoint = url + ("/models" if url.endswith("/v1") else "/v1/models")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = await http.get(endpoint, headers=headers, timeout=5.0)
        data = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError):
        data = None
    items = data.get("data") if isinstance(data, dict) else None
    models = [m["id"] for m in items or () if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if models:
        return ModelListing(url, True, models, "")
    return ModelListing(url, False, [], "This server does not list its models: type the model name.")
