"""The ECA persona driven headless by Jupyter AI's own code: its persona manager (entry point loading, routing by
``to_persona``), a real chat document (``YChat`` over pycrdt), ``BaseAcpPersona`` and ``JaiAcpClient`` starting
``python -m eca_notebook acp`` and answering permissions the way its REST endpoint does — against the scripted LLM
server. Runs in .venv-jupyter-ai (see conftest.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager.persona_manager import PersonaManager
from jupyterlab_chat.models import NewMessage, User
from jupyterlab_chat.ychat import YChat

from eca_notebook.jupyter_ai import AVATAR, NAME, agent_command
from eca_notebook.testing.llm_server import Reply, ScriptedLLMServer, ToolCall

from ..e2e.conftest import server_env
from ..test_text import JUPYTER_AI_GUIDANCE

PERSONA_ID = "jupyter-ai-personas::eca_notebook::EcaPersona"
USER = "alice"


def test_importing_the_package_never_imports_jupyter_ai():
    code = ("import sys, eca_notebook, eca_notebook.jupyter_ai\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0].startswith(('jupyter_ai', 'jupyterlab_chat'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_the_guidance_jupyter_ai_prepends_is_the_one_titles_skip():
    """tests/test_text.py pins Jupyter AI's notebook guidance: the installed version still sends exactly that."""
    assert BaseAcpPersona.NOTEBOOK_EDITING_GUIDANCE == JUPYTER_AI_GUIDANCE


class Room:
    """One Jupyter AI chat: the document, its persona manager, and helpers to talk in it as a user."""

    def __init__(self, root: Path) -> None:
        self.chat = YChat()
        self.chat.initial_path = "chat.chat"
        self.chat.set_user(User(username=USER, name="Alice", display_name="Alice"))
        self.manager = PersonaManager(chat=self.chat, root_dir=str(root), event_loop=asyncio.get_running_loop(),
                                      builtin_mcp_servers=[])

    @property
    def persona(self) -> Any:
        return self.manager.personas[PERSONA_ID]

    def send(self, body: str) -> None:
        """What the chat input does: a message stamped with the picked persona, routed by the manager."""
        message_id = self.chat.add_message(NewMessage(body=body, sender=USER))
        message = self.chat.get_message(message_id)
        assert message is not None
        message.metadata = {"to_persona": PERSONA_ID}
        self.chat.update_message(message)
        self.manager.on_chat_message(self.chat.get_id(), message)

    def replies(self) -> list[str]:
        return [m.body for m in self.chat.get_messages() if m.sender == PERSONA_ID]

    async def until(self, predicate: Callable[[], Any], what: str, timeout: float = 120) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not (found := predicate()):
            assert loop.time() < deadline, f"timed out waiting for {what}; replies: {self.replies()}"
            await asyncio.sleep(0.1)
        return found

    async def answer_permission(self, option_id: str) -> None:
        """What Jupyter AI's permission endpoint does when the user clicks a button."""
        await self.until(lambda: type(self.persona).__dict__.get("_client_future"), "the agent to start")
        client = await self.persona.get_client()
        pending = await self.until(lambda: list(client._permission_manager._pending), "a permission request")
        session_id, tool_call_id = pending[0]
        assert client.resolve_permission(session_id, tool_call_id, option_id)

    async def close(self) -> None:
        await self.manager.shutdown_personas()


@pytest.fixture
def agent_env(home: Path, llm: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jupyter AI starts the agent with the server's environment: isolate it and point it at the scripted LLM."""
    env = server_env(home, llm)
    env["ECA_CONFIG"] = json.dumps({**json.loads(env["ECA_CONFIG"]), "defaultModel": "openai/gpt-4.1",
                                    "localModel": False})
    for key in [k for k in os.environ if k.endswith(("_API_KEY", "_API_URL"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> Reply:
    return Reply([ToolCall(call_id, f"eca__{name}", json.dumps(args), chunks=2)])


def bodies(llm: ScriptedLLMServer) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests if r.method == "POST" and r.path == "/v1/responses"]


def test_the_persona_is_found_through_the_entry_point(workspace: Path):
    async def main() -> None:
        room = Room(workspace)
        try:
            persona = room.persona
            assert persona.name == NAME and persona.defaults.avatar_path == str(AVATAR) and AVATAR.is_file()
            assert persona._executable == agent_command() and agent_command()[0] == sys.executable
        finally:
            await room.close()

    asyncio.run(main())


async def test_text_an_approved_edit_and_a_rejected_write(workspace: Path, llm: ScriptedLLMServer, agent_env):
    (workspace / "app.py").write_text("print('hi')\n")
    room = Room(workspace)
    try:
        llm.enqueue(Reply.text("Hello from ECA."))
        room.send("@ECA say hello")
        await room.until(lambda: any("Hello from ECA." in r for r in room.replies()), "the answer")
        first = bodies(llm)[0]
        assert JUPYTER_AI_GUIDANCE in json.dumps(first, ensure_ascii=False)  # the host's guidance reached the model
        # the "@ECA" that routed the message is not part of the request (it was the title's first word)
        assert "say hello" in json.dumps(first) and "@ECA" not in json.dumps(first)

        llm.enqueue(call("edit_file", {"path": "app.py", "original_content": "'hi'", "new_content": "'hello'"}),
                    Reply.text("Edited."))
        room.send("@ECA greet properly in app.py")
        await room.answer_permission("allow_once")
        await room.until(lambda: any("Edited." in r for r in room.replies()), "the edit's answer")
        assert (workspace / "app.py").read_text() == "print('hello')\n"  # written by Jupyter AI's fs/write_text_file

        llm.enqueue(call("write_file", {"path": "app.py", "content": "gone\n"}, "call_2"), Reply.text("Understood."))
        room.send("@ECA wipe app.py")
        await room.answer_permission("reject_once")
        await room.until(lambda: any("Understood." in r for r in room.replies()), "the rejection's answer")
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert "rejected" in json.dumps(bodies(llm)[-1]).lower()
    finally:
        await room.close()


async def test_a_refused_notebook_write_tells_the_model_why(workspace: Path, llm: ScriptedLLMServer, agent_env):
    """Jupyter AI's client refuses raw .ipynb writes with its reason in error.data: the model reads the reason."""
    notebook = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    room = Room(workspace)
    try:
        llm.enqueue(call("write_file", {"path": "new.ipynb", "content": notebook}), Reply.text("I will use cells."))
        room.send("@ECA create new.ipynb")
        await room.answer_permission("allow_once")
        await room.until(lambda: any("I will use cells." in r for r in room.replies()), "the answer")
        assert not (workspace / "new.ipynb").exists()
        result = json.dumps(bodies(llm)[-1]["input"], ensure_ascii=False)
        assert "writing .ipynb files directly is not allowed" in result and "Invalid params" in result
    finally:
        await room.close()


async def test_a_chat_resumes_after_a_restart(workspace: Path, llm: ScriptedLLMServer, agent_env):
    """The chat document keeps the ACP session id; a new server (a new manager and agent) loads that session."""
    room = Room(workspace)
    llm.enqueue(Reply.text("Noted: the answer is 42."))
    room.send("@ECA remember 42")
    await room.until(lambda: any("42" in r for r in room.replies()), "the first answer")
    await room.until(lambda: not room.persona.processing, "the turn to end")  # the agent has saved the chat
    session_ids = room.chat.get_metadata().get("acp_session_ids")
    await room.close()
    type(room.persona)._subprocess_future = None  # the old agent is gone, as after a server restart
    type(room.persona)._client_future = None
    type(room.persona)._before_subprocess_future = None

    again = Room.__new__(Room)
    again.chat = room.chat
    again.manager = PersonaManager(chat=room.chat, root_dir=str(workspace), event_loop=asyncio.get_running_loop(),
                                   builtin_mcp_servers=[])
    try:
        llm.enqueue(Reply.text("It was 42."))
        again.send("@ECA what was the number?")
        await again.until(lambda: any("It was 42." in r for r in again.replies()), "the answer after the restart")
        assert again.chat.get_metadata().get("acp_session_ids") == session_ids  # the same session, loaded
        history = json.dumps(bodies(llm)[-1]["input"])
        assert "remember 42" in history and "Noted: the answer is 42." in history
    finally:
        await again.close()


@pytest.mark.parametrize(("body", "expected"), [
    ("@ECA say hello", "say hello"),
    ("  @ECA: fix app.py", "fix app.py"),
    ("@ECA", "@ECA"),  # nothing else: left as it is
    ("@ECAT say hello", "@ECAT say hello"),  # another name
    ("please ask @ECA", "please ask @ECA"),  # not leading
])
def test_the_routing_mention_is_taken_off(body: str, expected: str):
    from eca_notebook.jupyter_ai._persona import without_mention

    assert without_mention(body, "ECA") == expected
