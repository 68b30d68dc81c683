"""The chat widget, tool cards, diffs and the coalescer — driven by notifications, clicked in-process."""

from __future__ import annotations

import asyncio

from eca_notebook.notebook.widgets import ChatView, Coalescer, ToolCard, diff_counts, render_diff_html
from eca_notebook.notebook.widgets._style import CSS
from tests._waiting import until

from .test_transcript import CHAT, DIFF, TURN, content


class Controller:
    def __init__(self):
        self.calls = []

    def approve(self, view, call, save, hunks=None):
        self.calls.append(("approve", view.chat_id, call.id, save) + ((hunks,) if hunks is not None else ()))

    def reject(self, view, call):
        self.calls.append(("reject", view.chat_id, call.id))

    def stop(self, view):
        self.calls.append(("stop", view.chat_id))

    def send(self, view, text):
        self.calls.append(("send", view.chat_id, text))


def feed(view, messages):
    for method, params in messages:
        view.handle(method, params)


def markdown_of(output_widget) -> str:
    return output_widget.outputs[0]["data"]["text/plain"]


def test_streamed_turn_state():
    view = ChatView(Controller())
    view.begin_turn(CHAT, "hi")
    feed(view, TURN)
    view.finish()
    children = view.blocks_box.children
    assert len(children) == 5  # prompt, reasoning, text, tool card, text
    assert "› hi" in children[0].children[0].value
    reasoning = children[1]
    assert reasoning.selected_index is None  # collapsed
    assert reasoning.get_title(0) == "Reasoning (1.2 s)" and "let me think" in reasoning.children[0].value
    assert markdown_of(children[2]) == "I'll edit it." and markdown_of(children[4]) == "Done."
    card = view.cards["t1"]
    assert card.widget is children[3]
    assert "edit_file" in card.header.value and "Editing x.py" in card.header.value and "done" in card.header.value
    assert "&quot;path&quot;: &quot;x.py&quot;" in card.args_view.value
    assert card.diff_view.layout.display is None and "eca-diff-add" in card.diff_view.value
    assert card.output_box.layout.display is None and "Edited x.py" in card.output_html.value
    assert card.output_box.selected_index is None  # output collapsed
    assert card.buttons.layout.display == "none"
    assert "1,234 tokens" in view.footer.value and view.progress.value == ""
    assert view.stop_button.layout.display == "none" and not view.send_button.disabled
    assert view.text == "I'll edit it.Done."


def test_pending_call_buttons_answer_once():
    ctl = Controller()
    view = ChatView(ctl)
    view.begin_turn(CHAT, "hi")
    feed(view, TURN[:10])
    view.coalescer.close()
    card = view.cards["t1"]
    assert card.status == "pending" and card.buttons.layout.display is None
    assert "waiting for your approval" in card.header.value
    card.approve_session_button.click()
    card.approve_button.click()  # a second click must not answer again
    card.reject_button.click()
    assert ctl.calls == [("approve", CHAT, "t1", "session")]
    assert card.buttons.layout.display == "none" and card.approve_button.disabled


def test_reject_button():
    ctl = Controller()
    view = ChatView(ctl)
    view.begin_turn(CHAT, "hi")
    feed(view, TURN[:10])
    view.coalescer.close()
    view.cards["t1"].reject_button.click()
    assert ctl.calls == [("reject", CHAT, "t1")]
    assert view.cards["t1"].status == "rejected"


def test_stop_and_send():
    ctl = Controller()
    view = ChatView(ctl)
    view.begin_turn(CHAT, "hi")
    assert view.stop_button.layout.display is None
    view.stop_button.click()
    view.input.value = "and then?"
    view.send_button.click()  # ignored while running
    feed(view, TURN)
    view.finish()
    view.send_button.click()
    assert ctl.calls == [("stop", CHAT), ("send", CHAT, "and then?")]
    assert view.input.value == ""


def test_denied_by_config_and_failed_calls():
    view = ChatView()
    view.begin_turn(CHAT, "x")
    base = dict(origin="native", name="shell_command", server="eca", arguments={"command": "rm -rf /"})
    feed(view, [content("assistant", type="toolCallRun", id="t2", manualApproval=False, **base),
                content("assistant", type="toolCallRejected", id="t2", reason="user-config", **base),
                content("assistant", type="toolCallRun", id="t3", manualApproval=False, **base),
                content("assistant", type="toolCalled", id="t3", error=True, totalTimeMs=5,
                        outputs=[{"type": "text", "text": "boom"}], **base)])
    view.finish()
    assert "denied by configuration" in view.cards["t2"].header.value
    assert "failed · 5 ms" in view.cards["t3"].header.value
    assert "eca-error" in view.cards["t3"].output_html.value
    assert view.cards["t3"].output_box.get_title(0) == "Error output"


def test_notifications_of_other_chats_do_not_reach_the_view():
    view = ChatView()
    view.begin_turn(CHAT, "x")
    view.handle("chat/contentReceived", {"chatId": "other", "role": "assistant",
                                         "content": {"type": "text", "text": "nope"}})
    view.finish()
    assert view.text == "" and len(view.blocks_box.children) == 1


def test_theme_uses_jupyterlab_variables_only():
    import re

    colours = re.findall(r"(?:color|background)\s*:\s*([^;]+);", CSS)
    assert colours
    for value in colours:
        assert value.strip().startswith("var(--jp-"), value


def test_diff_rendering_escapes_and_counts():
    details = {"type": "fileChange", "path": "/w/<x>.py", "diff": DIFF + "+<script>\n"}
    rendered = render_diff_html(details)
    assert "&lt;script&gt;" in rendered and "<script>" not in rendered
    assert '<span class="eca-plus">+3</span>' in rendered and "−1" in rendered
    assert rendered.count("eca-diff-add") == 3 and rendered.count("eca-diff-del") == 1
    assert diff_counts(DIFF) == (2, 1)


def test_coalescer_bounds_flushes_with_a_fake_clock():
    now = [0.0]
    flushed = []
    c = Coalescer(lambda: flushed.append(now[0]), interval=0.05, clock=lambda: now[0])
    c.mark()  # first mark after a quiet period flushes at once
    assert flushed == [0.0]
    for _ in range(100):
        now[0] += 0.001
        c.mark()  # no loop running: no timer, only the interval gate
    assert len(flushed) == 3  # 100 ms of marks: at 0, 50 and 100 ms — never closer than the interval
    assert all(b - a >= 0.05 - 1e-9 for a, b in zip(flushed, flushed[1:], strict=False))
    now[0] += 0.001
    c.mark()
    assert len(flushed) == 3 and c.dirty
    c.close()
    assert c.dirty is False and len(flushed) == 4


async def test_coalescer_timer_flushes_what_is_pending():
    flushed = []
    c = Coalescer(lambda: flushed.append(1), interval=0.02)
    c.mark()
    c.mark()
    c.mark()
    assert len(flushed) == 1
    await until(lambda: len(flushed) >= 2)  # the timer flushed the pending marks…
    await asyncio.sleep(0.06)  # …once: three more intervals bring nothing
    assert len(flushed) == 2
    c.close()
    assert len(flushed) == 2


def test_tool_card_standalone():
    from eca_notebook.notebook._transcript import ToolCallState

    answers = []
    state = ToolCallState("t9", "run_python")
    card = ToolCard(state, on_decision=lambda s, ok, save, hunks: answers.append((s.id, ok, save)))
    assert not card.decide(True)  # not pending yet
    state.update({"type": "toolCallRun", "arguments": {"code": "1+1"}, "manualApproval": True})
    card.render()
    assert card.decide(False)
    assert answers == [("t9", False, None)] and card.status == "rejected"


def test_tool_card_hunk_checkboxes_choose_what_is_applied():
    from eca_notebook.notebook._transcript import ToolCallState
    from eca_notebook.tools._diff import hunk_details
    from eca_notebook.tools._hunks import diff_hunks

    old = "".join(f"line {i}\n" for i in range(1, 41))
    new = old.replace("line 2\n", "line two\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")
    details = {"type": "fileChange", "path": "/w/n.txt", "diff": "", "linesAdded": 2, "linesRemoved": 2,
               "hunks": hunk_details(diff_hunks(old, new))}
    answers = []
    state = ToolCallState("t1", "write_file")
    card = ToolCard(state, on_decision=lambda s, ok, save, hunks: answers.append((ok, save, hunks)))
    state.update({"type": "toolCallRun", "arguments": {}, "manualApproval": True, "details": details})
    card.render()
    assert list(card.hunk_boxes) == ["h1", "h2", "h3"] and card.hunk_view.layout.display is None
    assert all(box.value for box in card.hunk_boxes.values())
    assert "@@ -18,6 +18,7 @@" in card.hunk_boxes["h2"].description
    card.hunk_boxes["h1"].value = False
    card.hunk_boxes["h3"].value = False
    assert card.approve_button.description == "Approve 1 of 3 hunks"
    assert card.decide(True)
    assert answers == [(True, None, ["h2"])]
    assert all(box.disabled for box in card.hunk_boxes.values())
    # the finished call names what was left out
    state.update({"type": "toolCalled", "error": False, "outputs": [{"type": "text", "text": "ok"}],
                  "details": dict(details, hunks=hunk_details(diff_hunks(old, new), {"h2"}))})
    card.render()
    assert "Not applied: h1" in card.hunk_view.children[0].value


def test_tool_card_all_hunks_ticked_is_a_plain_approval_and_none_ticked_a_rejection():
    from eca_notebook.notebook._transcript import ToolCallState
    from eca_notebook.tools._diff import hunk_details
    from eca_notebook.tools._hunks import diff_hunks

    details = {"type": "fileChange", "path": "/w/n.txt", "diff": "", "linesAdded": 2, "linesRemoved": 0,
               "hunks": hunk_details(diff_hunks("a\n" * 20, "b\n" + "a\n" * 18 + "c\n"))}
    for untick, expected in (([], (True, None, None)), (["h1", "h2"], (False, None, None))):
        answers = []
        state = ToolCallState("t1", "write_file")
        card = ToolCard(state, on_decision=lambda s, ok, save, hunks, answers=answers: answers.append(
            (ok, save, hunks)))
        state.update({"type": "toolCallRun", "arguments": {}, "manualApproval": True, "details": details})
        card.render()
        for hunk_id in untick:
            card.hunk_boxes[hunk_id].value = False
        card.decide(True)
        assert answers == [expected]
        assert card.status == ("running" if expected[0] else "rejected")


def test_tool_card_shows_the_risk_badge_and_the_reason_while_waiting():
    from eca_notebook.notebook._transcript import ToolCallState

    risk = {"level": "high", "reason": "deletes recursively: build"}
    state = ToolCallState("t1", "shell_command")
    card = ToolCard(state, on_decision=lambda *a: None)
    assert "eca-risk" not in card.header.value  # nothing known before the engine assessed it
    state.update({"type": "toolCallRun", "arguments": {"command": "rm -rf build"}, "manualApproval": True,
                  "risk": risk})
    card.render()
    header = card.header.value
    assert 'data-risk="high"' in header and ">high risk</span>" in header
    assert 'title="high risk: deletes recursively: build"' in header
    assert '<div class="eca-risk-reason eca-risk-high">deletes recursively: build</div>' in header
    card.decide(False)
    state.update({"type": "toolCallRejected", "arguments": {}, "reason": "user-choice"})
    card.render()
    # in the history: the badge stays (a content without risk keeps the known one), the spelled-out reason goes
    assert 'data-risk="high"' in card.header.value and "eca-risk-reason" not in card.header.value
    low = ToolCallState("t2", "shell_command")
    low.update({"type": "toolCallRun", "arguments": {"command": "ls"}, "manualApproval": False,
                "risk": {"level": "low", "reason": "only reads: <ls>"}})
    assert 'data-risk="low"' in ToolCard(low).header.value and "&lt;ls&gt;" in ToolCard(low).header.value


def test_tool_card_shows_the_models_reason_and_what_a_search_found():
    from eca_notebook.notebook._transcript import ToolCallState

    change = ToolCallState("t1", "write_file")
    change.update({"type": "toolCallRun", "arguments": {}, "manualApproval": True,
                   "details": {"type": "fileChange", "path": "/w/a.py", "diff": "", "linesAdded": 1,
                               "linesRemoved": 0, "rationale": "Use <math.pi>.",
                               "acceptanceCriteria": ["area(1) == math.pi"]}})
    header = ToolCard(change).header.value
    assert '<div class="eca-rationale">Use &lt;math.pi&gt;.<ul class="eca-criteria"><li>area(1) == math.pi</li>' \
        in header
    search = ToolCallState("t2", "search_symbols")
    details = {"type": "retrieval", "stage": "symbol_search", "query": "Circle", "message": "Searching symbols"}
    search.update({"type": "toolCallRun", "arguments": {}, "manualApproval": False, "details": details})
    assert "eca-found" not in ToolCard(search).header.value  # not while it runs
    search.update({"type": "toolCalled", "arguments": {}, "outputs": [{"type": "text", "text": "x"}], "error": False,
                   "details": {**details, "resultsCount": 1, "message": 'Found 1 symbol for "Circle"'}})
    assert '<div class="eca-found">Found 1 symbol for &quot;Circle&quot;</div>' in ToolCard(search).header.value


def test_a_rewound_chat_is_redrawn_from_the_replay():
    view = ChatView(Controller())
    view.begin_turn(CHAT, "first")
    feed(view, [content("user", type="text", text="first\n"), content("assistant", type="text", text="ONE")])
    view.finish()
    view.begin_turn(CHAT, "second")
    feed(view, [content("user", type="text", text="second\n"), content("assistant", type="text", text="TWO")])
    view.finish()
    assert len(view.blocks_box.children) == 4
    # chat/rollback to "second": the server clears the chat and replays what is kept
    feed(view, [("chat/cleared", {"chatId": CHAT, "messages": True}),
                content("user", type="text", text="first\n", contentId="k1"),
                content("assistant", type="text", text="ONE")])
    view.coalescer.close()
    children = view.blocks_box.children
    assert len(children) == 2 and "› first" in children[0].children[0].value and markdown_of(children[1]) == "ONE"
    assert "TWO" not in str([getattr(c, "value", "") for c in children])
    # a new prompt of this view is not doubled by its own echo
    view.begin_turn(CHAT, "third")
    feed(view, [content("user", type="text", text="third\n"), content("assistant", type="text", text="THREE")])
    view.finish()
    assert sum(row.html.value.count("› third") for row in view._widgets.values() if hasattr(row, "html")) == 1


class RewindingController(Controller):
    def rewind(self, view, content_id):
        self.calls.append(("rewind", view.chat_id, content_id))

    def fork(self, view, content_id):
        self.calls.append(("fork", view.chat_id, content_id))


def test_a_prompt_offers_rewind_with_a_confirmation_and_fork_once_it_has_an_id():
    from eca_notebook.notebook.widgets._chat import PromptRow

    ctl = RewindingController()
    view = ChatView(ctl)
    view.begin_turn(CHAT, "first")
    view.coalescer.close()
    row = next(w for w in view._widgets.values() if isinstance(w, PromptRow))
    assert row.actions.layout.display == "none"  # no contentId yet: nothing to point at
    feed(view, [content("user", type="text", text="first\n", contentId="k1"),
                content("assistant", type="text", text="ONE")])
    view.finish()
    assert row.block.id == "k1" and row.actions.layout.display is None
    assert not row.rewind() and ctl.calls == []  # the first click only asks
    assert "Confirm rewind" in row.rewind_button.description
    assert row.rewind() and ctl.calls == [("rewind", CHAT, "k1")]
    assert row.fork() and ctl.calls[-1] == ("fork", CHAT, "k1")
    # a fork shows the new chat from its replay
    view.show_chat("c2", [{"chatId": "c2", "role": "user", "content": {"type": "text", "text": "first\n",
                                                                       "contentId": "k1"}},
                          {"chatId": "c2", "role": "assistant", "content": {"type": "text", "text": "ONE"}}])
    view.coalescer.close()
    assert view.chat_id == "c2"
    rows = [w for w in view._widgets.values() if isinstance(w, PromptRow)]
    assert len(rows) == 1 and rows[0].block.id == "k1" and "› first" in rows[0].html.value


def test_a_controller_without_rewind_shows_no_actions():
    from eca_notebook.notebook.widgets._chat import PromptRow

    view = ChatView(Controller())
    view.begin_turn(CHAT, "first")
    feed(view, [content("user", type="text", text="first\n", contentId="k1")])
    view.finish()
    row = next(w for w in view._widgets.values() if isinstance(w, PromptRow))
    assert row.actions.layout.display == "none" and not row.rewind()


def test_an_image_content_is_drawn_as_a_raster_img_and_svg_is_not():
    view = ChatView()
    view.begin_turn(CHAT, "draw")
    feed(view, [("chat/contentReceived", {"chatId": CHAT, "role": "assistant", "content": {
                    "type": "image", "mediaType": "image/png", "base64": "iVBORw0KGgo="}}),
                ("chat/contentReceived", {"chatId": CHAT, "role": "assistant", "content": {
                    "type": "image", "mediaType": "image/svg+xml", "base64": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"}})])
    view.finish()
    html_values = [getattr(c, "value", "") for c in view.blocks_box.children]
    assert any('<img class="eca-image" src="data:image/png;base64,iVBORw0KGgo="' in v for v in html_values)
    assert not any("svg" in v and "<img" in v for v in html_values)
    assert any("image not shown: image/svg+xml" in v for v in html_values)
