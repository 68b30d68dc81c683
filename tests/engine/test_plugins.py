"""The plug-in seam: tools, commands and contexts contributed from outside the engine core."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eca_notebook.plugins import BasePlugin, Command, CommandArgument
from eca_notebook.testing.llm_server import Reply, ToolCall
from eca_notebook.tools.base import Prepared, ToolContext, ToolResult

from ..serving.test_server_connection import Harness


class EchoTool:
    name = "echo"
    description = "Echo the text back."
    parameters = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    mutates = False
    default_approval = "ask"
    server = "demo"
    origin = "mcp"

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:  # async prepare is supported
        if not isinstance(args.get("text"), str):
            return Prepared(args=args, summary="", error="echo: 'text' must be a string")
        return Prepared(args=args, summary=f"Echoing {args['text']!r}")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        self.ran.append(prepared.args["text"])
        return ToolResult(output=prepared.args["text"].upper())


class DemoPlugin(BasePlugin):
    name = "demo"

    def __init__(self) -> None:
        self.tool = EchoTool()
        self.started = False

    async def start(self) -> None:
        self.started = True

    def tools(self):
        return [self.tool]

    def commands(self):
        return [Command(name="shout", description="Shout it", type="mcp-prompt", server="demo",
                        arguments=[CommandArgument(name="what", required=True)])]

    async def render_command(self, command: Command, args_text: str) -> str:
        return f"SHOUT: {args_text}"

    async def query_contexts(self, query: str, contexts=()) -> list[dict[str, Any]]:
        return [{"type": "mcpResource", "uri": "demo://notes", "name": "notes", "description": "Demo notes",
                 "mimeType": "text/plain", "server": "demo"}] if "not" in query else []

    async def read_context(self, context: Any) -> str | None:
        uri = context["uri"] if isinstance(context, dict) else getattr(context, "uri", None)
        return "the notes say 42" if uri == "demo://notes" else None


async def test_plugin_tool_runs_with_its_own_identity_and_approval(connected: Harness, llm):  # noqa: F811
    plugin = DemoPlugin()
    engine = connected.engine
    engine.add_plugin(plugin)
    llm.enqueue(Reply([ToolCall("c1", "demo__echo", json.dumps({"text": "hi"}))]), Reply.text("done"))
    chat_id = (await connected.client.request("chat/prompt", {"message": "echo", "model": "fake/m1"}))["chatId"]
    await connected.until(lambda m, p: m == "chat/contentReceived" and p["content"]["type"] == "toolCallRun")
    run = next(c for c in connected.contents(chat_id) if c["type"] == "toolCallRun")
    assert (run["server"], run["origin"], run["name"], run["manualApproval"]) == ("demo", "mcp", "echo", True)
    assert run["summary"] == "Echoing 'hi'"
    await connected.client.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "c1"})
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"})
    assert plugin.tool.ran == ["hi"] and plugin.started
    called = next(c for c in connected.contents(chat_id) if c["type"] == "toolCalled")
    assert called["outputs"][0]["text"] == "HI" and called["server"] == "demo"
    offered = {t["function"]["name"] for t in llm.requests[-2].body["tools"]}
    assert "demo__echo" in offered and "eca__read_file" in offered


async def test_every_content_of_an_mcp_call_names_its_origin_and_server(connected: Harness, llm):  # noqa: F811
    """The prepare chunks streamed while the model writes the arguments say ``mcp`` and the server too, like the
    rest of the call (one writer per call)."""
    engine = connected.engine
    engine.add_plugin(DemoPlugin())
    llm.enqueue(Reply([ToolCall("c1", "demo__echo", json.dumps({"text": "hi"}))]), Reply.text("done"))
    chat_id = (await connected.client.request("chat/prompt", {"message": "echo", "model": "fake/m1"}))["chatId"]
    await connected.until(lambda m, p: m == "chat/contentReceived" and p["content"]["type"] == "toolCallRun")
    await connected.client.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "c1"})
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"})
    calls = [c for c in connected.contents(chat_id) if c["type"].startswith("toolCall")]
    assert "toolCallPrepare" in {c["type"] for c in calls} and "toolCalled" in {c["type"] for c in calls}
    assert {(c["origin"], c["server"], c["name"], c["id"]) for c in calls} == {("mcp", "demo", "echo", "c1")}


async def test_plugin_commands_and_contexts(connected: Harness, llm):  # noqa: F811
    engine = connected.engine
    engine.add_plugin(DemoPlugin())
    commands = (await connected.client.request("chat/queryCommands", {"query": "sho"}))["commands"]
    assert commands[0]["name"] == "shout" and commands[0]["type"] == "mcpPrompt"
    contexts = (await connected.client.request("chat/queryContext", {"query": "not", "contexts": []}))["contexts"]
    assert {"type": "mcpResource", "uri": "demo://notes", "name": "notes", "description": "Demo notes",
            "mimeType": "text/plain", "server": "demo"} in contexts

    llm.enqueue(Reply.text("ok"))
    chat_id = (await connected.client.request("chat/prompt", {
        "message": "/shout hello", "model": "fake/m1", "contexts": [contexts[-1]]}))["chatId"]
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"})
    sent = llm.requests[-1].body["messages"][-1]["content"]
    assert sent.startswith("SHOUT: hello") and "the notes say 42" in sent


async def test_a_plugin_command_that_is_not_text_is_left_out_of_the_list(connected: Harness):  # noqa: F811
    """A plug-in's (or an MCP server's) command whose fields are not what they claim costs only that command: the
    ``/`` list still answers with the others."""

    class Broken(DemoPlugin):
        def commands(self):
            return [Command(name="shh", description=7, type="mcp-prompt", server="demo"),  # type: ignore[arg-type]
                    *super().commands()]

    connected.engine.add_plugin(Broken())
    commands = (await connected.client.request("chat/queryCommands", {"query": "sh"}))["commands"]
    assert "shout" in {c["name"] for c in commands} and "shh" not in {c["name"] for c in commands}


async def test_deny_rule_hides_a_plugin_tool(tmp_path: Path, llm):
    from eca_notebook.engine import Engine, EngineOptions

    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_CONFIG_HOME": str(tmp_path / "g"),
           "OLLAMA_API_URL": "http://127.0.0.1:9"}
    engine = Engine(EngineOptions(workspace_folders=[tmp_path], env=env, initialization_options={
        "localModel": False, "toolCall": {"approval": {"deny": {"demo": {}}}}}))
    engine.add_plugin(DemoPlugin())
    assert "demo__echo" in engine.all_tools()
    assert "demo__echo" not in engine.offered_tools("agent")
    await engine.aclose()


async def test_kernel_plugin_tool_calls_say_native_eca_in_every_content(connected: Harness, llm):  # noqa: F811
    """The kernel's plug-in tools are native ``eca`` tools: their prepare chunks (here named late by the model's
    server) say so like the rest of the call, and carry the early revision's ``manualApproval``."""
    from IPython.core.interactiveshell import InteractiveShell

    from eca_notebook.notebook._kernel_tools import KernelToolsPlugin

    shell = InteractiveShell.instance()
    connected.engine.add_plugin(KernelToolsPlugin(shell))
    llm.enqueue(Reply([ToolCall("k1", "eca__run_python", json.dumps({"code": "6 * 7"}), name_late=True)]),
                Reply.text("42"))
    chat_id = (await connected.client.request("chat/prompt", {"message": "compute", "model": "fake/m1"}))["chatId"]
    await connected.until(lambda m, p: m == "chat/contentReceived" and p["content"]["type"] == "toolCallRun")
    await connected.client.notify("chat/toolCallApprove", {"chatId": chat_id, "toolCallId": "k1"})
    await connected.until(lambda m, p: m == "chat/statusChanged" and p == {"chatId": chat_id, "status": "idle"})
    calls = [c for c in connected.contents(chat_id) if c["type"].startswith("toolCall")]
    assert {c["type"] for c in calls} >= {"toolCallPrepare", "toolCallRun", "toolCalled"}
    assert {(c["origin"], c["server"], c["name"], c["id"]) for c in calls} == {("native", "eca", "run_python", "k1")}
    assert all(c["manualApproval"] is True for c in calls if c["type"] in ("toolCallPrepare", "toolCallRun"))
    assert "42" in next(c for c in calls if c["type"] == "toolCalled")["outputs"][0]["text"]
