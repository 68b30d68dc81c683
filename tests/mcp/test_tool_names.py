"""MCP servers whose names no provider accepts in a tool name (spaces, dots, slashes, non-ASCII letters) work in
every provider wire format: the scripted LLM server is offered only valid, distinct names, the model's call maps
back to the right server's tool, and users see the server's and the tool's own names."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.engine import Engine, EngineOptions
from eca_notebook.mcp import McpManager
from eca_notebook.protocol import ChatPromptParams
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from eca_notebook.tools.base import provider_tool_name

from .conftest import stdio

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
SERVERS = ["Jupyter MCP Server", "my.server", "team/tools", "données"]
PATHS = {"openai-responses": "/v1/responses", "openai-chat": "/v1/chat/completions", "anthropic": "/v1/messages",
         "ollama": "/api/chat"}
MODEL_OF = {"openai-responses": "openai/gpt-4.1", "openai-chat": "vllm/qwen3",
            "anthropic": "anthropic/claude-sonnet-4-5", "ollama": "ollama/llama3.2"}


class Recorder:
    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.messages.append((method, params))

    def contents(self, chat_id: str, kind: str) -> list[dict[str, Any]]:
        return [p["content"] for m, p in self.messages
                if m == "chat/contentReceived" and p["chatId"] == chat_id and p["content"]["type"] == kind]


def offered_names(body: dict[str, Any]) -> list[str]:
    """Tool names in any of the four formats: ``tools[].name`` (responses, anthropic) or ``tools[].function.name``."""
    return [t.get("name") or t["function"]["name"] for t in body.get("tools") or []]


def tool_result_texts(body: dict[str, Any]) -> str:
    """Everything the request carries back to the model, as text (each format nests tool results its own way)."""
    return json.dumps(body.get("messages") or body.get("input") or [], ensure_ascii=False)


@pytest.fixture
async def engine(tmp_path: Path, llm: ScriptedLLMServer):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "OPENAI_API_URL": llm.url, "OPENAI_API_KEY": "sk-test-openai-0000",
           "ANTHROPIC_API_URL": llm.url, "ANTHROPIC_API_KEY": "sk-ant-test-0000", "OLLAMA_API_URL": llm.url}
    options = {
        "pureConfig": True, "localModel": False,
        "providers": {"openai": {"models": {"gpt-4.1": {}}}, "anthropic": {"models": {"claude-sonnet-4-5": {}}},
                      "ollama": {"models": {"llama3.2": {}}},
                      "vllm": {"api": "openai-chat", "url": llm.url, "models": {"qwen3": {}}}},
        # approvals name the servers and tools as their servers spell them
        "toolCall": {"approval": {"allow": {f"{server}__text.upper": {} for server in SERVERS}}},
    }
    workspace = tmp_path / "ws"
    workspace.mkdir()
    eng = Engine(EngineOptions(workspace_folders=[workspace], initialization_options=options, env=env))
    manager = McpManager({name: stdio() for name in SERVERS}, workspace_folders=[workspace], timeout=30)
    eng.add_plugin(manager)
    recorder = Recorder()
    eng.add_listener(recorder)
    await eng.start()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90
        while any(manager.status(name).status != "running" for name in SERVERS):
            assert loop.time() < deadline, [manager.status(name).status for name in SERVERS]
            await asyncio.sleep(0.1)
        yield eng, manager, recorder
    finally:
        await eng.aclose()


@pytest.mark.parametrize("api", list(PATHS))
async def test_odd_server_names_in_every_wire_format(engine, llm: ScriptedLLMServer, api: str):
    eng, manager, recorder = engine
    target = "team/tools"
    called = provider_tool_name(target, "text.upper")
    llm.enqueue(Reply([ToolCall("call_1", called, json.dumps({"text": "shout"}), chunks=2)]), Reply.text("done"))
    result = await eng.prompt(ChatPromptParams(message="shout", model=MODEL_OF[api]))
    chat = eng.chats[result.chat_id]
    await asyncio.wait_for(asyncio.shield(chat.task), 60)

    first, second = [r for r in llm.requests if r.path == PATHS[api]][-2:]
    names = offered_names(first.body)
    assert names and all(VALID.fullmatch(n) for n in names), [n for n in names if not VALID.fullmatch(n)]
    assert len(set(names)) == len(names)
    mcp_names = {provider_tool_name(s, "text.upper") for s in SERVERS}
    assert mcp_names <= set(names)  # every server's tool offered, each under its own name
    assert "SHOUT" in tool_result_texts(second.body)

    [done] = recorder.contents(chat.id, "toolCalled")
    assert (done["name"], done["server"], done["origin"]) == ("text.upper", target, "mcp")
    assert done["error"] is False and done["outputs"][0]["text"] == "SHOUT"
    [run] = recorder.contents(chat.id, "toolCallRun")
    assert run["manualApproval"] is False  # the approval rule written with the real names matched
    listed = {t.name for t in manager.status("données").tools}
    assert "text.upper" in listed  # users see the server's own tool names
