"""The engine's chat contents (``chat/contentReceived``) of one session as session-stream messages, and the state
they change (pending and applied patches, approvals, plan steps, the turn's text and tools).

Each content is folded first by the session's :class:`~eca_notebook.protocol.turn.TurnFold` (the one fold every
door reads), and the messages are made from what that step changed: a tool call's name, arguments, details, status
and output are the fold's :class:`~eca_notebook.protocol.turn.ToolCallState`; a :class:`Call` adds only what this
door names (its patch id and workspace-relative path).

Mapping (the contract's):

* assistant ``text`` → ``assistant.token`` with the turn's text so far;
* ``reasonStarted`` / ``reasonText`` and ``progress`` → ``assistant.thinking`` (``analyzing``; ``retrieving`` while a
  search tool runs, ``executing`` while another one does);
* ``toolCallRun`` → ``tool.execute`` started; with a file change, ``patch.proposed`` (``patch_`` + call id); when
  the call waits for the user, ``tool.request_approval`` (``req_`` + call id) or, for a shell command run by the
  client, ``command.request_approval`` (``cmd_`` + call id) — those are :class:`Ask`\\ s for the session;
* ``toolCalled`` → ``tool.execute`` completed / failed (and ``agent.retrieve.status`` after a search tool); a
  ``delete_file`` call (approved as ``tool.request_approval`` ``delete_file``, its ``patch.proposed`` a deletion diff
  to ``/dev/null``) reports the deletion in its result as ``file_changes``, in the spec's ``client.file_changes``
  shape (``{"type": "deleted", "file_path", "timestamp"}``);
  ``toolCallRejected`` → failed;
* assistant ``image`` (an MCP tool's picture) → ``assistant.image`` (``media_type``, ``data``: an extension);
* ``plan`` → ``assistant.thinking`` planning, then ``agent.plan``;
* a system ``Error: …`` text → the turn failed (``MODEL_ERROR``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ..protocol import (
    FileChangeDetails,
    ImageContent,
    JsonObject,
    PlanContent,
    ProgressContent,
    RetrievalDetails,
    UsageContent,
)
from ..protocol.turn import Change, Content, ToolCallState, TurnFold
from ._stream_schema import (
    AgentPlan,
    AgentRetrieveStatus,
    AssistantImage,
    AssistantThinking,
    AssistantToken,
    Hunk,
    PatchProposed,
    PlanStep,
    ServerMessage,
    SessionStateBody,
    ToolExecute,
)

__all__ = ["SEARCH_STAGES", "Ask", "Call", "SessionBook", "TurnRecord", "hunks_in_diff", "hunks_of", "relative",
           "working_directory"]

#: The retrieval tools and the stage each one reports.
SEARCH_STAGES: dict[str, Literal["symbol_search", "text_search", "vector_search", "reranking"]] = {
    "search_symbols": "symbol_search",
    "search_text": "text_search",
    "vector_search": "vector_search",
}
RESULT_CHARS = 64 * 1024  # of a tool's output in tool.execute's result (the model gets it whole)
_WAITING = "Waiting for tool call approval"


def relative(path: str, folders: list[Path]) -> str:
    """Workspace-relative (POSIX) when *path* is inside a folder, else as given."""
    p = Path(path)
    for folder in folders:
        try:
            return p.relative_to(folder).as_posix()
        except ValueError:
            continue
    return path


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def hunks_in_diff(diff: str, ids: list[str]) -> list[Hunk]:
    """The hunks of a unified diff's text, named *ids* in order (``h1``, ``h2`` … past the end of *ids*)."""
    hunks: list[Hunk] = []
    body: list[str] = []
    header: re.Match[str] | None = None

    def close() -> None:
        if header is not None:
            n = len(hunks)
            hunks.append(Hunk(old_start=int(header[1]), old_lines=int(header[2] or 1), new_start=int(header[3]),
                              new_lines=int(header[4] or 1), content="".join(body),
                              id=ids[n] if n < len(ids) else f"h{n + 1}"))

    for line in diff.splitlines(keepends=True):
        match = _HUNK_HEADER.match(line)
        if match is not None:
            close()
            header, body = match, [line]
        elif header is not None:
            body.append(line)
    close()
    return hunks


def hunks_of(details: FileChangeDetails) -> list[Hunk]:
    """The spec's hunks of a ``fileChange`` (the engine's ids kept: ``h1``, ``h2`` …)."""
    return [Hunk(old_start=h.old_start, old_lines=h.old_lines, new_start=h.new_start, new_lines=h.new_lines,
                 content=h.text, id=h.id) for h in details.hunks or []]


@dataclass
class Call:
    """One tool call of the session, as announced by its ``toolCallRun``."""

    id: str
    name: str
    args: JsonObject
    details: JsonObject | None = None
    patch_id: str | None = None
    file_path: str | None = None
    #: The fold's state of the call (status, output, details…); None for a call this door made up itself.
    state: ToolCallState | None = None


@dataclass
class Ask:
    """A call waiting for the user: the request the client answers, and the engine's call id."""

    request_id: str
    call_id: str
    kind: Literal["file", "tool", "command"]
    call: Call
    risk: Literal["low", "medium", "high"] = "medium"
    reason: str = ""
    #: The engine chat the call waits in, when not the session's own: a subagent's (its parent is the session's).
    chat_id: str | None = None


@dataclass
class TurnRecord:
    """What one turn said and did, for its ``assistant.message_final``."""

    text: str = ""
    system_text: str = ""
    tokens_used: int = 0
    tools_used: list[str] = field(default_factory=list)
    files_modified: set[str] = field(default_factory=set)
    error: str | None = None
    cancelled: bool = False
    approve_all: bool = False  # the user answered scope "all": the turn's later changes are approved too


@dataclass
class SessionBook:
    """The session's state and the translation of its chat's contents."""

    folders: list[Path]
    pending_patches: dict[str, str] = field(default_factory=dict)  # patch id → workspace-relative path
    applied_patches: list[str] = field(default_factory=list)
    current_step: int | None = None
    total_steps: int | None = None
    calls: dict[str, Call] = field(default_factory=dict)
    turn: TurnRecord | None = None
    #: The chat's fold: every content is folded there first, and translated from what it changed.
    fold: TurnFold = field(default_factory=TurnFold)

    def state(self, pending_approvals: list[str]) -> SessionStateBody:
        return SessionStateBody(pending_patches=list(self.pending_patches), applied_patches=list(self.applied_patches),
                                pending_approvals=pending_approvals, current_step=self.current_step,
                                total_steps=self.total_steps)

    def applied(self, patch_id: str) -> None:
        self.pending_patches.pop(patch_id, None)
        if patch_id not in self.applied_patches:
            self.applied_patches.append(patch_id)

    # -- contents ------------------------------------------------------------------------------------------------

    def translate(self, role: str, content: JsonObject | Content) -> tuple[list[ServerMessage], Ask | None, bool]:
        """Messages for one content, a call to ask the user about, and whether the session state changed."""
        return self.apply(self.fold.step(role, content))

    def apply(self, change: Change) -> tuple[list[ServerMessage], Ask | None, bool]:
        """The messages of one step of :attr:`fold` (or of a subagent's fold: :meth:`TurnFold.step_subagent`)."""
        kind, content, role = change.kind, change.content, change.role
        turn = self.turn
        if kind == "text":
            text = change.text
            if role == "assistant" and text:
                if turn is not None:
                    turn.text += text
                return [AssistantToken(token=text, cumulative_text=turn.text if turn is not None else text)], None, \
                    False
            if role == "system" and turn is not None and text.strip():
                if text.startswith("Error:"):
                    turn.error = text[len("Error:"):].strip()
                else:
                    turn.system_text += text
            return [], None, False
        if isinstance(content, ImageContent):  # the user's own images are on the client's screen already
            if role == "assistant" and content.media_type and content.base64:
                return [AssistantImage(media_type=content.media_type, data=content.base64)], None, False
            return [], None, False
        if kind == "reasonStarted":
            return [AssistantThinking(phase="analyzing", message="Thinking…")], None, False
        if kind == "reasonText":
            text = change.text
            return ([AssistantThinking(phase="analyzing", message=text)] if text else []), None, False
        if isinstance(content, ProgressContent):
            return self._progress(content), None, False
        if isinstance(content, UsageContent):
            if turn is not None:
                turn.tokens_used += (content.message_input_tokens or 0) + (content.message_output_tokens or 0)
            return [], None, False
        if isinstance(content, PlanContent):
            return self._plan(content), None, True
        state = change.tool
        if state is None or kind == "toolCallPrepare":
            return [], None, False
        if kind == "toolCallRun":
            return self._run(state)
        if kind == "toolCallRunning":  # approved: its details are now what will be written (the chosen hunks)
            subagent = state.subagent
            if subagent is not None and subagent.step:  # a subagent's step: nested progress
                steps = f"{subagent.step}/{subagent.max_steps}" if subagent.max_steps else subagent.step
                label = state.summary or subagent.agent_name or "subagent"
                return [AssistantThinking(phase="executing", message=f"{label}: step {steps}")], None, False
            call = self.calls.get(state.id)
            if call is not None and call.state is state and isinstance(state.detail, FileChangeDetails):
                call.details = state.details
            return [], None, False
        if kind == "toolCalled":
            return self._called(state)
        if kind == "toolCallRejected":
            return self._rejected(state)
        return [], None, False

    def _progress(self, content: ProgressContent) -> list[ServerMessage]:
        if content.state == "finished":
            return []
        text = content.text
        if text == "Calling tool":
            last = next(reversed(self.calls.values()), None)
            phase: Literal["retrieving", "executing"] = (
                "retrieving" if last is not None and last.name in SEARCH_STAGES else "executing")
            return [AssistantThinking(phase=phase, message=text)]
        if text == _WAITING:
            return []  # the approval request says it
        return [AssistantThinking(phase="analyzing", message=text or "Thinking…")]

    def _run(self, state: ToolCallState) -> tuple[list[ServerMessage], Ask | None, bool]:
        name = state.name
        args = state.arguments if isinstance(state.arguments, dict) else {}
        call = Call(state.id, name, dict(args), state.details, state=state)
        self.calls[state.id] = call
        if self.turn is not None and name not in self.turn.tools_used:
            self.turn.tools_used.append(name)
        phase: Literal["retrieving", "executing"] = "retrieving" if name in SEARCH_STAGES else "executing"
        out: list[ServerMessage] = [
            AssistantThinking(phase=phase, message=state.summary or name),
            ToolExecute(tool_name=name, args=call.args, status="started", result=None),
        ]
        manual = state.manual_approval
        changed = False
        detail = state.detail
        if isinstance(detail, FileChangeDetails) and detail.path:
            call.patch_id = f"patch_{state.id}"
            call.file_path = relative(detail.path, self.folders)
            out.append(self.patch(call, detail, requires_approval=manual))
            self.pending_patches[call.patch_id] = call.file_path
            changed = True
        ask = None
        if manual:
            risk: JsonObject = state.risk or {}
            given = risk.get("level")
            level: Literal["low", "medium", "high"] = (
                "low" if given == "low" else "high" if given == "high" else "medium")
            rationale = detail.rationale if isinstance(detail, FileChangeDetails) else None
            reason = str(rationale or risk.get("reason") or state.summary or name)
            kind: Literal["file", "tool", "command"] = (
                "file" if call.patch_id else "command" if name == "shell_command" else "tool")
            ask = Ask(request_id=f"req_{state.id}", call_id=state.id, kind=kind, call=call, risk=level,
                      reason=reason)
        return out, ask, changed

    def patch(self, call: Call, details: FileChangeDetails, *, requires_approval: bool) -> PatchProposed:
        return PatchProposed(patch_id=call.patch_id or f"patch_{call.id}", file_path=call.file_path or "",
                             diff=details.diff, rationale=details.rationale,
                             acceptance_criteria=list(details.acceptance_criteria or []),
                             requires_approval=requires_approval, hunks=hunks_of(details))

    def _call(self, state: ToolCallState) -> Call:
        call = self.calls.get(state.id)
        if call is None or (call.state is not None and call.state is not state):  # never announced: a replay's
            args = state.arguments
            call = Call(state.id, state.name, dict(args) if isinstance(args, dict) else {}, state=state)
            self.calls[state.id] = call
        return call

    def _called(self, state: ToolCallState) -> tuple[list[ServerMessage], Ask | None, bool]:
        call = self._call(state)
        failed = state.status == "failed"
        text = state.output or ""
        result: JsonObject = {"output": text[:RESULT_CHARS]}
        if len(text) > RESULT_CHARS:
            result["truncated"] = True
        if failed:
            result["error"] = text[:2000]
        if call.name == "delete_file" and call.file_path and not failed:
            result["file_changes"] = [{"type": "deleted", "file_path": call.file_path,
                                       "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}]
        out: list[ServerMessage] = [ToolExecute(tool_name=call.name, args=call.args,
                                                status="failed" if failed else "completed", result=result)]
        changed = False
        if call.patch_id is not None and call.patch_id in self.pending_patches:
            if failed:
                self.pending_patches.pop(call.patch_id, None)
            else:
                self.applied(call.patch_id)
            changed = True
        if call.file_path and not failed and self.turn is not None:
            self.turn.files_modified.add(call.file_path)
        if call.name in SEARCH_STAGES:
            out.append(self._retrieval(call, state, text, failed))
        return out, None, changed

    def _retrieval(self, call: Call, state: ToolCallState, text: str, failed: bool) -> AgentRetrieveStatus:
        detail = state.detail
        if isinstance(detail, RetrievalDetails):
            count = detail.results_count
            return AgentRetrieveStatus(stage=detail.stage, results_count=count if isinstance(count, int) else 0,
                                       message=detail.message or f"{call.name}: {count} result(s)")
        count = 0 if failed else len([line for line in text.splitlines() if line.strip()])
        return AgentRetrieveStatus(stage=SEARCH_STAGES[call.name], results_count=count,
                                   message=text.splitlines()[0][:200] if failed and text else f"{count} result(s)")

    def _rejected(self, state: ToolCallState) -> tuple[list[ServerMessage], Ask | None, bool]:
        call = self._call(state)
        why = "denied by the configuration" if state.reason == "user-config" else "rejected"
        changed = call.patch_id is not None and self.pending_patches.pop(call.patch_id, None) is not None
        return [ToolExecute(tool_name=call.name, args=call.args, status="failed",
                            result={"output": f"The tool call was {why}.", "error": why})], None, changed

    def _plan(self, plan: PlanContent) -> list[ServerMessage]:
        out_steps = [PlanStep(step_number=i, description=s.description, files_involved=list(s.files or []))
                     for i, s in enumerate(plan.steps, start=1)]
        statuses = [s.status for s in plan.steps]
        self.total_steps = len(statuses) or None
        if "in_progress" in statuses:
            self.current_step = statuses.index("in_progress") + 1
        elif "pending" in statuses:
            self.current_step = statuses.index("pending") + 1
        else:
            self.current_step = len(statuses) or None
        explanation = plan.explanation
        return [AssistantThinking(phase="planning", message=str(explanation or "Planning")),
                AgentPlan(steps=out_steps, rationale=str(explanation) if explanation else None)]


def working_directory(call: Call, folders: list[Path]) -> str:
    """The absolute directory a shell call runs in (its ``working_directory``, else the workspace root)."""
    root = folders[0] if folders else Path.cwd()
    raw = call.args.get("working_directory")
    if not isinstance(raw, str) or not raw.strip():
        return str(root)
    path = Path(os.path.expanduser(raw))
    return str(path if path.is_absolute() else root / path)
