"""update_plan: validated steps in, a ``plan`` content and a Markdown checklist out; nothing to approve."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.protocol import PlanContent, PlanStep
from eca_notebook.tools import UpdatePlanTool, native_tools
from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.plan import plan_checklist


async def test_plan_is_validated_and_rendered(tmp_path: Path):
    tool = UpdatePlanTool()
    ctx = ToolContext(workspace_folders=[tmp_path])
    prepared = tool.prepare({"entries": [{"content": "read", "status": "completed"}, {"content": "fix"}]}, ctx)
    assert prepared.error is None and prepared.summary == "Plan: 1/2 steps done"
    assert prepared.args["entries"][1] == {"content": "fix", "status": "pending", "priority": "medium"}
    assert "explanation" not in prepared.args
    result = await tool.run(prepared, ctx)
    assert result.output == "Plan updated: 1/2 steps done.\n\n- [x] read\n- [ ] fix" and not result.error
    assert [c.dump() for c in result.contents] == [
        {"type": "plan", "steps": [{"description": "read", "status": "completed", "priority": "medium"},
                                   {"description": "fix", "status": "pending", "priority": "medium"}]}]
    assert not tool.mutates and tool.default_approval == "allow"


async def test_files_and_explanation_reach_the_content_and_the_checklist(tmp_path: Path):
    tool = UpdatePlanTool()
    ctx = ToolContext(workspace_folders=[tmp_path])
    args = {
        "explanation": "The parser drops the last token.",
        "entries": [
            {"content": "Read the parser", "status": "completed", "files": [str(tmp_path / "src" / "parse.py")]},
            {"content": "Fix the off-by-one", "status": "in_progress", "priority": "high",
             "files": ["src/parse.py", "src/parse.py", "  ", "/elsewhere/lib.py"]},
            {"content": "Add a test", "files": ["tests/test_parse.py"]},
        ],
    }
    prepared = tool.prepare(args, ctx)
    assert prepared.error is None
    assert prepared.summary == "Plan: 1/3 steps done — Fix the off-by-one"
    # absolute paths inside the workspace become relative; duplicates and blanks go; outside paths stay as given
    assert [e["files"] for e in prepared.args["entries"]] == [["src/parse.py"], ["src/parse.py", "/elsewhere/lib.py"],
                                                             ["tests/test_parse.py"]]
    result = await tool.run(prepared, ctx)
    (plan,) = result.contents
    assert isinstance(plan, PlanContent)
    assert plan.explanation == "The parser drops the last token."
    assert [(s.description, s.status, s.files) for s in plan.steps] == [
        ("Read the parser", "completed", ["src/parse.py"]),
        ("Fix the off-by-one", "in_progress", ["src/parse.py", "/elsewhere/lib.py"]),
        ("Add a test", "pending", ["tests/test_parse.py"]),
    ]
    assert result.output == (
        "Plan updated: 1/3 steps done.\n\nThe parser drops the last token.\n\n"
        "- [x] Read the parser (`src/parse.py`)\n"
        "- [ ] Fix the off-by-one (in progress; `src/parse.py`, `/elsewhere/lib.py`)\n"
        "- [ ] Add a test (`tests/test_parse.py`)"
    )


def test_a_long_step_in_progress_is_cut_in_the_summary(tmp_path: Path):
    tool = UpdatePlanTool()
    long = "Rewrite " + "the whole module " * 10
    prepared = tool.prepare({"entries": [{"content": long, "status": "in_progress"}]},
                            ToolContext(workspace_folders=[tmp_path]))
    assert prepared.summary.startswith("Plan: 0/1 steps done — Rewrite the whole")
    assert prepared.summary.endswith("…") and len(prepared.summary) < 100


def test_checklist_of_a_plan_without_files():
    plan = PlanContent(steps=[PlanStep(description="a", status="completed"), PlanStep(description="b")])
    assert plan_checklist(plan) == "Plan updated: 1/2 steps done.\n\n- [x] a\n- [ ] b"


def test_bad_plans_are_explained(tmp_path: Path):
    tool = UpdatePlanTool()
    ctx = ToolContext(workspace_folders=[tmp_path])
    assert "entries" in tool.prepare({}, ctx).error
    assert "status" in tool.prepare({"entries": [{"content": "x", "status": "done"}]}, ctx).error
    assert "files" in tool.prepare({"entries": [{"content": "x", "files": "a.py"}]}, ctx).error
    assert "update_plan" in {t.name for t in native_tools()}


def test_schema_inlines_nested_entries_and_keeps_the_extras_optional():
    schema = UpdatePlanTool().parameters
    assert "$defs" not in str(schema) and "$ref" not in str(schema)
    assert schema["required"] == ["entries"]
    assert schema["properties"]["explanation"]["type"] == "string"
    item = schema["properties"]["entries"]["items"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert item["properties"]["files"] == {"type": "array", "items": {"type": "string"},
                                           "description": "Optional: the files this step reads or changes."}
    assert item["required"] == ["content"]
