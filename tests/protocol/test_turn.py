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


def test_contents_are_parsed_once_into_their_models_and_chunks_stay_wire_dicts() -> None:
    from eca_notebook.protocol import ToolCallRunContent, UnknownContent, UsageContent
    from eca_notebook.protocol.turn import parse_content

    chunk = {"type": "text", "text": "a"}
    assert parse_content(chunk) is chunk  # the hot path: no model per chunk
    run = parse_content(call("toolCallRun", "t1", arguments={"x": 1}, manualApproval=True))
    assert isinstance(run, ToolCallRunContent) and run.manual_approval and run.arguments == {"x": 1}
    assert isinstance(parse_content({"type": "usage", "sessionTokens": 3}), UsageContent)
    # off-spec (an older server: no origin, a risk of an unknown level): what is valid is kept
    lenient = parse_content({"type": "toolCallRun", "id": "t2", "name": "x", "manualApproval": True,
                             "risk": {"level": "extreme"}})
    assert isinstance(lenient, ToolCallRunContent) and lenient.manual_approval and lenient.risk is None
    assert isinstance(parse_content({"type": "hologram", "x": 1}), UnknownContent)


def test_step_says_what_changed_and_a_repeated_call_id_is_a_new_call() -> None:
    fold = TurnFold()
    first = fold.step("assistant", call("toolCallRun", "call_1", arguments={}, manualApproval=False))
    assert first.kind == "toolCallRun" and first.new_call and first.tool is fold.tools["call_1"]
    done = fold.step("assistant", call("toolCalled", "call_1", error=False, outputs=[]))
    assert not done.new_call and done.tool is first.tool and first.tool.status == "done"
    again = fold.step("assistant", call("toolCallRun", "call_1", arguments={}, manualApproval=True))
    assert again.new_call and again.tool is not first.tool and again.tool is not None
    assert (first.tool.status, again.tool.status) == ("done", "pending")
    assert [b.tool for b in fold.blocks] == [first.tool, again.tool]
    text = fold.step("assistant", {"type": "text", "text": "hi"})
    assert (text.kind, text.text, text.tool) == ("text", "hi", None)


def test_a_spawn_agent_call_gets_its_subagents_fold_and_its_calls_are_approved_there() -> None:
    fold = TurnFold()
    details = {"type": "subagent", "subagentChatId": "subagent-1", "model": "m", "agentName": "explorer"}
    fold.step("assistant", {**call("toolCallRun", "s1", arguments={}, manualApproval=False), "name": "spawn_agent",
                            "server": "eca", "details": details})
    assert fold.subagent_calls["subagent-1"] is fold.tools["s1"]
    assert fold.tools["s1"].subagent is not None and fold.tools["s1"].subagent.agent_name == "explorer"
    assert fold.step_subagent("subagent-9", "assistant", {"type": "text", "text": "x"}, known_only=True) is None
    change = fold.step_subagent("subagent-1", "assistant", call("toolCallRun", "c1", arguments={},
                                                                manualApproval=True))
    assert change is not None and change.tool is not None
    assert (change.tool.status, change.tool.chat_id) == ("pending", "subagent-1")
    assert fold.subagents["subagent-1"].tools["c1"] is change.tool and "c1" not in fold.tools


def test_plan_and_usage_are_kept_typed_and_as_they_came_and_clear_forgets_the_turns() -> None:
    fold = TurnFold()
    plan = {"type": "plan", "steps": [{"description": "Read", "status": "in_progress"}]}
    fold.add("assistant", plan)
    fold.add("system", {"type": "usage", "sessionTokens": 7})
    assert fold.plan is not None and fold.plan.steps[0].status == "in_progress" and fold.plan_content == plan
    assert fold.last_usage is not None and fold.last_usage.session_tokens == 7
    fold.add("assistant", {"type": "text", "text": "a"})
    fold.clear()  # chat/cleared (a rewind): the replay draws it again
    assert fold.blocks == [] and fold.tools == {} and fold.plan is None and fold.usage_content is None
