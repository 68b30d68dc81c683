"""The engine's typed seam (``Engine.subscribe``): a door subscribes to the chat it serves and gets its contents —
and its subagents' — as ContentEvents parsed once, in the order listeners get their dicts; other chats stay out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eca_notebook.client import EcaClient
from eca_notebook.protocol import ProgressContent, ToolCallRunContent
from eca_notebook.protocol.turn import ContentEvent, TurnFold
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer

from .turn.test_subagents import config, spawn


async def test_a_subscriber_gets_its_chats_contents_typed_and_its_subagents(env: dict[str, str], workspace: Path,
                                                                            llm: ScriptedLLMServer) -> None:
    llm.enqueue(Reply([spawn("s1")]), Reply.text("the subagent's findings"), Reply.text("done"),
                Reply.text("another chat"))
    eca = await EcaClient.start(workspace=workspace, env=env, approval=lambda c: True, config=config(llm))
    events: list[ContentEvent] = []
    dicts: list[dict[str, Any]] = []
    try:
        assert eca.engine is not None
        eca.engine.add_listener(type("L", (), {"send": lambda self, m, p: dicts.append(p)
                                               if m == "chat/contentReceived" and p["chatId"] != "other" else None})())
        unsubscribe = eca.engine.subscribe("mine", events.append)
        result = await eca.prompt("explore", chat_id="mine")
        await eca.prompt("elsewhere", chat_id="other")
        unsubscribe()
        await eca.prompt("again", chat_id="mine")
    finally:
        await eca.aclose()
    assert result.ok and result.text.endswith("done")
    # every content of the chat and of its subagent, in the listeners' order, nothing of the other chat or after
    listened = [(p["chatId"], p["role"], p["content"]["type"]) for p in dicts]
    assert [(e.chat_id, e.role, _kind(e)) for e in events] == listened[:len(events)] and len(listened) > len(events)
    assert {e.chat_id for e in events} == {"mine", *(e.chat_id for e in events if e.parent_chat_id == "mine")}
    assert len({e.chat_id for e in events}) == 2 and all(e.chat_id != "other" for e in events)
    # typed, parsed once: models for the contents, wire dicts only for the streamed chunks
    assert any(isinstance(e.content, ToolCallRunContent) and e.content.name == "spawn_agent" for e in events)
    assert all(isinstance(e.content, dict) == (_kind(e) in ("text", "reasonText", "toolCallPrepare")) for e in events)
    assert sum(isinstance(e.content, ProgressContent) and e.content.state == "finished" and e.chat_id == "mine"
               for e in events) == 1
    # and they fold as the doors fold them: the spawn_agent call done, its subagent's answer in its fold
    fold = TurnFold()
    for e in events:
        if e.parent_chat_id is None:
            fold.step(e.role, e.content)
        else:
            fold.step_subagent(e.chat_id, e.role, e.content)
    [call] = fold.calls()
    assert call.name == "spawn_agent" and call.status == "done"
    assert call.subagent is not None and call.subagent.subagent_chat_id is not None
    assert fold.subagents[call.subagent.subagent_chat_id].texts() == ["the subagent's findings"]


def _kind(event: ContentEvent) -> str:
    return str(event.content["type"] if isinstance(event.content, dict) else event.content.type)
