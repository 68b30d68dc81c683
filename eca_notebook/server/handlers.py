"""The REST handlers' common base (auth, origin, JSON bodies and errors) and the extension's route table.

Every REST route requires a Jupyter identity and is authorized with ``@authorized`` on the resource ``"eca"``
(``read`` for GET, ``write`` for POST/PUT/DELETE: jupyter_server maps the HTTP method). A request whose ``Origin``
is another site (and that is not token-authenticated: a token already proves the caller) is refused with 403, where
jupyter_server's ``APIHandler`` would answer 404. Errors are JSON: ``{"status", "message", "reason", "details"?}``.
Every answer, errors included, goes through the process-wide secret redaction (:mod:`eca_notebook._redact`).
"""

from __future__ import annotations

import json
from http.client import responses
from typing import Any, NotRequired, TypedDict, TypeVar

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from pydantic import BaseModel, ValidationError
from tornado import web

from .._redact import redact_json
from ..engine import Engine
from ..protocol import JsonObject
from ._workspaces import Workspace
from .ws import AUTH_RESOURCE, EcaWebSocketHandler, ServerState

__all__ = ["API_PREFIX", "ApiHTTPError", "EcaApiHandler", "Problem", "route_table", "validation_details"]

API_PREFIX = "api/eca/v1"

M = TypeVar("M", bound=BaseModel)


class Problem(TypedDict):
    """One problem of a refused body (the ``details`` of a 400; :class:`~._schemas.ValidationDetail` documents it)."""

    loc: list[str | int]
    msg: str
    type: str


class _ErrorBody(TypedDict):
    status: int
    message: str
    reason: str
    details: NotRequired[list[Problem]]


class ApiHTTPError(web.HTTPError):
    """An HTTP error with a JSON body: the message, and (validation errors) the problems one by one."""

    def __init__(self, status: int, message: str, *, details: list[Problem] | None = None) -> None:
        super().__init__(status, "%s", message)
        self.message = message
        self.details = details


def validation_details(exc: ValidationError, prefix: tuple[str | int, ...] = ()) -> list[Problem]:
    """pydantic's errors without the ``input`` values (a body may carry a secret we should not echo)."""
    return [{"loc": [*prefix, *error["loc"]], "msg": error["msg"], "type": error["type"]}
            for error in exc.errors(include_url=False, include_input=False, include_context=False)]


class EcaApiHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    def initialize(self, state: ServerState) -> None:
        self.state = state

    async def prepare(self) -> None:  # type: ignore[override]
        try:
            await super().prepare()
        except web.HTTPError as exc:
            # jupyter_server answers a cross-origin API request with 404; say what it is.
            if exc.status_code == 404 and hasattr(self, "_jupyter_current_user") and not self.check_origin():
                raise ApiHTTPError(403, "cross-origin request refused") from None
            raise

    # -- errors ----------------------------------------------------------------------------------------------------

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        reason = responses.get(status_code, "Unknown HTTP Error")
        body: _ErrorBody = {"status": status_code, "message": reason, "reason": reason}
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        if isinstance(exc, ApiHTTPError):
            body["message"] = exc.message
            if exc.details is not None:
                body["details"] = exc.details
        elif isinstance(exc, web.HTTPError):
            if exc.log_message:
                body["message"] = exc.log_message % exc.args if exc.args else exc.log_message
            if exc.reason:
                body["reason"] = exc.reason
        elif exc is not None:
            body["message"] = "Unhandled error"
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(redact_json(body)))

    # -- bodies ----------------------------------------------------------------------------------------------------

    def parse_body(self, model: type[M]) -> M:
        """The request body validated as *model*; 400 with the problems when it is not. An empty body is ``{}``."""
        raw = self.request.body or b""
        if raw.strip():
            try:
                data = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ApiHTTPError(400, f"the body is not valid JSON: {exc}") from None
        else:
            data = {}
        if not isinstance(data, dict):
            raise ApiHTTPError(400, "the body must be a JSON object")
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise ApiHTTPError(400, f"invalid body: {exc.error_count()} validation error(s)",
                               details=validation_details(exc)) from None

    def send(self, body: BaseModel | JsonObject, status: int = 200) -> None:
        self.set_status(status)
        if isinstance(body, BaseModel):
            payload = body.model_dump(mode="json", exclude_none=True, by_alias=True)
        else:
            payload = body
        self.finish(json.dumps(redact_json(payload)))  # every REST answer leaves through here

    # -- workspaces ------------------------------------------------------------------------------------------------

    def workspace(self, workspace_id: str | None) -> Workspace:
        """A registered workspace (404 when unknown); None means the server root's."""
        manager = self.state.manager
        if workspace_id is None or workspace_id == "":
            return manager.default
        workspace = manager.get(workspace_id)
        if workspace is None:
            raise ApiHTTPError(404, f"unknown workspace {workspace_id!r}")
        return workspace

    def query_workspace(self) -> Workspace:
        return self.workspace(self.get_query_argument("workspace_id", None))

    async def engine(self, workspace: Workspace) -> Engine:
        try:
            return await self.state.manager.ready(workspace)
        except RuntimeError as exc:  # the server is stopping
            raise ApiHTTPError(503, str(exc)) from None


def route_table(state: ServerState) -> list[tuple[str, type, dict[str, Any]]]:
    """Every route of the extension (patterns relative to the base URL; the ExtensionApp prepends it)."""
    from . import _providers, rest
    from .openapi import OpenApiHandler
    from .stream import SessionStreamHandler

    kwargs = {"state": state}
    wid = r"(?P<workspace_id>[^/]+)"
    sid = r"(?P<session_id>[^/]+)"
    pid = r"(?P<provider_id>[^/]+)"

    def at(path: str) -> str:
        return url_path_join(API_PREFIX, path)

    return [
        (at("ws"), EcaWebSocketHandler, kwargs),
        (at("health"), rest.HealthHandler, kwargs),
        (at("openapi.json"), OpenApiHandler, kwargs),
        (at("workspaces"), rest.WorkspacesHandler, kwargs),
        (at("workspaces/register"), rest.RegisterWorkspaceHandler, kwargs),
        (at(f"workspaces/{wid}"), rest.WorkspaceHandler, kwargs),
        (at(f"workspaces/{wid}/policy"), rest.PolicyHandler, kwargs),
        (at(f"workspaces/{wid}/index/status"), rest.IndexStatusHandler, kwargs),
        (at(f"workspaces/{wid}/index/(?P<action>rebuild|refresh|incremental)"), rest.IndexActionHandler, kwargs),
        (at("sessions"), rest.SessionsHandler, kwargs),
        (at(f"sessions/{sid}"), rest.SessionHandler, kwargs),
        (at(f"sessions/{sid}/stream"), SessionStreamHandler, kwargs),
        (at("models"), rest.ModelsHandler, kwargs),
        (at("models/current"), rest.CurrentModelHandler, kwargs),
        (at("providers"), _providers.ProvidersHandler, kwargs),
        (at(f"providers/{pid}"), _providers.ProviderHandler, kwargs),
        (at(f"providers/{pid}/test"), _providers.ProviderTestHandler, kwargs),
        (at(f"providers/{pid}/models"), _providers.ProviderModelsHandler, kwargs),
    ]
