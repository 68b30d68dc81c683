"""``update_plan``: the model publishes the steps it intends to take, with their status and the files they involve.

It changes nothing, so it runs without asking. Its value is for the user, in every door:

* the call's result carries a ``plan`` chat content (:class:`~eca_notebook.protocol.PlanContent`), which the engine
  sends right after the call: the panel and the notebook widget show it as a live checklist, ``chat/open`` replays
  it, and the ACP door sends it as ACP's ``plan`` update;
* clients that do not know that content (plain ECA clients: Emacs, VS Code…) still see the plan, because the call's
  output — which they show under the call's summary — is the same plan as a Markdown checklist. That output is also
  what the model reads back, so nothing extra is added to the chat for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ..protocol import PlanContent, PlanStep
from ._args import ToolArgs
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["PlanEntry", "UpdatePlanArgs", "UpdatePlanTool", "plan_checklist"]

_SUMMARY_STEP = 60  # characters of the step in progress shown in the call's summary (a client's one-line label)


class PlanEntry(ToolArgs):
    content: str = Field(min_length=1, description="What this step does, in a short sentence.")
    status: Literal["pending", "in_progress", "completed"] = Field(default="pending")
    priority: Literal["high", "medium", "low"] = Field(default="medium")
    files: list[str] = Field(default_factory=list, description="Optional: the files this step reads or changes.")


class UpdatePlanArgs(ToolArgs):
    entries: list[PlanEntry] = Field(min_length=1, description="The whole plan, in order (replaces the previous one).")
    explanation: str | None = Field(default=None, description="Optional: why this plan, or what changed in it.")


def plan_checklist(plan: PlanContent) -> str:
    """The plan as a Markdown checklist (``- [x] done``, ``- [ ] to do``): what clients that do not know the
    ``plan`` content show, and what the model reads back. The step in progress says so; files follow their step."""
    lines = []
    for step in plan.steps:
        notes = ["in progress"] if step.status == "in_progress" else []
        if step.files:
            notes.append(", ".join(f"`{f}`" for f in step.files))
        mark = "x" if step.status == "completed" else " "
        lines.append(f"- [{mark}] {step.description}" + (f" ({'; '.join(notes)})" if notes else ""))
    done = sum(step.status == "completed" for step in plan.steps)
    head = f"Plan updated: {done}/{len(plan.steps)} steps done."
    if plan.explanation:
        head += "\n\n" + plan.explanation.strip()
    return head + "\n\n" + "\n".join(lines)


def _shown_path(raw: str, root: Path) -> str:
    """A file as the plan shows it: workspace-relative when the model gave an absolute path inside the workspace."""
    text = raw.strip()
    path = Path(text)
    if path.is_absolute():
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            return text
    return text


class UpdatePlanTool(NativeTool[UpdatePlanArgs]):
    name = "update_plan"
    description = (
        "Publish or update your plan for a multi-step task: the full list of steps in order, each with a status "
        "(pending, in_progress, completed), a priority and, if you know them, the files it involves. Send the "
        "whole list every time (it replaces the previous one); mark a step in_progress when you start it and "
        "completed when done. Use it for tasks of 3+ steps."
    )
    Args = UpdatePlanArgs
    generic_summary = "Updating the plan"

    def _prepare(self, args: UpdatePlanArgs, ctx: ToolContext) -> Prepared:
        for entry in args.entries:
            files = [_shown_path(f, ctx.root) for f in entry.files if f.strip()]
            entry.files = list(dict.fromkeys(files))
        done = sum(entry.status == "completed" for entry in args.entries)
        current = next((e.content for e in args.entries if e.status == "in_progress"), None)
        if current is not None and len(current) > _SUMMARY_STEP:
            current = current[: _SUMMARY_STEP - 1].rstrip() + "…"
        summary = f"Plan: {done}/{len(args.entries)} steps done" + (f" — {current}" if current else "")
        shown = args.model_dump(exclude_none=True)
        for entry in shown["entries"]:  # no empty "files" on every step of the call's arguments
            if not entry["files"]:
                del entry["files"]
        return Prepared(args=shown, summary=summary)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        args = UpdatePlanArgs.model_validate(prepared.args)
        plan = PlanContent(
            steps=[PlanStep(description=e.content, status=e.status, priority=e.priority, files=e.files or None)
                   for e in args.entries],
            explanation=(args.explanation or "").strip() or None,
        )
        return ToolResult(output=plan_checklist(plan), contents=[plan])
