"""One recorded turn through every door — ACP, the session stream, the Python client and the notebook — and the
one fold of :mod:`eca_notebook.protocol.turn` behind each: every door folds every content in a ``TurnFold`` (its
subagent's in that fold's subagent fold), the four folds end in the same state, and what each door shows of a tool
call (ACP's status, the stream's ``tool.execute``, the client's record, the notebook's card) is that state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eca_notebook.protocol.turn import ToolCallState, TurnFold

CHAT, CHILD = "chat-1", "subagent-1"
WS = Path("/ws")


def _call(kind: str, call_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "origin": "native", "id": call_id, "name": name, "server": "eca", **extra}


def _spawn(step: int) -> dict[str, Any]:
    return {"type": "subagent", "subagentChatId": CHILD, "model": "fake/m", "agentName": "explorer",
            "maxSteps": 5, "step": step}


_DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
_CHANGE = {"type": "fileChange", "path": "/ws/a.py", "diff": _DIFF, "linesAdded": 1, "linesRemoved": 1}

#: (chat, role, content) of one turn as the engine sends it: reasoning, a plan, a file change approved, a shell
#: command rejected, a subagent (whose own call_1 is not the parent's), a repeated call id that fails, usage.
RECORDING: list[tuple[str, str, dict[str, Any]]] = [
    (CHAT, "user", {"type": "text", "text": "Fix a.py"}),
    (CHAT, "system", {"type": "progress", "state": "running", "text": "Thinking"}),
    (CHAT, "assistant", {"type": "reasonStarted", "id": "r1"}),
    (CHAT, "assistant", {"type": "reasonText", "id": "r1", "text": "Read, then fix."}),
    (CHAT, "assistant", {"type": "reasonFinished", "id": "r1", "totalTimeMs": 5}),
    (CHAT, "assistant", {"type": "text", "text": "I will "}),
    (CHAT, "assistant", {"type": "text", "text": "fix it."}),
    (CHAT, "assistant", {"type": "plan", "steps": [{"description": "Fix", "status": "in_progress",
                                                    "files": ["a.py"]}, {"description": "Check"}]}),
    (CHAT, "assistant", _call("toolCallPrepare", "call_1", "write_file", argumentsText='{"path"')),
    (CHAT, "assistant", _call("toolCallRun", "call_1", "write_file", arguments={"path": "a.py", "content": "x = 2"},
                              manualApproval=True, details=_CHANGE, summary="Writing a.py",
                              risk={"level": "medium", "reason": "writes a file"})),
    (CHAT, "assistant", _call("toolCallRunning", "call_1", "write_file", arguments={"path": "a.py"},
                              details=_CHANGE)),
    (CHAT, "assistant", _call("toolCalled", "call_1", "write_file", arguments={"path": "a.py"}, error=False,
                              outputs=[{"type": "text", "text": "Wrote a.py"}], details=_CHANGE)),
    (CHAT, "assistant", _call("toolCallRun", "call_2", "shell_command", arguments={"command": "rm -rf build"},
                              manualApproval=True)),
    (CHAT, "assistant", _call("toolCallRejected", "call_2", "shell_command", arguments={"command": "rm -rf build"},
                              reason="user-choice")),
    (CHAT, "assistant", _call("toolCallRun", "call_3", "spawn_agent", arguments={"agent": "explorer"},
                              manualApproval=False, details=_spawn(0))),
    (CHAT, "assistant", _call("toolCallRunning", "call_3", "spawn_agent", arguments={"agent": "explorer"},
                              details=_spawn(1))),
    (CHILD, "assistant", _call("toolCallRun", "call_1", "read_file", arguments={"path": "a.py"},
                               manualApproval=True)),
    (CHILD, "assistant", _call("toolCalled", "call_1", "read_file", arguments={"path": "a.py"}, error=False,
                               outputs=[{"type": "text", "text": "x = 2"}])),
    (CHILD, "assistant", {"type": "text", "text": "a.py sets x."}),
    (CHAT, "assistant", _call("toolCalled", "call_3", "spawn_agent", arguments={"agent": "explorer"},
                              error=False, outputs=[{"type": "text", "text": "a.py sets x."}], details=_spawn(1))),
    (CHAT, "assistant", _call("toolCallRun", "call_1", "read_file", arguments={"path": "b.py"},
                              manualApproval=False)),
    (CHAT, "assistant", _call("toolCalled", "call_1", "read_file", arguments={"path": "b.py"}, error=True,
                              outputs=[{"type": "text", "text": "no such file"}])),
    (CHAT, "assistant", {"type": "text", "text": "Done."}),
    (CHAT, "system", {"type": "usage", "sessionTokens": 30, "messageInputTokens": 20, "messageOutputTokens": 10,
                      "limit": {"context": 1000, "output": 100}}),
    (CHAT, "system", {"type": "progress", "state": "finished", "text": ""}),
]

#: The calls of the chat, in order, as the fold ends them; and the subagent's.
EXPECTED = [("call_1", "write_file", "done"), ("call_2", "shell_command", "rejected"),
            ("call_3", "spawn_agent", "done"), ("call_1", "read_file", "failed")]
EXPECTED_CHILD = [("call_1", "read_file", "done")]


def _params(chat: str, role: str, content: dict[str, Any]) -> dict[str, Any]:
    params = {"chatId": chat, "role": role, "content": content}
    if chat == CHILD:
        params["parentChatId"] = CHAT
    return params


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> dict[int, list[str]]:
    """Every content any fold takes, by fold: ``id(fold)`` → content types (``step`` and ``add`` alike)."""
    seen: dict[int, list[str]] = {}
    step, add = TurnFold.step, TurnFold.add

    def spy_step(self: TurnFold, role: Any, content: Any) -> Any:
        seen.setdefault(id(self), []).append(content["type"] if isinstance(content, dict) else content.type)
        return step(self, role, content)

    def spy_add(self: TurnFold, role: Any, content: Any) -> Any:
        seen.setdefault(id(self), []).append(content["type"] if isinstance(content, dict) else content.type)
        return add(self, role, content)

    monkeypatch.setattr(TurnFold, "step", spy_step)
    monkeypatch.setattr(TurnFold, "add", spy_add)
    return seen


def _calls(fold: TurnFold) -> list[tuple[str, str, str]]:
    return [(s.id, s.name, s.status) for s in fold.calls(all_turns=True)]


def _assert_the_recorded_fold(fold: TurnFold, seen: dict[int, list[str]]) -> None:
    """The door's fold took every content of the chat, its subagent fold every one of the subagent's, and ended in
    the recorded state."""
    assert seen[id(fold)] == [c["type"] for chat, _, c in RECORDING if chat == CHAT]
    child = fold.subagents[CHILD]
    assert seen[id(child)] == [c["type"] for chat, _, c in RECORDING if chat == CHILD]
    assert _calls(fold) == EXPECTED and _calls(child) == EXPECTED_CHILD
    assert fold.subagent_calls[CHILD] is fold.calls(all_turns=True)[2]
    assert child.tools["call_1"].chat_id == CHILD  # approved in the subagent's chat
    assert fold.texts(all_turns=True) == ["I will fix it.", "Done."]
    assert fold.plan is not None and [s.description for s in fold.plan.steps] == ["Fix", "Check"]
    assert fold.last_usage is not None and fold.last_usage.session_tokens == 30


def test_acp_translates_the_recorded_turn_from_the_fold(folded: dict[int, list[str]]) -> None:
    from eca_notebook.acp._updates import SessionUpdates

    updates = SessionUpdates(WS)
    out: list[dict[str, Any]] = []
    asks = []
    for chat, role, content in RECORDING:
        if chat == CHILD:
            got, ask = updates.translate_subagent(CHILD, role, content, live=True)
        else:
            got, ask = updates.translate(role, content, live=True)
        out += got
        asks += [ask] if ask is not None else []
    _assert_the_recorded_fold(updates.fold, folded)
    # each call's last status is its state's in the fold, under the ACP id it was announced with
    last: dict[str, str] = {}
    for update in out:
        if update["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in update:
            last[update["toolCallId"]] = update["status"]
    acp = {"done": "completed", "failed": "failed", "rejected": "failed"}
    parent, child = updates.fold.calls(all_turns=True), updates.fold.subagents[CHILD].calls()
    announced = [parent[0], parent[1], parent[2], child[0], parent[3]]  # the repeated ids get fresh ACP ids
    assert last == {acp_id: acp[s.status] for acp_id, s in zip(
        ["call_1", "call_2", "call_3", "call_1-2", "call_1-3"], announced, strict=True)}
    # asked: the file change, the command, the subagent's read (answered in the subagent's chat)
    assert [(a.call_id, a.chat_id) for a in asks] == [("call_1", None), ("call_2", None), ("call_1", CHILD)]
    assert [u["entries"][0]["status"] for u in out if u["sessionUpdate"] == "plan"] == ["in_progress"]
    assert [u["used"] for u in out if u["sessionUpdate"] == "usage_update"] == [30]


def test_the_session_stream_translates_the_recorded_turn_from_the_fold(folded: dict[int, list[str]]) -> None:
    from eca_notebook.server._stream_events import SessionBook, TurnRecord
    from eca_notebook.server._stream_schema import ToolExecute

    book = SessionBook([WS], turn=TurnRecord())
    children: dict[str, SessionBook] = {}
    messages, asks = [], []
    for chat, role, content in RECORDING:
        if chat == CHILD:  # as the session routes a subagent's content (StreamSession._subagent_content)
            change = book.fold.step_subagent(CHILD, role, content)
            assert change is not None
            child = children.setdefault(CHILD, SessionBook([WS], pending_patches=book.pending_patches,
                                                           fold=book.fold.subagents[CHILD]))
            got, ask, _ = child.apply(change)
        else:
            got, ask, _ = book.translate(role, content)
        messages += got
        asks += [ask] if ask is not None else []
    _assert_the_recorded_fold(book.fold, folded)
    ended = [(m.tool_name, m.status) for m in messages if isinstance(m, ToolExecute) and m.status != "started"]
    stream = {"done": "completed", "failed": "failed", "rejected": "failed"}
    states = book.fold.calls(all_turns=True)
    child_state = book.fold.subagents[CHILD].calls()[0]
    order = [states[0], states[1], child_state, states[2], states[3]]  # as they ended
    assert ended == [(s.name, stream[s.status]) for s in order]
    assert [(a.call_id, a.kind) for a in asks] == [("call_1", "file"), ("call_2", "command"), ("call_1", "tool")]
    assert all(a.call.state is not None for a in asks)  # each ask is about the fold's call
    assert book.applied_patches == ["patch_call_1"] and book.total_steps == 2 and book.current_step == 1
    assert book.turn is not None and book.turn.tokens_used == 30 and book.turn.text == "I will fix it.Done."


def test_the_client_collects_the_recorded_turn_from_the_fold(folded: dict[int, list[str]]) -> None:
    import asyncio

    from eca_notebook.client._approval import MANUAL
    from eca_notebook.client._result import TurnCollector

    async def collect() -> TurnCollector:
        collector = TurnCollector(CHAT, "Fix a.py", MANUAL)
        for chat, role, content in RECORDING:
            if chat == CHILD:
                collector.add_subagent(CHILD, _params(chat, role, content))
            else:
                collector.add(_params(chat, role, content))
        return collector

    collector = asyncio.run(collect())
    _assert_the_recorded_fold(collector.fold, folded)
    result = collector.result()
    assert [(c.id, c.name, c.status) for c in result.tool_calls] == EXPECTED
    assert result.text == "I will fix it.\n\nDone." and result.usage is not None and result.ok


def test_the_notebook_draws_the_recorded_turn_from_the_fold_and_again_after_a_rewind(
        folded: dict[int, list[str]]) -> None:
    from eca_notebook.notebook.widgets import ChatView

    class Controller:
        def approve(self, view: Any, call: ToolCallState, save: Any, hunks: Any = None) -> None: ...

        def reject(self, view: Any, call: ToolCallState) -> None: ...

    view = ChatView(Controller(), interval=0)
    view.begin_turn(CHAT, "Fix a.py")
    for chat, role, content in RECORDING:
        view.handle("chat/contentReceived", _params(chat, role, content))
    view.finish()
    view.coalescer.close()
    _assert_the_recorded_fold(view.transcript, folded)
    states = view.transcript.calls(all_turns=True)
    assert view.cards and all(any(card.state is s for s in states) for card in view.cards.values())
    markdown = view.transcript.to_markdown()
    for _, name, status in EXPECTED:
        assert f"**Tool `{name}`**" in markdown and f"*{status}*" in markdown
    # a rewind: chat/cleared, then the server replays what it kept — the same fold again, from nothing
    folded.clear()
    view.handle("chat/cleared", {"chatId": CHAT, "messages": True})
    assert view.transcript.blocks == [] and view.transcript.tools == {} and view.transcript.subagents == {}
    for chat, role, content in RECORDING:
        view.handle("chat/contentReceived", _params(chat, role, content))
    _assert_the_recorded_fold(view.transcript, folded)


def test_the_four_doors_agree_because_they_read_one_fold() -> None:
    """The same recording, four doors: the calls each ends with are the same (ids, names, statuses)."""
    from eca_notebook.acp._updates import SessionUpdates
    from eca_notebook.server._stream_events import SessionBook

    acp, book = SessionUpdates(WS), SessionBook([WS])
    plain = TurnFold()
    for chat, role, content in RECORDING:
        if chat == CHILD:
            acp.translate_subagent(CHILD, role, content, live=False)
            book.fold.step_subagent(CHILD, role, content)
            plain.step_subagent(CHILD, role, content)
        else:
            acp.translate(role, content, live=False)
            book.translate(role, content)
            plain.step(role, content)
    assert _calls(acp.fold) == _calls(book.fold) == _calls(plain) == EXPECTED
    assert _calls(acp.fold.subagents[CHILD]) == _calls(book.fold.subagents[CHILD]) == EXPECTED_CHILD
