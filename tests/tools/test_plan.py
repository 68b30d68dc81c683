"""update_plan: validated steps in, a readable plan out; nothing to approve."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.tools import UpdatePlanTool, native_tools
from eca_notebook.tools.base import ToolContext


async def test_plan_is_validated_and_rendered(tmp_path: Path):
    tool = UpdatePlanTool()
    ctx = ToolContext(workspace_folders=[tmp_path])
    prepared = tool.prepare({"entries": [{"content": "read", "status": "completed"}, {"content": "fix"}]}, ctx)
    assert prepared.error is None and prepared.summary == "Plan: 1/2 steps done"
    assert prepared.args["entries"][1] == {"content": "fix", "status": "pending", "priority": "medium"}
    result = await tool.run(prepared, ctx)
    assert result.output == "Plan updated:\n[x] read\n[ ] fix" and not result.error
    assert not tool.mutates and tool.default_approval == "allow"


def test_bad_plans_are_explained(tmp_path: Path):
    tool = UpdatePlanTool()
    ctx = ToolContext(workspace_folders=[tmp_path])
    assert "entries" in tool.prepare({}, ctx).error
    assert "status" in tool.prepare({"entries": [{"content": "x", "status": "done"}]}, ctx).error
    assert "update_plan" in {t.name for t in native_tools()}


def test_schema_inlines_nested_entries():
    schema = UpdatePlanTool().parameters
    assert "$defs" not in str(schema) and "$ref" not in str(schema)
    item = schema["properties"]["entries"]["items"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert item["required"] == ["content"]
