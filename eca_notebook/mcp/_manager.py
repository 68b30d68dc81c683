"""The MCP plug-in: every configured MCP server's tools, prompts and resources, offered to the engine.

One :class:`McpManager` manages all servers of an engine. Servers start concurrently in the background after the
handshake; each reports ``tool/serverUpdated`` (``starting`` → ``running`` with its tools, or ``failed`` with the
reason in a ``$/showMessage``; ``disabled``/``stopped``) through ``engine.broadcast``. A server that fails, crashes
or hangs costs only its own calls: the chat gets a tool error and goes on, the other servers are untouched.

What the engine sees:

* tools — :class:`~eca_notebook.mcp._tool.McpTool`, offered as ``<server>__<tool>``;
* commands — MCP prompts as ``mcp-prompt`` commands (``/<prompt> args``, arguments by position);
* contexts — MCP resources as ``mcpResource`` contexts, read when attached.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fuzzy import is_subsequence
from ..plugins import BasePlugin, Command, CommandArgument
from ..protocol import ImageContent, JsonObject, JsonValue, McpServerUpdatedParams
from ..tools.base import ToolContext, ToolResult, llm_name
from ._connection import McpConnection, McpPromptSpec, ServerGone, describe_error
from ._convert import (
    call_result_images,
    call_result_to_text,
    prompt_arguments,
    prompt_to_text,
    resource_to_text,
    truncate,
)
from ._tool import McpTool

if TYPE_CHECKING:
    from ._connection import McpServerConfig

__all__ = ["CALL_ERROR", "CALL_UNAVAILABLE", "McpManager"]

log = logging.getLogger(__name__)

#: Why an MCP tool call failed, as :meth:`McpManager.call_failure` tells it (the ACP door turns them into
#: acp-messages.md's codes): the server's side of the call broke — it answered with a protocol error or a malformed
#: result, or closed the connection during the call ("MCP server communication failed", -31600) …
CALL_ERROR = "error"
#: … or the server was not there to call — not running, or no answer within the timeout ("MCP server is not
#: responding", -31601). A result the tool itself marks ``isError`` is the tool's failure, neither of these.
CALL_UNAVAILABLE = "unavailable"
_FAILURES_KEPT = 256  # calls whose failure is remembered (a door asks right after the call's toolCalled)


def _field(context: Any, key: str, attr: str | None = None) -> Any:
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, attr or key, None)


class McpManager(BasePlugin):
    name = "mcp"

    def __init__(self, servers: Mapping[str, McpServerConfig], *, workspace_folders: Sequence[Path],
                 timeout: float = 60.0) -> None:
        """`servers`: ``mcpServers`` from the config (``McpServerConfig`` per name). Stdio servers run in the first
        workspace folder with their ``env`` merged over this process's environment; `timeout` (seconds) bounds
        start-up and every call."""
        self._timeout = timeout
        self.workspace_folders = [Path(p) for p in workspace_folders]
        cwd = self.workspace_folders[0] if self.workspace_folders else None
        self._servers: dict[str, McpConnection] = {
            name: McpConnection(name, config, cwd=cwd, timeout=timeout, on_change=self._changed,
                                on_failed=self._failed)
            for name, config in servers.items()
        }
        self._tools: dict[str, list[McpTool]] = {}
        self._commands: list[Command] = []
        self._prompt_specs: dict[tuple[str, str], McpPromptSpec] = {}  # (server, command name) → MCP prompt
        self._progress: set[str] = set()
        self._closed = False
        # name → why it does not start: a server from an untrusted workspace's config (engine/workspace/_trust.py)
        self.held: dict[str, str] = {}
        # name, config → the directory a stdio server starts in, asked at each start (the engine's: the home
        # directory while the workspace is untrusted, engine/workspace/_trust.py); None → the first workspace folder
        self.cwd_for: Callable[[str, McpServerConfig], Path | None] | None = None
        self._failures: OrderedDict[str, str] = OrderedDict()  # tool call id → CALL_ERROR / CALL_UNAVAILABLE

    @property
    def timeout(self) -> float:
        """Seconds allowed for a server's start-up and for each call (``mcpTimeoutSeconds``)."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float) -> None:  # e.g. after a config change; applies to the next call
        self._timeout = value
        for connection in self._servers.values():
            connection.timeout = value

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def server_names(self) -> list[str]:
        return list(self._servers)

    async def start(self) -> None:
        """Start every enabled server concurrently; returns when each is running or failed. Never raises."""
        for connection in self._servers.values():
            if connection.status == "disabled" or connection.name in self.held:
                self._broadcast("tool/serverUpdated", self.status(connection.name).dump())
        enabled = [c for c in self._servers.values() if c.status != "disabled" and c.name not in self.held]
        results = await asyncio.gather(*(self._place(c).start() for c in enabled), return_exceptions=True)
        for connection, result in zip(enabled, results, strict=True):
            if isinstance(result, BaseException):
                log.error("starting MCP server %s failed unexpectedly", connection.name, exc_info=result)

    async def start_server(self, name: str) -> bool:
        """``mcp/startServer``: start a stopped, failed or disabled server; True once it is running."""
        connection = self._known(name)
        if connection is None or self._closed:
            return False
        if name in self.held:
            self._broadcast("$/showMessage", {"type": "warning", "message": f"MCP server '{name}': {self.held[name]}."})
            return False
        await self._place(connection).start()
        return connection.status == "running"

    async def hold(self, held: dict[str, str]) -> None:
        """Hold these servers (name → reason) from now on: a held one that runs is stopped (``/trust off``)."""
        self.held = {name: why for name, why in held.items() if name in self._servers}
        for name in self.held:
            await self._servers[name].stop()
            self._broadcast("tool/serverUpdated", self.status(name).dump())

    async def release(self, names: list[str]) -> None:
        """Stop holding *names* and start those not disabled (the workspace was trusted); returns when each is
        running or failed."""
        released = [self._servers[n] for n in names if self.held.pop(n, None) is not None and n in self._servers]
        startable = [c for c in released if c.status != "disabled"]
        await asyncio.gather(*(self._place(c).start() for c in startable), return_exceptions=True)

    def _place(self, connection: McpConnection) -> McpConnection:
        """Set where *connection* starts (:attr:`cwd_for`), before it starts."""
        if self.cwd_for is not None:
            connection.cwd = self.cwd_for(connection.name, connection.config)
        return connection

    async def relocate(self) -> None:
        """After the workspace was trusted or trust was revoked: a running stdio server whose directory is not where
        it would start now is restarted there (the user's own servers move between the home directory and the
        workspace)."""
        if self.cwd_for is None:
            return
        moved = [c for c in self._servers.values() if c.is_stdio and c.status in ("running", "starting")
                 and c.name not in self.held and self.cwd_for(c.name, c.config) != c.cwd]
        for connection in moved:
            await connection.stop()
        await asyncio.gather(*(self._place(c).start() for c in moved), return_exceptions=True)

    async def stop_server(self, name: str) -> bool:
        """``mcp/stopServer``: stop the server (its process, or its HTTP session); False for an unknown name."""
        connection = self._known(name)
        if connection is None:
            return False
        await connection.stop()
        return True

    # -- servers added, changed or removed while running (mcp/addServer, updateServer, removeServer, …) -------------

    def config_of(self, name: str) -> McpServerConfig | None:
        connection = self._servers.get(name)
        return connection.config if connection is not None else None

    async def put_server(self, name: str, config: McpServerConfig) -> None:
        """Run *name* with *config* from now on: a running server with that name is stopped first (its old process
        or session must not outlive its entry), then the new connection is announced (``stopped`` or ``disabled``).
        Starting it is the caller's decision (see ``engine/_mcp_admin.launch``)."""
        old = self._servers.get(name)
        if old is not None:
            await old.stop()
        cwd = self.workspace_folders[0] if self.workspace_folders else None
        connection = McpConnection(name, config, cwd=cwd, timeout=self._timeout, on_change=self._changed,
                                   on_failed=self._failed)
        connection.closed = self._closed
        self._servers[name] = connection
        self._changed(connection)

    async def remove_server(self, name: str) -> bool:
        """Stop *name*, forget it and its tools, prompts and resources, and broadcast ``tool/serverRemoved``."""
        connection = self._servers.get(name)
        if connection is None:
            return False
        await connection.stop()
        self._servers.pop(name, None)
        self.held.pop(name, None)
        had_tools = bool(self._tools.pop(name, None))
        self._rebuild_commands()
        if name in self._progress:
            self._progress.discard(name)
            self._broadcast("$/progress", {"type": "finish", "taskId": f"mcp-{name}",
                                           "title": f"Starting MCP server {name}"})
        self._broadcast("tool/serverRemoved", {"name": name})
        if had_tools and self.engine is not None:
            self.engine.tools_changed()
        return True

    async def aclose(self) -> None:
        """Stop every server (stdio processes are terminated with their process group)."""
        self._closed = True
        for connection in self._servers.values():
            connection.closed = True  # a start still on its way must not spawn anything now
        await asyncio.gather(*(c.stop() for c in self._servers.values()), return_exceptions=True)

    def _known(self, name: str) -> McpConnection | None:
        connection = self._servers.get(name)
        if connection is None:
            known = ", ".join(self._servers) or "none"
            self._broadcast("$/showMessage", {"type": "warning",
                                              "message": f"Unknown MCP server '{name}'. Configured: {known}."})
        return connection

    # -- statuses ------------------------------------------------------------------------------------------------

    def status(self, name: str) -> McpServerUpdatedParams:
        """The ``tool/serverUpdated`` params for one server."""
        connection = self._servers[name]
        params: JsonObject = {"type": "mcp", "name": name, **connection.describe(), "status": connection.status,
                                  "disabled": bool(connection.config.disabled)}
        if name in self.held and connection.status != "running":
            params["status"], params["reason"] = "disabled", self.held[name]
        if connection.status == "running":
            offered = self._offered()
            tools: list[JsonValue] = []
            for tool in self._tools.get(name, []):
                entry: JsonObject = {"name": tool.name, "description": tool.description,
                                         "parameters": tool.parameters}
                if offered is not None and llm_name(tool) not in offered:
                    entry["disabled"] = True
                tools.append(entry)
            params["tools"] = tools
        return McpServerUpdatedParams.model_validate(params)

    def statuses(self) -> list[McpServerUpdatedParams]:
        """Every server's status, for a client that connects later (or after the native tools' status)."""
        return [self.status(name) for name in self._servers]

    def error(self, name: str) -> str | None:
        """Why the server failed (None unless its status is ``failed``)."""
        connection = self._servers.get(name)
        return connection.error if connection is not None and connection.status == "failed" else None

    def _offered(self) -> set[str] | None:
        engine = self.engine
        if engine is None:
            return None
        try:
            return set(engine.offered_tools(engine.selected_behavior))
        except Exception:  # the listing is informative; never let it break a status
            log.exception("could not compute the offered tools")
            return None

    def _broadcast(self, method: str, params: JsonObject) -> None:
        if self.engine is not None:
            self.engine.broadcast(method, params)

    def _changed(self, connection: McpConnection) -> None:
        """A server's status or lists changed: rebuild what we offer, tell the clients and the engine."""
        if self._servers.get(connection.name) is not connection:
            return  # replaced or removed (put_server / remove_server): its last words are not news
        before = [(t.name, t.spec) for t in self._tools.get(connection.name, [])]
        running = connection.status == "running"
        specs = connection.tools if running else []
        self._tools[connection.name] = [McpTool(self, connection.name, spec) for spec in specs]
        self._rebuild_commands()
        task_id = f"mcp-{connection.name}"
        if connection.status == "starting" and connection.name not in self._progress:
            self._progress.add(connection.name)
            self._broadcast("$/progress", {"type": "start", "taskId": task_id,
                                           "title": f"Starting MCP server {connection.name}"})
        elif connection.status != "starting" and connection.name in self._progress:
            self._progress.discard(connection.name)
            self._broadcast("$/progress", {"type": "finish", "taskId": task_id,
                                           "title": f"Starting MCP server {connection.name}"})
        self._broadcast("tool/serverUpdated", self.status(connection.name).dump())
        if before != [(t.name, t.spec) for t in self._tools[connection.name]] and self.engine is not None:
            self.engine.tools_changed()

    def _failed(self, connection: McpConnection, reason: str) -> None:
        log.warning("MCP server %s failed: %s", connection.name, reason)
        self._broadcast("$/showMessage", {"type": "error",
                                          "message": f"MCP server '{connection.name}' failed: {reason}"})

    # -- tools ---------------------------------------------------------------------------------------------------

    def tools(self) -> list[McpTool]:
        return [tool for name, connection in self._servers.items() if connection.status == "running"
                for tool in self._tools.get(name, [])]

    async def call_tool(self, server: str, tool: str, args: JsonObject,
                        ctx: ToolContext | None = None) -> ToolResult:
        """Call one tool; every failure is a ``ToolResult(error=True)`` the model can read, never an exception
        (except cancellation: a stopped chat cancels the call)."""
        call_id = ctx.tool_call_id if ctx is not None else None
        if call_id:
            self._failures.pop(call_id, None)  # (ids repeat across turns: what a call before this one did is gone)
        connection = self._servers.get(server)
        if connection is None:
            return self._failed_call(call_id, CALL_UNAVAILABLE, f"unknown MCP server '{server}'")
        what = f"the call to tool {tool}"
        try:
            connection.require_session()
        except ServerGone as exc:
            return self._failed_call(call_id, CALL_UNAVAILABLE, str(exc))
        try:
            result = await connection.request(what, lambda session: session.call_tool(tool, args))
        except TimeoutError as exc:
            return self._failed_call(call_id, CALL_UNAVAILABLE,
                                     f"{exc}; the call was abandoned (the server may still be working on it).")
        except ServerGone as exc:
            return self._failed_call(call_id, CALL_ERROR, str(exc))
        except Exception as exc:  # protocol errors (unknown tool, invalid params), malformed results …
            log.info("MCP server %s: %s failed: %s", server, what, describe_error(exc))
            return self._failed_call(call_id, CALL_ERROR, f"MCP server '{server}': {what} failed: "
                                                          f"{connection.redact(describe_error(exc))}")
        try:
            text, is_error = call_result_to_text(result)
        except ValueError as exc:
            return self._failed_call(call_id, CALL_ERROR, f"MCP server '{server}' returned a {exc}")
        images, problems = await asyncio.to_thread(call_result_images, result)
        if not text:
            text = f"{tool} failed without a message" if is_error else "(no output)"
        if ctx is not None:
            text = truncate(text, ctx.max_output_lines, ctx.max_output_bytes)
        for problem in problems:  # (after the cut: the model and the user learn why an image is missing)
            text += f"\n[image not passed on: {problem}]"
        # the images go to the model with the text, and to the chat as image contents (ChatImageContent)
        shown = [ImageContent(media_type=i.media_type, base64=i.base64()) for i in images]
        return ToolResult(output=text, error=is_error, images=images, contents=list(shown))

    def _failed_call(self, call_id: str | None, why: str, output: str) -> ToolResult:
        if call_id:
            self._failures[call_id] = why
            while len(self._failures) > _FAILURES_KEPT:
                self._failures.popitem(last=False)
        return ToolResult(output=output, error=True)

    def call_failure(self, call_id: str) -> str | None:
        """Why the tool call *call_id* failed on the server's side (:data:`CALL_ERROR`, :data:`CALL_UNAVAILABLE`),
        None when it did not, or its tool's own result said it failed: the engine's state, not the server's wording,
        for a door that reports why (the ACP door's MCP server codes)."""
        return self._failures.get(call_id)

    # -- prompts as commands -------------------------------------------------------------------------------------

    def _rebuild_commands(self) -> None:
        commands: list[Command] = []
        specs: dict[tuple[str, str], McpPromptSpec] = {}
        taken = set(self.engine.reserved_command_names()) if self.engine is not None else set()
        for server, connection in self._servers.items():
            if connection.status != "running":
                continue
            for prompt in connection.prompts:
                name = prompt["name"]
                if name.lower() in taken or any(c.isspace() or c == "/" for c in name):
                    name = f"{server}:{name}".replace(" ", "-").replace("/", "-")
                taken.add(name.lower())
                arguments = [CommandArgument(a["name"], a.get("description") or None, bool(a.get("required")))
                             for a in prompt.get("arguments") or [] if isinstance(a, dict) and a.get("name")]
                description = prompt.get("description") or prompt.get("title") or f"Prompt from MCP server {server}"
                commands.append(Command(name=name, description=description, type="mcp-prompt",
                                        arguments=arguments, server=server))
                specs[(server, name)] = prompt
        self._commands = commands
        self._prompt_specs = specs

    def commands(self) -> list[Command]:
        return list(self._commands)

    async def render_command(self, command: Command, args_text: str) -> str:
        """The prompt text for ``/<prompt> args``: arguments by position in declared order (``ValueError`` when a
        required one is missing), ``prompts/get``, the messages' text joined."""
        spec = self._prompt_specs.get((command.server or "", command.name))
        connection = self._servers.get(command.server or "")
        if spec is None or connection is None:
            raise ValueError(f"/{command.name} is not offered by a running MCP server")
        declared = [{"name": a.name, "required": a.required} for a in command.arguments]
        values = prompt_arguments(command.name, declared, args_text)
        what = f"prompt {spec['name']}"
        result = await connection.request(what, lambda session: session.get_prompt(spec["name"], values))
        text = prompt_to_text(result)
        if not text.strip():
            raise ValueError(f"MCP server '{connection.name}' returned an empty prompt")
        return text

    # -- resources as contexts -----------------------------------------------------------------------------------

    async def query_contexts(self, query: str, contexts: Sequence[Any] = ()) -> list[JsonObject]:
        q = "".join((query or "").split()).lower()
        found = []
        for server, connection in self._servers.items():
            if connection.status != "running":
                continue
            for resource in connection.resources:
                name = resource.get("name") or resource["uri"]
                description = resource.get("description") or ""
                context: JsonObject = {"type": "mcpResource", "uri": resource["uri"], "name": name,
                                       "description": description, "mimeType": resource.get("mimeType") or "",
                                       "server": server}
                texts = (name, resource["uri"], description)
                if not q or any(is_subsequence(q, t.lower()) for t in texts if t):
                    found.append(context)
        return found

    async def read_context(self, context: Any) -> str | None:
        """The text of an attached ``mcpResource`` of one of our servers; None for any other context."""
        if _field(context, "type") != "mcpResource":
            return None
        uri = _field(context, "uri")
        server = _field(context, "server") or ""
        if server:
            connection = self._servers.get(server)
            if connection is None:
                return None
        else:  # a client that left the server out: whichever running server lists the URI
            connection = next((c for c in self._servers.values() if c.status == "running" and c.offers_resource(uri)),
                              None)
            if connection is None:
                return None
        what = f"reading resource {uri}"
        result = await connection.request(what, lambda session: session.read_resource(uri))
        return resource_to_text(result)
