"""The plan in a cell: the chat widget's live checklist and the Markdown fallback's, from ``plan`` contents."""

from __future__ import annotations

import re

from eca_notebook.notebook._fallback import MarkdownView
from eca_notebook.notebook.widgets import ChatView, plan_html, plan_markdown
from eca_notebook.notebook.widgets._plan import plan_steps

from .test_transcript import CHAT, content


def plan(*statuses: str, explanation: str | None = None) -> tuple[str, dict]:
    steps = [{"description": "Read <the> parser", "status": statuses[0], "files": ["src/parse.py"]},
             {"description": "Fix the bug", "status": statuses[1], "files": ["src/parse.py", "tests/t.py"]},
             {"description": "Ship it", "status": statuses[2]}]
    extra = {"explanation": explanation} if explanation else {}
    return content("assistant", type="plan", steps=steps, **extra)


def plan_call(call_id: str) -> list[tuple[str, dict]]:
    ids = {"origin": "native", "id": call_id, "name": "update_plan", "server": "eca"}
    return [content("assistant", type="toolCallRun", **ids, arguments={}, manualApproval=False, summary="Plan"),
            content("assistant", type="toolCalled", **ids, arguments={}, error=False, totalTimeMs=1,
                    outputs=[{"type": "text", "text": "- [ ] Read", "content": "- [ ] Read"}])]


def statuses(value: str) -> list[str]:
    return re.findall(r'data-status="(\w+)"', value)


def test_the_widget_shows_the_latest_plan_as_one_live_checklist():
    view = ChatView(interval=0)  # draw on every change: the test reads the widget right after each notification
    view.begin_turn(CHAT, "fix it")
    assert view.plan.widget.layout.display == "none" and view.plan.widget.value == ""
    for method, params in [*plan_call("p1"), plan("in_progress", "pending", "pending", explanation="a <b> note")]:
        view.handle(method, params)
    widget = view.plan.widget
    assert widget in view.widget.children and widget.layout.display is None
    assert statuses(widget.value) == ["in_progress", "pending", "pending"]
    assert "Plan · 0/3 done" in widget.value and "a &lt;b&gt; note" in widget.value
    assert "Read &lt;the&gt; parser" in widget.value and '<code class="eca-plan-file">tests/t.py</code>' in widget.value
    assert 'class="eca-plan-step eca-plan-in_progress"' in widget.value  # the step in progress is highlighted

    updates = view.plan.updates
    for method, params in [*plan_call("p2"), plan("completed", "completed", "in_progress")]:
        view.handle(method, params)
    assert statuses(widget.value) == ["completed", "completed", "in_progress"] and "2/3 done" in widget.value
    assert view.plan.updates == updates + 1
    # one checklist, replaced in place: the call cards stay in the blocks, the plan is not a block
    assert sum(child is widget for child in view.widget.children) == 1
    assert len(view.cards) == 2 and all(child is not widget for child in view.blocks_box.children)

    view.handle(*content("assistant", type="text", text="Done."))  # other contents leave the plan alone
    view.finish()
    assert view.plan.updates == updates + 1 and "2/3 done" in widget.value


def test_markdown_fallback_ends_the_turn_with_its_plan():
    shown: list[dict] = []
    view = MarkdownView(display=lambda bundle, raw: shown.append(bundle))
    view.begin_turn(CHAT, "fix it")
    for method, params in [*plan_call("p1"), plan("in_progress", "pending", "pending"), *plan_call("p2"),
                           plan("completed", "in_progress", "pending"),
                           content("assistant", type="text", text="Working on it.")]:
        view.handle(method, params)
    view.finish()
    md = shown[0]["text/plain"]
    assert md.count("**Plan**") == 1  # the latest plan only
    assert ("**Plan** · 1/3 done\n\n- [x] Read <the> parser — `src/parse.py`\n"
            "- [ ] **Fix the bug** *(in progress)* — `src/parse.py`, `tests/t.py`\n- [ ] Ship it") in md

    view.begin_turn(CHAT, "and now?")  # this turn ends with a new plan...
    view.handle(*content("assistant", type="text", text="Still on it."))
    view.handle(*plan("completed", "completed", "in_progress"))
    view.finish()
    view.begin_turn(CHAT, "and then?")  # ... and the next one, which does not touch it, does not repeat it
    view.handle(*content("assistant", type="text", text="Shipping."))
    view.finish()
    assert "**Plan** · 2/3 done" in shown[1]["text/plain"]
    assert "**Plan**" not in shown[2]["text/plain"]
    assert "**Plan** · 2/3 done" in view.transcript.to_markdown(all_turns=True)


def test_odd_plans_still_draw():
    assert plan_html(None) == "" and plan_markdown({"type": "plan", "steps": []}) == ""
    steps = plan_steps({"steps": [{"description": "a", "status": "someday", "files": "x"}, "junk",
                                  {"status": "completed"}]})
    assert steps == [{"description": "a", "status": "pending", "files": []},
                     {"description": "", "status": "completed", "files": []}]
    assert plan_markdown({"steps": [{"description": "a"}]}) == "**Plan** · 0/1 done\n\n- [ ] a"
