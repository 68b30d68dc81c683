"""JSON-RPC 2.0 message shapes shared by the endpoint's dispatcher and its outbox: what goes on the wire for a
value, an error response, a failure's one-line text."""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, TypedDict

import pydantic
from pydantic_core import to_jsonable_python

from ..protocol import JsonValue
from ..protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, ErrorObject, RpcError

__all__ = ["Id", "Request", "Response", "envelope_error", "error_response", "invalid_params", "replace_unserializable",
           "short", "to_json", "valid_id"]

MAX_ERROR_TEXT = 200

Id = int | str | None


class Request(TypedDict):
    """A request of ours as it goes on the wire; without ``id`` a notification."""

    jsonrpc: Literal["2.0"]
    id: NotRequired[int]
    method: str
    params: NotRequired[JsonValue]


class Response(TypedDict):
    """A response of ours as it goes on the wire: ``result`` or ``error``."""

    jsonrpc: Literal["2.0"]
    id: Id
    result: NotRequired[JsonValue]
    error: NotRequired[ErrorObject]


_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_json(value: Any) -> Any:
    """What goes on the wire for a result or params value: pydantic models dumped by alias without ``None`` fields,
    containers walked (a list of models works), everything else as is.

    Exact types are tried first and strings and numbers are not walked into: every streamed chunk passes here."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {k: (v if type(v) in _PLAIN else to_json(v)) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else to_json(v) for v in value]
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def error_response(id: Id, error: RpcError) -> Response:
    return {"jsonrpc": "2.0", "id": id, "error": error.to_dict()}


def envelope_error(message: Any) -> Response | None:
    """The ``-32600`` answer to an incoming message that is not a well-formed request or notification, or None.
    (A response to one of ours — no ``method``, a ``result`` or ``error`` — is told apart before this.)"""
    if type(message) is dict and message.get("jsonrpc") == "2.0" and type(message.get("method")) is str:
        # the well-formed message (nearly all of them) in a few exact-type checks
        id, params = message.get("id"), message.get("params")
        if (id is None or type(id) is str or type(id) is int) and (params is None or type(params) in (dict, list)):
            return None
    if not isinstance(message, dict):
        return error_response(None, RpcError(INVALID_REQUEST, "a message must be a JSON object or array"))
    id = message.get("id")
    reply_id = id if valid_id(id) else None
    if "method" not in message:
        return error_response(reply_id, RpcError(INVALID_REQUEST, "a message needs 'method', or 'result'/'error'"))
    if message.get("jsonrpc") != "2.0":
        return error_response(reply_id, RpcError(INVALID_REQUEST, "'jsonrpc' must be \"2.0\""))
    if not isinstance(message["method"], str):
        return error_response(reply_id, RpcError(INVALID_REQUEST, "'method' must be a string"))
    if not valid_id(id):
        return error_response(None, RpcError(INVALID_REQUEST, "'id' must be an integer, a string or null"))
    params = message.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return error_response(reply_id, RpcError(INVALID_REQUEST, "'params' must be an object, an array or null"))
    return None


def short(exc: BaseException) -> str:
    """An exception as one line for the peer or the log: type and message, truncated."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 1] + "…"


def invalid_params(exc: pydantic.ValidationError) -> RpcError:
    errors = to_jsonable_python(exc.errors(include_url=False), fallback=str)
    return RpcError(INVALID_PARAMS, f"Invalid params: {exc.error_count()} validation error(s)", errors)


def replace_unserializable(response: Response | list[Response]) -> Response | list[Response]:
    """Swap every response that cannot be encoded for an internal error carrying its id."""

    def fix(item: Response) -> Response:
        try:
            json.dumps(item, allow_nan=False)
            return item
        except (TypeError, ValueError):
            return error_response(item.get("id"), RpcError(INTERNAL_ERROR, "result is not JSON-serializable"))

    return [fix(r) for r in response] if isinstance(response, list) else fix(response)
