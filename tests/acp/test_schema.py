"""Validation and size limits of what ACP clients send."""

from __future__ import annotations

import pytest

from eca_notebook.acp._schema import SIZE_LIMITS, PromptParams, parse
from eca_notebook.protocol.errors import INVALID_PARAMS, RpcError


def test_prompt_blocks_are_discriminated_and_unknown_keys_tolerated():
    params = parse("session/prompt", {"sessionId": "s-1", "_meta": {"x": 1}, "prompt": [
        {"type": "text", "text": "hi", "annotations": {"priority": 1}},
        {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
        {"type": "resource", "resource": {"uri": "file:///b.py", "text": "b"}},
    ]})
    assert isinstance(params, PromptParams)
    assert [b.type for b in params.prompt] == ["text", "resource_link", "resource"]


@pytest.mark.parametrize("method, params, where", [
    ("session/new", {"cwd": "relative", "mcpServers": []}, "cwd"),
    ("session/new", {"mcpServers": []}, "cwd"),
    ("session/prompt", {"sessionId": "s", "prompt": []}, "prompt"),
    ("session/prompt", {"sessionId": "has space", "prompt": [{"type": "text", "text": "x"}]}, "sessionId"),
    ("session/prompt", {"sessionId": "s", "prompt": [{"type": "video", "text": "x"}]}, "prompt"),
    ("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "a\0b"}]}, "prompt"),
    ("initialize", {"protocolVersion": "one"}, "protocolVersion"),
    ("session/load", {"sessionId": "s", "cwd": "/tmp/x/../y\0", "mcpServers": []}, "cwd"),
])
def test_invalid_params_name_the_field(method, params, where):
    with pytest.raises(RpcError) as err:
        parse(method, params)
    assert err.value.code == INVALID_PARAMS
    assert any(where in ".".join(e["loc"]) for e in err.value.data["errors"])
    assert "input" not in err.value.data["errors"][0]  # never echoes the input back


def test_oversized_params_are_refused_before_validation():
    limit = SIZE_LIMITS["session/new"]
    with pytest.raises(RpcError) as err:
        parse("session/new", {"cwd": "/tmp", "mcpServers": [{"name": "x" * limit}]})
    assert err.value.code == INVALID_PARAMS and "too large" in err.value.message
    assert err.value.data["limit"] == limit and err.value.data["size"] > limit


def test_unknown_methods_pass_through():
    assert parse("_vendor/thing", {"a": 1}) == {"a": 1}
