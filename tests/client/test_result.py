"""TurnCollector and results_table as plain functions: how contents become a PromptResult."""

from __future__ import annotations

from eca_notebook.client import PromptResult, ToolCallRecord, results_table
from eca_notebook.client._result import TurnCollector


def feed(collector: TurnCollector, role: str, content: dict) -> None:
    collector.add({"chatId": collector.chat_id, "role": role, "content": content})


def tool(kind: str, call_id: str, **extra) -> dict:
    return {"type": kind, "origin": "native", "id": call_id, "name": "grep", "server": "eca",
            "arguments": {"pattern": "x"}, **extra}


async def test_collector_builds_text_tools_usage_and_error():
    c = TurnCollector("chat-1", "find x", policy=None)
    feed(c, "user", {"type": "text", "text": "find x\n"})
    feed(c, "assistant", {"type": "text", "text": "Looking"})
    feed(c, "assistant", {"type": "text", "text": "…"})
    feed(c, "assistant", tool("toolCallRun", "t1", manualApproval=False, summary="Searching"))
    feed(c, "assistant", tool("toolCallRunning", "t1"))
    feed(c, "assistant", tool("toolCalled", "t1", error=False, outputs=[{"type": "text", "text": "a.py:1: x"}]))
    feed(c, "assistant", tool("toolCallRun", "t2", manualApproval=True))
    feed(c, "assistant", tool("toolCallRejected", "t2", reason="user-choice"))
    feed(c, "assistant", {"type": "text", "text": "Found it."})
    feed(c, "system", {"type": "usage", "sessionTokens": 9})
    feed(c, "system", {"type": "text", "text": "Context skipped: nope"})
    feed(c, "system", {"type": "text", "text": "Error: boom"})
    assert not c.done.is_set()
    feed(c, "system", {"type": "progress", "state": "finished", "text": ""})
    assert c.done.is_set()
    feed(c, "assistant", {"type": "text", "text": "after the end is ignored"})
    result = c.result()
    assert result.text == "Looking…\n\nFound it."
    assert result.usage == {"type": "usage", "sessionTokens": 9}
    assert result.error == "Error: boom" and result.system == ["Context skipped: nope"]
    assert result.tool_calls == [
        ToolCallRecord(id="t1", name="grep", server="eca", arguments={"pattern": "x"}, status="done",
                       output="a.py:1: x", summary="Searching"),
        ToolCallRecord(id="t2", name="grep", server="eca", arguments={"pattern": "x"}, status="rejected",
                       reason="user-choice", manual_approval=True),
    ]
    assert len(result.contents) == 13 and result.contents[0].role == "user"


async def test_streaming_collector_queues_items_and_a_final_none():
    c = TurnCollector("chat-1", "q", policy=None, streaming=True)
    feed(c, "assistant", {"type": "text", "text": "hi"})
    c.finish(error="closed")
    c.finish(error="ignored: already finished")
    assert c.queue is not None
    assert c.queue.get_nowait().content.text == "hi"
    assert c.queue.get_nowait() is None and c.queue.empty()
    assert c.result().error == "closed"


def test_results_table_escapes_and_cuts_cells():
    results = [
        PromptResult(chat_id="a", prompt="what | why", model="p/m", text="x" * 500, usage={"sessionTokens": 3}),
        PromptResult(chat_id="b", prompt="broken\nprompt", error="Error: HTTP 400"),
        PromptResult(chat_id="c", prompt="stopped", text="part", stopped=True),
    ]
    lines = results_table(results, width=20).splitlines()
    assert lines[0] == "| # | prompt | model | answer | tools | tokens | status |"
    assert lines[2].startswith("| 1 | what \\| why | p/m | " + "x" * 19 + "…")
    assert lines[2].endswith("| 3 | ok |")
    assert lines[3] == "| 2 | broken prompt |  | Error: HTTP 400 |  |  | error |"
    assert lines[4].endswith("| stopped |")


async def test_off_spec_content_is_kept_and_still_ends_the_turn():
    c = TurnCollector("chat-1", "q", policy=None)
    feed(c, "assistant", {"type": "toolCallRun", "id": "t1"})  # required fields missing
    feed(c, "system", {"type": "progress", "state": "finished"})
    assert c.done.is_set() and len(c.contents) == 2
    assert c.contents[0].content.type == "toolCallRun"
