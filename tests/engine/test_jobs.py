"""Background jobs through the engine: the model starts one with ``shell_command`` ``background`` (asked like any
shell command), gets its id at once, reads its output with ``bg_job``; clients list, read and kill jobs
(``jobs/list``, ``jobs/readOutput``, ``jobs/kill``) and are sent ``jobs/updated``; a chat's jobs die with the chat
(``chat/delete``) and all of them with the engine — checked by pid, no orphan left."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, Text, ToolCall, Usage
from tests._waiting import until

from ..client.conftest import provider_config
from ..tools.test_jobs import alive


def call(call_id: str, tool: str, **arguments: Any) -> Reply:
    return Reply([ToolCall(call_id, f"eca__{tool}", json.dumps(arguments)), Usage(5, 5)])


@pytest.fixture
async def eca(workspace: Path, env: dict[str, str], llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, env=env, config=provider_config(("fake", llm))) as client:
        yield client


async def start_job(eca: EcaClient, llm: ScriptedLLMServer, chat_id: str, command: str,
                    asked: list[dict[str, Any]] | None = None) -> str:
    llm.enqueue(call("s1", "shell_command", command=command, background="trainer"),
                Reply([Text("Started."), Usage(5, 5)]))

    def approve(content: dict[str, Any]) -> bool:
        if asked is not None:
            asked.append(content)
        return True

    result = await eca.prompt("train in the background", chat_id=chat_id, approval=approve)
    [started] = [c for c in result.tool_calls if c.id == "s1"]
    assert started.status == "done", started.output
    match = re.search(r"Background job (job-\d+) started", started.output or "")
    assert match, started.output
    return match.group(1)


async def test_the_model_starts_reads_and_kills_a_job(eca: EcaClient, llm: ScriptedLLMServer):
    asked: list[dict[str, Any]] = []
    job_id = await start_job(eca, llm, "chat-1", "for i in 1 2 3; do echo epoch $i; done; sleep 300", asked)
    # asked like a foreground shell command (the default policy asks for shell_command)
    assert asked and asked[0]["name"] == "shell_command" and "(background)" in asked[0]["summary"]
    job = eca.engine.jobs.get(job_id)
    await until(lambda: b"epoch 3" in job.read(0, 1000)[0])
    [listed] = await eca.jobs()
    assert listed["id"] == job_id and listed["status"] == "running" and listed["summary"] == "trainer"
    assert listed["chatId"] == "chat-1" and listed["exitCode"] is None
    snapshot = await eca.job_output(job_id)
    assert {"text": "epoch 3", "stream": "stdout"} in snapshot["lines"] and snapshot["status"] == "running"
    # the model reads from an offset, then kills it
    llm.enqueue(call("r1", "bg_job", action="read_output", job_id=job_id, offset=8),
                call("k1", "bg_job", action="kill", job_id=job_id),
                Reply([Text("Stopped it."), Usage(5, 5)]))
    result = await eca.prompt("how far is it? then stop it", chat_id="chat-1")
    [read] = [c for c in result.tool_calls if c.id == "r1"]
    assert read.status == "done" and "Output bytes 8–24" in (read.output or "")
    assert (read.output or "").endswith("epoch 2\nepoch 3\n")
    assert job.status == "killed"
    await until(lambda: not alive(job.pid))
    assert await eca.kill_job(job_id) is False


async def test_jobs_updated_is_sent_and_jobs_kill_kills(eca: EcaClient, llm: ScriptedLLMServer):
    seen: list[dict[str, Any]] = []
    eca.engine.add_listener(type("L", (), {"send": lambda self, m, p: seen.append(p) if m == "jobs/updated"
                                           else None})())
    job_id = await start_job(eca, llm, "chat-2", "sleep 300")
    assert seen and seen[-1]["jobs"][0]["id"] == job_id
    job = eca.engine.jobs.get(job_id)
    assert await eca.kill_job(job_id) is True
    await until(lambda: not alive(job.pid))
    assert seen[-1]["jobs"][0]["status"] == "killed"


async def test_a_chats_jobs_die_with_the_chat(eca: EcaClient, llm: ScriptedLLMServer):
    mine = eca.engine.jobs.get(await start_job(eca, llm, "chat-3", "sleep 300"))
    other = eca.engine.jobs.get(await start_job(eca, llm, "chat-4", "sleep 300"))
    await eca.delete("chat-3")
    await until(lambda: not alive(mine.pid))
    assert alive(other.pid)
    assert [j["id"] for j in await eca.jobs()] == [other.id]


async def test_jobs_die_with_the_engine(workspace: Path, env: dict[str, str], llm: ScriptedLLMServer):
    async with await EcaClient.start(workspace=workspace, env=env, config=provider_config(("fake", llm))) as eca:
        job = eca.engine.jobs.get(await start_job(eca, llm, "chat-5", "sleep 300 & sleep 300; wait"))
        assert alive(job.pid)
    await until(lambda: not alive(job.pid))
    # and the shell's own child (same process group) went too
    assert not any(alive(int(p)) for p in _group_members(job.pid))


def _group_members(pgid: int) -> list[str]:
    members = []
    for name in [n for n in __import__("os").listdir("/proc") if n.isdigit()]:
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid).encode():
            members.append(name)
    return members


async def test_the_model_is_told_at_the_next_round_when_a_job_ended(eca: EcaClient, llm: ScriptedLLMServer):
    job = eca.engine.jobs.get(await start_job(eca, llm, "chat-6", "sleep 1.5; echo trained; exit 3"))
    assert await eca.engine.jobs.wait(job, 30)
    await until(lambda: eca.engine.chats["chat-6"].job_notes)
    llm.enqueue(call("l1", "bg_job", action="list"), Reply([Text("It failed."), Usage(5, 5)]))
    await eca.prompt("how did it go?", chat_id="chat-6")
    first, second = llm.requests[-2:]
    note = "Background job job-1 (`sleep 1.5; echo trained; exit 3`) failed with exit code 3."
    assert note not in json.dumps(first.body)  # joins at the round boundary, as a steer would
    told = [m for m in second.body["messages"] if m["role"] == "user" and note in json.dumps(m["content"])]
    assert told and "trained" in json.dumps(told[0]["content"])
    assert eca.engine.chats["chat-6"].job_notes == []
