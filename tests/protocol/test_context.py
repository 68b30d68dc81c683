from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from eca_notebook.protocol import (
    ChatContext,
    CursorContext,
    DirectoryContext,
    FileContext,
    GitContext,
    ImageContext,
    McpResourceContext,
    RepoMapContext,
    UnknownContext,
    WebContext,
)

_CONTEXTS = TypeAdapter(list[ChatContext])

# Wire shapes from shared/specs/eca-protocol.md (ChatContext).
WIRE = [
    ({"type": "file", "path": "/p/a.py", "linesRange": {"start": 1, "end": 10}}, FileContext),
    ({"type": "file", "path": "/p/a.py"}, FileContext),
    ({"type": "directory", "path": "/p/src"}, DirectoryContext),
    ({"type": "web", "url": "https://example.com"}, WebContext),
    ({"type": "repoMap"}, RepoMapContext),
    (
        {
            "type": "cursor",
            "path": "/p/a.py",
            "position": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 7}},
        },
        CursorContext,
    ),
    (
        {
            "type": "mcpResource",
            "uri": "file://foo/bar.clj",
            "name": "bar",
            "description": "a resource",
            "mimeType": "text/markdown",
            "server": "fs",
        },
        McpResourceContext,
    ),
    ({"type": "git"}, GitContext),  # an eca-notebook extension (@git)
    ({"type": "git", "part": "diff", "description": "Working diff"}, GitContext),
    ({"type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="}, ImageContext),  # the reference's
    ({"type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo=", "name": "Out[3]"}, ImageContext),
]


@pytest.mark.parametrize(("wire", "model"), WIRE)
def test_round_trip(wire: dict, model: type) -> None:
    [ctx] = _CONTEXTS.validate_python([wire])
    assert type(ctx) is model
    assert ctx.dump() == wire
    assert _CONTEXTS.dump_python([ctx], by_alias=True, exclude_none=True, mode="json") == [wire]


def test_file_context_attributes_are_snake_case() -> None:
    [ctx] = _CONTEXTS.validate_python([WIRE[0][0]])
    assert isinstance(ctx, FileContext)
    assert ctx.lines_range is not None and (ctx.lines_range.start, ctx.lines_range.end) == (1, 10)


def test_mcp_resource_defaults() -> None:
    ctx = McpResourceContext(uri="x://y")
    assert ctx.dump() == {"type": "mcpResource", "uri": "x://y", "name": "", "description": "", "mimeType": "",
                          "server": ""}


def test_unknown_type_falls_back_and_keeps_its_keys() -> None:
    wire = {"type": "selection", "path": "/p/a.py", "text": "x = 1"}
    [ctx] = _CONTEXTS.validate_python([wire])
    assert isinstance(ctx, UnknownContext)
    assert ctx.type == "selection"
    assert ctx.dump() == wire
    assert _CONTEXTS.dump_python([ctx], by_alias=True, mode="json") == [wire]


def test_known_type_with_bad_fields_is_still_an_error() -> None:
    with pytest.raises(ValidationError) as info:
        _CONTEXTS.validate_python([{"type": "file"}])
    assert any("path" in err["loc"] for err in info.value.errors())


@pytest.mark.parametrize("bad", ["file", 3, None, {"path": "no type"}])
def test_non_objects_and_untyped_objects_are_errors(bad: object) -> None:
    with pytest.raises(ValidationError):
        _CONTEXTS.validate_python([bad])
