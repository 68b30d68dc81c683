"""``delete_file`` over ACP: the permission request carries a ``diff`` with the file's whole old text and an empty
new text (kind ``delete``); allowed, the file is gone."""

from __future__ import annotations

import pytest
from acp import text_block

from eca_notebook.testing.llm_server import Reply

from .test_connection import Client, call, start


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_delete_file_is_a_diff_to_empty_text(spawn_agent, llm, workspace, strict, answer):
    target = workspace / "legacy.py"
    target.write_text("import os\nprint(os.getcwd())\n")
    llm.enqueue(Reply([call("delete_file", {"path": "legacy.py"})]), Reply.text("Done."))
    client = Client(answer=answer)
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("remove legacy.py")])
    assert response.stop_reason == "end_turn"
    [started] = client.of("tool_call")
    assert started["kind"] == "delete" and started["title"] == 'Deleting file "legacy.py"'
    assert started["content"] == [{"type": "diff", "path": str(target),
                                   "oldText": "import os\nprint(os.getcwd())\n", "newText": ""}]
    assert len(client.permissions) == 1
    assert target.exists() is (answer == "reject_once")
