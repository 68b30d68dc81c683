"""acp-messages.md "Rate Limiting" through ``eca-notebook acp`` and the ``agent-client-protocol`` client: a prompt
over its limit is refused with a retry time and then taken; a long reply stays under the ``session/update`` limit
with every character delivered; ``fs/*`` requests are paced by the agent, never sent over the limit."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from eca_notebook.acp._limits import RATE_LIMITED, RateWindow, UpdateOutbox, limits_from_config
from eca_notebook.testing.llm_server import Reply

from .conftest import acp_env
from .test_connection import Client, call, start

WINDOW = 3.0  # seconds: the spec's minute, shortened so the tests do not wait one


def limited_env(home: Path, llm: Any, **limits: int) -> dict[str, str]:
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["acp"] = {"rateLimits": {k.replace("_", "/", 1): v for k, v in limits.items()},
                     "rateWindowSeconds": WINDOW}
    env["ECA_CONFIG"] = json.dumps(config)
    return env


def test_config_limits_default_to_the_spec_and_can_be_turned_off():
    defaults = limits_from_config(None)
    assert {m: w.limit for m, w in defaults.windows.items()} == {
        "session/prompt": 10, "fs/read_text_file": 100, "fs/write_text_file": 50, "session/update": 1000}
    assert defaults.window == 60
    custom = limits_from_config({"rateLimits": {"session/prompt": None, "session/update": 5},
                                 "rateWindowSeconds": 2})
    assert custom.of("session/prompt").limit == 0 and custom.of("session/update").limit == 5 and custom.window == 2


async def test_outbox_merges_held_chunks_and_loses_no_character():
    sent: list[dict[str, Any]] = []
    outbox = UpdateOutbox(RateWindow(2, 0.5), sent.append)
    pieces = [f"<{i}>" for i in range(200)]
    for piece in pieces:
        outbox.put({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}})
    outbox.put({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"})
    outbox.put({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
    await asyncio.wait_for(outbox.drain(), 60)
    assert "".join(u["content"]["text"] for u in sent if u["sessionUpdate"] == "agent_message_chunk") == \
        "".join(pieces)
    assert [u["sessionUpdate"] for u in sent] == ["agent_message_chunk"] * 3 + ["tool_call", "agent_thought_chunk"]



@pytest.mark.e2e
async def test_prompt_over_the_limit_is_refused_with_a_retry_time_then_taken(spawn_agent, llm, home, workspace,
                                                                              strict):
    llm.enqueue(*(Reply.text(f"answer {i}") for i in range(3)))
    client = Client()
    async with spawn_agent(client, env=limited_env(home, llm, session_prompt=2)) as (conn, _):
        session_id = await start(conn, client, workspace)
        for i in range(2):
            answer = await conn.prompt(session_id=session_id, prompt=[text_block(f"q{i}")])
            assert answer.stop_reason == "end_turn"
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session_id, prompt=[text_block("one too many")])
        assert refused.value.code == RATE_LIMITED
        data = refused.value.data
        assert data["reason"] == "rate_limited" and data["method"] == "session/prompt" and data["limit"] == 2
        assert f"retry in {data['retryAfterSeconds']} s" in str(refused.value)
        await asyncio.sleep(data["retryAfterSeconds"])  # as the error says; the window has moved on
        deadline = time.monotonic() + 60
        while True:  # (a busy machine may deliver the answer a little early relative to the agent's clock)
            try:
                answer = await conn.prompt(session_id=session_id, prompt=[text_block("after waiting")])
                break
            except RequestError as exc:
                assert exc.code == RATE_LIMITED and time.monotonic() < deadline
                await asyncio.sleep(0.5)
        assert answer.stop_reason == "end_turn"
    assert client.text().endswith("answer 2")


@pytest.mark.e2e
async def test_a_long_reply_stays_under_the_update_limit_with_every_character(spawn_agent, llm, home, workspace,
                                                                               strict):
    reply = "".join(f"word{i} " for i in range(400))
    llm.enqueue(Reply.text(reply, chunks=400))
    client = Client()
    async with spawn_agent(client, env=limited_env(home, llm, session_update=5)) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("talk")])
    assert answer.stop_reason == "end_turn"
    assert client.text() == reply  # every character, in order — and all before the prompt's answer
    # 400 chunks streamed; 5 updates per 3 s let through: most were merged (without the limit: 400 updates)
    assert len(client.updates) < 100


@pytest.mark.e2e
async def test_fs_reads_are_paced_by_the_agent_not_sent_over_the_limit(spawn_agent, llm, home, workspace, strict):
    """The client enforces the limit itself (refusing a read over it); the agent must never make it refuse."""
    paths = []
    for i in range(4):
        (workspace / f"f{i}.txt").write_text(f"disk {i}\n")
        paths.append(str(workspace / f"f{i}.txt"))
    llm.enqueue(Reply([call("read_file", {"path": f"f{i}.txt"}, f"call_{i}") for i in range(4)]),
                Reply.text("Read them."))

    class Strict(Client):
        def __init__(self) -> None:
            super().__init__(files={p: f"editor {i}\n" for i, p in enumerate(paths)})
            self.times: list[float] = []
            self.refused: list[str] = []

        async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                                 limit: int | None = None, **kwargs: Any) -> Any:
            now = time.monotonic()
            recent = [t for t in self.times if t > now - WINDOW + 1.0]  # 1 s of slack for a busy machine
            if len(recent) >= 2:
                self.refused.append(path)
                raise RequestError(RATE_LIMITED, "rate limited")
            self.times.append(now)
            return await super().read_text_file(session_id, path, line, limit, **kwargs)

    client = Strict()
    async with spawn_agent(client, env=limited_env(home, llm, fs_read_text_file=2)) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("read all four")])
    assert answer.stop_reason == "end_turn"
    assert not client.refused
    assert set(paths) <= set(client.reads)


@pytest.mark.e2e
async def test_fs_write_is_retried_after_a_timeout(spawn_agent, llm, home, workspace, strict):
    """acp-messages.md "Timeout Specifications": fs/write_text_file, Retry: Yes. The editor's first write never
    answers; the agent sends it again after its timeout (shortened here) and the change lands."""
    target = str(workspace / "a.txt")
    llm.enqueue(Reply([call("write_file", {"path": "a.txt", "content": "hello\n"})]), Reply.text("Written."))

    class Stuck(Client):
        async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
            if not self.writes:
                self.writes.append(("stuck", path))
                await asyncio.Event().wait()  # the first request is never answered
            return await super().write_text_file(session_id, path, content, **kwargs)

    client = Stuck(files={})
    env = acp_env(home, llm)
    config = json.loads(env["ECA_CONFIG"])
    config["acp"] = {"timeoutSeconds": {"fs/write_text_file": 2}}
    env["ECA_CONFIG"] = json.dumps(config)
    async with spawn_agent(client, env=env) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("write a")])
    assert answer.stop_reason == "end_turn"
    assert client.writes == [("stuck", target), (target, "hello\n")]
    assert client.files == {target: "hello\n"}
