"""McpManager inside a real engine, driven over ECA: statuses, tools in a chat with approval, prompts as commands,
resources as contexts, stop/start, tool list changes, and servers that fail, crash or hang."""

from __future__ import annotations

import json
import re
import sys

from eca_notebook.engine.config import McpServerConfig
from eca_notebook.testing.llm_server import Reply, ToolCall
from eca_notebook.tools.base import provider_tool_name

from .conftest import MALFORMED, stdio, tool_names, tool_results, user_texts, wait_gone


def call(name: str, args: dict | None = None, call_id: str = "call_1") -> Reply:
    return Reply([ToolCall(call_id, name, json.dumps(args or {}), chunks=2)])


async def test_statuses_on_start(eca):
    h = await eca({
        "demo": stdio(),
        "off": stdio(disabled=True),
        "broken": McpServerConfig(command="/no/such/mcp-server"),
        "dies": McpServerConfig(command=sys.executable, args=[
            "-c", "import sys; sys.stderr.write('boom: DEMO_TOKEN is not set\\n'); sys.exit(2)"]),
    })
    demo = h.statuses("demo")
    assert [s["status"] for s in demo] == ["starting", "running"]
    running = demo[-1]
    assert running["command"] == sys.executable and running["args"][-1].endswith("demo_server.py")
    assert {"echo", "add", "crash", "hang", "where"} <= {t["name"] for t in running["tools"]}
    echo = next(t for t in running["tools"] if t["name"] == "echo")
    assert echo["description"] == "Echo the text back."
    assert echo["parameters"]["properties"]["text"]["type"] == "string"

    assert [s["status"] for s in h.statuses("off")] == ["disabled"]
    assert "tools" not in h.statuses("off")[0]
    assert h.statuses("broken")[-1]["status"] == "failed"
    assert h.statuses("dies")[-1]["status"] == "failed"
    errors = [m["message"] for m in h.messages("error")]
    assert any("'broken'" in m and "command not found: /no/such/mcp-server" in m for m in errors)
    # the reason includes what the server said on stderr before it died
    assert any("'dies'" in m and "boom: DEMO_TOKEN is not set" in m for m in errors)
    # start-up is bracketed by $/progress for each started server
    progress = [(p["type"], p["taskId"]) for m, p in h.log if m == "$/progress" and p["taskId"].startswith("mcp-")]
    assert ("start", "mcp-demo") in progress and ("finish", "mcp-demo") in progress
    assert h.manager.statuses() == [h.manager.status(n) for n in ("demo", "off", "broken", "dies")]
    assert h.manager.error("dies") is not None and h.manager.error("demo") is None


async def test_tool_call_in_a_chat_with_approval(eca, llm):
    h = await eca({"demo": stdio()})
    llm.enqueue(call("demo__echo", {"text": "hi there"}), Reply.text("done"))
    chat = await h.prompt("say hi through the demo server")
    run = await h.approve_next(chat, "echo")
    assert run["manualApproval"] is True  # MCP tools ask by default
    assert run["origin"] == "mcp" and run["server"] == "demo"
    assert run["summary"] == "Calling demo tool echo"
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    assert called["error"] is False and called["origin"] == "mcp" and called["server"] == "demo"
    assert called["outputs"][0]["text"] == "echo: hi there"
    assert h.contents(chat, "toolCallRunning")[0]["server"] == "demo"
    first, second = llm.requests[-2:]
    assert "demo__echo" in tool_names(first.body) and "eca__read_file" in tool_names(first.body)
    assert tool_results(second.body) == ["echo: hi there"]
    assert {"type": "text", "text": "done"} in h.contents(chat)


async def test_approval_rules_select_by_server_and_by_tool(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}, "deny": {"demo__where": {}}})
    llm.enqueue(call("demo__add", {"a": 2, "b": 40}), Reply.text("42"))
    chat = await h.prompt("add")
    await h.idle(chat)
    run = h.contents(chat, "toolCallRun")[0]
    assert run["manualApproval"] is False  # allowed by the server selector
    assert h.contents(chat, "toolCalled")[0]["outputs"][0]["text"] == "42"
    # a deny rule without matchers hides the tool from the model, and the status says it is disabled
    assert "demo__where" not in tool_names(llm.requests[-1].body)
    where = next(t for t in h.manager.status("demo").tools if t.name == "where")
    assert where.disabled is True


async def test_tool_names_are_made_safe_for_the_model(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo__text.upper": {}}})  # approvals: the real name
    assert "text.upper" in {t.name for t in h.manager.status("demo").tools}  # users see the server's name
    offered = provider_tool_name("demo", "text.upper")
    assert re.fullmatch(r"demo_[0-9a-f]{8}__text_upper", offered)
    llm.enqueue(call(offered, {"text": "shout"}), Reply.text("done"))
    chat = await h.prompt("shout")
    await h.idle(chat)
    assert offered in tool_names(llm.requests[-2].body)
    called = h.contents(chat, "toolCalled")[0]
    assert called["name"] == "text.upper" and called["outputs"][0]["text"] == "SHOUT"  # called by its real name


async def test_tool_errors_come_back_as_tool_errors(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}})
    llm.enqueue(call("demo__fail", {"message": "the disk is full"}), Reply.text("sorry"))
    chat = await h.prompt("fail please")
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    assert called["error"] is True and "the disk is full" in called["outputs"][0]["text"]
    assert "the disk is full" in tool_results(llm.requests[-1].body)[0]
    assert h.manager.status("demo").status == "running"


async def test_non_text_content_is_described(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}})
    llm.enqueue(call("demo__picture"), Reply.text("nice"))
    chat = await h.prompt("draw")
    await h.idle(chat)
    text = h.contents(chat, "toolCalled")[0]["outputs"][0]["text"]
    assert text.startswith("a picture:\n[image: image/png, 12 KB]")
    # its bytes are no PNG (a header and zeros): not passed on as an image, and the note says so
    assert "\n[image not passed on: image 1 " in text


async def test_stdio_server_runs_in_the_workspace_with_its_env(eca, workspace):
    h = await eca({"demo": stdio(env={"DEMO_TOKEN": "tok-123"})})
    tool = next(t for t in h.manager.tools() if t.name == "where")
    result = await tool.run(tool.prepare({}, h.engine.tool_context()), h.engine.tool_context())
    assert f"cwd={workspace}" in result.output
    assert "token=tok-123" in result.output
    assert "path_set=True" in result.output  # env is merged over the server's environment, not a replacement


async def test_prompt_as_a_command(eca, llm):
    h = await eca({"demo": stdio()})
    listed = await h.client.request("chat/queryCommands", {"query": "rev"})
    review = next(c for c in listed["commands"] if c["name"] == "review")
    assert review["type"] == "mcpPrompt"  # the reference name (was "mcp-prompt")
    assert review["description"] == "Ask for a review of some code."
    assert review["arguments"] == [{"name": "code", "required": True}, {"name": "language", "required": False}]

    llm.enqueue(Reply.text("looks fine"))
    chat = await h.prompt("/review 'x = 1' rust")
    await h.idle(chat)
    assert "Please review this rust code:\nx = 1" in user_texts(llm.requests[-1].body)[-1]

    sent = len(llm.requests)
    chat = await h.prompt("/review")
    await h.until(lambda m, p: m == "chat/contentReceived" and p["chatId"] == chat
                  and p["content"] == {"type": "progress", "state": "finished", "text": ""})
    texts = [c["text"] for c in h.contents(chat, "text")]
    assert any("missing required argument code" in t and "Usage: /review <code> [language]" in t for t in texts)
    assert len(llm.requests) == sent  # nothing went to the model


async def test_resource_as_a_context(eca, llm):
    h = await eca({"demo": stdio()})
    found = await h.client.request("chat/queryContext", {"query": "shopping", "contexts": []})
    resource = next(c for c in found["contexts"] if c["type"] == "mcpResource")
    assert resource == {"type": "mcpResource", "uri": "notes://shopping", "name": "shopping-list",
                        "description": "What to buy", "mimeType": "text/plain", "server": "demo"}
    none = await h.client.request("chat/queryContext", {"query": "zzzqqq", "contexts": []})
    assert not [c for c in none["contexts"] if c["type"] == "mcpResource"]

    llm.enqueue(Reply.text("milk it is"))
    chat = await h.prompt("what should I buy?", contexts=[resource])
    await h.idle(chat)
    assert "Remember the milk" in user_texts(llm.requests[-1].body)[-1]


async def test_stop_and_start(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}})
    where = next(t for t in h.manager.tools() if t.name == "where")
    ctx = h.engine.tool_context()
    pid = int(re.search(r"pid=(\d+)", (await where.run(where.prepare({}, ctx), ctx)).output).group(1))
    natives = len([p for m, p in h.log if m == "tool/serverUpdated" and p["type"] == "native"])
    count = len(h.statuses("demo"))

    assert await h.manager.stop_server("demo") is True
    stopped = await h.settled("demo", after=count)
    assert stopped["status"] == "stopped" and stopped["command"] == sys.executable and "tools" not in stopped
    assert await wait_gone(pid)
    assert not [k for k in h.engine.all_tools() if k.startswith("demo__")]
    assert not [c for c in h.engine.commands() if c.type == "mcp-prompt"]
    # the engine re-announced its tool list
    await h.until(lambda m, p: len([p for m, p in h.log if m == "tool/serverUpdated" and p["type"] == "native"])
                  > natives)
    # a turn that started with the tool and calls it after the stop gets a clear error
    result = await where.run(where.prepare({}, ctx), ctx)
    assert result.error and "not running (status: stopped)" in result.output
    llm.enqueue(Reply.text("ok"))
    chat = await h.prompt("anything")
    await h.idle(chat)
    assert not [n for n in tool_names(llm.requests[-1].body) if n.startswith("demo__")]

    count = len(h.statuses("demo"))
    assert await h.manager.start_server("demo") is True
    assert (await h.settled("demo", after=count))["status"] == "running"
    assert [s["status"] for s in h.statuses("demo")[count:]] == ["starting", "running"]
    assert "demo__echo" in h.engine.all_tools()
    llm.enqueue(call("demo__echo", {"text": "back"}), Reply.text("ok"))
    chat = await h.prompt("echo")
    await h.idle(chat)
    assert h.contents(chat, "toolCalled")[0]["outputs"][0]["text"] == "echo: back"

    assert await h.manager.stop_server("nope") is False
    await h.until(lambda m, p: m == "$/showMessage" and "Unknown MCP server 'nope'. Configured: demo." in p["message"])


async def test_tool_list_changes_are_followed(eca):
    h = await eca({"demo": stdio()})
    count = len(h.statuses("demo"))
    grow = next(t for t in h.manager.tools() if t.name == "grow")
    ctx = h.engine.tool_context()
    assert (await grow.run(grow.prepare({}, ctx), ctx)).output == "added"
    await h.until(lambda m, p: any("extra" in {t["name"] for t in s.get("tools") or []}
                                   for s in h.statuses("demo")[count:]))
    assert "demo__extra" in h.engine.all_tools()
    extra = h.engine.all_tools()["demo__extra"]
    assert (await extra.run(extra.prepare({}, ctx), ctx)).output == "extra!"


async def test_a_crash_mid_call_fails_that_server_only(eca, llm):
    h = await eca({"demo": stdio(), "other": stdio()}, approval={"allow": {"demo": {}, "other": {}}})
    llm.enqueue(call("demo__crash"), Reply.text("the server crashed"))
    chat = await h.prompt("crash it")
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    assert called["error"] is True
    assert "MCP server 'demo' closed the connection during the call to tool crash" in called["outputs"][0]["text"]
    assert {"type": "text", "text": "the server crashed"} in h.contents(chat)  # the chat went on
    status = await h.settled("demo", after=2)
    assert status["status"] == "failed" and "tools" not in status
    assert any("'demo' failed" in m["message"] and "crashing on purpose" in m["message"] for m in h.messages("error"))
    assert h.manager.status("other").status == "running"

    # the chat continues with the other server; the crashed one's tools are gone
    llm.enqueue(call("other__echo", {"text": "still here"}), Reply.text("ok"))
    await h.prompt("again", chatId=chat)
    await h.until(lambda m, p: len(h.contents(chat, "toolCalled")) == 2)
    await h.idle(chat)
    assert h.contents(chat, "toolCalled")[1]["outputs"][0]["text"] == "echo: still here"
    assert not [n for n in tool_names(llm.requests[-1].body) if n.startswith("demo__")]

    # and it can be started again
    assert await h.manager.start_server("demo") is True


async def test_a_hanging_call_times_out(eca, llm):
    h = await eca({"demo": stdio()}, approval={"allow": {"demo": {}}})
    h.manager.timeout = 1.5  # after start-up, which a busy machine may make slow
    llm.enqueue(call("demo__hang"), Reply.text("it hung"))
    chat = await h.prompt("hang")
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    assert called["error"] is True
    assert "MCP server 'demo' did not answer the call to tool hang within 1.5 s" in called["outputs"][0]["text"]
    assert {"type": "text", "text": "it hung"} in h.contents(chat)
    # a slow call is not a dead server
    assert h.manager.status("demo").status == "running"
    llm.enqueue(call("demo__echo", {"text": "alive"}), Reply.text("ok"))
    await h.prompt("echo", chatId=chat)
    await h.until(lambda m, p: len(h.contents(chat, "toolCalled")) == 2)
    assert h.contents(chat, "toolCalled")[1]["outputs"][0]["text"] == "echo: alive"
    await h.idle(chat)


async def test_a_malformed_result_is_a_tool_error(eca, llm):
    h = await eca({"bad": stdio(script=MALFORMED)}, approval={"allow": {"bad": {}}})
    assert {t.name for t in h.manager.tools()} == {"bad", "good"}
    llm.enqueue(call("bad__bad"), Reply.text("hm"))
    chat = await h.prompt("go")
    await h.idle(chat)
    called = h.contents(chat, "toolCalled")[0]
    assert called["error"] is True and "MCP server 'bad': the call to tool bad failed" in called["outputs"][0]["text"]
    good = next(t for t in h.manager.tools() if t.name == "good")
    ctx = h.engine.tool_context()
    assert (await good.run(good.prepare({}, ctx), ctx)).output == "fine"
    assert h.manager.status("bad").status == "running"


async def test_servers_stop_with_the_engine(eca):
    h = await eca({"demo": stdio()})
    where = next(t for t in h.manager.tools() if t.name == "where")
    ctx = h.engine.tool_context()
    pid = int(re.search(r"pid=(\d+)", (await where.run(where.prepare({}, ctx), ctx)).output).group(1))
    await h.client.request("shutdown", None)
    assert await wait_gone(pid)
