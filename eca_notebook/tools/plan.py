"""``update_plan``: the model publishes the steps it intends to take, with their status.

It changes nothing, so it runs without asking. Its value is for the user: doors show the plan as it evolves (the
ACP door sends it as ``plan`` updates; ECA clients see an ordinary tool call whose arguments are the steps).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._args import ToolArgs
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["PlanEntry", "UpdatePlanArgs", "UpdatePlanTool"]

_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class PlanEntry(ToolArgs):
    content: str = Field(min_length=1, description="What this step does, in a short sentence.")
    status: Literal["pending", "in_progress", "completed"] = Field(default="pending")
    priority: Literal["high", "medium", "low"] = Field(default="medium")


class UpdatePlanArgs(ToolArgs):
    entries: list[PlanEntry] = Field(min_length=1, description="The whole plan, in order (replaces the previous one).")


class UpdatePlanTool(NativeTool[UpdatePlanArgs]):
    name = "update_plan"
    description = (
        "Publish or update your plan for a multi-step task: the full list of steps in order, each with a status "
        "(pending, in_progress, completed) and a priority. Send the whole list every time (it replaces the previous "
        "one); mark a step in_progress when you start it and completed when done. Use it for tasks of 3+ steps."
    )
    Args = UpdatePlanArgs
    generic_summary = "Updating the plan"

    def _prepare(self, args: UpdatePlanArgs, ctx: ToolContext) -> Prepared:
        done = sum(entry.status == "completed" for entry in args.entries)
        return Prepared(args=args.model_dump(), summary=f"Plan: {done}/{len(args.entries)} steps done")

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        lines = [f"{_MARK[e['status']]} {e['content']}" for e in prepared.args["entries"]]
        return ToolResult(output="Plan updated:\n" + "\n".join(lines))
