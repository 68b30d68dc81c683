"""``shell_command`` in the ACP client's terminal (client capability ``terminal``): the agent creates a terminal in
the client, waits for it, reads its output, releases it; the model gets the output, the approval is asked as
before, and the tool call shows the terminal. The test client runs the command for real, as an editor would."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from typing import Any

import pytest
from acp import text_block
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from eca_notebook.acp._schema import TOOL_TIMEOUT
from eca_notebook.testing.llm_server import Reply

from .conftest import completion_bodies, sent_tool_results
from .test_connection import Client, call, start

pytestmark = pytest.mark.e2e


class TerminalClient(Client):
    """An editor with terminals: each ``terminal/create`` runs the command in a real subprocess."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.terminals: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                                  terminal=True)

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None,
                              **kwargs: Any) -> Any:
        self.calls.append("create")
        proc = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        terminal_id = str(uuid.uuid4())
        self.terminals[terminal_id] = {"proc": proc, "command": [command, *(args or [])], "cwd": cwd,
                                       "output": asyncio.ensure_future(proc.stdout.read() if proc.stdout else
                                                                       asyncio.sleep(0, b""))}
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("wait_for_exit")
        code = await self.terminals[terminal_id]["proc"].wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("output")
        term = self.terminals[terminal_id]
        data = await term["output"]
        return TerminalOutputResponse(output=data.decode(), truncated=False,
                                      exit_status=TerminalExitStatus(exit_code=term["proc"].returncode))

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("kill")
        os.killpg(self.terminals[terminal_id]["proc"].pid, signal.SIGKILL)  # the command and what it started
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("release")
        term = self.terminals[terminal_id]
        await term["proc"].wait()  # (a killed process reaped, its output read: nothing left behind)
        await term["output"]
        return ReleaseTerminalResponse()


async def test_shell_command_runs_in_the_clients_terminal(spawn_agent, llm, workspace, strict):
    llm.enqueue(Reply([call("shell_command", {"command": "echo from-the-editor-terminal; pwd; exit 3"})]),
                Reply.text("Ran it."))
    client = TerminalClient(answer="allow_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("run it")])
    assert answer.stop_reason == "end_turn"
    assert len(client.permissions) == 1  # the approval is asked as for a local run
    [term] = client.terminals.values()
    assert term["command"] == ["/bin/sh", "-c", "echo from-the-editor-terminal; pwd; exit 3"]
    assert term["cwd"] == str(workspace)
    assert client.calls == ["create", "wait_for_exit", "output", "release"]
    shown = [u for u in client.of("tool_call_update") if any(c.get("type") == "terminal"
                                                             for c in u.get("content") or [])]
    assert shown and shown[0]["content"][0]["terminalId"] in client.terminals
    [result] = sent_tool_results(completion_bodies(llm)[1])
    assert result.startswith("Exit code: 3") and "from-the-editor-terminal" in result and str(workspace) in result


async def test_a_command_past_its_timeout_is_killed_in_the_terminal_and_is_a_tool_timeout(spawn_agent, llm, workspace,
                                                                                            strict):
    llm.enqueue(Reply([call("shell_command", {"command": "sleep 120", "timeout": 1000})]), Reply.text("Too slow."))
    client = TerminalClient(answer="allow_once")
    async with spawn_agent(client) as (conn, _):
        session_id = await start(conn, client, workspace)
        answer = await conn.prompt(session_id=session_id, prompt=[text_block("wait")])
    assert answer.stop_reason == "end_turn"
    assert client.calls == ["create", "wait_for_exit", "kill", "release"]
    [term] = client.terminals.values()
    assert term["proc"].returncode is not None  # the client's process was killed
    [failed] = [u for u in client.of("tool_call_update") if u.get("status") == "failed"]
    assert failed["rawOutput"]["error"] == {"code": TOOL_TIMEOUT, "message": "Tool timeout"}
    [result] = sent_tool_results(completion_bodies(llm)[1])
    assert "timed out" in result
