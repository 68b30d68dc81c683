"""The transcript folds a turn's notifications into blocks; the fallback renders it as Markdown."""

from __future__ import annotations

from eca_notebook.notebook._fallback import MarkdownView
from eca_notebook.notebook._transcript import Transcript, code_blocks

CHAT = "c1"


def content(role: str, **c) -> tuple[str, dict]:
    return "chat/contentReceived", {"chatId": CHAT, "role": role, "content": c}


DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-a = 1\n+a = 2\n+b = 3\n"

TURN = [
    content("user", type="text", text="hi + context\n"),
    content("system", type="metadata", title="hi"),
    content("system", type="progress", state="running", text="Waiting model"),
    content("assistant", type="reasonStarted", id="r1"),
    content("assistant", type="reasonText", id="r1", text="let me think"),
    content("assistant", type="reasonFinished", id="r1", totalTimeMs=1200),
    content("assistant", type="text", text="I'll "),
    content("assistant", type="text", text="edit it."),
    content("assistant", type="toolCallPrepare", origin="native", id="t1", name="edit_file", server="eca",
            argumentsText='{"path":'),
    content("assistant", type="toolCallRun", origin="native", id="t1", name="edit_file", server="eca",
            arguments={"path": "x.py"}, manualApproval=True, summary="Editing x.py",
            details={"type": "fileChange", "path": "/w/x.py", "diff": DIFF, "linesAdded": 2, "linesRemoved": 1}),
    content("assistant", type="toolCallRunning", origin="native", id="t1", name="edit_file", server="eca",
            arguments={"path": "x.py"}),
    content("assistant", type="toolCalled", origin="native", id="t1", name="edit_file", server="eca",
            arguments={"path": "x.py"}, error=False, totalTimeMs=3,
            outputs=[{"type": "text", "text": "Edited x.py", "content": "Edited x.py"}]),
    content("assistant", type="text", text="Done."),
    content("assistant", type="usage", sessionTokens=1234, messageInputTokens=1000, messageOutputTokens=234,
            sessionCost="0.01"),
    content("system", type="progress", state="finished", text=""),
]


def test_blocks_of_a_turn():
    t = Transcript()
    t.begin_turn("hi")
    for method, params in TURN:
        t.apply(method, params)
    kinds = [b.kind for b in t.blocks]
    assert kinds == ["user", "reasoning", "text", "tool", "text"]
    assert t.blocks[1].text == "let me think" and t.blocks[1].done and t.blocks[1].total_time_ms == 1200
    assert t.answer() == "I'll edit it.Done."
    tool = t.tools["t1"]
    assert (tool.status, tool.summary, tool.output, tool.arguments) == ("done", "Editing x.py", "Edited x.py",
                                                                        {"path": "x.py"})
    assert t.usage == "1,234 tokens this session · last: 1,000 in / 234 out · cost $0.01"
    assert t.title == "hi" and t.progress == ""


def test_other_chats_are_ignored_by_views():
    view = MarkdownView(display=lambda *a, **k: None)
    view.begin_turn(CHAT, "hi")
    view.handle("chat/contentReceived", {"chatId": "other", "role": "assistant",
                                         "content": {"type": "text", "text": "not mine"}})
    assert view.text == ""


def test_pending_call_is_rejected_when_the_turn_ends_without_an_answer():
    t = Transcript()
    t.begin_turn("x")
    for method, params in TURN[:10]:
        t.apply(method, params)
    assert [s.status for s in t.pending_tools()] == ["pending"]
    t.apply(*content("system", type="progress", state="finished", text=""))
    assert t.tools["t1"].status == "rejected"


def test_markdown_fallback_shows_answer_diff_output_and_usage():
    shown = []
    view = MarkdownView(display=lambda bundle, raw: shown.append(bundle))
    view.begin_turn(CHAT, "hi")
    for method, params in TURN:
        view.handle(method, params)
    view.finish()
    md = shown[0]["text/plain"]
    assert shown[0]["text/plain"] == md
    assert "I'll edit it." in md and "Done." in md
    assert "**Tool `edit_file`** — Editing x.py · *done*" in md
    assert "```diff\n--- a/x.py" in md and "+b = 3" in md
    assert "Edited x.py" in md and "1,234 tokens" in md
    assert "<summary>Reasoning</summary>" in md


def test_text_format_shows_only_the_answer():
    shown = []
    view = MarkdownView("text", display=lambda bundle, raw: shown.append(bundle))
    view.begin_turn(CHAT, "hi")
    for method, params in TURN:
        view.handle(method, params)
    view.finish()
    assert shown == [{"text/plain": "I'll edit it.Done."}]


def test_error_notes():
    t = Transcript()
    t.begin_turn("x")
    t.apply(*content("system", type="text", text="Error: the provider said no"))
    assert t.blocks[-1].kind == "note" and t.blocks[-1].error
    assert "> Error: the provider said no" in t.to_markdown()


def test_code_blocks():
    answer = "Here:\n```python\nx = 1\n```\nand\n~~~\ny = 2\n~~~\n```\nunterminated"
    assert code_blocks(answer) == ["x = 1", "y = 2", "unterminated"]
    assert code_blocks("no code") == []
