"""One tool call, from the model's request to the result it gets back — with the user in control.

Content sequence for one call (eca-compat-notes "Order of streamed content"):
``toolCallRun {arguments, manualApproval, summary, details}`` → (manual: progress "Waiting for tool call approval",
wait for ``chat/toolCallApprove|Reject``) → ``toolCallRunning`` → progress "Calling tool" →
``toolCalled {outputs, error, totalTimeMs}``, or ``toolCallRejected {reason}``.

Every content of one call — from the ``toolCallPrepare`` chunks the turn streams to the final ``toolCalled`` — is
written by one :class:`ToolCallContents`, so they all name the same origin and server (an MCP tool's prepare says
``mcp`` and its server, like the rest of the call).

Whatever happens — bad arguments, an unknown tool, a deny rule, a rejection, a stop while waiting — the model gets
a tool result for every call it made, so the history stays valid for every provider API and the next prompt works.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from pydantic import TypeAdapter, ValidationError

from ..._redact import redact
from ..._text import strip_controls, visible
from ...protocol import (
    FileChangeDetails,
    ImageContent,
    JsonObject,
    RetrievalDetails,
    ShellCommandDetails,
    SubagentDetails,
    TextContent,
    ToolCallDetails,
    ToolCalledContent,
    ToolCallOutput,
    ToolCallPrepareChunk,
    ToolCallRejectedContent,
    ToolCallRisk,
    ToolCallRunContent,
    ToolCallRunningContent,
    WireContent,
)
from ...providers.base import ToolCall
from ...tools.base import CURRENT_TOOL_CALL, Prepared, Tool, ToolContext, ToolResult, llm_name, tool_origin, tool_server
from ..workspace import HookOutcome
from ._approval import ApprovalRequest, SessionApprovals, decide
from ._notebooks import UndoLog
from ._risk import assess_risk

log = logging.getLogger(__name__)

NATIVE_PREFIX = "eca__"
NATIVE_SERVER = "eca"


def llm_tool_name(tool: Tool) -> str:
    return llm_name(tool)


def strip_prefix(name: str) -> str:
    """The tool's own name from what the model called: ``eca__read_file`` / ``github__search`` → after ``__``."""
    if "__" in name:
        return name.split("__", 1)[1]
    if name.startswith("eca_"):
        return name[len("eca_"):]
    return name


def find_tool(tools: dict[str, Tool], called: str) -> Tool | None:
    """Exact LLM name first; then the forms models and older configs use for native tools (``read_file``,
    ``eca_read_file``)."""
    tool = tools.get(called)
    if tool is None and "__" not in called:
        tool = tools.get(NATIVE_PREFIX + strip_prefix(called))
    return tool


EmitContent = Callable[[str, WireContent], None]
#: Runs a chat's hooks of one event (``preToolCall``, ``postToolCall``) with the event's data; None: none configured.
RunHooks = Callable[[str, JsonObject], Awaitable[HookOutcome | None]]


class _Ids(TypedDict):
    """What names a call in each of its contents."""

    origin: Literal["mcp", "native"]
    id: str
    name: str
    server: str


class _RunFields(TypedDict):
    """What every content of a prepared call carries besides its arguments."""

    summary: str | None
    details: JsonObject | None
    risk: ToolCallRisk


class ToolCallContents:
    """Writes every content of one tool call, with the call's identity — id, name, origin, server — resolved once
    from the tool it names (an unknown tool is reported as a native ``eca`` one)."""

    def __init__(self, call_id: str, called: str, tool: Tool | None, emit: EmitContent) -> None:
        self.id = call_id
        # the tool's own name (an MCP tool's as its server spells it), not the provider-safe one the model called
        self.name = tool.name if tool is not None else strip_prefix(called)
        self.origin: Literal["mcp", "native"] = "mcp" if tool is not None and tool_origin(tool) == "mcp" else "native"
        self.server = tool_server(tool) if tool is not None else NATIVE_SERVER
        #: The early revision's ``manualApproval`` on ``toolCallPrepare`` (eca-protocol-early.md): whether a call of
        #: this tool will ask, judged from the tool alone — its arguments are still streaming. The runner sets it;
        #: ``toolCallRun`` carries the real decision. Sent to every client (newer ones ignore it), as the specs'
        #: README asks for fields only the early revision has.
        self.manual_approval = False
        self._emit = emit

    def prepare(self, arguments_text: str) -> None:
        """A chunk of the arguments as the model streams them (the hot path: a plain dict, no model)."""
        chunk: ToolCallPrepareChunk = {"type": "toolCallPrepare", "origin": self.origin, "id": self.id,
                                       "name": self.name, "server": self.server, "argumentsText": arguments_text,
                                       "manualApproval": self.manual_approval}
        self._emit("assistant", chunk)

    def _ids(self) -> _Ids:
        return {"origin": self.origin, "id": self.id, "name": self.name, "server": self.server}

    def run(self, arguments: JsonObject, *, manual: bool, summary: str | None = None,
            details: Any = None, risk: ToolCallRisk | None = None) -> None:
        """The call is about to run (``manual``: the user is asked first; ``risk``: the engine's assessment, carried
        by every content of the call so a replayed chat still shows it)."""
        self._emit("assistant", ToolCallRunContent(**self._ids(), arguments=arguments, manual_approval=manual,
                                                   summary=summary, details=_details(details), risk=risk))

    def running(self, arguments: JsonObject, *, summary: str | None = None, details: Any = None,
                risk: ToolCallRisk | None = None) -> None:
        """The call is running."""
        self._emit("assistant", ToolCallRunningContent(**self._ids(), arguments=arguments, summary=summary,
                                                       details=_details(details), risk=risk))

    def called(self, arguments: JsonObject, output: str, *, error: bool, total_time_ms: int,
               summary: str | None = None, details: Any = None, risk: ToolCallRisk | None = None) -> None:
        """The call finished: its output (both the newer ``text`` and the early ``content`` are sent) — without terminal
        escape sequences, which a file or file name quoted in it may carry (``strip_controls``)."""
        output = strip_controls(output)
        self._emit("assistant", ToolCalledContent(
            **self._ids(), arguments=arguments, error=error, total_time_ms=total_time_ms,
            outputs=[ToolCallOutput(text=output, content=output)], summary=summary, details=_details(details),
            risk=risk))

    def published(self, contents: list[Any]) -> None:
        """What a finished call publishes besides its result (``update_plan``'s ``plan``), sent once, after
        ``toolCalled``: recorded with the chat like every content, so ``chat/open`` replays it."""
        for content in contents:
            self._emit("assistant", content)

    def rejected(self, arguments: JsonObject, reason: str, *, summary: str | None = None,
                 details: Any = None, risk: ToolCallRisk | None = None) -> None:
        """The call was not run: ``user-choice`` (the user) or ``user-config`` (a deny rule)."""
        self._emit("assistant", ToolCallRejectedContent(**self._ids(), arguments=arguments, reason=reason,
                                                        summary=summary, details=_details(details), risk=risk))


_DETAILS: TypeAdapter[FileChangeDetails | RetrievalDetails | SubagentDetails | ShellCommandDetails] = \
    TypeAdapter(ToolCallDetails)


def _details(details: Any) -> FileChangeDetails | RetrievalDetails | SubagentDetails | ShellCommandDetails | None:
    """A tool's details as the protocol model (tools build them as wire dicts or models)."""
    if details is None or isinstance(details, (FileChangeDetails, RetrievalDetails, SubagentDetails)):
        return details
    try:
        return _DETAILS.validate_python(details)
    except ValidationError:  # a tool's off-spec details must not fail its call: the call is shown without them
        log.warning("tool call details dropped: not a fileChange, retrieval or subagent object: %r", details)
        return None


@dataclass(frozen=True)
class Answer:
    """The user's answer to a waiting call: approved or not, remembered for the session (``save="session"``), and
    — for a change split into hunks — which hunks to apply (None: all of them)."""

    approved: bool
    save: str | None = None
    hunks: list[str] | None = None


@dataclass
class PendingApproval:
    """A call waiting for the user. Lives as long as the user needs: there is no timeout on purpose."""

    chat_id: str
    call_id: str
    request: ApprovalRequest
    future: asyncio.Future[Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def answer_approval(pending: Mapping[tuple[str, str], PendingApproval], chat_id: str, call_id: str,
                    answer: Answer) -> bool:
    """Resolve a waiting call of ``pending`` (by chat id, call id); an unknown or already answered id is ignored
    (logged), never an error."""
    waiting = pending.get((chat_id, call_id))
    if waiting is None or waiting.future.done():
        log.info("%s for unknown tool call %s in chat %s ignored", "approval" if answer.approved else "rejection",
                 call_id, chat_id)
        return False
    waiting.future.set_result(answer)
    return True


class ToolCallRunner:
    """Runs the calls of one round for one chat; shared state (approvals) belongs to the engine."""

    def __init__(
        self,
        *,
        chat_id: str,
        tools: dict[str, Tool],
        context: ToolContext,
        approval_config: Any,
        session: SessionApprovals,
        pending: dict[tuple[str, str], PendingApproval],
        emit: EmitContent,
        progress: Callable[[str, str], None],
        unavailable: dict[str, str] | None = None,
        undo_log: UndoLog | None = None,
        hooks: RunHooks | None = None,
        trusted: Callable[[], bool] | None = None,
    ) -> None:
        self.hooks = hooks
        # the chat's trust mode, read at each call (chat/update applies to the running prompt): an "ask" from the
        # rules runs without asking — never a deny, an outside-workspace path, a must-ask command or a hook's ask
        self.trusted = trusted
        self.undo_log = undo_log
        self.unavailable = unavailable or {}
        self.chat_id = chat_id
        self.tools = tools
        self.context = context
        self.approval_config = approval_config
        self.session = session
        self.pending = pending
        self.emit = emit
        self.progress = progress
        self._contents: dict[str, ToolCallContents] = {}

    def contents(self, call_id: str, called: str) -> ToolCallContents:
        """The one writer of every content of this call (the turn writes its prepare chunks through it too)."""
        writer = self._contents.get(call_id)
        if writer is None:
            tool = find_tool(self.tools, called)
            writer = self._contents[call_id] = ToolCallContents(call_id, called, tool, self.emit)
            if tool is not None:  # what the tool's calls get before their arguments are known (early revision)
                request = ApprovalRequest(tool=tool.name, server=tool_server(tool), args={})
                writer.manual_approval = decide(request, self.approval_config, self.session).decision == "ask"
        return writer

    async def run(self, call: ToolCall) -> ToolResult:
        """Handle one call end to end; returns what the model will see — redacted, like everything shown (a tool
        that prints a config file or ``env`` must not hand a key to the model), and without terminal escape
        sequences (an OSC 8 link or a colour code in a file name must not reach the model disguised)."""
        token = CURRENT_TOOL_CALL.set(call.id)  # a door's FileAccess names the call a write belongs to
        try:
            result = await self._run(call)
        finally:
            CURRENT_TOOL_CALL.reset(token)
        clean = strip_controls(redact(result.output))
        return result if clean == result.output else dataclasses.replace(result, output=clean)

    async def _run(self, call: ToolCall) -> ToolResult:
        out = self.contents(call.id, call.name)
        name = out.name
        args, problem = _parse_arguments(call.arguments)
        tool = find_tool(self.tools, call.name)
        if tool is None:
            problem = (problem or self.unavailable.get(name)
                       or f"unknown tool '{call.name}'. Available tools: " + ", ".join(sorted(self.tools)))
        prepared: Prepared | None = None
        # this call's own context: what it writes can name the chat and the call (provenance, undo)
        context = dataclasses.replace(self.context, chat_id=self.chat_id, tool_call_id=call.id,
                                      progress=lambda text: self.progress("running", text))
        if problem is None and tool is not None:
            try:
                prepared = tool.prepare(args, context)
                if inspect.isawaitable(prepared):
                    prepared = await prepared
            except Exception as exc:  # a tool bug must not end the turn
                log.exception("prepare failed for %s", name)
                problem = f"{name}: internal error while preparing: {exc}"
            else:
                problem = prepared.error
        if problem is not None or tool is None or prepared is None:
            return self._fail_early(out, args, problem or "invalid tool call")

        shown_args = prepared.args
        risk = assess_risk(tool, prepared, context)
        risk = risk.model_copy(update={"reason": visible(risk.reason)})  # it quotes paths and command words
        run_fields: _RunFields = {"summary": visible(prepared.summary), "details": prepared.details, "risk": risk}
        request = ApprovalRequest(tool=tool.name, server=tool_server(tool), args=prepared.args,
                                  outside_workspace=prepared.outside_workspace,
                                  must_ask=getattr(prepared, "must_ask", None), risk=risk)
        if isinstance(prepared.details, dict) and prepared.details.get("type") == "shellCommand":
            self.session.describe_shell(request, prepared.details)  # approvalKey / remembered, per command
        verdict = decide(request, self.approval_config, self.session)
        if verdict.decision == "deny":
            out.run(shown_args, manual=False, **run_fields)
            out.rejected(shown_args, "user-config", **run_fields)
            return ToolResult(output=f"This tool call was denied by the user's configuration ({verdict.reason}). "
                                     "Do not retry it; find another way or ask the user.", error=True)

        decision = verdict.decision
        if (decision == "ask" and self.trusted is not None and self.trusted() and not request.outside_workspace
                and request.must_ask is None):
            decision = "allow"
        hook_data: JsonObject = {"tool_name": tool.name, "server": tool_server(tool), "tool_input": args,
                                 "tool_call_id": call.id}
        hooked = await self.hooks("preToolCall", {**hook_data, "approval": decision}) if self.hooks else None
        if hooked is not None:  # the user's preToolCall hooks (_hooks.py): reject, rewrite the arguments, or ask
            if hooked.blocked or hooked.approval == "deny" or hooked.stopped_by:
                return self._hook_rejected(out, shown_args, hooked, run_fields)
            if hooked.updated_input:
                args = {**args, **hooked.updated_input}
                hook_data["tool_input"] = args
                prepared = tool.prepare(args, context)
                if inspect.isawaitable(prepared):
                    prepared = await prepared
                if prepared.error:
                    return self._fail_early(out, args, prepared.error)
                shown_args = prepared.args
                run_fields = {"summary": visible(prepared.summary), "details": prepared.details, "risk": risk}
            if hooked.approval == "ask":
                decision = "ask"
        manual = decision == "ask"
        out.run(shown_args, manual=manual, **run_fields)
        if manual:
            answer = await self._wait_for_user(call, request, out, shown_args, run_fields)
            if not answer.approved:
                return ToolResult(output="The user rejected this tool call. Do not retry it unless the user asks.",
                                  error=True)
            if answer.hunks is not None:
                prepared = _select_hunks(tool, prepared, answer.hunks, context)
                run_fields = {"summary": visible(prepared.summary), "details": prepared.details, "risk": risk}

        out.running(shown_args, **run_fields)
        self.progress("running", "Calling tool")
        started = time.monotonic()
        try:
            result = await tool.run(prepared, context)
        except asyncio.CancelledError:
            elapsed = int((time.monotonic() - started) * 1000)
            out.called(shown_args, "Stopped by the user.", error=True, total_time_ms=elapsed, **run_fields)
            raise
        except Exception as exc:
            log.exception("tool %s failed", name)
            result = ToolResult(output=f"{name} failed: {type(exc).__name__}: {exc}", error=True)
        elapsed = int((time.monotonic() - started) * 1000)
        if result.undo is not None and self.undo_log is not None:
            self.undo_log.add(self.chat_id, call.id, result.undo)
        if self.hooks is not None:
            result = await self._post_hooks(hook_data, result)
        out.called(shown_args, result.output, error=result.error, total_time_ms=elapsed,
                   summary=visible(prepared.summary), details=result.details or prepared.details, risk=risk)
        if not result.error:
            out.published(result.contents)
        return result

    def _hook_rejected(self, out: ToolCallContents, args: JsonObject, outcome: HookOutcome,
                       run_fields: _RunFields) -> ToolResult:
        """A preToolCall hook said no (exit 2, ``approval: "deny"`` or ``continue: false``): the card is rejected
        (``hook-rejected``, the reference's code), the user is told which hook and why, and so is the model — except
        for ``continue: false``, whose ``stopReason`` is for the user only (as the reference)."""
        out.run(args, manual=False, **run_fields)
        out.rejected(args, "hook-rejected", **run_fields)
        if outcome.blocked:
            name, why = outcome.blocked_by, outcome.block_reason
        elif outcome.approval == "deny":
            name, why = next((r.name for r in outcome.results if r.effects.get("approval") == "deny"), "?"), \
                "\n".join(outcome.additional_context)
        else:
            name, why = outcome.stopped_by, outcome.stop_reason
        self.emit("system", TextContent(text=f"Tool call rejected by hook '{name}'" + (f": {why}" if why else ".")))
        if outcome.stopped_by and not outcome.blocked and outcome.approval != "deny":
            why = ""
        return ToolResult(output=f"This tool call was rejected by the user's hook '{name}' and did not run."
                                 + (f" Reason: {why}" if why else "") + " Do not retry it unchanged.", error=True)

    async def _post_hooks(self, data: JsonObject, result: ToolResult) -> ToolResult:
        """The user's postToolCall hooks see the result; they may replace it (exit 2 or ``replacedOutput``) or add
        context for the model."""
        assert self.hooks is not None
        outcome = await self.hooks("postToolCall", {**data, "tool_response": redact(result.output),
                                                    "error": result.error})
        if outcome is None:
            return result
        output = result.output
        if outcome.blocked:
            output = outcome.block_reason or "[Tool output hidden by hook]"
        elif outcome.replaced_output is not None:
            output = outcome.replaced_output
        for context in outcome.additional_context:
            output += f"\n\n<additionalContext>\n{context}\n</additionalContext>"
        if outcome.blocked or outcome.replaced_output is not None:  # a hidden or replaced result's images go too
            return dataclasses.replace(result, output=output, images=[],
                                       contents=[c for c in result.contents if not isinstance(c, ImageContent)])
        return result if output == result.output else dataclasses.replace(result, output=output)

    def not_run(self, call: ToolCall, reason: str) -> ToolResult:
        """A call the turn decided not to run (the same call with the same outcome again): its card is finished as
        failed with ``reason``, like a call that failed before running."""
        args, _ = _parse_arguments(call.arguments)
        return self._fail_early(self.contents(call.id, call.name), args, reason)

    def _fail_early(self, out: ToolCallContents, args: Any, problem: str) -> ToolResult:
        shown = args if isinstance(args, dict) else {}
        out.run(shown, manual=False)
        out.called(shown, problem, error=True, total_time_ms=0)
        return ToolResult(output=problem, error=True)

    async def _wait_for_user(self, call: ToolCall, request: ApprovalRequest, out: ToolCallContents, args: Any,
                             run_fields: _RunFields) -> Answer:
        waiting = PendingApproval(self.chat_id, call.id, request)
        key = (self.chat_id, call.id)
        self.pending[key] = waiting
        self.progress("running", "Waiting for tool call approval")
        try:
            answer = await waiting.future
        except asyncio.CancelledError:
            # chat/promptStop while waiting: the call is rejected and the turn ends cleanly
            out.rejected(args, "user-choice", **run_fields)
            raise
        finally:
            self.pending.pop(key, None)
        hunks = (run_fields["details"] or {}).get("hunks")
        offered = {h.get("id") for h in hunks if isinstance(h, dict)} if isinstance(hunks, list) else set()
        if answer.hunks is not None and not set(answer.hunks) & offered and (offered or not answer.hunks):
            answer = Answer(False)  # no hunk of this change chosen: nothing to apply, which is a rejection
        if not answer.approved:
            out.rejected(args, "user-choice", **run_fields)
            return answer
        if answer.save == "session":
            self.session.remember(request)
        return answer


def _select_hunks(tool: Tool, prepared: Prepared, hunks: list[str], context: ToolContext) -> Prepared:
    """The prepared call narrowed to the hunks the user chose, when the tool can do that (it offered
    ``details.hunks``); otherwise the call as it was (a client sent hunk ids the change never had)."""
    select = getattr(tool, "select_hunks", None)
    offered = (prepared.details or {}).get("hunks")
    if select is None or not isinstance(offered, list) or not offered \
            or {h.get("id") for h in offered if isinstance(h, dict)} <= set(hunks):
        return prepared
    narrowed: Prepared = select(prepared, hunks, context)
    return narrowed


def _parse_arguments(text: str) -> tuple[JsonObject, str | None]:
    if not text or not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"the tool arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    if not isinstance(value, dict):
        return {}, "the tool arguments must be a JSON object"
    return value, None
