"""The ECA persona through a real Jupyter server with Jupyter AI's extensions, driven the way Jupyter AI's front end
drives it: messages over the chat WebSocket, approvals through its permission endpoint (tests/jupyter_ai/_server.py),
the model being the scripted LLM server. Jupyter AI's own MCP server ("Jupyter MCP Server", on its own port) is
handed to our session by Jupyter AI, as for every user. Runs in .venv-jupyter-ai (see conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall
from eca_notebook.tools._names import PROVIDER_NAME, provider_tool_name

from ..panel._lab import Lab
from ._server import JUPYTER_MCP_SERVER, ChatClient, jupyter_ai_lab

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
CHAT = "talk.chat"


def call(name: str, args: dict[str, Any], call_id: str) -> Reply:
    return Reply([ToolCall(call_id, name, json.dumps(args), chunks=2)])


def turns(llm: ScriptedLLMServer) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests if r.method == "POST" and r.path == "/v1/responses"]


def offered(body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t.get("function", {}).get("name") for t in body.get("tools") or []]


@pytest.fixture
def lab(workspace: Path, home: Path, llm: ScriptedLLMServer):
    lab = jupyter_ai_lab(workspace, home, llm.url)
    yield lab
    lab.stop()


async def test_text_edit_rejection_and_jupyter_mcp_tools(lab: Lab, workspace: Path, llm: ScriptedLLMServer):
    (workspace / "app.py").write_text("print('hi')\n")
    lab.start(timeout=240)
    async with ChatClient(lab, CHAT) as chat:
        # text
        llm.enqueue(Reply.text("Hello from ECA."))
        await chat.send("@ECA say hello")
        await chat.until(lambda: "Hello from ECA." in chat.text(), "the answer")
        first = turns(llm)[0]
        names = offered(first)
        # Jupyter AI's MCP server reached our session, its tools offered under names every provider accepts
        create = provider_tool_name(JUPYTER_MCP_SERVER, "create_notebook")
        assert create in names and create != f"{JUPYTER_MCP_SERVER}__create_notebook", names
        assert all(PROVIDER_NAME.fullmatch(name) for name in names), names

        # an approved edit: the file changes (written by Jupyter AI's fs/write_text_file)
        llm.enqueue(call("eca__edit_file", {"path": "app.py", "original_content": "'hi'", "new_content": "'hello'"},
                         "call_1"), Reply.text("Edited."))
        await chat.send("@ECA greet properly in app.py")
        approved = await chat.answer_permission("allow_once")
        await chat.until(lambda: "Edited." in chat.text(), "the edit's answer")
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert any(d.get("path", "").endswith("app.py") for d in approved.get("diffs") or []), approved  # its card

        # a rejected write: the file stays, the model is told
        llm.enqueue(call("eca__write_file", {"path": "app.py", "content": "gone\n"}, "call_2"),
                    Reply.text("Understood."))
        await chat.send("@ECA wipe app.py")
        await chat.answer_permission("reject_once")
        await chat.until(lambda: "Understood." in chat.text(), "the rejection's answer")
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert "rejected" in json.dumps(turns(llm)[-1]["input"]).lower()

        # a call to one of Jupyter AI's MCP tools, by the name we offered: it runs in the Jupyter server
        llm.enqueue(call(create, {"file_path": "made.ipynb"}, "call_3"), Reply.text("Notebook made."))
        await chat.send("@ECA make a notebook made.ipynb")
        await chat.answer_permission("allow_once")
        await chat.until(lambda: "Notebook made." in chat.text(), "the MCP call's answer")
        assert json.loads((workspace / "made.ipynb").read_text())["nbformat"] == 4
        result = json.dumps(turns(llm)[-1]["input"])
        assert "Successfully created and opened notebook" in result, result[-3000:]


async def test_a_chat_resumes_after_the_server_restarts(lab: Lab, llm: ScriptedLLMServer):
    lab.start(timeout=240)
    async with ChatClient(lab, CHAT) as chat:
        llm.enqueue(Reply.text("Noted: the answer is 42."))
        await chat.send("@ECA remember 42")
        await chat.until(lambda: "Noted: the answer is 42." in chat.text(), "the first answer")
        session_ids = await chat.until(lambda: chat.metadata.get("acp_session_ids"), "the chat to record its session")
    lab.stop()

    lab.start(timeout=240)  # a new server: a new agent process, the chat read back from its file
    async with ChatClient(lab, CHAT) as chat:
        assert "Noted: the answer is 42." in chat.text()
        llm.enqueue(Reply.text("It was 42."))
        await chat.send("@ECA what was the number?")
        await chat.until(lambda: "It was 42." in chat.text(), "the answer after the restart")
        history = json.dumps(turns(llm)[-1]["input"])
        assert "remember 42" in history and "Noted: the answer is 42." in history  # our session, loaded
        assert json.loads((lab.root / CHAT).read_text())["metadata"]["acp_session_ids"] == session_ids
