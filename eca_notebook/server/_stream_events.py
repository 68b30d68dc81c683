"""The engine's chat contents (``chat/contentReceived``) of one session as session-stream messages, and the state
they change (pending and applied patches, approvals, plan steps, the turn's text and tools).

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
from typing import Any, Literal

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


def hunks_of(details: dict[str, Any]) -> list[Hunk]:
    """The spec's hunks of a ``fileChange`` (the engine's ids kept: ``h1``, ``h2`` …)."""
    return [Hunk(old_start=h["oldStart"], old_lines=h["oldLines"], new_start=h["newStart"], new_lines=h["newLines"],
                 content=h.get("text") or "", id=h["id"]) for h in details.get("hunks") or []]


@dataclass
class Call:
    """One tool call of the session, as announced by its ``toolCallRun``."""

    id: str
    name: str
    args: dict[str, Any]
    details: dict[str, Any] | None = None
    patch_id: str | None = None
    file_path: str | None = None


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

    def state(self, pending_approvals: list[str]) -> SessionStateBody:
        return SessionStateBody(pending_patches=list(self.pending_patches), applied_patches=list(self.applied_patches),
                                pending_approvals=pending_approvals, current_step=self.current_step,
                                total_steps=self.total_steps)

    def applied(self, patch_id: str) -> None:
        self.pending_patches.pop(patch_id, None)
        if patch_id not in self.applied_patches:
            self.applied_patches.append(patch_id)

    # -- contents ------------------------------------------------------------------------------------------------

    def translate(self, role: str, content: dict[str, Any]) -> tuple[list[ServerMessage], Ask | None, bool]:
        """Messages for one content, a call to ask the user about, and whether the session state changed."""
        kind = content.get("type")
        turn = self.turn
        if kind == "text":
            text = str(content.get("text") or "")
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
        if kind == "image":  # the user's own images are on the client's screen already
            media_type, data = content.get("mediaType"), content.get("base64")
            if role == "assistant" and isinstance(media_type, str) and isinstance(data, str) and data:
                return [AssistantImage(media_type=media_type, data=data)], None, False
            return [], None, False
        if kind == "reasonStarted":
            return [AssistantThinking(phase="analyzing", message="Thinking…")], None, False
        if kind == "reasonText":
            text = str(content.get("text") or "")
            return ([AssistantThinking(phase="analyzing", message=text)] if text else []), None, False
        if kind == "progress":
            return self._progress(content), None, False
        if kind == "usage":
            if turn is not None:
                turn.tokens_used += int(content.get("messageInputTokens") or 0) + int(
                    content.get("messageOutputTokens") or 0)
            return [], None, False
        if kind == "toolCallRun":
            return self._run(content)
        if kind == "toolCallRunning":  # approved: its details are now what will be written (the chosen hunks)
            details = _dict(content.get("details"))
            if details.get("type") == "subagent" and details.get("step"):  # a subagent's step: nested progress
                steps = f"{details['step']}/{details['maxSteps']}" if details.get("maxSteps") else details["step"]
                label = content.get("summary") or details.get("agentName") or "subagent"
                return [AssistantThinking(phase="executing", message=f"{label}: step {steps}")], None, False
            call = self.calls.get(str(content.get("id") or ""))
            if call is not None and details.get("type") == "fileChange":
                call.details = details
            return [], None, False
        if kind == "toolCalled":
            return self._called(content)
        if kind == "toolCallRejected":
            return self._rejected(content)
        if kind == "plan":
            return self._plan(content), None, True
        return [], None, False

    def _progress(self, content: dict[str, Any]) -> list[ServerMessage]:
        if content.get("state") == "finished":
            return []
        text = str(content.get("text") or "")
        if text == "Calling tool":
            last = next(reversed(self.calls.values()), None)
            phase: Literal["retrieving", "executing"] = (
                "retrieving" if last is not None and last.name in SEARCH_STAGES else "executing")
            return [AssistantThinking(phase=phase, message=text)]
        if text == _WAITING:
            return []  # the approval request says it
        return [AssistantThinking(phase="analyzing", message=text or "Thinking…")]

    def _run(self, content: dict[str, Any]) -> tuple[list[ServerMessage], Ask | None, bool]:
        call_id = str(content.get("id") or "")
        name = str(content.get("name") or "tool")
        args = content.get("arguments") if isinstance(content.get("arguments"), dict) else {}
        details = content.get("details") if isinstance(content.get("details"), dict) else None
        call = Call(call_id, name, dict(args or {}), details)
        self.calls[call_id] = call
        if self.turn is not None and name not in self.turn.tools_used:
            self.turn.tools_used.append(name)
        phase: Literal["retrieving", "executing"] = "retrieving" if name in SEARCH_STAGES else "executing"
        out: list[ServerMessage] = [
            AssistantThinking(phase=phase, message=str(content.get("summary") or name)),
            ToolExecute(tool_name=name, args=call.args, status="started", result=None),
        ]
        manual = bool(content.get("manualApproval"))
        changed = False
        if details is not None and details.get("type") == "fileChange" and details.get("path"):
            call.patch_id = f"patch_{call_id}"
            call.file_path = relative(str(details["path"]), self.folders)
            out.append(self.patch(call, details, requires_approval=manual))
            self.pending_patches[call.patch_id] = call.file_path
            changed = True
        ask = None
        if manual:
            risk: dict[str, Any] = _dict(content.get("risk"))
            level: Literal["low", "medium", "high"] = risk["level"] if risk.get("level") in ("low", "medium",
                                                                                         "high") else "medium"
            reason = str((details or {}).get("rationale") or risk.get("reason") or content.get("summary") or name)
            kind: Literal["file", "tool", "command"] = (
                "file" if call.patch_id else "command" if name == "shell_command" else "tool")
            ask = Ask(request_id=f"req_{call_id}", call_id=call_id, kind=kind, call=call, risk=level, reason=reason)
        return out, ask, changed

    def patch(self, call: Call, details: dict[str, Any], *, requires_approval: bool) -> PatchProposed:
        criteria = details.get("acceptanceCriteria")
        return PatchProposed(patch_id=call.patch_id or f"patch_{call.id}", file_path=call.file_path or "",
                             diff=str(details.get("diff") or ""), rationale=details.get("rationale"),
                             acceptance_criteria=list(criteria) if isinstance(criteria, list) else [],
                             requires_approval=requires_approval, hunks=hunks_of(details))

    def _call(self, content: dict[str, Any]) -> Call:
        call_id = str(content.get("id") or "")
        call = self.calls.get(call_id)
        if call is None:
            args = content.get("arguments")
            call = Call(call_id, str(content.get("name") or "tool"), dict(args) if isinstance(args, dict) else {})
            self.calls[call_id] = call
        return call

    def _called(self, content: dict[str, Any]) -> tuple[list[ServerMessage], Ask | None, bool]:
        call = self._call(content)
        failed = bool(content.get("error"))
        outputs = content.get("outputs") or []
        text = "\n".join(str(o.get("text") or o.get("content") or "") for o in outputs if isinstance(o, dict))
        result: dict[str, Any] = {"output": text[:RESULT_CHARS]}
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
            out.append(self._retrieval(call, content, text, failed))
        return out, None, changed

    def _retrieval(self, call: Call, content: dict[str, Any], text: str, failed: bool) -> AgentRetrieveStatus:
        details = _dict(content.get("details"))
        if details.get("type") == "retrieval":
            stage = details.get("stage")
            count = details.get("resultsCount")
            return AgentRetrieveStatus(
                stage=stage if stage in ("symbol_search", "text_search", "vector_search", "reranking")
                else SEARCH_STAGES[call.name],
                results_count=count if isinstance(count, int) else 0,
                message=str(details.get("message") or f"{call.name}: {count} result(s)"))
        count = 0 if failed else len([line for line in text.splitlines() if line.strip()])
        return AgentRetrieveStatus(stage=SEARCH_STAGES[call.name], results_count=count,
                                   message=text.splitlines()[0][:200] if failed and text else f"{count} result(s)")

    def _rejected(self, content: dict[str, Any]) -> tuple[list[ServerMessage], Ask | None, bool]:
        call = self._call(content)
        why = "denied by the configuration" if content.get("reason") == "user-config" else "rejected"
        changed = call.patch_id is not None and self.pending_patches.pop(call.patch_id, None) is not None
        return [ToolExecute(tool_name=call.name, args=call.args, status="failed",
                            result={"output": f"The tool call was {why}.", "error": why})], None, changed

    def _plan(self, content: dict[str, Any]) -> list[ServerMessage]:
        steps = [s for s in content.get("steps") or [] if isinstance(s, dict)]
        out_steps = [PlanStep(step_number=i, description=str(s.get("description") or ""),
                              files_involved=[str(f) for f in s.get("files") or []])
                     for i, s in enumerate(steps, start=1)]
        statuses = [s.get("status") for s in steps]
        self.total_steps = len(steps) or None
        if "in_progress" in statuses:
            self.current_step = statuses.index("in_progress") + 1
        elif "pending" in statuses:
            self.current_step = statuses.index("pending") + 1
        else:
            self.current_step = len(steps) or None
        explanation = content.get("explanation")
        return [AssistantThinking(phase="planning", message=str(explanation or "Planning")),
                AgentPlan(steps=out_steps, rationale=str(explanation) if explanation else None)]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def working_directory(call: Call, folders: list[Path]) -> str:
    """The absolute directory a shell call runs in (its ``working_directory``, else the workspace root)."""
    root = folders[0] if folders else Path.cwd()
    raw = call.args.get("working_directory")
    if not isinstance(raw, str) or not raw.strip():
        return str(root)
    path = Path(os.path.expanduser(raw))
    return str(path if path.is_absolute() else root / path)
