"""Steering and background jobs through a real ``eca-notebook server`` over stdio: a steer sent while the round's
tool call waits reaches the model's next request (not the one before); a background job started by the model is
listed, read and announced (``jobs/updated``), and dies with the server — checked by pid after ``exit``."""

from __future__ import annotations

import json

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall, Usage

from .conftest import API_MODELS, wait_gone
from .test_server_chat import completion_requests

pytestmark = pytest.mark.e2e

MODEL = API_MODELS["openai-chat"]


async def run_until_approval(eca, message: str, call_id: str) -> str:
    result = await eca.request("chat/prompt", {"message": message, "model": MODEL})
    chat_id = result["chatId"]
    await eca.wait_for(lambda m: m.method == "chat/contentReceived" and m.params["content"]["type"] == "toolCallRun"
                       and m.params["content"]["id"] == call_id)
    return chat_id


async def test_a_steer_and_a_background_job_over_stdio(spawn, llm, workspace):
    shell = ToolCall("s1", "eca__shell_command",
                     json.dumps({"command": "echo pid $$; sleep 300", "background": "sleeper"}))
    llm.enqueue(Reply([shell, Usage(5, 5)]), Reply([Text("Started it."), Usage(5, 5)]))
    eca = await spawn()
    eca.endpoint.register("jobs/updated", lambda params: eca._record("jobs/updated", params))
    await eca.initialize(workspace)
    chat_id = await run_until_approval(eca, "start the sleeper", "s1")
    # the call waits for approval: a steer now must wait for its result, and join the next request
    await eca.notify("chat/promptSteer", {"chatId": chat_id, "message": "then report its pid"})
    await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "s1"})
    await eca.wait_idle(chat_id)
    first, second = completion_requests(llm)
    assert "then report its pid" not in json.dumps(first.body)
    last = second.body["messages"][-1]
    assert last["role"] == "user" and "then report its pid" in json.dumps(last["content"])
    steered = [c for role, c in eca.contents(chat_id) if role == "user" and c["text"] == "then report its pid\n"]
    assert steered and steered[0]["contentId"]

    [job] = (await eca.request("jobs/list", {}))["jobs"]
    assert job["status"] == "running" and job["summary"] == "sleeper" and job["chatId"] == chat_id
    assert job["exitCode"] is None and job["type"] == "shell" and job["label"].startswith("echo pid")
    assert eca.of("jobs/updated")[-1]["jobs"][0]["id"] == job["id"]
    output = await eca.request("jobs/readOutput", {"jobId": job["id"]})
    [line] = [line for line in output["lines"] if line["text"].startswith("pid ")]
    assert line["stream"] == "stdout" and output["status"] == "running"
    pid = int(line["text"].split()[1])
    assert not await wait_gone(pid, within=0.2)  # alive

    assert await eca.shutdown() == 0
    assert await wait_gone(pid, within=30), "the background job outlived the server"


async def test_jobs_kill_and_chat_delete_over_stdio(spawn, llm, workspace):
    for n in (1, 2):
        llm.enqueue(Reply([ToolCall(f"s{n}", "eca__shell_command",
                                    json.dumps({"command": "echo pid $$; sleep 300", "background": True})),
                           Usage(5, 5)]),
                    Reply([Text("ok"), Usage(5, 5)]))
    eca = await spawn()
    await eca.initialize(workspace)
    pids = {}
    for n in (1, 2):
        chat_id = await run_until_approval(eca, "start it", f"s{n}")
        await eca.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": f"s{n}"})
        await eca.wait_idle(chat_id)
        job = next(j for j in (await eca.request("jobs/list", {}))["jobs"] if j["chatId"] == chat_id)
        assert job["summary"] is None  # background: true, no description
        for _ in range(200):
            lines = (await eca.request("jobs/readOutput", {"jobId": job["id"]}))["lines"]
            if lines:
                break
        pids[chat_id] = (job["id"], int(lines[0]["text"].split()[1]))
    (first_chat, (first_job, first_pid)), (second_chat, (_, second_pid)) = pids.items()
    assert (await eca.request("jobs/kill", {"jobId": first_job})) == {"killed": True}
    assert await wait_gone(first_pid, within=30)
    assert (await eca.request("jobs/kill", {"jobId": first_job})) == {"killed": False}
    await eca.request("chat/delete", {"chatId": second_chat})
    assert await wait_gone(second_pid, within=30)
    assert [j["chatId"] for j in (await eca.request("jobs/list", {}))["jobs"]] == [first_chat]
    assert await eca.shutdown() == 0
