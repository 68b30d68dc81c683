"""The session stream keeps the ECA socket's per-socket limits: a client that stops reading is dropped (1008)
before its queue grows without bound, and the engine and the chat carry on."""

from __future__ import annotations

import pytest

from eca_notebook.testing.llm_server import Reply, Text
from tests._waiting import until

from .test_ws_limits import close_frame, raw_websocket, send_frames

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("eca_limits", [{"max_pending_bytes": 256 * 1024, "write_timeout": 60.0}])
async def test_a_stream_client_that_does_not_read_is_dropped(api, llm, workspace, state, jp_http_port, jp_base_url,
                                                             jp_serverapp, eca_limits):
    _, created = await api("POST", "sessions", body={})
    sid = created["id"]
    stuck = await raw_websocket(jp_http_port, f"{jp_base_url}api/eca/v1/sessions/{sid}/stream",
                                jp_serverapp.identity_provider.token)
    llm.enqueue(Reply([Text("z" * 3000) for _ in range(500)]))
    await send_frames(stuck, {"type": "client.hello", "client_info": {"name": "stuck"}},
                      {"type": "client.user_message", "message": "a long answer"})
    code, reason = await close_frame(stuck)
    assert code == 1008 and reason == f"client is not reading: more than {256 * 1024} bytes pending"
    await until(lambda: not state.sockets and state.manager.default.connections == 0)
    engine = state.manager.default.engine
    await until(lambda: not engine.chats[sid].running)  # its turn was stopped: nobody is left to answer it
    assert sid not in engine.chat_delegates and engine.listeners == []
