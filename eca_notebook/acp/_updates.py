"""The engine's chat contents (``chat/contentReceived`` params) as ACP ``session/update`` payloads.

One :class:`SessionUpdates` per ACP session. Its contents are folded by the session's
:class:`~eca_notebook.protocol.turn.TurnFold` (the one fold every door reads) and each update is made from what the
fold's step changed. It keeps only what ACP adds: ACP addresses a tool call by the id of its first ``tool_call``
update, and the model's call ids (``call_1``) repeat across turns — a later call with a used id gets a fresh ACP id,
and the engine's id is kept for ``approve``/``reject``.

Mapping (what a person sees in an ACP client):

* user text → ``user_message_chunk`` (only when replaying: a live prompt is already on the client's screen);
* assistant text and system texts (errors, command output, "context skipped") → ``agent_message_chunk``;
* ``reasonText`` → ``agent_thought_chunk``;
* ``image`` (an MCP tool's image, a prompt's attachment) → an ACP image content (``{type: "image", mimeType,
  data}``) in ``agent_message_chunk`` — a user's own image only when replaying, like user text;
* ``toolCallRun`` → ``tool_call`` (pending; kind, title, locations, raw input, a ``diff`` for file changes, the
  engine's risk level in ``_meta.eca.risk``; the ``session/request_permission`` title ends with it too, e.g.
  "… (high risk: deletes recursively: build)");
  ``toolCallRunning`` → ``tool_call_update`` in_progress; ``toolCalled`` → completed / failed with the output;
  ``toolCallRejected`` → failed;
* ``usage`` → ``usage_update`` when the model's context size is known (the schema requires it);
* the chat title (``metadata``) → ``session_info_update``;
* the agent's plan (``plan``, published by ``update_plan``) → ``plan`` (each step an entry; its files, when it
  names some, follow the description).

Progress and reasoning start/finish markers have no ACP counterpart and are dropped. Every update is kept under
:data:`~._schema.UPDATE_LIMIT`: long texts are split into several chunks and oversized diffs are left out (the
output text says so).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..protocol import (
    FileChangeDetails,
    ImageContent,
    JsonObject,
    MetadataContent,
    PlanContent,
    UrlContent,
    UsageContent,
)
from ..protocol.turn import Change, Content, ToolCallState, TurnFold
from ._diff import diff_contents
from ._schema import (
    UPDATE_LIMIT,
    DiffContent,
    Location,
    PlanEntry,
    Risk,
    SessionUpdate,
    ToolCall,
    ToolCallContent,
    ToolCallRequest,
    ToolCallUpdate,
    UsageUpdate,
    WrappedContent,
)

__all__ = ["TEXT_CHUNK", "PermissionAsk", "SessionUpdates", "tool_kind"]

TEXT_CHUNK = 16 * 1024  # characters per message chunk: at most 64 KB of UTF-8, well under the update limit

_NATIVE_KINDS = {
    "read_file": "read",
    "directory_tree": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "move_file": "move",
    "delete_file": "delete",
    "shell_command": "execute",
    "editor_diagnostics": "read",
    "editor_definition": "search",
    "editor_references": "search",
    "update_plan": "think",
}
# For tools we do not know (MCP servers, the kernel): the first word group that appears in the name wins.
_NAME_HINTS = (
    (("delete", "remove", "unlink", "rm"), "delete"),
    (("move", "rename"), "move"),
    (("fetch", "http", "url", "web", "download"), "fetch"),
    (("search", "grep", "find", "glob", "query"), "search"),
    (("write", "edit", "create", "update", "patch", "replace", "insert"), "edit"),
    (("read", "get", "list", "show", "cat", "view"), "read"),
    (("exec", "run", "shell", "command", "bash", "python", "eval"), "execute"),
    (("think", "plan", "reason"), "think"),
)
_PATH_ARGS = ("path", "file_path", "filepath", "file", "source", "destination", "target", "working_directory")


def tool_kind(name: str, server: str = "eca") -> str:
    """ACP ``ToolKind`` for a tool: a fixed table for native tools, name hints for the rest, else ``other``."""
    if server == "eca" and name in _NATIVE_KINDS:
        return _NATIVE_KINDS[name]
    words = [w for w in name.lower().replace("-", "_").split("_") if w]
    for hints, kind in _NAME_HINTS:
        if any(w in hints for w in words):
            return kind
    return "other"


@dataclass
class PermissionAsk:
    """A call waiting for the user: what ``session/request_permission`` shows, and the engine's id to answer."""

    call_id: str  # the engine's (model's) id
    tool_call: ToolCallRequest  # the ToolCallUpdate for the request
    tool: str
    server: str
    chat_id: str | None = None  # the engine chat to answer in, when not the session's own (a subagent's)


@dataclass
class _Call:
    """The ACP side of one call: the id ACP knows it by, its kind and diffs; its state is the fold's."""

    acp_id: str
    kind: str
    state: ToolCallState
    diffs: list[DiffContent] = field(default_factory=list)


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _text(text: str) -> WrappedContent:
    return {"type": "content", "content": {"type": "text", "text": text}}


class SessionUpdates:
    """ECA contents → ACP update objects (``update`` of ``session/update``, without the session id).

    The contents are folded by the session's :class:`~eca_notebook.protocol.turn.TurnFold` (:attr:`fold`); each
    update is made from what the fold's step changed — a tool call's status, arguments, details, output and risk
    are the fold's :class:`~eca_notebook.protocol.turn.ToolCallState`, as the other doors read them."""

    def __init__(self, cwd: Path, fold: TurnFold | None = None) -> None:
        self.cwd = Path(cwd)
        self.fold = fold if fold is not None else TurnFold()
        self._calls: dict[str, _Call] = {}  # engine id → the ACP call it currently names
        self._used: set[str] = set()
        # a subagent's chat id → (its own updates, the lines of progress shown as the parent's spawn_agent call's
        # content); its fold is the subagent's fold of this session's fold
        self._subagents: dict[str, tuple[SessionUpdates, list[str]]] = {}
        self.round_cap_hit = False  # the engine stopped the turn at toolCall.maxRounds (→ max_turn_requests)
        self.last: Change | None = None  # what the latest content of the session's chat changed in the fold

    # -- entry point ---------------------------------------------------------------------------------------------

    def translate(self, role: str, content: JsonObject | Content, *,
                  live: bool) -> tuple[list[SessionUpdate], PermissionAsk | None]:
        """Updates for one content, and a permission to ask for (live ``toolCallRun`` with manual approval)."""
        self.last = self.fold.step(role, content)
        return self._translate(self.last, live=live)

    def _translate(self, change: Change, *, live: bool) -> tuple[list[SessionUpdate], PermissionAsk | None]:
        kind, content, role = change.kind, change.content, change.role
        if kind == "text":
            text = change.text
            if role == "user":
                if live:
                    return [], None
                return self._chunks("user_message_chunk", text), None
            if role == "system":
                if text.startswith("Stopped after ") and "toolCall.maxRounds" in text:
                    self.round_cap_hit = True
                text = _system_text(text)
            return self._chunks("agent_message_chunk", text), None
        if isinstance(content, UrlContent):
            return self._chunks("agent_message_chunk", f"[{content.title or content.url}]({content.url})"), None
        if isinstance(content, ImageContent):
            return self._image(str(role), content, live=live), None
        if kind == "reasonText":
            return self._chunks("agent_thought_chunk", change.text), None
        if isinstance(content, MetadataContent) and content.title:
            return [{"sessionUpdate": "session_info_update", "title": content.title}], None
        if isinstance(content, UsageContent):
            return self._usage(content), None
        if isinstance(content, PlanContent):
            return self._plan(content), None
        state = change.tool
        if state is None or kind == "toolCallPrepare":
            return [], None
        if kind == "toolCallRun":
            return self._run(state, live=live)
        if kind == "toolCallRunning":
            return self._progress(state), None
        if kind == "toolCalled":
            return self._called(state), None
        if kind == "toolCallRejected":
            return self._rejected(state), None
        return [], None

    def translate_subagent(self, child_id: str, role: str, content: JsonObject | Content, *,
                           live: bool) -> tuple[list[SessionUpdate], PermissionAsk | None]:
        """Updates for one content of a subagent's chat (``parentChatId`` is this session): its tool calls are
        calls of this session (so a call that needs approval is asked here, answered in the subagent's chat), and
        what it does is the parent's ``spawn_agent`` call's progress (its ``tool_call_update`` content). Its texts
        are not the session's answer: the parent's call result carries the subagent's final answer."""
        change = self.fold.step_subagent(child_id, role, content, known_only=True)
        parent_state = self.fold.subagent_calls.get(child_id)
        if change is None or parent_state is None:
            return [], None
        entry = self._subagents.get(child_id)
        if entry is None:
            sub = SessionUpdates(self.cwd, self.fold.subagents[child_id])
            sub._used = self._used  # one session: the subagent's call ids must not collide with the parent's
            entry = self._subagents[child_id] = (sub, [])
        sub, lines = entry
        updates, ask = sub._translate(change, live=live)
        out: list[SessionUpdate] = [u for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        if ask is not None:
            ask.chat_id = child_id
        state, kind = change.tool, change.kind
        line = None
        if state is not None:
            name = state.summary or state.name
            if kind == "toolCallRun":
                line = f"- {name}" + (" (waiting for approval)" if state.manual_approval else "")
            elif kind == "toolCalled":
                line = f"- {name}: {'failed' if state.status == 'failed' else 'done'}"
            elif kind == "toolCallRejected":
                line = f"- {name}: rejected"
        elif kind == "text" and change.role == "system" and change.text.strip():
            line = f"- {change.text.strip()[:200]}"
        if line is not None:
            lines.append(line)
            parent = self._calls.get(parent_state.id)
            if parent is not None and parent.state is parent_state and parent_state.status in ("pending", "running"):
                out.append({"sessionUpdate": "tool_call_update", "toolCallId": parent.acp_id,
                            "status": "in_progress", "content": [_text("\n".join(lines[-40:]))]})
        return out, ask

    def unfinished(self) -> list[ToolCallUpdate]:
        """``failed`` updates for calls a replayed chat left pending (the process ended while they waited)."""
        out: list[ToolCallUpdate] = []
        for call in self._calls.values():
            if call.state.status in ("pending", "running"):
                call.state.interrupted()
                out.append({"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "status": "failed",
                            "content": [_text("Interrupted: the agent stopped before this call finished.")]})
        return out

    def acp_id(self, call_id: str) -> str | None:
        call = self._calls.get(call_id)
        return call.acp_id if call is not None else None

    # -- pieces --------------------------------------------------------------------------------------------------

    def _plan(self, plan: PlanContent) -> list[SessionUpdate]:
        """The agent's plan as ACP's ``plan`` update: the whole list each time, which the client shows in place of
        the previous one — as the ``plan`` content means. ACP entries have no files: they follow the description."""
        entries: list[PlanEntry] = []
        for step in plan.steps:
            text = step.description
            files = [f for f in step.files or [] if f]
            if files:
                text += f" ({', '.join(files)})"
            entries.append({"content": text, "priority": step.priority or "medium", "status": step.status})
        return [{"sessionUpdate": "plan", "entries": entries}]

    def _image(self, role: str, content: ImageContent, *, live: bool) -> list[SessionUpdate]:
        if not content.media_type or not content.base64 or (role == "user" and live):
            return []  # a live prompt's images are already on the client's screen
        update: Literal["user_message_chunk", "agent_message_chunk"] = (
            "user_message_chunk" if role == "user" else "agent_message_chunk")
        return [{"sessionUpdate": update,
                 "content": {"type": "image", "mimeType": content.media_type, "data": content.base64}}]

    def _chunks(self, update: Literal["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"],
                text: str) -> list[SessionUpdate]:
        if not text:
            return []
        return [{"sessionUpdate": update, "content": {"type": "text", "text": text[i:i + TEXT_CHUNK]}}
                for i in range(0, len(text), TEXT_CHUNK)]

    def _usage(self, usage: UsageContent) -> list[SessionUpdate]:
        size = usage.limit.context if usage.limit is not None else None
        if not isinstance(size, int) or size <= 0:
            return []  # usage_update requires the context size; without it there is nothing honest to send
        used = (usage.message_input_tokens or 0) + (usage.message_output_tokens or 0)
        update: UsageUpdate = {"sessionUpdate": "usage_update", "used": max(0, used), "size": size}
        if usage.session_cost is not None:
            try:
                update["cost"] = {"amount": float(usage.session_cost), "currency": "USD"}
            except (TypeError, ValueError):
                pass
        return [update]

    def _locations(self, state: ToolCallState) -> list[Location]:
        paths: list[str] = []
        if isinstance(state.detail, FileChangeDetails) and state.detail.path:
            paths.append(state.detail.path)
        args = state.arguments
        if isinstance(args, dict):
            for key in _PATH_ARGS:
                value = args.get(key)
                if isinstance(value, str) and value.strip():
                    paths.append(value)
        out: list[Location] = []
        seen: set[str] = set()
        for raw in paths:
            expanded = os.path.expanduser(raw)
            path = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(self.cwd, expanded))
            if path not in seen:
                seen.add(path)
                out.append({"path": path})
        return out

    def _new_id(self, call_id: str) -> str:
        acp_id = call_id or "call"
        n = 1
        while acp_id in self._used:
            n += 1
            acp_id = f"{call_id}-{n}"
        self._used.add(acp_id)
        return acp_id

    def _run(self, state: ToolCallState, *, live: bool) -> tuple[list[SessionUpdate], PermissionAsk | None]:
        kind = tool_kind(state.name, state.server)
        args: JsonObject = state.arguments if isinstance(state.arguments, dict) else {}
        call = _Call(self._new_id(state.id), kind, state, diff_contents(state.name, args, state.details))
        self._calls[state.id] = call
        update: ToolCall = {
            "sessionUpdate": "tool_call",
            "toolCallId": call.acp_id,
            "title": state.summary or state.name,
            "kind": kind,
            "status": "pending",
            "locations": self._locations(state),
            "rawInput": args,
        }
        if call.diffs:
            update["content"] = list(call.diffs)
        risk = _risk(state.risk)
        if risk is not None:
            update["_meta"] = {"eca": {"risk": risk}}
        update = self._fit(update, state)
        ask = None
        if live and state.manual_approval:
            request = _request(update)
            if risk is not None:  # ACP clients show the title with the buttons: the level belongs there
                request["title"] = f"{request['title']} ({risk['level']} risk: {risk['reason']})"
            ask = PermissionAsk(call_id=state.id, tool_call=request, tool=state.name, server=state.server)
        return [update], ask

    def _fit(self, update: ToolCall, state: ToolCallState) -> ToolCall:
        """Keep one update under the size limit: drop diffs (show the unified diff's size instead), then raw input."""
        if _size(update) <= UPDATE_LIMIT:
            return update
        update = update.copy()
        if "content" in update:
            details = state.details or {}
            lines = f"+{details.get('linesAdded', '?')} -{details.get('linesRemoved', '?')}"
            update["content"] = [_text(f"The change ({lines} lines) is too large to show here.")]
        if _size(update) > UPDATE_LIMIT:
            update.pop("rawInput", None)
        return update

    def _call(self, state: ToolCallState) -> _Call:
        call = self._calls.get(state.id)
        if call is None or call.state is not state:  # a call we never announced (e.g. replay of a partial chat)
            call = _Call(self._new_id(state.id), tool_kind(state.name, state.server), state)
            self._calls[state.id] = call
        return call

    def _progress(self, state: ToolCallState) -> list[SessionUpdate]:
        call = self._call(state)
        update: ToolCallUpdate = {"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id,
                                  "status": "in_progress"}
        subagent = state.subagent
        if subagent is not None and subagent.step:
            steps = f"{subagent.step}/{subagent.max_steps}" if subagent.max_steps else str(subagent.step)
            update["title"] = f"{state.summary or subagent.agent_name} (step {steps})"
        return [update]

    def _called(self, state: ToolCallState) -> list[SessionUpdate]:
        call = self._call(state)
        failed = state.status == "failed"
        status: Literal["failed", "completed"] = "failed" if failed else "completed"
        text = state.output or ""
        if call.kind == "execute" and text and not failed:
            text = f"```\n{text}\n```"
        items: list[ToolCallContent] = list(call.diffs) if not failed else []
        if text:
            items.append(_text(text))
        update: ToolCallUpdate = {"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id,
                                  "status": status, "content": items}
        if _size(update) > UPDATE_LIMIT:
            update["content"] = [_text(text[: TEXT_CHUNK])] if text else []
        return [update]

    def _rejected(self, state: ToolCallState) -> list[SessionUpdate]:
        call = self._call(state)
        why = {"user-config": "Denied by the configuration (toolCall.approval).",
               "hook-rejected": "Rejected by a hook (config `hooks`)."}.get(state.reason or "", "Rejected.")
        return [{"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "status": "failed",
                 "content": [_text(why)]}]


def _request(update: ToolCall) -> ToolCallRequest:
    """The ``toolCall`` of a permission request: the ``tool_call`` update without ``sessionUpdate`` (keys in order)."""
    request: ToolCallRequest = {"toolCallId": update["toolCallId"], "title": update["title"], "kind": update["kind"],
                                "status": update["status"], "locations": update["locations"]}
    if "rawInput" in update:
        request["rawInput"] = update["rawInput"]
    if "content" in update:
        request["content"] = update["content"]
    if "_meta" in update:
        request["_meta"] = update["_meta"]
    return request


def _risk(risk: JsonObject | None) -> Risk | None:
    """The engine's risk assessment of a call (``{"level", "reason"}``), when the fold holds a valid one."""
    if not isinstance(risk, dict) or risk.get("level") not in ("low", "medium", "high"):
        return None
    return {"level": str(risk["level"]), "reason": str(risk.get("reason") or "")}


def _system_text(text: str) -> str:
    """System texts are notes next to the answer, not part of it: set them apart on their own lines."""
    return text if text.endswith("\n") else text + "\n"
