"""REST endpoints of the panel's "Connect a model" view: thin handlers over :mod:`eca_notebook.engine.provider_setup`.

The engine layer validates, writes the user's own config file (never the workspace's), tests and applies; these
handlers only shape bodies and errors: a refused draft is 400 with the field in ``details``, a config file that
cannot be rewritten faithfully (comments, not JSON) 409, a provider that is not in the file 404. A key arrives in a
request body and is never part of an answer (every answer also goes through the secret redaction).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized

from ..engine import Engine
from ..engine.provider_setup import (
    KINDS,
    ConfigEditError,
    ProviderDraft,
    SetupError,
    check_connection,
    list_models,
    provider_summaries,
    remove_provider,
    save_provider,
    user_config_file,
)
from ._schemas import (
    ConnectionTest,
    ProviderCheck,
    ProviderInfo,
    ProviderInput,
    ProviderModels,
    ProviderSetup,
    SaveProvider,
)
from ._workspaces import Workspace
from .handlers import ApiHTTPError, EcaApiHandler

__all__ = ["ProviderHandler", "ProviderModelsHandler", "ProviderTestHandler", "ProvidersHandler"]


def _draft(provider_id: str, body: ProviderInput) -> ProviderDraft:
    return ProviderDraft(kind=body.kind, id=provider_id, url=body.url, key=body.key, key_env=body.key_env,
                         models=list(body.models), allow_insecure=body.allow_insecure)


def _refused(exc: SetupError) -> ApiHTTPError:
    loc: list[str | int] = [exc.field] if exc.field else []
    return ApiHTTPError(400, exc.message, details=[{"loc": loc, "msg": exc.message, "type": exc.code}])


def _shown_path(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


async def _setup(workspace: Workspace, engine: Engine) -> ProviderSetup:
    summaries = await provider_summaries(engine)
    default = engine.registry.default_model()
    return ProviderSetup(
        workspace_id=workspace.id, config_file=_shown_path(user_config_file(engine)),
        providers=[ProviderInfo(id=p.id, kind=p.kind, url=p.url, key_source=p.key_source, key_env=p.key_env,
                                key_hint=p.key_hint, models=p.models) for p in summaries],
        models=engine.registry.models(), default=default, current=engine.selected_model or default)


class ProvidersHandler(EcaApiHandler):
    """The providers of the user's config file (keys masked), the models and the default."""

    @authorized
    async def get(self) -> None:
        workspace = self.query_workspace()
        self.send(await _setup(workspace, await self.engine(workspace)))


class ProviderHandler(EcaApiHandler):
    """PUT adds or changes ``providers.<id>`` in the user's config file (and ``defaultModel``); DELETE removes it.
    Every workspace's clients get ``config/updated`` (this engine at once, the others from their config watch)."""

    @authorized
    async def put(self, provider_id: str) -> None:
        workspace = self.query_workspace()
        body = self.parse_body(SaveProvider)
        engine = await self.engine(workspace)
        try:
            await save_provider(engine, _draft(provider_id, body), default_model=body.default_model)
        except SetupError as exc:
            raise _refused(exc) from None
        except ConfigEditError as exc:
            raise ApiHTTPError(409, exc.message) from None
        self.send(await _setup(workspace, engine))

    @authorized
    async def delete(self, provider_id: str) -> None:
        workspace = self.query_workspace()
        engine = await self.engine(workspace)
        try:
            removed = await remove_provider(engine, provider_id)
        except SetupError as exc:
            raise _refused(exc) from None
        except ConfigEditError as exc:
            raise ApiHTTPError(409, exc.message) from None
        if not removed:
            raise ApiHTTPError(404, f"no provider {provider_id!r} in your config file")
        self.send(await _setup(workspace, engine))


class ProviderTestHandler(EcaApiHandler):
    """One tiny request with the form's values (the saved key when the form has none): ``ok`` or the provider's
    own error. A failing provider is a 200 with ``ok: false``; a draft that cannot be tried is a 400."""

    @authorized
    async def post(self, provider_id: str) -> None:
        workspace = self.query_workspace()
        body = self.parse_body(ProviderCheck)
        engine = await self.engine(workspace)
        try:
            result = await check_connection(engine, _draft(provider_id, body), body.model)
        except SetupError as exc:
            raise _refused(exc) from None
        self.send(ConnectionTest(ok=result.ok, message=result.message, status=result.status))


class ProviderModelsHandler(EcaApiHandler):
    """The models a provider offers: Ollama's from its daemon (``?url=``, default 127.0.0.1:11434), an
    OpenAI-compatible server's ``/v1/models`` when it lists them, the built-in lists of OpenAI and Anthropic."""

    @authorized
    async def get(self, provider_id: str) -> None:
        workspace = self.query_workspace()
        kind: Any = self.get_query_argument("kind", None) or (
            provider_id if provider_id in KINDS and provider_id != "openai-compatible" else "openai-compatible")
        if kind not in KINDS:
            raise ApiHTTPError(400, f"unknown kind {kind!r}",
                               details=[{"loc": ["kind"], "msg": "unknown kind", "type": "value_error"}])
        url = self.get_query_argument("url", None) or None
        engine = await self.engine(workspace)
        try:
            listing = await list_models(engine, kind, url, provider_id=provider_id)
        except SetupError as exc:
            raise _refused(exc) from None
        self.send(ProviderModels(provider_id=provider_id, kind=kind, url=listing.url, reachable=listing.reachable,
                                 models=listing.models, message=listing.message))
