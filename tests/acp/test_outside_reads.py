"""ACP: an outside file is read through the client only after the user approved it (issue #12, 7).

Driven by the ``agent-client-protocol`` package's client against ``eca-notebook acp``: the client records, in
order, every ``session/request_permission`` and every ``fs/read_text_file`` it receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply

from .conftest import completion_bodies, sent_tool_results
from .test_connection import Client, call, start

pytestmark = pytest.mark.e2e


class OrderedClient(Client):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.events: list[tuple[str, str]] = []

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.events.append(("permission", tool_call.title or ""))
        return await super().request_permission(session_id, tool_call, options, **kwargs)

    async def read_text_file(self, session_id: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.events.append(("read", path))
        return await super().read_text_file(session_id, path, *args, **kwargs)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text("on disk\n")
    return path


async def test_rejected_outside_read_never_reaches_the_client(spawn_agent, llm, workspace, secret, strict):
    llm.enqueue(Reply([call("read_file", {"path": str(secret)})]), Reply.text("Fine."))
    client = OrderedClient(answer="reject_once", files={str(secret): "editor secret\n"})
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("read it")])
    assert response.stop_reason == "end_turn"
    assert [kind for kind, _ in client.events] == ["permission"]  # asked; no fs/read_text_file at all
    assert str(secret) not in client.reads
    [result] = sent_tool_results(completion_bodies(llm)[1])
    assert "rejected" in result.lower() and "secret" not in result


async def test_approved_outside_read_asks_first_then_reads_through_the_client(spawn_agent, llm, workspace, secret,
                                                                             strict):
    llm.enqueue(Reply([call("read_file", {"path": str(secret)})]), Reply.text("Read."))
    client = OrderedClient(answer="allow_once", files={str(secret): "editor secret\n"})
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("read it")])
    kinds = [kind for kind, _ in client.events]
    assert kinds == ["permission", "read"], client.events
    assert client.events[1] == ("read", str(secret))
    assert sent_tool_results(completion_bodies(llm)[1]) == ["editor secret"]


async def test_inside_reads_still_use_the_editor_buffer_without_asking(spawn_agent, llm, workspace, strict):
    target = workspace / "app.py"
    target.write_text("on disk\n")
    llm.enqueue(Reply([call("read_file", {"path": "app.py"})]), Reply.text("Read."))
    client = OrderedClient(files={str(target): "unsaved\n"})
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("read it")])
    assert client.events == [("read", str(target))]
    assert sent_tool_results(completion_bodies(llm)[1]) == ["unsaved"]
