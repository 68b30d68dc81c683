"""Clients stop their agent with signals, and what was said before stays said: Jupyter AI sends SIGINT and SIGTERM to
the agent together right after a turn (then SIGKILL after 5 s). The agent ends the way a closed stdin ends it, so the
turn's chat is on disk and the next process loads it (eca_notebook/cli.py, ``_until_stopped``)."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply

from .conftest import completion_bodies
from .test_connection import Client, start

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGTERM), (signal.SIGTERM,)], ids=["int+term", "term"])
async def test_a_turn_said_just_before_the_stop_signals_is_loaded_by_the_next_agent(spawn_agent, llm, workspace,
                                                                                   signals):
    llm.enqueue(Reply.text("Noted: the answer is 42."))
    first = Client()
    async with spawn_agent(first) as (conn, proc):
        session_id = await start(conn, first, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("remember 42")])
        assert response.stop_reason == "end_turn"
        for number in signals:  # at once, as Jupyter AI's shutdown sends them
            proc.send_signal(number)
        code = await asyncio.wait_for(proc.wait(), 60)
    # the orderly way: an exit code of 128 + the signal handled (a kill would be the negative signal number)
    assert code in {128 + number for number in signals}, code

    llm.enqueue(Reply.text("It was 42."))
    second = Client()
    async with spawn_agent(second) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=second.capabilities())
        await conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
        assert "Noted: the answer is 42." in second.text()
        await conn.prompt(session_id=session_id, prompt=[text_block("what was the number?")])
    history = json.dumps(completion_bodies(llm)[-1]["input"])
    assert "remember 42" in history and "Noted: the answer is 42." in history
