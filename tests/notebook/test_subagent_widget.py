"""A subagent in the notebook widget: its contents (``parentChatId`` = the chat shown) are drawn inside the parent's
``spawn_agent`` card — agent, activity, step N/maxSteps, its text and its tool calls as nested cards whose Approve
answers in the subagent's chat — and never as the chat's own blocks."""

from __future__ import annotations

from eca_notebook.notebook.widgets import ChatView

from .test_widgets import Controller, feed

CHAT, CHILD = "c1", "subagent-42"
SPAWN = {"origin": "native", "id": "call_1", "name": "spawn_agent", "server": "eca"}
READ = {"origin": "native", "id": "call_1", "name": "read_file", "server": "eca"}  # the same id, in the child


def details(step: int) -> dict:
    return {"type": "subagent", "subagentChatId": CHILD, "model": "fake/m1", "agentName": "explorer",
            "maxSteps": 5, "step": step}


def parent(content: dict) -> tuple[str, dict]:
    return "chat/contentReceived", {"chatId": CHAT, "role": "assistant", "content": content}


def child(content: dict, role: str = "assistant") -> tuple[str, dict]:
    return "chat/contentReceived", {"chatId": CHILD, "parentChatId": CHAT, "role": role, "content": content}


def test_a_subagent_is_drawn_inside_the_spawn_agent_card_and_its_approval_goes_to_its_chat():
    controller = Controller()
    view = ChatView(controller, interval=0)
    view.begin_turn(CHAT, "explore the project")
    args = {"agent": "explorer", "task": "find the config", "activity": "Finding the config"}
    feed(view, [
        parent({"type": "toolCallRun", **SPAWN, "arguments": args, "manualApproval": False, "details": details(0)}),
        parent({"type": "toolCallRunning", **SPAWN, "arguments": args, "details": details(1)}),
        child({"type": "toolCallRun", **READ, "arguments": {"path": "setup.cfg"}, "manualApproval": True}),
        child({"type": "text", "text": "The config is in setup.cfg."}),
    ])
    view.coalescer.close()
    card = view.cards["call_1"]
    assert card.state.name == "spawn_agent"  # the child's call_1 did not touch the parent's card
    assert card.subagent_box.layout.display is None and card.subagent_box.selected_index == 0
    assert card.subagent_box.get_title(0) == "explorer · Finding the config · step 1/5"
    nested = card.subagent_body.children
    assert len(nested) == 2
    inner = next(c for c in card.nested.values() if hasattr(c, "state"))
    assert inner.widget is nested[0] and inner.state.name == "read_file" and inner.buttons.layout.display is None
    assert "The config is in setup.cfg." in nested[1].value
    assert len(view.blocks_box.children) == 2  # the prompt and the card: the child is not a block of this chat
    inner.decide(True)
    assert controller.calls == [("approve", CHAT, "call_1", None)] and inner.state.chat_id == CHILD

    feed(view, [parent({"type": "toolCallRunning", **SPAWN, "arguments": args, "details": details(2)}),
                parent({"type": "toolCalled", **SPAWN, "arguments": args, "error": False,
                        "outputs": [{"type": "text", "text": "setup.cfg"}], "details": details(2)})])
    view.finish()
    view.coalescer.close()
    assert card.subagent_box.get_title(0) == "explorer · Finding the config · step 2/5"
    assert "done" in card.header.value


def test_other_chats_and_other_parents_are_ignored():
    view = ChatView(Controller(), interval=0)
    view.begin_turn(CHAT, "hi")
    feed(view, [("chat/contentReceived", {"chatId": "subagent-9", "parentChatId": "other", "role": "assistant",
                                          "content": {"type": "text", "text": "not mine"}})])
    assert view.subagents == {}


async def test_a_percent_eca_turn_shows_its_subagent_and_approves_its_call(shell, closing, llm, workspace):
    """Through ``%eca`` and the engine: the subagent's write waits in the nested card; Approve there writes the
    file, the subagent answers, and the parent's final answer follows."""
    import asyncio
    import json

    from eca_notebook.testing.llm_server import Reply, ToolCall
    from tests._waiting import until

    from .conftest import run_cell

    session = closing
    session.display_mode = "widget"
    llm.enqueue(Reply([ToolCall("call_parent", "eca__spawn_agent", json.dumps(
                    {"agent": "general", "task": "Create out.txt", "activity": "writing the file"}))]),
                Reply([ToolCall("call_1", "eca__write_file", json.dumps({"path": "out.txt", "content": "x\n"}))]),
                Reply.text("Created out.txt."),
                Reply.text("The subagent created out.txt."))
    await run_cell(shell, "%eca make a file")
    plan = session.plans[-1]
    view = plan.view
    await until(lambda: "call_parent" in view.cards and view.cards["call_parent"].nested, timeout=60)
    card = view.cards["call_parent"]
    await until(lambda: any(getattr(c, "status", "") == "pending" for c in card.nested.values()), timeout=60)
    inner = next(c for c in card.nested.values() if getattr(c, "status", "") == "pending")
    assert inner.state.name == "write_file" and inner.state.chat_id and inner.state.chat_id.startswith("subagent-")
    assert card.subagent_box.get_title(0).startswith("general · writing the file · step 1")
    inner.approve_button.click()
    result = await asyncio.wait_for(plan.task, 90)
    assert result.text == "The subagent created out.txt."
    assert (workspace / "out.txt").read_text() == "x\n"
    view.coalescer.close()
    assert "Created out.txt." in card.subagent_body.children[-1].value
