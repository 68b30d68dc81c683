"""The notebook's chat widgets (ipywidgets): the chat view, tool-call cards with approval buttons, diff views.

Imported only when a view is shown, so ``%load_ext eca_notebook`` stays fast and kernels without ipywidgets still
get the plain-markdown fallback.
"""

from __future__ import annotations

from ._chat import ChatView, ViewController
from ._coalesce import DEFAULT_INTERVAL, Coalescer
from ._diff import DiffView, diff_counts, render_diff_html
from ._plan import PlanView, plan_html, plan_markdown
from ._question import QuestionCard
from ._style import CSS, style_html
from ._tool_card import STATUS_LABELS, ToolCard

__all__ = [
    "CSS",
    "DEFAULT_INTERVAL",
    "STATUS_LABELS",
    "ChatView",
    "Coalescer",
    "DiffView",
    "PlanView",
    "QuestionCard",
    "ToolCard",
    "ViewController",
    "diff_counts",
    "plan_html",
    "plan_markdown",
    "render_diff_html",
    "style_html",
]
