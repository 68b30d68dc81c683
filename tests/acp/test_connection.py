"""``eca-notebook acp`` driven by a real third-party client: the ``agent-client-protocol`` package's client side
(``spawn_agent_process``), against the scripted LLM server.

Every message the agent sends is checked strictly against the package's schema (see ``conftest.StrictSchema``), and
a test fails if the client logs an error about our messages or the agent logs an error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    FileSystemCapabilities,
    ImageContentBlock,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    TextResourceContents,
    WriteTextFileResponse,
)

from eca_notebook.testing.llm_server import Reasoning, Reply, Stall, Text, ToolCall, Usage

from .conftest import DEFAULT_MODEL, completion_bodies, sent_tool_results, sent_tools

pytestmark = pytest.mark.e2e

SHOUT_SERVER = Path(__file__).parent / "servers" / "shout_server.py"


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> ToolCall:
    return ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)


class Client:
    """An ACP client as an editor would be: records updates, answers permissions, optionally serves files."""

    def __init__(self, *, answer: str | Callable[[Any], Any] = "allow_once", files: dict[str, str] | None = None):
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.answer = answer
        self.files = files  # path → the editor's text (None: no fs capability)
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    def capabilities(self) -> ClientCapabilities:
        enabled = self.files is not None
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=enabled, write_text_file=enabled))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))
        self.changed.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permissions.append({"toolCall": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                                 "options": [o.model_dump(mode="json", by_alias=True) for o in options]})
        self.changed.set()
        answer = self.answer
        if callable(answer):
            answer = await answer(self)
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=answer, outcome="selected"))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        self.reads.append(path)
        if self.files is None or path not in self.files:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        assert self.files is not None
        self.writes.append((path, content))
        self.files[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.of(kind))

    async def wait(self, predicate: Callable[[Client], bool], timeout: float = 60) -> None:
        async def loop() -> None:
            while not predicate(self):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), timeout)


async def start(conn: Any, client: Client, workspace: Path) -> str:
    await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    return session.session_id


async def test_initialize_and_new_session_describe_the_agent(spawn_agent, workspace, strict):
    client = Client()
    async with spawn_agent(client) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session is True
        assert init.agent_capabilities.prompt_capabilities.embedded_context is True
        assert init.agent_capabilities.session_capabilities.list is not None
        assert init.agent_info.name == "eca-notebook"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "code"
        assert [m.id for m in session.modes.available_modes] == ["code", "plan"]  # the primary agents
        options = {o.id: o for o in session.config_options}
        assert options["mode"].current_value == "code" and options["model"].current_value == DEFAULT_MODEL
        await client.wait(lambda c: c.of("available_commands_update"))
    commands = {c["name"] for c in client.of("available_commands_update")[0]["availableCommands"]}
    assert {"doctor", "compact", "costs"} <= commands
    new_answer = strict.index(lambda m: "result" in m and "sessionId" in m["result"])[0]
    announced = strict.index(lambda m: m.get("method") == "session/update")[0]
    assert new_answer < announced  # the client knows the session before it hears about it
    raw = strict.incoming[new_answer]["result"]
    assert raw["models"]["currentModelId"] == DEFAULT_MODEL  # the legacy selector, for session/set_model clients


async def test_prompt_streams_thoughts_and_text_then_answers_end_turn(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([Reasoning("Let me "), Reasoning("think."), Text("Hel"), Text("lo "), Text("world."),
                       Usage(30, 7)]))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Say hello")])
    assert response.stop_reason == "end_turn"
    assert client.text("agent_thought_chunk") == "Let me think."
    assert [u["content"]["text"] for u in client.of("agent_message_chunk")] == ["Hel", "lo ", "world."]
    assert client.of("user_message_chunk") == []  # the client shows its own prompt: no echo while live
    assert client.of("session_info_update")[0]["title"] == "Say hello"
    usage = client.of("usage_update")
    assert usage and usage[-1]["used"] == 37 and usage[-1]["size"] > 0
    # the answer comes after every update of the turn
    answer = strict.index(lambda m: m.get("result", {}).get("stopReason") if isinstance(m.get("result"), dict)
                          else False)[0]
    updates = strict.index(lambda m: m.get("method") == "session/update"
                           and m["params"]["update"]["sessionUpdate"] != "available_commands_update")
    assert updates and max(updates) < answer
    body = completion_bodies(llm)[0]
    assert body["model"] == "gpt-4.1"


async def test_update_plan_becomes_a_plan_update(spawn_agent, llm, workspace, strict):
    entries = [{"content": "Read the code", "status": "completed", "priority": "high"},
               {"content": "Fix the bug", "status": "in_progress", "files": ["src/bug.py"]}]
    llm.enqueue(Reply([ToolCall("p1", "eca__update_plan", json.dumps({"entries": entries}))]), Reply.text("On it."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("Fix the bug")])
    assert response.stop_reason == "end_turn"
    plans = client.of("plan")
    assert len(plans) == 1 and plans[-1]["entries"] == [
        {"content": "Read the code", "status": "completed", "priority": "high"},
        {"content": "Fix the bug (src/bug.py)", "status": "in_progress", "priority": "medium"},
    ]
    assert not client.permissions  # changes nothing: never asks


async def test_tool_call_with_permission_granted_shows_diff_and_applies(spawn_agent, llm, workspace, strict):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(Reply([Text("Fixing."), call("edit_file", {"path": "hello.py", "original_content": "print('hi')",
                                                           "new_content": "print('hello')"})]),
                Reply.text("Done."))
    client = Client(answer="allow_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("greet properly")])
    assert response.stop_reason == "end_turn"
    assert target.read_text() == "print('hello')\n"
    [started] = client.of("tool_call")
    assert started["kind"] == "edit" and started["status"] == "pending"
    assert started["title"] == 'Editing file "hello.py"'
    assert started["locations"] == [{"path": str(target)}]
    assert started["content"] == [{"type": "diff", "path": str(target), "oldText": "print('hi')",
                                   "newText": "print('hello')"}]
    [asked] = client.permissions
    assert asked["toolCall"]["toolCallId"] == started["toolCallId"]
    assert {o["kind"] for o in asked["options"]} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    statuses = [u["status"] for u in client.of("tool_call_update")]
    assert statuses == ["in_progress", "completed"]
    done = client.of("tool_call_update")[-1]
    assert any(c["type"] == "diff" for c in done["content"])
    assert "Replaced 1 occurrence" in json.dumps(done["content"])
    assert client.text().endswith("Done.")
    assert "Replaced 1 occurrence" in sent_tool_results(completion_bodies(llm)[1])[0]


async def test_tool_call_with_permission_denied_changes_nothing(spawn_agent, llm, workspace, strict):
    target = workspace / "hello.py"
    target.write_text("print('hi')\n")
    llm.enqueue(Reply([call("write_file", {"path": "hello.py", "content": "print('bye')\n"})]),
                Reply.text("Understood, leaving it."))
    client = Client(answer="reject_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("rewrite it")])
    assert response.stop_reason == "end_turn"
    assert target.read_text() == "print('hi')\n"
    [started] = client.of("tool_call")
    # write_file: the whole old and new texts (the old one rebuilt from the diff, without reading the file)
    assert started["content"] == [{"type": "diff", "path": str(target), "oldText": "print('hi')\n",
                                   "newText": "print('bye')\n"}]
    [final] = client.of("tool_call_update")
    assert final["status"] == "failed"
    assert "rejected" in sent_tool_results(completion_bodies(llm)[1])[0].lower()


async def test_reject_always_stops_asking_for_that_tool(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([call("write_file", {"path": "a.txt", "content": "a"})]), Reply.text("ok"),
                Reply([call("write_file", {"path": "b.txt", "content": "b"})]), Reply.text("ok again"))
    client = Client(answer="reject_always")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("write a")])
        await conn.prompt(session_id=session_id, prompt=[text_block("write b")])
    assert len(client.permissions) == 1
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    assert [u["status"] for u in client.of("tool_call_update")] == ["failed", "failed"]
    # the second call got a fresh ACP id although the model reused "call_1"
    ids = [u["toolCallId"] for u in client.of("tool_call")]
    assert len(set(ids)) == 2


async def test_cancel_while_streaming_answers_cancelled(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([Text("Working on it"), Stall(30)]), Reply.text("Next answer."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        prompt = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("long task")]))
        await client.wait(lambda c: c.text() == "Working on it")
        await conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(prompt, 20)
        assert response.stop_reason == "cancelled"
        # the session is usable again, and the stopped answer stayed in its history
        again = await conn.prompt(session_id=session_id, prompt=[text_block("next")])
        assert again.stop_reason == "end_turn"
    assert client.text().endswith("Next answer.")
    history = json.dumps(completion_bodies(llm)[1]["input"])
    assert "Working on it" in history


async def test_cancel_while_waiting_for_permission(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([call("shell_command", {"command": "echo hi > out.txt"})]))
    asked = asyncio.Event()
    release = asyncio.Event()

    async def wait_for_cancel(client: Client) -> str:
        asked.set()
        await release.wait()
        return "cancelled"  # what the spec asks of a client that sent session/cancel

    client = Client(answer=wait_for_cancel)
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        prompt = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("run it")]))
        await asyncio.wait_for(asked.wait(), 20)
        await conn.cancel(session_id=session_id)
        release.set()
        response = await asyncio.wait_for(prompt, 20)
    assert response.stop_reason == "cancelled"
    assert not (workspace / "out.txt").exists()
    [started] = client.of("tool_call")
    assert started["kind"] == "execute"
    assert client.of("tool_call_update")[-1]["status"] == "failed"


async def test_load_replays_a_saved_session_in_a_new_process(spawn_agent, llm, workspace, strict):
    (workspace / "notes.txt").write_text("remember me\n")
    llm.enqueue(Reply([Text("Reading."), call("read_file", {"path": "notes.txt"})]),
                Reply.text("It says: remember me."))
    first = Client()
    async with spawn_agent(first) as (conn, _):
        session_id = await start(conn, first, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("What do the notes say?")])
        listed = await conn.list_sessions(cwd=str(workspace))
    assert [s.session_id for s in listed.sessions] == [session_id]
    assert listed.sessions[0].title == "What do the notes say?" and listed.sessions[0].cwd == str(workspace)

    llm.enqueue(Reply.text("Still: remember me."))
    second = Client()
    async with spawn_agent(second) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=second.capabilities())
        loaded = await conn.load_session(session_id=session_id, cwd=str(workspace), mcp_servers=[])
        replayed = list(second.updates)
        kinds = [u["sessionUpdate"] for u in replayed]
        assert loaded.modes.current_mode_id == "code"
        assert kinds[0] == "user_message_chunk"
        assert second.text("user_message_chunk").strip() == "What do the notes say?"
        assert "Reading." in second.text() and "It says: remember me." in second.text()
        [tool] = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
        assert tool["kind"] == "read" and tool["title"] == 'Reading file "notes.txt"'
        assert [u["status"] for u in replayed if u["sessionUpdate"] == "tool_call_update"][-1] == "completed"
        response = await conn.prompt(session_id=session_id, prompt=[text_block("And now?")])
    assert response.stop_reason == "end_turn"
    history = json.dumps(completion_bodies(llm)[-1]["input"])
    assert "What do the notes say?" in history and "It says: remember me." in history
    # load answered after the replay
    answer = strict.index(lambda m: "result" in m and isinstance(m["result"], dict) and "modes" in m["result"]
                          and "sessionId" not in m["result"])[-1]
    replay = strict.index(lambda m: m.get("method") == "session/update"
                          and m["params"]["update"]["sessionUpdate"] == "user_message_chunk")
    assert replay and max(replay) < answer


async def test_fs_delegation_reads_the_editor_buffer_and_writes_through_the_client(spawn_agent, llm, workspace,
                                                                                   strict):
    target = workspace / "app.py"
    target.write_text("value = 'on disk'\n")
    llm.enqueue(Reply([call("read_file", {"path": "app.py"})]),
                Reply([call("edit_file", {"path": "app.py", "original_content": "unsaved",
                                          "new_content": "saved"}, "call_2")]),
                Reply.text("Done."))
    client = Client(files={str(target): "value = 'unsaved'\n"})
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        response = await conn.prompt(session_id=session_id, prompt=[text_block("look at app.py")])
    assert response.stop_reason == "end_turn"
    bodies = completion_bodies(llm)
    assert sent_tool_results(bodies[1]) == ["value = 'unsaved'"]  # the model saw the editor's buffer
    assert client.writes == [(str(target), "value = 'saved'\n")]  # the write went to the editor
    assert target.read_text() == "value = 'on disk'\n"  # and not behind its back to the disk
    assert str(target) in client.reads
    edit = [u for u in client.of("tool_call") if u["kind"] == "edit"][0]
    assert edit["content"][0]["oldText"] == "unsaved"


async def test_modes_and_models(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply.text("A plan."), Reply.text("From mini."), Reply.text("From 4o."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        assert await conn.set_session_mode(session_id=session_id, mode_id="plan") is not None
        await conn.prompt(session_id=session_id, prompt=[text_block("plan it")])
        changed = await conn.set_config_option(config_id="model", session_id=session_id, value="openai/gpt-4.1-mini")
        assert {o.id: o.current_value for o in changed.config_options} == {"mode": "plan",
                                                                           "model": "openai/gpt-4.1-mini"}
        await conn.prompt(session_id=session_id, prompt=[text_block("again")])
        await conn._conn.send_request("session/set_model", {"sessionId": session_id, "modelId": "openai/gpt-4o"})
        await conn.prompt(session_id=session_id, prompt=[text_block("once more")])
        with pytest.raises(RequestError) as bad_mode:
            await conn.set_session_mode(session_id=session_id, mode_id="yolo")
        with pytest.raises(RequestError) as bad_model:
            await conn.set_config_option(config_id="model", session_id=session_id, value="nope/nothing")
    assert bad_mode.value.code == -32602 and "yolo" in str(bad_mode.value)
    assert bad_model.value.code == -32602
    bodies = completion_bodies(llm)
    assert "eca__write_file" not in sent_tools(bodies[0]) and "eca__read_file" in sent_tools(bodies[0])
    assert "plan mode" in bodies[0]["instructions"]
    assert [b["model"] for b in bodies] == ["gpt-4.1", "gpt-4.1-mini", "gpt-4o"]
    assert client.of("config_option_update")


async def test_resources_become_contexts(spawn_agent, llm, workspace, strict):
    (workspace / "linked.md").write_text("LINKED BODY\n")
    llm.enqueue(Reply.text("Seen."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        link = ResourceContentBlock(type="resource_link", uri=(workspace / "linked.md").as_uri(), name="linked.md")
        embedded = EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
            uri="file:///elsewhere/buffer.py", text="EMBEDDED BODY"))
        await conn.prompt(session_id=session_id, prompt=[text_block("compare"), link, text_block("with"), embedded])
        listed = await conn.list_sessions()
    user = json.dumps(completion_bodies(llm)[0]["input"])
    assert "LINKED BODY" in user and "EMBEDDED BODY" in user and "compare" in user
    assert listed.sessions[0].title.startswith("compare")


def _png(color: str = "red") -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(out, "PNG")
    return out.getvalue()


async def test_an_image_block_reaches_the_model_as_an_image(spawn_agent, llm, workspace, strict):
    import base64

    data = base64.b64encode(_png()).decode()
    llm.enqueue(Reply.text("A red rectangle."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        assert init.agent_capabilities.prompt_capabilities.image is True
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=[
            text_block("what is this?"), ImageContentBlock(type="image", data=data, mime_type="image/png")])
    assert answer.stop_reason == "end_turn"
    [body] = completion_bodies(llm)
    parts = [part for item in body["input"] if isinstance(item.get("content"), list) for part in item["content"]]
    images = [part for part in parts if part.get("type") == "input_image"]
    assert len(images) == 1 and images[0]["image_url"].startswith("data:image/png;base64,")
    assert "what is this?" in json.dumps(body["input"])
    assert client.text() == "A red rectangle."


async def test_errors_follow_the_spec(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([Text("slow"), Stall(30)]))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        with pytest.raises(RequestError) as early:
            await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert early.value.code == -32600
        session_id = await start(conn, client, workspace)
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="4b1e5a0e-0000-4000-8000-000000000000", prompt=[text_block("hi")])
        assert unknown.value.code == -31900
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602 and "absolute" in str(relative.value)
        with pytest.raises(RequestError) as audio:
            await conn.prompt(session_id=session_id, prompt=[AudioContentBlock(type="audio", data="AAAA",
                                                                               mime_type="audio/wav")])
        assert audio.value.code == -32602
        with pytest.raises(RequestError) as huge:
            await conn.prompt(session_id=session_id, prompt=[text_block("x" * (1024 * 1024 + 10))])
        assert huge.value.code == -32602 and "too large" in str(huge.value)
        with pytest.raises(RequestError) as missing:
            await conn.load_session(session_id="4b1e5a0e-0000-4000-8000-000000000001", cwd=str(workspace),
                                    mcp_servers=[])
        assert missing.value.code == -31900
        running = asyncio.create_task(conn.prompt(session_id=session_id, prompt=[text_block("first")]))
        await client.wait(lambda c: c.text() == "slow")
        with pytest.raises(RequestError) as locked:
            await conn.prompt(session_id=session_id, prompt=[text_block("second")])
        assert locked.value.code == -31902
        await conn.cancel(session_id=session_id)
        assert (await asyncio.wait_for(running, 20)).stop_reason == "cancelled"
        with pytest.raises(RequestError) as bad:
            await conn._conn.send_request("session/prompt", {"sessionId": session_id})
        assert bad.value.code == -32602 and "prompt" in json.dumps(bad.value.data)


async def test_mcp_servers_from_session_new_are_connected(spawn_agent, llm, workspace, strict):
    pytest.importorskip("mcp")
    pytest.importorskip("eca_notebook.mcp")
    from acp.schema import EnvVariable, McpServerStdio

    llm.enqueue(Reply([ToolCall("call_1", "shout__shout", json.dumps({"text": "hi"}))]),
                Reply.text("Shouted."))
    client = Client(answer="allow_once")
    server = McpServerStdio(name="shout", command=sys.executable, args=[str(SHOUT_SERVER)],
                            env=[EnvVariable(name="SHOUT_PREFIX", value="acp:")])
    async with spawn_agent(client) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        assert init.agent_capabilities.mcp_capabilities.http is True
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("shout hi")])
    assert response.stop_reason == "end_turn"
    bodies = completion_bodies(llm)
    assert "shout__shout" in sent_tools(bodies[0])
    assert sent_tool_results(bodies[1]) == ["acp:HI"]
    assert client.permissions and client.permissions[0]["toolCall"]["title"]


async def test_sessions_are_separate_chats_and_workspaces_separate_engines(spawn_agent, llm, workspace, tmp_path,
                                                                           strict):
    other = tmp_path / "other"
    other.mkdir()
    llm.enqueue(Reply.text("A1"), Reply.text("B1"), Reply.text("C1"))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        a = await start(conn, client, workspace)
        b = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        c = (await conn.new_session(cwd=str(other), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=b, mode_id="plan")
        await conn.prompt(session_id=a, prompt=[text_block("first in a")])
        await conn.prompt(session_id=b, prompt=[text_block("first in b")])
        await conn.prompt(session_id=c, prompt=[text_block("first in c")])
        here = await conn.list_sessions(cwd=str(workspace))
        there = await conn.list_sessions(cwd=str(other))
        everywhere = await conn.list_sessions()
    assert {s.session_id for s in here.sessions} == {a, b}
    assert [s.session_id for s in there.sessions] == [c]
    assert {s.session_id for s in everywhere.sessions} == {a, b, c}
    bodies = completion_bodies(llm)
    assert "first in a" not in json.dumps(bodies[1]["input"])  # b's history is its own
    assert "plan mode" not in bodies[0]["instructions"] and "plan mode" in bodies[1]["instructions"]
    assert str(other) in bodies[2]["instructions"] and str(workspace) not in bodies[2]["instructions"]


async def test_title_skips_the_hosts_guidance(spawn_agent, llm, workspace):
    """Jupyter AI prepends its notebook guidance to a session's first prompt; the chat is titled from the user's
    words, in both forms a host may send them (one text block, or guidance and words as two)."""
    from ..test_text import JUPYTER_AI_GUIDANCE

    llm.enqueue(Reply.text("ok"), Reply.text("ok"))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        first = await start(conn, client, workspace)
        await conn.prompt(session_id=first, prompt=[text_block(JUPYTER_AI_GUIDANCE + "\n\nPlot the monthly sales")])
        second = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=second, prompt=[text_block(JUPYTER_AI_GUIDANCE), text_block("Count the rows")])
        await client.wait(lambda c: len(c.of("session_info_update")) >= 2)
        titles = {s.session_id: s.title for s in (await conn.list_sessions()).sessions}
    assert titles == {first: "Plot the monthly sales", second: "Count the rows"}
    sent = [b["input"][-1]["content"] for b in completion_bodies(llm)]
    # the model still reads the host's guidance
    assert all(JUPYTER_AI_GUIDANCE in json.dumps(s, ensure_ascii=False) for s in sent)


async def test_modes_are_the_primary_agents(spawn_agent, llm, workspace, strict):
    agents = workspace / ".eca" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nmode: primary\ndescription: Reviews the diff\n---\nREVIEWER-PROMPT\n")
    (agents / "helper.md").write_text("---\nmode: subagent\ndescription: Helps\n---\nHELPER\n")
    llm.enqueue(Reply.text("Reviewed."))
    client = Client()
    async with spawn_agent(client) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=client.capabilities())
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        modes = {m.id: m.description for m in session.modes.available_modes}
        assert list(modes) == ["code", "plan", "reviewer"]  # a subagent is not a mode
        assert modes["reviewer"] == "Reviews the diff"
        await conn.set_session_mode(session_id=session.session_id, mode_id="reviewer")
        await conn.prompt(session_id=session.session_id, prompt=[text_block("review")])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")  # the deprecated id of code
    assert completion_bodies(llm)[0]["instructions"].startswith("REVIEWER-PROMPT")
