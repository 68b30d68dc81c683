"""The ``%eca`` subcommands that are not prompts: help, new, stop, chats, model, behavior, config, mcp (and fix,
handed to ``_fix.py``; rewrite, to ``_rewrite.py``).

Each completes before the cell ends and prints or displays its answer (markdown tables in a notebook, the same
text in a terminal); errors a user can fix (an unknown model, the assistant failing to start) are printed to
stderr, not raised.
"""

from __future__ import annotations

import logging
import shlex
import sys
import uuid
from typing import TYPE_CHECKING, Any, Literal

from ._display import show_markdown
from ._fix import fix
from ._parse import USAGE, MagicRequest
from ._rewrite import rewrite

if TYPE_CHECKING:
    from ..client import EcaClient
    from ._session import NotebookSession

__all__ = ["describe_config", "describe_mcp", "subcommand"]

log = logging.getLogger(__name__)


async def _undo_last(session: NotebookSession, client: Any) -> None:
    """``%eca undo``: revert the latest change a prompt of this session made that is not undone yet."""
    for plan in reversed(session.plans):
        calls = getattr(plan.result, "tool_calls", None) or []
        for call in reversed(calls):
            card = getattr(plan.view, "cards", {}).get(call.id)
            if not (call.details or {}).get("undoable") or call.id in session.undone:
                continue
            result = await client.undo_tool_call(plan.chat_id, call.id)
            if result.undone:
                session.undone.add(call.id)
            if card is not None:
                card.undo_finished(result.undone, result.message)
            print(result.message if result.undone else f"{call.summary or call.name}: {result.message}")
            return
    print("Nothing to undo: no change made in this session is left to undo.")


async def subcommand(session: NotebookSession, request: MagicRequest) -> Any:
    """Run one subcommand (``request.command`` is not ``prompt``)."""
    name, arg = request.command, request.argument
    if name == "help":
        print(USAGE)
        return None
    if name == "new":
        session.chat_id = str(uuid.uuid4())
        print("Started a new chat: the next %eca prompt begins it.")
        return None
    if name == "fix":
        return await fix(session, request)
    if name == "rewrite":
        return await rewrite(session, request)
    try:
        client = await session.ensure_client()
    except Exception as exc:
        print(f"%eca: could not start the assistant: {exc}", file=sys.stderr)
        return None
    if name == "stop":
        running = [p for p in session.plans if p.task is not None and not p.task.done() or p.view.running]
        chats = sorted({p.chat_id for p in running})
        for chat_id in chats:
            await client.stop(chat_id)
        print(f"Stopped {len(chats)} running prompt(s)." if chats else "Nothing is running.")
        return None
    if name == "steer":
        running = [p for p in session.plans if p.task is not None and not p.task.done() or p.view.running]
        chats = [p.chat_id for p in running]
        if not chats:
            print("Nothing is running: send it as a prompt (%eca <text>).")
            return None
        chat_id = session.chat_id if session.chat_id in chats else chats[-1]
        await client.steer(chat_id, arg)
        print("Steer sent: it joins the model's input after the current tool calls (a prompt that ends first "
              "drops it).")
        return None
    if name == "jobs":
        await _jobs(client, arg)
        return None
    if name == "undo":
        await _undo_last(session, client)
        return None
    if name == "chats":
        chats = await client.list_chats()
        if not chats:
            print("No chats yet.")
            return None
        lines = ["| | chat | title | messages | model |", "|---|---|---|---|---|"]
        for chat in chats:
            mark = "▶" if chat.get("id") == session.chat_id else ""
            lines.append(f"| {mark} | `{chat.get('id')}` | {_cell(chat.get('title'))} | "
                         f"{chat.get('messageCount', '')} | {chat.get('model') or ''} |")
        show_markdown("\n".join(lines))
        return None
    if name in ("model", "behavior"):
        return await _select(client, session.chat_id, name, arg)
    if name == "config":
        show_markdown(describe_config(session))
        return None
    if name == "mcp":
        if arg:
            await manage_mcp(client, arg)
            return None
        show_markdown(describe_mcp(session))
        return None
    raise AssertionError(name)


async def _jobs(client: EcaClient, arg: str) -> None:
    """``%eca jobs``: the background jobs as a table; ``kill ID`` kills one (its whole process group), ``output ID``
    shows its last 50 lines."""
    action, _, job_id = arg.partition(" ")
    if action == "kill":
        print(f"Killed {job_id}." if await client.kill_job(job_id) else f"{job_id} is not running.")
        return
    if action == "output":
        try:
            output = await client.job_output(job_id)
        except Exception as exc:  # an unknown job is an RPC error
            print(f"%eca: {exc}", file=sys.stderr)
            return
        listed = output.get("lines")
        lines = [("[stderr] " if line.get("stream") == "stderr" else "") + str(line.get("text", ""))
                 for line in (listed if isinstance(listed, list) else [])[-50:] if isinstance(line, dict)]
        print(f"{job_id}: {output.get('status')}" + (f" (exit {output['exitCode']})"
                                                    if output.get("exitCode") is not None else ""))
        print("\n".join(lines) or "(no output)")
        return
    jobs = await client.jobs()
    if not jobs:
        print("No background jobs.")
        return
    rows = ["| job | status | elapsed | chat | command |", "|---|---|---|---|---|"]
    for job in jobs:
        status = str(job.get("status"))
        if job.get("exitCode") is not None:
            status += f" ({job['exitCode']})"
        name = f"{job.get('id')}" + (f" {_cell(job.get('summary'))}" if job.get("summary") else "")
        rows.append(f"| `{name}` | {status} | {job.get('elapsed')} | {_cell(job.get('chatLabel'))} | "
                    f"`{_cell(job.get('label'))[:80]}` |")
    show_markdown("\n".join(rows) + "\n\n`%eca jobs kill ID` stops one; `%eca jobs output ID` shows its output.")


def describe_config(session: NotebookSession) -> str:
    """``%eca config``: the workspace, config sources, model, behavior, chat, output mode, tools and warnings."""
    client = session.client
    engine = getattr(client, "engine", None)
    lines = ["**eca-notebook**", ""]
    if engine is not None:
        lines.append(f"- workspace: `{', '.join(str(p) for p in engine.workspace_folders)}`")
        for source in engine.loaded.sources:
            state = "applied" if source.applied else "not applied"
            where = f" `{source.path}`" if source.path else ""
            problem = f" — {source.problem}" if source.problem else ""
            lines.append(f"- config {source.name}{where}: {state}{problem}")
    lines.append(f"- model: `{client.default_model or '(none)'}` of {len(client.models)} available "
                 "(`%eca model` lists them)")
    lines.append(f"- agent: `{client.default_behavior}` (of {', '.join(client.behaviors)})")
    lines.append(f"- current chat: `{session.chat_id or '(new on the next prompt)'}`")
    lines.append(f"- output: {session.mode()}")
    tools = [t.get("name") for t in client.tools if not t.get("disabled")]
    lines.append(f"- tools: {', '.join(f'`{t}`' for t in tools)}")
    if session.mcp_servers:
        lines.append(f"- MCP servers: {len(session.mcp_servers)} (`%eca mcp`)")
    for message in client.messages:
        lines.append(f"- ⚠ {message.get('message')}")
    return "\n".join(lines)


def describe_mcp(session: NotebookSession) -> str:
    """``%eca mcp``: one row per MCP server (status, tool count, command or URL)."""
    engine = getattr(session.client, "engine", None)
    for plugin in getattr(engine, "plugins", ()):  # statuses sent before we subscribed: ask the MCP plug-in
        statuses = getattr(plugin, "statuses", None)
        if callable(statuses):
            try:
                for status in statuses():
                    session.mcp_servers.setdefault(str(status.get("name")), status)
            except Exception:
                log.debug("MCP statuses unavailable", exc_info=True)
    if not session.mcp_servers:
        return "No MCP servers (configure them under `mcpServers` in the ECA config)."
    lines = ["| server | status | tools | command / url |", "|---|---|---|---|"]
    for name, status in sorted(session.mcp_servers.items()):
        tools = status.get("tools") or []
        where = status.get("url") or " ".join([status.get("command") or "", *(status.get("args") or [])]).strip()
        lines.append(f"| {name} | {status.get('status')} | {len(tools)} | `{where}` |")
    return "\n".join(lines)


async def manage_mcp(client: EcaClient, arg: str) -> None:
    """``%eca mcp add [--workspace] <name> <command> [args…] | <url>`` and ``%eca mcp remove|enable|disable <name>``:
    the ``mcp/*`` requests, so the change is written to the config file that owns the server (engine/_mcp_admin.py)."""
    from ..protocol import McpAddServerParams, McpDisableServerParams, McpEnableServerParams, McpRemoveServerParams

    words = shlex.split(arg)
    action, rest = words[0], words[1:]
    workspace = "--workspace" in rest
    rest = [w for w in rest if w != "--workspace"]
    if not rest or (action == "add" and len(rest) < 2):
        usage = "add [--workspace] <name> <command> [args…] | <url>" if action == "add" else f"{action} <name>"
        print(f"%eca: usage: %eca mcp {usage}", file=sys.stderr)
        return
    name = rest[0]
    if action in ("enable", "disable"):
        note = McpEnableServerParams(name=name) if action == "enable" else McpDisableServerParams(name=name)
        await client.notify(f"mcp/{action}Server", note.dump())
        print(f"MCP server {name}: {action}d (see %eca mcp)")
        return
    if action == "remove":
        result = await client.request("mcp/removeServer", McpRemoveServerParams(name=name).dump()) or {}
    else:
        scope: Literal["global", "workspace"] = "workspace" if workspace else "global"
        target = rest[1]
        if "://" in target and len(rest) == 2:
            params = McpAddServerParams(name=name, url=target, scope=scope)
        else:
            params = McpAddServerParams(name=name, command=target, args=rest[2:], scope=scope)
        result = await client.request("mcp/addServer", params.dump()) or {}
    error = result.get("error")
    if error:
        print(f"%eca: {error.get('message')}", file=sys.stderr)
    else:
        print(f"MCP server {name}: {'removed' if action == 'remove' else 'added (starting; see %eca mcp)'}")


def _cell(value: Any) -> str:
    return str(value or "").replace("|", "\\|").replace("\n", " ")


async def _select(client: EcaClient, chat_id: str | None, kind: str, arg: str) -> None:
    """``%eca model [name]`` / ``%eca behavior [name]``: select one for this chat, or list them (the default bold)."""
    if arg:
        select = client.select_model if kind == "model" else client.select_behavior
        try:
            await select(arg, chat_id)
        except ValueError as exc:
            print(f"%eca: {exc}", file=sys.stderr)
            return None
        print(f"Model: {arg}" if kind == "model" else f"Agent: {client.default_behavior}")
        return None
    names, default = ((client.models, client.default_model) if kind == "model"
                      else (client.behaviors, client.default_behavior))
    listing = "\n".join(f"- **{n}** (selected)" if n == default else f"- {n}" for n in names)
    show_markdown(listing or ("No models available." if kind == "model" else "No agents available."))
    return None
