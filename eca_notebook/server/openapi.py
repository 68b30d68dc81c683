"""The OpenAPI 3.1 document of the REST API, served at ``<base_url>api/eca/v1/openapi.json``.

Built from the same pydantic models the handlers validate with (:mod:`._schemas`), so the document cannot drift
from the code: the tests check that every route of the extension is documented, that every documented operation
answers, and that the document validates as OpenAPI 3.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .._version import __version__
from ..protocol import JsonObject, JsonValue
from . import _schemas as s
from .handlers import API_PREFIX, EcaApiHandler

__all__ = ["OPERATIONS", "OpenApiHandler", "Operation", "build_openapi"]

MAPPING = """\
The jupyter-server extension of eca-notebook. It follows the editor-side HTTP + WebSocket API of
`http-websocket-api.md`, mapped onto Jupyter and the ECA protocol:

- **Base URL**: `https://host:3199/v1/` becomes `<jupyter base_url>api/eca/v1/`.
- **Auth**: instead of `Authorization: Bearer <token>`, Jupyter's own: `Authorization: token <token>`, `?token=`,
  or the login cookie (plus the `_xsrf` cookie echoed in `X-XSRFToken` on POST/PUT/DELETE). Authorization uses the
  resource `eca` (`read` for GET, `write` otherwise, `execute` for the WebSocket). Cross-origin requests (not
  token-authenticated) are refused with 403.
- **Sessions** are the ECA chats of a workspace: `session_id` is the ECA `chatId`; a session's `history` is what
  `chat/open` replays.
- **Workspace policy** is the workspace engine's `toolCall.approval` config (`byDefault`, `allow`, `ask`, `deny`,
  each rule with `argsMatchers`, and `risk`: what to do by a call's risk level). PUT replaces it in the running
  engine and merges it into `<workspace>/.eca/config.json` (atomic write).
- **Index** rebuild / refresh / incremental / status drive the workspace file index behind `chat/queryContext` and
  `@`-completion (`.gitignore`-aware file and directory names). `incremental` takes file-watcher events and
  rescans what changed; the same events update the content index behind `search_symbols` / `search_text` /
  `vector_search` (a `content_hash` equal to the indexed one skips the file unread), `rebuild` rebuilds both, and
  `status` reports it under `content`.
- **Models** and **models/current** are the engine's model registry (`provider/model` ids) and its selected model
  and behavior.
- **Providers** (the panel's "Connect a model"): PUT adds OpenAI, Anthropic, an OpenAI-compatible server or Ollama
  to the *user's* config file (never a workspace's; atomic, `0600` once it holds a key), POST `…/test` sends one
  tiny request, GET `…/models` lists what a provider offers. A key is write-only: answers carry it masked.
- **Streaming**, two doors onto the same engine and chats. The spec's own, `WS sessions/{session_id}/stream`
  (`?workspace_id=`), speaks the spec's `client.*`/`server.*` messages (strictly validated; see the README's "Editor
  clients: the session stream"; cross-site `Origin` refused with 403 even with a token, unknown session 404).
  And for the panel, **one** WebSocket per
  client and workspace, `api/eca/v1/ws?workspace=<path under the server root>`, carries ECA JSON-RPC 2.0, one
  message per text frame, exactly as over stdio:
  `client.hello` → `initialize`/`initialized` (answered by `config/updated` and `tool/serverUpdated`);
  `client.user_message` → `chat/prompt` (mentions → `contexts`, `command` → `/name args` in the message);
  `client.approval_response` → `chat/toolCallApprove` / `chat/toolCallReject`; `client.cancel` → `chat/promptStop`;
  `assistant.token` → `chat/contentReceived` text; `tool.request_approval` / `patch.proposed` → a `toolCallRun`
  content with `manualApproval` and a diff; `assistant.message_final` → `usage` then progress `finished`;
  `session.state` → `chat/statusChanged`; `server.error` → a JSON-RPC error or `$/showMessage`.

Errors are JSON (`ApiError`): `status`, `message`, `reason`, and `details` (one entry per problem) for invalid
request bodies (400). Unknown ids are 404; an unreadable workspace config file on policy PUT is 409.
"""

_WS_DESCRIPTION = """\
Upgrade to a WebSocket carrying ECA JSON-RPC 2.0 (one message per text frame). The workspace is `?workspace=`
(a folder relative to the server root; default: the root), unless `initialize` names `workspaceFolders`, which must
lie under the root (else `-32602`). Every socket of a workspace shares its engine: chats are shared and survive
reloads. Malformed frames are answered with JSON-RPC errors; frames over the message limit get `-32600` (far over
it, the socket is closed with 1009); a client that stops reading is disconnected with 1008.
"""


_STREAM_DESCRIPTION = """\
Upgrade to the session stream of `http-websocket-api.md`: one JSON message per text frame, `client.hello` first
(answered by `server.hello` with `session_id`, `workspace_id`, `command_mode`, `patch_mode`, `capabilities`, then
`session.state`). The session is an engine chat (create it with POST /sessions). Every problem with a message is a
`server.error` (`INVALID_MESSAGE`, `UNKNOWN_MESSAGE_TYPE`, `HANDSHAKE_REQUIRED`, `SESSION_BUSY`, `NOT_FOUND`,
`MESSAGE_TOO_LARGE`, `MODEL_ERROR`, `POLICY_VIOLATION`, `RETRIEVAL_FAILED`) and the socket stays open.
"""


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # relative to API_PREFIX, OpenAPI template syntax
    summary: str
    response: type[BaseModel] | None
    status: int = 200
    request: type[BaseModel] | None = None
    query: tuple[tuple[str, str], ...] = ()  # (name, description)
    errors: tuple[int, ...] = ()
    description: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)


_WID = ("workspace_id", "A workspace id (see GET /workspaces); default: the server root's workspace.")

OPERATIONS: tuple[Operation, ...] = (
    Operation("get", "/health", "Server health", s.Health, tags=("health",)),
    Operation("get", "/ws", "ECA over WebSocket", None, status=101, errors=(400,), description=_WS_DESCRIPTION,
              query=(("workspace", "A folder relative to the server root; default: the root."),), tags=("ws",)),
    Operation("get", "/openapi.json", "This document", None, tags=("meta",)),
    Operation("get", "/workspaces", "List registered workspaces", s.WorkspaceList, tags=("workspaces",)),
    Operation("post", "/workspaces/register", "Register a workspace (a folder under the server root)",
              s.WorkspaceInfo, status=201, request=s.RegisterWorkspace, errors=(400,), tags=("workspaces",),
              description="201 when new, 200 when it was already registered. Starts its engine unless start=false."),
    Operation("get", "/workspaces/{workspace_id}", "Get a workspace", s.WorkspaceInfo, errors=(404,),
              tags=("workspaces",)),
    Operation("get", "/workspaces/{workspace_id}/policy", "Get the approval policy (toolCall.approval)", s.Policy,
              errors=(404,), tags=("policy",)),
    Operation("put", "/workspaces/{workspace_id}/policy", "Replace the approval policy", s.Policy,
              request=s.PolicyUpdate, errors=(400, 404, 409), tags=("policy",),
              description="Applies to the running engine at once (clients get tool/serverUpdated) and is merged "
                          "into <workspace>/.eca/config.json atomically (rules set by lower config layers but "
                          "absent here are written as null, i.e. removed)."),
    Operation("get", "/workspaces/{workspace_id}/index/status", "Index status", s.IndexStatus, errors=(404,),
              tags=("index",)),
    Operation("post", "/workspaces/{workspace_id}/index/rebuild", "Rebuild the index from scratch", s.IndexResult,
              errors=(404,), tags=("index",)),
    Operation("post", "/workspaces/{workspace_id}/index/refresh", "Rescan what changed", s.IndexResult,
              errors=(404,), tags=("index",)),
    Operation("post", "/workspaces/{workspace_id}/index/incremental", "File-watcher events", s.IndexResult,
              request=s.IndexIncremental, errors=(400, 404), tags=("index",),
              description="Paths must lie inside the workspace. The index holds names, not contents: the events "
                          "trigger a rescan of the changed directories."),
    Operation("get", "/sessions", "List sessions (chats) of a workspace", s.SessionList, query=(_WID,),
              errors=(404,), tags=("sessions",)),
    Operation("post", "/sessions", "Create a session, optionally with a first prompt", s.Session, status=201,
              request=s.CreateSession, errors=(400, 404, 409), tags=("sessions",),
              description="With `message` the turn starts at once and streams to the workspace's WebSockets; "
                          "without, an empty chat is created (chat/opened is sent to the WebSockets)."),
    Operation("get", "/sessions/{session_id}", "Get a session with its history", s.SessionDetail,
              query=(_WID,), errors=(404,), tags=("sessions",),
              description="Without workspace_id the root's workspace is searched, then every running engine."),
    Operation("delete", "/sessions/{session_id}", "Delete a session (stops it if running)", None, status=204,
              query=(_WID,), errors=(404,), tags=("sessions",)),
    Operation("get", "/sessions/{session_id}/stream", "The session stream (WebSocket)", None, status=101,
              query=(_WID,), errors=(403, 404), tags=("ws",), description=_STREAM_DESCRIPTION),
    Operation("get", "/models", "List available models", s.ModelList, query=(_WID,), errors=(404,),
              tags=("models",)),
    Operation("get", "/models/current", "Selected model and behavior", s.CurrentModel, query=(_WID,),
              errors=(404,), tags=("models",)),
    Operation("put", "/models/current", "Select the model and/or behavior", s.CurrentModel,
              request=s.SetCurrentModel, query=(_WID,), errors=(400, 404), tags=("models",),
              description="Every WebSocket of the workspace gets config/updated."),
    Operation("get", "/providers", "Providers of the user's config file (keys masked) and the models",
              s.ProviderSetup, query=(_WID,), errors=(404,), tags=("providers",)),
    Operation("put", "/providers/{provider_id}", "Add or change a provider in the user's config file",
              s.ProviderSetup, request=s.SaveProvider, query=(_WID,), errors=(400, 404, 409), tags=("providers",),
              description="Written to ~/.config/eca/config.json (or --config-file) atomically, every other key "
                          "kept, 0600 when it holds a key; `key_env` writes `${env:NAME}` instead. A plain http:// "
                          "URL to another machine with a key needs `allow_insecure`. Applies at once: every "
                          "WebSocket gets config/updated; `default_model` becomes the default and is selected."),
    Operation("delete", "/providers/{provider_id}", "Remove a provider from the user's config file",
              s.ProviderSetup, query=(_WID,), errors=(404, 409), tags=("providers",)),
    Operation("post", "/providers/{provider_id}/test", "Send one tiny request to a model of a provider",
              s.ConnectionTest, request=s.ProviderCheck, query=(_WID,), errors=(400, 404), tags=("providers",),
              description="`ok: false` with the provider's own error (HTTP status and message, cannot connect) "
                          "when it fails. Without `key`/`key_env` the saved key is used."),
    Operation("get", "/providers/{provider_id}/models", "Models a provider offers", s.ProviderModels,
              query=(_WID, ("kind", "openai, anthropic, openai-compatible or ollama (default: from the id)."),
                     ("url", "A base URL to ask (Ollama: default http://127.0.0.1:11434).")),
              errors=(400, 404), tags=("providers",)),
)

_ERROR_TEXT = {
    400: "Invalid request (see `details`)",
    403: "Not authenticated, not authorized, or cross-origin",
    404: "Unknown workspace, session or provider",
    409: "Conflict (session exists / workspace config file unreadable)",
}


def _schemas() -> tuple[Mapping[tuple[type[BaseModel], str], JsonObject], JsonObject]:
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [(s.ApiError, "serialization")]
    for op in OPERATIONS:
        if op.request is not None:
            models.append((op.request, "validation"))
        if op.response is not None:
            models.append((op.response, "serialization"))
    models = list(dict.fromkeys(models))
    refs, defs = models_json_schema(models, ref_template="#/components/schemas/{model}")
    components: JsonObject = defs.get("$defs", {})
    return refs, components  # type: ignore[return-value]  # keys are (model, mode) pairs of BaseModel classes


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def build_openapi(server_url: str = "/" + API_PREFIX) -> JsonObject:
    refs, components = _schemas()

    def ref(model: type[BaseModel] | None, mode: str) -> JsonObject:
        assert model is not None
        return refs[(model, mode)]

    paths: dict[str, JsonObject] = {}
    for op in OPERATIONS:
        parameters: list[JsonValue] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_params(op.path)
        ]
        parameters += [{"name": name, "in": "query", "required": False, "description": text,
                        "schema": {"type": "string"}} for name, text in op.query]
        responses: JsonObject = {}
        if op.response is not None:
            responses[str(op.status)] = {"description": op.summary,
                                         "content": {"application/json": {"schema": ref(op.response, "serialization")}}}
        elif op.status == 101:
            responses["101"] = {"description": "Switching Protocols: ECA JSON-RPC over WebSocket"}
        elif op.status == 204:
            responses["204"] = {"description": "Deleted"}
        else:
            responses[str(op.status)] = {"description": op.summary,
                                         "content": {"application/json": {"schema": {"type": "object"}}}}
        if op.path == "/workspaces/register":
            responses["200"] = {"description": "Already registered",
                                "content": {"application/json": {"schema": ref(op.response, "serialization")}}}
        for code in sorted({*op.errors, 403}):
            responses[str(code)] = {"description": _ERROR_TEXT[code],
                                    "content": {"application/json": {"schema": ref(s.ApiError, "serialization")}}}
        operation: JsonObject = {
            "operationId": f"{op.method}_{op.path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}"
                           .replace(".", "_"),
            "summary": op.summary,
            "tags": list(op.tags),
            "responses": responses,
        }
        if op.description:
            operation["description"] = op.description
        if parameters:
            operation["parameters"] = parameters
        if op.request is not None:
            operation["requestBody"] = {"required": True, "content": {
                "application/json": {"schema": ref(op.request, "validation")}}}
        paths.setdefault(op.path, {})[op.method] = operation

    return {
        "openapi": "3.1.0",
        "info": {"title": "eca-notebook Jupyter server API", "version": __version__, "description": MAPPING},
        "servers": [{"url": server_url}],
        "security": [{"jupyterToken": []}, {"jupyterCookie": []}],
        "paths": {**paths},
        "components": {
            "schemas": components,
            "securitySchemes": {
                "jupyterToken": {"type": "apiKey", "in": "header", "name": "Authorization",
                                 "description": "`token <Jupyter token>` (or `?token=` in the URL)."},
                "jupyterCookie": {"type": "apiKey", "in": "cookie", "name": "username-<host>",
                                  "description": "The Jupyter login cookie; POST/PUT/DELETE also need the _xsrf "
                                                 "cookie echoed in an X-XSRFToken header."},
            },
        },
    }


class OpenApiHandler(EcaApiHandler):
    @authorized
    def get(self) -> None:
        self.send(build_openapi(url_path_join(self.base_url, API_PREFIX)))
