"""The registry of native tools and the contract every tool meets."""

from __future__ import annotations

import inspect
import json

import pytest

from eca_notebook.tools import get_native_tool, native_tools
from eca_notebook.tools.base import ToolContext

NAMES = ["read_file", "write_file", "edit_file", "move_file", "delete_file", "grep", "directory_tree", "search_symbols",
         "search_text", "vector_search", "shell_command", "bg_job",
         "editor_diagnostics", "editor_definition", "editor_references", "update_plan", "ask_user", "notebook_read",
         "notebook_edit_cell", "notebook_insert_cell",
         "notebook_delete_cell", "notebook_move_cell", "notebook_run_cells"]  # fmt: skip
NOTEBOOK_CHANGES = {"notebook_edit_cell", "notebook_insert_cell", "notebook_delete_cell", "notebook_move_cell"}


def test_registry_names_and_flags() -> None:
    tools = {t.name: t for t in native_tools()}
    assert sorted(tools) == sorted(NAMES)
    assert {n for n, t in tools.items() if t.mutates} == {"write_file", "edit_file", "move_file", "delete_file",
                                                          *NOTEBOOK_CHANGES}
    assert {n for n, t in tools.items() if t.default_approval == "ask"} == {
        "write_file", "edit_file", "move_file", "delete_file", "shell_command", "notebook_run_cells", *NOTEBOOK_CHANGES,
    }  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_every_tool_has_a_clean_schema_and_description(name: str) -> None:
    tool = get_native_tool(name)
    assert tool is not None
    assert len(tool.description) > 80
    schema = tool.parameters
    assert schema["type"] == "object" and isinstance(schema["properties"], dict)
    assert set(schema["required"]) <= set(schema["properties"])
    text = json.dumps(schema)
    assert '"title"' not in text and "$defs" not in text and "anyOf" not in text
    for prop in schema["properties"].values():
        assert prop.get("description"), (name, prop)


def test_compat_notes_parameters() -> None:
    def params(name: str) -> tuple[list[str], list[str]]:
        tool = get_native_tool(name)
        assert tool is not None
        return sorted(tool.parameters["properties"]), sorted(tool.parameters["required"])

    assert params("read_file") == (["limit", "line_offset", "path"], ["path"])
    assert params("directory_tree") == (["max_depth", "path"], ["path"])
    assert params("grep") == (["include", "max_results", "output_mode", "path", "pattern"], ["path", "pattern"])
    # (plus the optional reasons of every change, for the session stream's patch.proposed: issue 17)
    assert params("write_file") == (["acceptance_criteria", "content", "path", "rationale"], ["content", "path"])
    assert params("edit_file") == (
        ["acceptance_criteria", "all_occurrences", "new_content", "original_content", "path", "rationale"],
        ["new_content", "original_content", "path"],
    )  # fmt: skip
    assert params("move_file") == (["destination", "source"], ["destination", "source"])
    assert params("shell_command") == (["background", "command", "timeout", "working_directory"], ["command"])


def test_lookup_accepts_prefixed_names() -> None:
    for name in ("read_file", "eca__read_file", "eca_read_file"):
        tool = get_native_tool(name)
        assert tool is not None and tool.name == "read_file"
    assert get_native_tool("nope") is None


async def test_invalid_arguments_never_raise(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = ToolContext(workspace_folders=[tmp_path])
    for tool in native_tools():
        for bad in (None, "not json", 42, {"path": {"nested": 1}}, {"command": ["ls"]}):
            prepared = tool.prepare(bad, ctx)  # type: ignore[arg-type]
            if inspect.isawaitable(prepared):  # the notebook tools ask the front end: async
                prepared = await prepared
            if prepared.error is None:  # e.g. editor_diagnostics' only argument is optional
                continue
            assert prepared.error.startswith(f"{tool.name}: ")
            result = await tool.run(prepared, ctx)
            assert result.error and result.output == prepared.error
