"""``shell_command`` in the ACP client's terminal, when the client offers the ``terminal`` capability.

The user sees the command run where they work (the editor's terminal, shown live in the tool call through its
``terminal`` content), and the output still reaches the model: ``terminal/create`` → ``terminal/wait_for_exit`` →
``terminal/output`` → ``terminal/release``; past the tool's timeout (or when the turn is stopped) the command is
``terminal/kill``\\ ed and released. Approvals are unchanged: the engine asks before the call runs, as for a local run.
This is the session's :class:`~eca_notebook.tools.base.ChatDelegate` ``run_command``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol import JsonObject
from ..tools.base import CommandOutcome, CommandRequest

__all__ = ["OUTPUT_BYTE_LIMIT", "TerminalRunner"]

log = logging.getLogger(__name__)

OUTPUT_BYTE_LIMIT = 1024 * 1024  # what the client keeps of a command's output (the shell tool truncates further)
REQUEST_TIMEOUT = 30.0  # seconds for the client to answer create / output / kill / release

Request = Callable[[str, JsonObject, float | None], Awaitable[Any]]


class TerminalRunner:
    """Runs one session's commands in its client's terminals."""

    def __init__(self, session_id: str, request: Request, show: Callable[[str | None, str], None]) -> None:
        self.session_id = session_id
        self._request = request
        self._show = show  # (tool call id, terminal id): the tool call shows the terminal live
        #: engine tool call ids whose command ran past its timeout (their failure is the spec's "Tool timeout")
        self.timed_out: set[str] = set()

    async def __call__(self, command: CommandRequest) -> CommandOutcome:
        params: JsonObject = {"sessionId": self.session_id, "command": "/bin/sh", "args": ["-c", command.command],
                                  "cwd": command.cwd, "env": [{"name": k, "value": v} for k, v in command.env.items()],
                                  "outputByteLimit": OUTPUT_BYTE_LIMIT}
        created = await self._request("terminal/create", params, REQUEST_TIMEOUT)
        terminal_id = str((created or {}).get("terminalId") or "")
        if not terminal_id:
            raise PermissionError("the client created no terminal")
        ids: JsonObject = {"sessionId": self.session_id, "terminalId": terminal_id}
        self._show(command.tool_call_id, terminal_id)
        killed = False
        try:
            try:
                status = await self._request("terminal/wait_for_exit", ids, command.timeout)
            except BaseException as exc:  # past the timeout, or the turn was stopped: nothing may outlive the call
                killed = True
                if isinstance(exc, TimeoutError) and command.tool_call_id:
                    self.timed_out.add(command.tool_call_id)
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._request("terminal/kill", ids, REQUEST_TIMEOUT))
                raise
            output = await self._request("terminal/output", ids, REQUEST_TIMEOUT) or {}
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._request("terminal/release", ids, REQUEST_TIMEOUT))
            log.debug("terminal %s released (killed: %s)", terminal_id, killed)
        exit_status = output.get("exitStatus") or status or {}
        code = exit_status.get("exitCode")
        text = str(output.get("output") or "")
        if output.get("truncated"):
            text = "[the beginning of the output was cut by the client]\n" + text
        if not isinstance(code, int):
            signal = exit_status.get("signal")
            code = 1
            text += f"\n(ended by {signal})" if signal else ""
        return CommandOutcome(exit_code=code, stdout=text, stderr="")
