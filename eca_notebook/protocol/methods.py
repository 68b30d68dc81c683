"""The one table every door dispatches on: method name → params model, result model, direction, kind.

The stdio server, the WebSocket door, the Python client and the generated TypeScript types all read this table, so
they cannot drift apart. Conventions:

- ``params=None``: the method takes no params; absent, ``null``, ``{}`` and ``[]`` are all accepted
  (see :class:`.general.EmptyParams`) and :func:`parse_params` returns ``None``.
- ``result=None``: a notification, or a request whose result is JSON ``null`` (``shutdown``).
- ``params`` is a model class, except for ``tool/serverUpdated`` whose params are the discriminated union
  :data:`.tools.ToolServerUpdatedParams`; :func:`parse_params` handles both through a ``TypeAdapter``.
- ``direction="both"`` only for ``$/cancelRequest``, which either peer may send (LSP semantics);
  it is listed by both :func:`client_to_server` and :func:`server_to_client`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import chat, completion, config, editor, general, jobs, lifecycle, navigation, notebook, question, tools
from .errors import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError

__all__ = [
    "METHODS",
    "Direction",
    "Kind",
    "MethodSpec",
    "client_to_server",
    "invalid_params",
    "parse_params",
    "parse_result",
    "server_to_client",
]

Direction = Literal["client->server", "server->client", "both"]
Kind = Literal["request", "notification"]


@dataclass(frozen=True)
class MethodSpec:
    name: str
    #: A model class, the ``ToolServerUpdatedParams`` union, or ``None`` (takes no params).
    params: type[BaseModel] | Any | None
    #: ``None`` = result is JSON ``null`` (shutdown), or the method is a notification.
    result: type[BaseModel] | None
    direction: Direction
    kind: Kind


def _req(name: str, params: Any, result: type[BaseModel] | None, direction: Direction = "client->server") -> MethodSpec:
    return MethodSpec(name, params, result, direction, "request")


def _note(name: str, params: Any, direction: Direction) -> MethodSpec:
    return MethodSpec(name, params, None, direction, "notification")


_C2S: Direction = "client->server"
_S2C: Direction = "server->client"

_SPECS = [
    # Lifecycle.
    _req("initialize", lifecycle.InitializeParams, lifecycle.InitializeResult),
    _note("initialized", None, _C2S),
    _req("shutdown", None, None),
    _note("exit", None, _C2S),
    _note("workspace/didChangeWorkspaceFolders", lifecycle.DidChangeWorkspaceFoldersParams, _C2S),
    # Chat, client → server.
    _req("chat/prompt", chat.ChatPromptParams, chat.ChatPromptResult),
    _note("chat/toolCallApprove", chat.ChatToolCallApproveParams, _C2S),
    _note("chat/toolCallReject", chat.ChatToolCallRejectParams, _C2S),
    _req("chat/queryContext", chat.ChatQueryContextParams, chat.ChatQueryContextResult),
    _req("chat/queryCommands", chat.ChatQueryCommandsParams, chat.ChatQueryCommandsResult),
    _req("chat/queryFiles", chat.ChatQueryFilesParams, chat.ChatQueryFilesResult),
    _note("chat/promptStop", chat.ChatPromptStopParams, _C2S),
    _note("chat/promptSteer", chat.ChatPromptSteerParams, _C2S),
    _note("chat/promptSteerRemove", chat.ChatPromptSteerRemoveParams, _C2S),
    _req("chat/delete", chat.ChatDeleteParams, chat.ChatDeleteResult),
    _req("chat/update", chat.ChatUpdateParams, chat.ChatUpdateResult),
    _note("chat/selectedBehaviorChanged", chat.ChatSelectedBehaviorChangedParams, _C2S),
    _note("chat/selectedAgentChanged", chat.ChatSelectedAgentChangedParams, _C2S),
    _note("chat/selectedModelChanged", chat.ChatSelectedModelChangedParams, _C2S),
    _req("chat/list", chat.ChatListParams, chat.ChatListResult),
    _req("chat/open", chat.ChatOpenParams, chat.ChatOpenResult),
    _req("chat/history", chat.ChatHistoryParams, chat.ChatHistoryResult),
    _req("chat/rollback", chat.ChatRollbackParams, chat.ChatRollbackResult),
    _req("chat/clear", chat.ChatClearParams, chat.ChatClearResult),
    _req("chat/fork", chat.ChatForkParams, chat.ChatForkResult),
    _req("chat/toolCallUndo", notebook.ChatToolCallUndoParams, notebook.ChatToolCallUndoResult),
    # Chat, server → client.
    _note("chat/contentReceived", chat.ChatContentReceivedParams, _S2C),
    _note("chat/opened", chat.ChatOpenedParams, _S2C),
    _note("chat/deleted", chat.ChatDeletedParams, _S2C),
    _note("chat/cleared", chat.ChatClearedParams, _S2C),
    _note("chat/statusChanged", chat.ChatStatusChangedParams, _S2C),
    _req("chat/askQuestion", question.ChatAskQuestionParams, question.ChatAskQuestionResult, _S2C),
    # Editor (the server asks the client).
    _req("editor/getDiagnostics", editor.EditorGetDiagnosticsParams, editor.EditorGetDiagnosticsResult, _S2C),
    _req("editor/getDefinition", navigation.EditorGetDefinitionParams, navigation.EditorGetDefinitionResult, _S2C),
    _req("editor/getReferences", navigation.EditorGetReferencesParams, navigation.EditorGetReferencesResult, _S2C),
    _req("notebook/getCells", notebook.NotebookGetCellsParams, notebook.NotebookGetCellsResult, _S2C),
    _req("notebook/applyEdit", notebook.NotebookApplyEditParams, notebook.NotebookApplyEditResult, _S2C),
    _req("notebook/runCells", notebook.NotebookRunCellsParams, notebook.NotebookRunCellsResult, _S2C),
    # Config and tools.
    _req("completion/inline", completion.CompletionInlineParams, completion.CompletionInlineResult, _C2S),
    _req("rewrite/prompt", completion.RewritePromptParams, completion.RewritePromptResult, _C2S),
    _note("rewrite/contentReceived", completion.RewriteContentReceivedParams, _S2C),
    _note("rewrite/stop", completion.RewriteStopParams, _C2S),
    _note("config/updated", config.ConfigUpdatedParams, _S2C),
    _note("tool/serverUpdated", tools.ToolServerUpdatedParams, _S2C),
    _note("mcp/stopServer", tools.McpStopServerParams, _C2S),
    _note("mcp/startServer", tools.McpStartServerParams, _C2S),
    _note("mcp/enableServer", tools.McpEnableServerParams, _C2S),
    _note("mcp/disableServer", tools.McpDisableServerParams, _C2S),
    _req("mcp/addServer", tools.McpAddServerParams, tools.McpAddServerResult),
    _req("mcp/removeServer", tools.McpRemoveServerParams, tools.McpRemoveServerResult),
    _req("mcp/updateServer", tools.McpUpdateServerParams, tools.McpUpdateServerResult),
    _note("tool/serverRemoved", tools.ToolServerRemovedParams, _S2C),
    # Background jobs (shell_command with background).
    _req("jobs/list", None, jobs.JobsListResult),
    _req("jobs/kill", jobs.JobsKillParams, jobs.JobsKillResult),
    _req("jobs/readOutput", jobs.JobsReadOutputParams, jobs.JobsReadOutputResult),
    _note("jobs/updated", jobs.JobsListResult, _S2C),
    # General.
    _note("$/showMessage", general.ShowMessageParams, _S2C),
    _note("$/progress", general.ProgressParams, _S2C),
    _note("$/cancelRequest", general.CancelRequestParams, "both"),
]

METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in _SPECS}


def _select(direction: Direction, kind: Kind | None) -> list[MethodSpec]:
    return [
        spec
        for spec in METHODS.values()
        if spec.direction in (direction, "both") and (kind is None or spec.kind == kind)
    ]


def client_to_server(kind: Kind | None = None) -> list[MethodSpec]:
    """Methods a client sends (requests and/or notifications), including ``$/cancelRequest``."""
    return _select("client->server", kind)


def server_to_client(kind: Kind | None = None) -> list[MethodSpec]:
    """Methods a server sends (requests and/or notifications), including ``$/cancelRequest``."""
    return _select("server->client", kind)


_UNION_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _validate_params(spec: MethodSpec, params: Any) -> BaseModel:
    if isinstance(spec.params, type) and issubclass(spec.params, BaseModel):
        return spec.params.model_validate(params)
    adapter = _UNION_ADAPTERS.get(spec.name)
    if adapter is None:  # built lazily: most processes never parse a union-typed method
        params_type: Any = spec.params
        adapter = _UNION_ADAPTERS[spec.name] = TypeAdapter(params_type)
    model: BaseModel = adapter.validate_python(params)
    return model


def _spec(method: str) -> MethodSpec:
    spec = METHODS.get(method)
    if spec is None:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    return spec


def parse_params(method: str, params: Any) -> BaseModel | None:
    """Validate a message's ``params`` (pass ``None`` when absent) into the method's model.

    Returns ``None`` for methods that take no params. Raises :class:`pydantic.ValidationError` when the params do
    not fit (a positional ``[...]`` list is only accepted, empty, by methods that take none), and
    :class:`.errors.RpcError` with ``METHOD_NOT_FOUND`` for a method not in :data:`METHODS`.
    """
    spec = _spec(method)
    if spec.params is None:
        general.EmptyParams.model_validate(params)
        return None
    # Absent/null params on a method whose fields are all optional (``chat/delete``) mean "all defaults".
    return _validate_params(spec, {} if params is None else params)


def parse_result(method: str, result: Any) -> BaseModel | None:
    """Validate a response's ``result`` for a request we sent. ``None`` for methods whose result is ``null``."""
    spec = _spec(method)
    if spec.result is None:
        return None
    return spec.result.model_validate({} if result is None else result)


def invalid_params(exc: ValidationError, method: str | None = None) -> RpcError:
    """Turn a validation failure into the ``INVALID_PARAMS`` error a peer receives.

    ``data.errors`` lists each failure's location (wire names), message and type — but never the offending *input*:
    params such as ``initializationOptions`` can carry API keys, which must not travel back in errors or logs.
    """
    details = [
        {"loc": [str(part) for part in err["loc"]], "msg": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    summary = "; ".join(f"{'.'.join(d['loc']) or '<params>'}: {d['msg']}" for d in details)
    prefix = f"Invalid params for {method}" if method else "Invalid params"
    return RpcError(INVALID_PARAMS, f"{prefix}: {summary}" if summary else prefix, {"errors": details})
