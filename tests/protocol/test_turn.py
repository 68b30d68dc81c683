"""The fold of a turn's contents shared by the client's results and the notebook transcript."""

from __future__ import annotations

from eca_notebook.protocol.turn import TOOL_CALL_STATUSES, TurnFold


def call(kind: str, call_id: str, **extra: object) -> dict[str, object]:
    return {"type": kind, "origin": "mcp", "id": call_id, "name": "echo", "server": "demo", **extra}


def test_text_is_split_by_tool_calls_and_calls_end_with_one_status_word() -> None:
    fold = TurnFold()
    fold.add("assistant", {"type": "text", "text": "a"})
    fold.add("assistant", {"type": "text", "text": "b"})
    fold.add("assistant", call("toolCallPrepare", "t1", argumentsText='{"x"'))
    assert fold.tools["t1"].status == "preparing" and not fold.tools["t1"].started
    fold.add("assistant", call("toolCallRun", "t1", arguments={"x": 1}, manualApproval=False))
    fold.add("assistant", call("toolCalled", "t1", arguments={"x": 1}, error=True,
                               outputs=[{"type": "text", "content": "boom"}]))
    fold.add("assistant", call("toolCallRun", "t2", arguments={}, manualApproval=True))
    fold.add("assistant", {"type": "text", "text": "c"})
    fold.add("system", {"type": "usage", "sessionTokens": 3})
    fold.add("system", {"type": "text", "text": "Error: nope"})
    fold.add("system", {"type": "progress", "state": "finished", "text": ""})
    assert fold.texts() == ["ab", "c"]
    t1, t2 = fold.tools["t1"], fold.tools["t2"]
    assert (t1.status, t1.output, t1.server, t1.arguments_text) == ("failed", "boom", "demo", '{"x"')
    assert t2.status == "rejected"  # still waiting for approval when the turn ended
    assert {t1.status, t2.status} <= set(TOOL_CALL_STATUSES)
    assert fold.usage_content == {"type": "usage", "sessionTokens": 3}
    assert [(n.text, n.error) for n in fold.notes()] == [("Error: nope", True)]
