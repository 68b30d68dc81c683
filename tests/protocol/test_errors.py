"""JSON-RPC error codes: one meaning per code on the ECA wire, the reference server's on -32001."""

from __future__ import annotations

from eca_notebook.protocol import errors
from eca_notebook.protocol.errors import TIMEOUT, UNKNOWN_ERROR, RpcError


def test_every_code_has_one_meaning():
    codes = {name: value for name, value in vars(errors).items() if name.isupper() and isinstance(value, int)}
    by_value: dict[int, list[str]] = {}
    for name, value in codes.items():
        by_value.setdefault(value, []).append(name)
    assert {v: n for v, n in by_value.items() if len(n) > 1} == {}


def test_minus_32001_is_the_reference_servers_unknown_error():
    assert UNKNOWN_ERROR == -32001 and RpcError(UNKNOWN_ERROR).message == "Unknown error"
    assert TIMEOUT != -32001 and RpcError(TIMEOUT).to_dict() == {"code": TIMEOUT, "message": "Request timed out"}
