from __future__ import annotations

from typing import Literal

import pytest
from pydantic import Field

from eca_notebook.tools._args import ToolArgs, json_schema, parse_args


class Args(ToolArgs):
    path: str = Field(min_length=1, description="a path")
    limit: int = Field(10, ge=1, description="how many")
    flag: bool = False
    mode: Literal["a", "b"] = "a"
    include: str | None = None


def test_valid_args_fill_defaults() -> None:
    got, err = parse_args("t", Args, {"path": "x"})
    assert err is None and got is not None
    assert got.model_dump() == {"path": "x", "limit": 10, "flag": False, "mode": "a", "include": None}


def test_numbers_and_booleans_given_as_strings_are_accepted() -> None:
    got, err = parse_args("t", Args, {"path": "x", "limit": "25", "flag": "true"})
    assert err is None and got is not None and got.limit == 25 and got.flag is True


def test_arguments_as_json_text() -> None:
    got, err = parse_args("t", Args, '{"path": "x", "limit": 3}')
    assert err is None and got is not None and got.limit == 3
    assert parse_args("t", Args, "{nope")[1] == "t: arguments are not valid JSON"
    assert parse_args("t", Args, [1, 2])[1] == "t: arguments must be a JSON object"


@pytest.mark.parametrize(
    "args, message",
    [
        ({}, "t: missing required argument 'path'"),
        ({"path": ""}, "t: argument 'path' must not be empty"),
        ({"path": 3}, "t: argument 'path' must be a string (got 3)"),
        ({"path": None}, "t: argument 'path' must be a string (got null)"),
        ({"path": "x", "limit": "ten"}, "t: argument 'limit' must be an integer (got 'ten')"),
        ({"path": "x", "limit": 0}, "t: argument 'limit' must be >= 1 (got 0)"),
        ({"path": "x", "flag": "maybe"}, "t: argument 'flag' must be a boolean (got 'maybe')"),
        ({"path": "x", "mode": "c"}, "t: argument 'mode' must be one of 'a' or 'b' (got 'c')"),
    ],
)
def test_invalid_args_give_actionable_messages(args: dict, message: str) -> None:
    got, err = parse_args("t", Args, args)
    assert got is None
    assert err == message


def test_several_problems_reported_together() -> None:
    _, err = parse_args("t", Args, {"limit": "x"})
    assert err == "t: missing required argument 'path'; argument 'limit' must be an integer (got 'x')"


def test_unknown_arguments_are_ignored() -> None:
    got, err = parse_args("t", Args, {"path": "x", "extra": 1})
    assert err is None and got is not None


def test_json_schema_is_small_and_flat() -> None:
    schema = json_schema(Args)
    assert schema["type"] == "object"
    assert schema["required"] == ["path"]
    assert schema["properties"]["include"] == {"type": "string"}  # Optional flattened
    assert schema["properties"]["mode"] == {"enum": ["a", "b"], "type": "string"}
    assert schema["properties"]["limit"] == {"description": "how many", "minimum": 1, "type": "integer"}
    text = repr(schema)
    for noise in ("title", "$defs", "anyOf", "default"):
        assert noise not in text
