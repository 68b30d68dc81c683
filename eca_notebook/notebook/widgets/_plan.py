"""The agent's plan in a cell: a checklist under the chat's blocks, redrawn whenever the model updates its plan.

The plan is the chat's latest ``plan`` content (:class:`~eca_notebook.protocol.PlanContent`, published by the
``update_plan`` tool); each one replaces the one before, so the view holds one checklist, not one per update —
the ``update_plan`` call cards above keep the history. Each step shows its status (done, in progress — highlighted
— or to do) and the files it involves.

:func:`plan_markdown` is the same checklist for the plain-Markdown output (nbconvert, papermill, a terminal); it
and :func:`plan_html` need no ipywidgets.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = ["STEP_MARKS", "DrawnStep", "PlanView", "plan_html", "plan_markdown", "plan_steps"]

#: How each status is drawn in the widget.
STEP_MARKS = {"completed": "✔", "in_progress": "▶", "pending": "○"}
_STATUS_TITLES = {"completed": "done", "in_progress": "in progress", "pending": "to do"}


class DrawnStep(TypedDict):
    """A plan step as drawn: its status one of :data:`STEP_MARKS`."""

    description: str
    status: str
    files: list[str]


def plan_steps(content: Mapping[str, Any] | None) -> list[DrawnStep]:
    """The steps of a ``plan`` content (wire form) as ``description``/``status``/``files``, unknown statuses read
    as pending: a newer server's plan must still draw."""
    steps = (content or {}).get("steps")
    out: list[DrawnStep] = []
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, Mapping):
            continue
        status = step.get("status")
        files = step.get("files")
        out.append({
            "description": str(step.get("description") or ""),
            "status": status if status in STEP_MARKS else "pending",
            "files": [str(f) for f in files if f] if isinstance(files, list) else [],
        })
    return out


def _progress(steps: list[DrawnStep]) -> str:
    done = sum(step["status"] == "completed" for step in steps)
    return f"{done}/{len(steps)} done"


def plan_html(content: Mapping[str, Any] | None) -> str:
    """The checklist as HTML (classes styled in ``_style.py``); "" without a plan."""
    steps = plan_steps(content)
    if not steps:
        return ""
    items = []
    for step in steps:
        status = step["status"]
        files = "".join(f'<code class="eca-plan-file">{html.escape(f)}</code>' for f in step["files"])
        items.append(
            f'<li class="eca-plan-step eca-plan-{status}" data-status="{status}" '
            f'title="{_STATUS_TITLES[status]}"><span class="eca-plan-mark">{STEP_MARKS[status]}</span> '
            f'<span class="eca-plan-text">{html.escape(step["description"])}</span>'
            + (f' <span class="eca-plan-files">{files}</span>' if files else "") + "</li>")
    explanation = str((content or {}).get("explanation") or "").strip()
    note = f'<div class="eca-plan-note">{html.escape(explanation)}</div>' if explanation else ""
    return (f'<div class="eca-plan"><div class="eca-plan-head">Plan · {_progress(steps)}</div>{note}'
            f'<ul class="eca-plan-steps">{"".join(items)}</ul></div>')


def plan_markdown(content: Mapping[str, Any] | None) -> str:
    """The checklist as Markdown (``- [x]`` done, ``- [ ]`` to do, the step in progress in bold); "" without a
    plan."""
    steps = plan_steps(content)
    if not steps:
        return ""
    lines = [f"**Plan** · {_progress(steps)}"]
    explanation = str((content or {}).get("explanation") or "").strip()
    if explanation:
        lines.append("")
        lines.append(explanation)
    lines.append("")
    for step in steps:
        text = step["description"]
        if step["status"] == "in_progress":
            text = f"**{text}** *(in progress)*"
        files = ", ".join(f"`{f}`" for f in step["files"])
        mark = "x" if step["status"] == "completed" else " "
        lines.append(f"- [{mark}] {text}" + (f" — {files}" if files else ""))
    return "\n".join(lines)


class PlanView:
    """The plan's widget (hidden until there is a plan); :meth:`show` redraws it only when the plan changed."""

    def __init__(self) -> None:
        import ipywidgets as widgets

        self.widget = widgets.HTML(layout=widgets.Layout(display="none"))
        self.widget.add_class("eca-plan-view")
        self.updates = 0  # redraws sent

    def show(self, content: Mapping[str, Any] | None) -> None:
        value = plan_html(content)
        if value == self.widget.value:
            return
        self.widget.value = value
        self.widget.layout.display = None if value else "none"
        self.updates += 1
