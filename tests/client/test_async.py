"""EcaClient against a real in-process engine and the scripted LLM server: prompts, streaming, chats, lifecycle."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.client import EcaClient, PromptResult
from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.testing.llm_server import Reasoning, Reply, ScriptedLLMServer, Stall, Text, ToolCall, Usage


def types(result: PromptResult) -> list[str]:
    return [item.content.type for item in result.contents]


async def test_start_reads_models_behaviors_and_tools(client: EcaClient):
    assert client.models == ["fake/m1", "fake/m2"]
    assert client.default_model == "fake/m1"
    assert client.behaviors[:2] == ["code", "plan"]
    assert client.default_behavior == "code"
    assert client.welcome_message
    assert {"read_file", "write_file", "shell_command"} <= {t["name"] for t in client.tools}
    assert client.engine is not None and client.engine.workspace_folders


async def test_prompt_result_has_text_usage_model_and_contents(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Reasoning("thinking"), Text("Hello, "), Text("world."), Usage(12, 3)]))
    result = await client.prompt("Say hello")
    assert result.text == "Hello, world."
    assert result.error is None and not result.stopped and result.ok
    assert result.model == "fake/m1"
    assert result.prompt == "Say hello"
    assert result.usage is not None and result.usage["sessionTokens"] == 15
    assert result.usage["messageInputTokens"] == 12
    assert types(result)[0] == "text" and result.contents[0].role == "user"
    assert "reasonStarted" in types(result) and types(result)[-1] == "progress"
    assert all(item.chat_id == result.chat_id for item in result.contents)
    assert result.tool_calls == []
    assert "Hello, world." in result._repr_markdown_()


async def test_prompt_collects_tool_calls_and_text_of_every_round(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(
        Reply([Text("Let me look."), ToolCall("call-1", "eca__read_file", json.dumps({"path": "README.md"})),
               Usage(5, 5)]),
        Reply([Text("It is a demo project."), Usage(20, 4)]),
    )
    result = await client.prompt("What is this project?")
    assert result.text == "Let me look.\n\nIt is a demo project."
    [call] = result.tool_calls
    assert (call.id, call.name, call.server, call.status) == ("call-1", "read_file", "eca", "done")
    assert call.arguments["path"] == "README.md"
    assert "# demo project" in (call.output or "")
    assert call.manual_approval is False
    assert result.usage is not None and result.usage["messageInputTokens"] == 20  # the last usage
    # the tool result went back to the model
    assert "# demo project" in json.dumps(llm.requests[-1].body["messages"])


async def test_provider_error_is_in_result_error(client: EcaClient, llm: ScriptedLLMServer):
    from eca_notebook.testing.llm_server import Error

    llm.enqueue(Reply([Error(400, "this request is bad")]))
    result = await client.prompt("hi")
    assert result.error is not None and "this request is bad" in result.error
    assert result.text == "" and not result.ok


async def test_unknown_model_is_refused_with_an_error(client: EcaClient, llm: ScriptedLLMServer):
    result = await client.prompt("hi", model="nope/nothing")
    assert result.error is not None and "nope/nothing" in result.error
    assert llm.requests == [] or all(r.path != "/v1/chat/completions" for r in llm.requests)


async def test_continuing_a_chat_sends_the_history(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("first answer"), Reply.text("second answer"))
    first = await client.prompt("first question")
    second = await client.prompt("second question", chat_id=first.chat_id)
    assert second.chat_id == first.chat_id and second.text == "second answer"
    sent = json.dumps(llm.requests[-1].body["messages"])
    assert "first question" in sent and "first answer" in sent and "second question" in sent


async def test_model_and_behavior_are_passed_and_selectable(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("a"), Reply.text("b"))
    result = await client.prompt("hi", model="fake/m2")
    assert result.model == "fake/m2" and llm.requests[-1].body["model"] == "m2"
    with pytest.raises(ValueError):
        await client.select_model("fake/unknown")
    await client.select_model("fake/m2")
    assert client.default_model == "fake/m2"
    result = await client.prompt("again")
    assert result.model == "fake/m2"
    with pytest.raises(ValueError):
        await client.select_behavior("nonsense")
    await client.select_behavior("plan")
    assert client.default_behavior == "plan"
    await client.select_behavior("agent")  # the deprecated id of `code`
    assert client.default_behavior == "code"


async def test_stream_yields_contents_in_engine_order(client: EcaClient, llm: ScriptedLLMServer):
    seen: list[dict[str, Any]] = []
    client.subscribe(lambda m, p: seen.append(p) if m == "chat/contentReceived" else None)
    llm.enqueue(Reply([Text("one "), Text("two "), Text("three"), Usage(1, 1)]))
    stream = client.stream("count")
    assert stream.chat_id  # known before the prompt is sent
    items = [item async for item in stream]
    assert [i.content.type for i in items] == [p["content"]["type"] for p in seen]
    assert [i.content.dump() for i in items] == [p["content"] for p in seen]
    texts = [i.content.text for i in items if i.role == "assistant" and i.content.type == "text"]
    assert texts == ["one ", "two ", "three"]
    assert items[-1].content.type == "progress" and items[-1].content.state == "finished"
    assert stream.result is not None and stream.result.text == "one two three"
    assert stream.result.chat_id == stream.chat_id


async def test_stream_delivers_chunks_before_the_reply_ends_and_stop_ends_it(client: EcaClient,
                                                                            llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("partial"), Stall(60), Text("never")]))
    async with client.stream("long answer") as stream:
        async for item in stream:
            if item.role == "assistant" and item.content.type == "text":
                assert item.content.text == "partial"
                await client.stop(stream.chat_id)  # the model is still stalled: this was streamed
    assert stream.result is not None
    assert stream.result.stopped and stream.result.text == "partial"
    assert await asyncio.to_thread(llm.wait_for_disconnect, 5.0)


async def test_stop_from_another_task_ends_prompt_as_stopped(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("start"), Stall(60)]))
    statuses: list[str] = []
    running = asyncio.Event()

    def watch(method: str, params: Any) -> None:
        if method == "chat/statusChanged":
            statuses.append(params["status"])
        if method == "chat/contentReceived" and params["role"] == "assistant":
            running.set()

    client.subscribe(watch)
    task = asyncio.create_task(client.prompt("go"))
    await asyncio.wait_for(running.wait(), 30)
    chat_id = (await client.list_chats())[0]["id"]
    await client.stop(chat_id)
    result = await asyncio.wait_for(task, 30)
    assert result.stopped and result.chat_id == chat_id
    assert "stopping" in statuses
    llm.enqueue(Reply.text("next"))
    assert (await client.prompt("next", chat_id=chat_id)).text == "next"  # the chat is usable again


async def test_timeout_stops_the_prompt(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("slow"), Stall(60)]))
    result = await client.prompt("hurry", timeout=0.5)
    assert result.error is not None and "Timed out" in result.error
    assert result.stopped
    assert await asyncio.to_thread(llm.wait_for_disconnect, 5.0)


async def test_cancelling_the_awaiting_task_stops_the_prompt(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("slow"), Stall(60)]))
    idle = asyncio.Event()
    client.subscribe(lambda m, p: idle.set() if m == "chat/statusChanged" and p["status"] == "idle" else None)
    started = asyncio.Event()  # the first chunk arrived: the model's stream is open
    client.subscribe(lambda m, p: started.set() if m == "chat/contentReceived" and p["role"] == "assistant" else None)
    task = asyncio.create_task(client.prompt("hi"))
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert idle.is_set()  # the cancelled prompt() returned only once the engine had stopped the turn
    assert await asyncio.to_thread(llm.wait_for_disconnect, 5.0)
    chat_id = (await client.list_chats())[0]["id"]
    llm.enqueue(Reply.text("again"))
    assert (await client.prompt("again", chat_id=chat_id)).text == "again"  # the chat takes a prompt at once


async def test_same_chat_twice_at_once_is_refused(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("x"), Stall(60)]))
    task = asyncio.create_task(client.prompt("one", chat_id="chat-a"))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError):
        await client.prompt("two", chat_id="chat-a")
    await client.stop("chat-a")
    assert (await asyncio.wait_for(task, 30)).stopped


async def test_subscribe_and_unsubscribe(client: EcaClient, llm: ScriptedLLMServer):
    got: list[str] = []
    unsubscribe = client.subscribe(lambda m, p: got.append(m))
    llm.enqueue(Reply.text("a"), Reply.text("b"))
    await client.prompt("a")
    assert "chat/contentReceived" in got and "chat/statusChanged" in got and "chat/opened" in got
    unsubscribe()
    count = len(got)
    await client.prompt("b")
    assert len(got) == count


async def test_list_open_and_delete_chats(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("the answer"), Usage(3, 2)]))
    result = await client.prompt("a question")
    chats = await client.list_chats()
    assert [c["id"] for c in chats] == [result.chat_id]
    assert chats[0]["title"] == "a question"
    replay = await client.open_chat(result.chat_id)
    assert [i.content.type for i in replay] == types(result)
    assert "".join(i.content.text for i in replay if i.role == "assistant" and i.content.type == "text") == \
        "the answer"
    assert await client.open_chat("no-such-chat") == []
    await client.delete(result.chat_id)
    assert await client.list_chats() == []


async def test_query_commands_and_context(client: EcaClient):
    commands = await client.query_commands()
    assert "doctor" in {c["name"] for c in commands}
    assert [c["name"] for c in await client.query_commands("doc")] == ["doctor"]
    for _ in range(1200):  # the workspace index builds in the background
        contexts = await client.query_context("READ")
        if contexts:
            break
        await asyncio.sleep(0.05)
    assert any(c.get("type") == "file" and c.get("path", "").endswith("README.md") for c in contexts)


async def test_command_output_is_in_system(client: EcaClient):
    result = await client.prompt("/doctor")
    assert result.error is None and result.text == ""
    assert any("eca-notebook" in line for line in result.system)


async def test_contexts_reach_the_model(client: EcaClient, llm: ScriptedLLMServer, workspace: Path):
    (workspace / "notes.txt").write_text("the secret word is avocado\n")
    llm.enqueue(Reply.text("ok"))
    await client.prompt("read this", contexts=[{"type": "file", "path": str(workspace / "notes.txt")}])
    assert "avocado" in json.dumps(llm.requests[-1].body["messages"])


async def test_raw_request_and_notify(client: EcaClient, llm: ScriptedLLMServer):
    assert await client.request("chat/list", {}) == {"chats": []}
    from eca_notebook.protocol.errors import RpcError

    with pytest.raises(RpcError):
        await client.request("no/such-method", {})
    await client.notify("chat/selectedBehaviorChanged", {"behavior": "plan"})
    assert client.engine is not None
    await client.list_chats()  # a round trip: the notification was handled before it
    assert client.engine.selected_behavior == "plan"


async def test_close_leaves_no_tasks_and_closes_the_engine(workspace: Path, env: dict[str, str], config,
                                                          llm: ScriptedLLMServer):
    before = asyncio.all_tasks()
    eca = await EcaClient.start(workspace=workspace, config=config, env=env)
    llm.enqueue(Reply.text("hi"), Reply([Text("x"), Stall(60)]))
    await eca.prompt("hi")
    pending = asyncio.create_task(eca.prompt("left running"))
    await asyncio.sleep(0.2)
    engine = eca.engine
    await eca.aclose()
    result = await asyncio.wait_for(pending, 30)
    assert result.error is not None  # ended by the close, not left hanging
    assert eca.closed and engine is not None and engine._closed
    await eca.aclose()  # idempotent
    assert asyncio.all_tasks() - before == set()
    with pytest.raises(RuntimeError):
        await eca.prompt("after close")


async def test_shared_engine_outlives_its_clients(workspace: Path, env: dict[str, str], config,
                                                 llm: ScriptedLLMServer):
    engine = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=config, env=env))
    try:
        first = await EcaClient.start(engine=engine)
        second = await EcaClient.start(engine=engine)
        assert first.engine is engine and second.engine is engine
        seen_by_second: list[str] = []
        second.subscribe(lambda m, p: seen_by_second.append(p["chatId"]) if m == "chat/contentReceived" else None)
        llm.enqueue(Reply.text("shared"))
        result = await first.prompt("hello")
        assert result.text == "shared"
        assert result.chat_id in seen_by_second  # both clients see the chat
        await first.aclose()
        assert not engine._closed
        assert [c["id"] for c in await second.list_chats()] == [result.chat_id]
        await second.aclose()
    finally:
        await engine.aclose()


async def test_start_without_workspace_uses_the_current_directory(tmp_path: Path, env: dict[str, str], config,
                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with await EcaClient.start(config=config, env=env) as eca:
        assert eca.engine is not None and eca.engine.workspace_folders == [tmp_path.resolve()]


async def test_a_failing_tool_call_is_recorded_as_error(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([ToolCall("r1", "eca__read_file", json.dumps({"path": "missing.txt"}))]), Reply.text("no file"))
    result = await client.prompt("read a missing file")
    [call] = result.tool_calls
    assert call.status == "failed" and "missing.txt" in (call.output or "")
    assert result.error is None and result.text == "no file"


async def test_stream_iterated_again_after_the_end_stops_at_once(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply.text("once"))
    stream = client.stream("hi")
    first = [item async for item in stream]
    assert first and [item async for item in stream] == []
    await stream.aclose()
    assert stream.result is not None and stream.result.text == "once"


async def test_open_chat_while_its_prompt_runs_is_refused(client: EcaClient, llm: ScriptedLLMServer):
    llm.enqueue(Reply([Text("x"), Stall(60)]))
    task = asyncio.create_task(client.prompt("long", chat_id="busy"))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError):
        await client.open_chat("busy")
    await client.stop("busy")
    assert (await asyncio.wait_for(task, 30)).stopped
    assert await client.open_chat("busy")  # fine once it has ended


async def test_connect_to_a_server_process_over_pipes(workspace: Path, env: dict[str, str], config,
                                                     llm: ScriptedLLMServer):
    """The same client over a real transport: `eca-notebook server` in a subprocess, Content-Length over pipes."""
    import os
    import sys

    from eca_notebook.transports import PipeStream

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "eca_notebook", "server",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env={**{k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_URL")) and k != "ECA_CONFIG"},
             **env},
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        stream = PipeStream(proc.stdout, proc.stdin, codec="content-length")
        async with await EcaClient.connect(stream, workspace=workspace, config=config) as eca:
            assert eca.engine is None and eca.models == ["fake/m1", "fake/m2"]
            llm.enqueue(Reply([Text("over "), Text("pipes")]))
            result = await eca.prompt("hello")
            assert result.text == "over pipes" and result.model == "fake/m1"
        assert await asyncio.wait_for(proc.wait(), 60) == 0  # shutdown + exit: a clean exit
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_concurrent_closes_all_wait_for_the_end(workspace: Path, env: dict[str, str], config):
    eca = await EcaClient.start(workspace=workspace, config=config, env=env)
    engine = eca.engine
    await asyncio.gather(eca.aclose(), eca.aclose(), eca.aclose())
    assert eca.closed and engine is not None and engine._closed


async def test_a_missing_workspace_is_refused(tmp_path: Path, env: dict[str, str], config):
    before = asyncio.all_tasks()
    with pytest.raises(NotADirectoryError):
        await EcaClient.start(workspace=tmp_path / "nope", config=config, env=env)
    assert asyncio.all_tasks() - before == set()


async def test_secrets_never_reach_the_in_process_client(workspace: Path, env: dict[str, str],
                                                         llm: ScriptedLLMServer):
    from eca_notebook.testing.llm_server import Error

    from .conftest import provider_config

    key_a, key_b = "inproc-key-A-12345", "inproc-key-B-67890"
    header, password = "inproc-hdr-C-24680", "inproc-pw-D-1357"
    config = provider_config(("fake", llm), ("other", llm))
    config["providers"]["fake"].update(key=key_a, headers={"X-Auth": header},
                                       url=llm.url.replace("://", f"://me:{password}@"))
    config["providers"]["other"]["key"] = key_b
    llm.enqueue(Reply([Error(401, f"bad key {key_a}; {key_b} would not work either ({header}, {password})")]))
    eca = await EcaClient.start(workspace=workspace, config=config, env=env)
    try:
        failed = await eca.prompt(f"hi {key_b}")
        doctor = await eca.prompt("/doctor", chat_id=failed.chat_id)
    finally:
        await eca.aclose()
    assert failed.error is not None and "bad key ***" in failed.error
    assert any("Providers:" in text for text in doctor.system)
    items = [i.model_dump(mode="json") for i in failed.contents + doctor.contents]
    shown = json.dumps([failed.error, doctor.system, items])
    for secret in (key_a, key_b, header, password):
        assert secret not in shown, secret
