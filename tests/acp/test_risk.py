"""The engine's risk level through the ACP door: in the ``tool_call``'s ``_meta`` and in the title of
``session/request_permission`` — checked against a real third-party ACP client (strict schema)."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block

from eca_notebook.acp._updates import SessionUpdates
from eca_notebook.testing.llm_server import Reply

from .test_connection import Client, call, start

HIGH = {"level": "high", "reason": "deletes recursively: build"}


def run(risk: dict | None, manual: bool = True) -> dict:
    content = {"type": "toolCallRun", "origin": "native", "id": "c1", "name": "shell_command", "server": "eca",
               "arguments": {"command": "rm -rf build"}, "manualApproval": manual, "summary": "$ rm -rf build"}
    return content if risk is None else {**content, "risk": risk}


def test_risk_goes_into_meta_and_the_permission_title():
    [update], ask = SessionUpdates(Path("/ws")).translate("assistant", run(HIGH), live=True)
    assert update["_meta"] == {"eca": {"risk": HIGH}}
    assert update["title"] == "$ rm -rf build"  # the call's own title stays what it does
    assert ask is not None
    assert ask.tool_call["title"] == "$ rm -rf build (high risk: deletes recursively: build)"
    assert ask.tool_call["_meta"] == {"eca": {"risk": HIGH}}


def test_no_or_malformed_risk_changes_nothing():
    for risk in (None, {"level": "extreme", "reason": "x"}, "high"):
        [update], ask = SessionUpdates(Path("/ws")).translate("assistant", run(risk), live=True)  # type: ignore[arg-type]
        assert "_meta" not in update and ask is not None and ask.tool_call["title"] == "$ rm -rf build"


@pytest.mark.e2e
async def test_a_real_client_is_asked_with_the_risk_in_the_title(spawn_agent, llm, workspace, strict):
    (workspace / "build").mkdir()
    llm.enqueue(Reply([call("shell_command", {"command": "rm -rf build"})]), Reply.text("Left it."))
    client = Client(answer="reject_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("clean up")])
    assert response.stop_reason == "end_turn"
    assert (workspace / "build").is_dir()
    [started] = client.of("tool_call")
    assert started["_meta"] == {"eca": {"risk": HIGH}}
    [asked] = client.permissions
    assert asked["toolCall"]["title"].endswith("(high risk: deletes recursively: build)")
    assert asked["toolCall"]["_meta"] == {"eca": {"risk": HIGH}}
