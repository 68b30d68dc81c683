from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from eca_notebook.protocol import (
    McpServerUpdatedParams,
    McpStopServerParams,
    NativeServerUpdatedParams,
    ServerTool,
    ToolServerUpdatedParams,
)

_UPDATED = TypeAdapter(ToolServerUpdatedParams)


def test_native_defaults_and_round_trip() -> None:
    params = NativeServerUpdatedParams(tools=[ServerTool(name="read_file", parameters={"type": "object"})])
    wire = {"type": "native", "name": "ECA", "status": "running",
            "tools": [{"name": "read_file", "description": "", "parameters": {"type": "object"}}]}
    assert params.dump() == wire
    assert isinstance(_UPDATED.validate_python(wire), NativeServerUpdatedParams)


def test_mcp_round_trip() -> None:
    wire = {"type": "mcp", "name": "github", "command": "npx", "args": ["-y", "server"], "status": "failed"}
    params = _UPDATED.validate_python(wire)
    assert isinstance(params, McpServerUpdatedParams)
    assert params.dump() == wire
    with_tools = {**wire, "status": "running", "tools": [{"name": "x", "description": "d", "parameters": {},
                                                          "disabled": True}]}
    assert _UPDATED.validate_python(with_tools).dump() == with_tools


def test_mcp_bad_status() -> None:
    with pytest.raises(ValidationError):
        _UPDATED.validate_python({"type": "mcp", "name": "x", "status": "sleeping"})


def test_stop_server() -> None:
    assert McpStopServerParams.model_validate({"name": "github"}).dump() == {"name": "github"}
