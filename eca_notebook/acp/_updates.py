"""The engine's chat contents (``chat/contentReceived`` params) as ACP ``session/update`` payloads.

One :class:`SessionUpdates` per ACP session: it is stateful because ACP addresses a tool call by the id of its
first ``tool_call`` update, and the model's call ids (``call_1``) repeat across turns — a later call with a used id
gets a fresh ACP id, and the engine's id is kept for ``approve``/``reject``.

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
from typing import Any

from ._diff import diff_contents
from ._schema import UPDATE_LIMIT

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
_PLAN_STATUSES = ("pending", "in_progress", "completed")
_PRIORITIES = ("high", "medium", "low")
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
    tool_call: dict[str, Any]  # the ToolCallUpdate for the request
    tool: str
    server: str
    chat_id: str | None = None  # the engine chat to answer in, when not the session's own (a subagent's)


@dataclass
class _Call:
    acp_id: str
    kind: str
    diffs: list[dict[str, Any]] = field(default_factory=list)
    status: str = "pending"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _text(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


class SessionUpdates:
    """ECA contents → ACP update objects (``update`` of ``session/update``, without the session id)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = Path(cwd)
        self._calls: dict[str, _Call] = {}  # engine id → the ACP call it currently names
        self._used: set[str] = set()
        # a subagent's chat id → (the engine id of the parent's spawn_agent call, the subagent's own updates, the
        # lines of progress shown as that call's content)
        self._subagents: dict[str, tuple[str, SessionUpdates, list[str]]] = {}
        self.round_cap_hit = False  # the engine stopped the turn at toolCall.maxRounds (→ max_turn_requests)

    # -- entry point ---------------------------------------------------------------------------------------------

    def translate(self, role: str, content: dict[str, Any], *, live: bool) -> tuple[list[dict[str, Any]],
                                                                                    PermissionAsk | None]:
        """Updates for one content, and a permission to ask for (live ``toolCallRun`` with manual approval)."""
        kind = content.get("type")
        if kind == "text":
            text = str(content.get("text") or "")
            if role == "user":
                if live:
                    return [], None
                return self._chunks("user_message_chunk", text), None
            if role == "system":
                if text.startswith("Stopped after ") and "toolCall.maxRounds" in text:
                    self.round_cap_hit = True
                text = _system_text(text)
            return self._chunks("agent_message_chunk", text), None
        if kind == "url":
            text = f"[{content.get('title') or content.get('url')}]({content.get('url')})"
            return self._chunks("agent_message_chunk", text), None
        if kind == "image":
            return self._image(role, content, live=live), None
        if kind == "reasonText":
            return self._chunks("agent_thought_chunk", str(content.get("text") or "")), None
        if kind == "metadata" and content.get("title"):
            return [{"sessionUpdate": "session_info_update", "title": str(content["title"])}], None
        if kind == "usage":
            return self._usage(content), None
        if kind == "toolCallRun":
            return self._run(content, live=live)
        if kind == "toolCallRunning":
            return self._progress(content, "in_progress"), None
        if kind == "toolCalled":
            return self._called(content), None
        if kind == "plan":
            return self._plan(content), None
        if kind == "toolCallRejected":
            return self._rejected(content), None
        return [], None

    def translate_subagent(self, child_id: str, role: str, content: dict[str, Any], *,
                           live: bool) -> tuple[list[dict[str, Any]], PermissionAsk | None]:
        """Updates for one content of a subagent's chat (``parentChatId`` is this session): its tool calls are
        calls of this session (so a call that needs approval is asked here, answered in the subagent's chat), and
        what it does is the parent's ``spawn_agent`` call's progress (its ``tool_call_update`` content). Its texts
        are not the session's answer: the parent's call result carries the subagent's final answer."""
        entry = self._subagents.get(child_id)
        if entry is None:
            return [], None
        call_id, sub, lines = entry
        updates, ask = sub.translate(role, content, live=live)
        out = [u for u in updates if u.get("sessionUpdate") in ("tool_call", "tool_call_update")]
        if ask is not None:
            ask.chat_id = child_id
        kind = content.get("type")
        name = str(content.get("summary") or content.get("name") or "tool")
        line = None
        if kind == "toolCallRun":
            line = f"- {name}" + (" (waiting for approval)" if content.get("manualApproval") else "")
        elif kind == "toolCalled":
            line = f"- {name}: {'failed' if content.get('error') else 'done'}"
        elif kind == "toolCallRejected":
            line = f"- {name}: rejected"
        elif kind == "text" and role == "system" and str(content.get("text") or "").strip():
            line = f"- {str(content['text']).strip()[:200]}"
        if line is not None:
            lines.append(line)
            parent = self._calls.get(call_id)
            if parent is not None and parent.status in ("pending", "in_progress"):
                out.append({"sessionUpdate": "tool_call_update", "toolCallId": parent.acp_id,
                            "status": "in_progress", "content": [_text("\n".join(lines[-40:]))]})
        return out, ask

    def _watch_subagent(self, content: dict[str, Any]) -> None:
        """A ``spawn_agent`` call names its subagent's chat (``details.subagentChatId``): route that chat here."""
        details = content.get("details")
        if not isinstance(details, dict) or details.get("type") != "subagent":
            return
        child = details.get("subagentChatId")
        if isinstance(child, str) and child and child not in self._subagents:
            sub = SessionUpdates(self.cwd)
            sub._used = self._used  # one session: the subagent's call ids must not collide with the parent's
            self._subagents[child] = (str(content.get("id") or ""), sub, [])

    def unfinished(self) -> list[dict[str, Any]]:
        """``failed`` updates for calls a replayed chat left pending (the process ended while they waited)."""
        out = []
        for call in self._calls.values():
            if call.status in ("pending", "in_progress"):
                call.status = "failed"
                out.append({"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "status": "failed",
                            "content": [_text("Interrupted: the agent stopped before this call finished.")]})
        return out

    def acp_id(self, call_id: str) -> str | None:
        call = self._calls.get(call_id)
        return call.acp_id if call is not None else None

    # -- pieces --------------------------------------------------------------------------------------------------

    def _plan(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        """The agent's plan as ACP's ``plan`` update: the whole list each time, which the client shows in place of
        the previous one — as the ``plan`` content means. ACP entries have no files: they follow the description."""
        steps = content.get("steps")
        if not isinstance(steps, list):
            return []
        entries = []
        for step in steps:
            if not isinstance(step, dict):
                continue
            text = str(step.get("description") or "")
            files = [str(f) for f in step.get("files") or [] if f]
            if files:
                text += f" ({', '.join(files)})"
            status = step.get("status")
            priority = step.get("priority")
            entries.append({"content": text,
                            "priority": priority if priority in _PRIORITIES else "medium",
                            "status": status if status in _PLAN_STATUSES else "pending"})
        return [{"sessionUpdate": "plan", "entries": entries}]

    def _image(self, role: str, content: dict[str, Any], *, live: bool) -> list[dict[str, Any]]:
        media_type, data = content.get("mediaType"), content.get("base64")
        if not isinstance(media_type, str) or not isinstance(data, str) or not data or (role == "user" and live):
            return []  # a live prompt's images are already on the client's screen
        update = "user_message_chunk" if role == "user" else "agent_message_chunk"
        return [{"sessionUpdate": update, "content": {"type": "image", "mimeType": media_type, "data": data}}]

    def _chunks(self, update: str, text: str) -> list[dict[str, Any]]:
        if not text:
            return []
        return [{"sessionUpdate": update, "content": {"type": "text", "text": text[i:i + TEXT_CHUNK]}}
                for i in range(0, len(text), TEXT_CHUNK)]

    def _usage(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        limit = content.get("limit") or {}
        size = limit.get("context") if isinstance(limit, dict) else None
        if not isinstance(size, int) or size <= 0:
            return []  # usage_update requires the context size; without it there is nothing honest to send
        used = int(content.get("messageInputTokens") or 0) + int(content.get("messageOutputTokens") or 0)
        update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": max(0, used), "size": size}
        cost = content.get("sessionCost")
        if cost is not None:
            try:
                update["cost"] = {"amount": float(cost), "currency": "USD"}
            except (TypeError, ValueError):
                pass
        return [update]

    def _locations(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        paths: list[str] = []
        details = content.get("details")
        if isinstance(details, dict) and details.get("type") == "fileChange" and details.get("path"):
            paths.append(str(details["path"]))
        args = content.get("arguments")
        if isinstance(args, dict):
            for key in _PATH_ARGS:
                value = args.get(key)
                if isinstance(value, str) and value.strip():
                    paths.append(value)
        out: list[dict[str, Any]] = []
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

    def _run(self, content: dict[str, Any], *, live: bool) -> tuple[list[dict[str, Any]], PermissionAsk | None]:
        call_id = str(content.get("id") or "")
        name = str(content.get("name") or "tool")
        server = str(content.get("server") or "eca")
        kind = tool_kind(name, server)
        raw_args = content.get("arguments")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        call = _Call(self._new_id(call_id), kind, diff_contents(name, args, content.get("details")))
        self._calls[call_id] = call
        self._watch_subagent(content)
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": call.acp_id,
            "title": str(content.get("summary") or name),
            "kind": kind,
            "status": "pending",
            "locations": self._locations(content),
            "rawInput": args,
        }
        if call.diffs:
            update["content"] = list(call.diffs)
        risk = _risk(content)
        if risk is not None:
            update["_meta"] = {"eca": {"risk": risk}}
        update = self._fit(update, content)
        ask = None
        if live and content.get("manualApproval"):
            request = {k: v for k, v in update.items() if k != "sessionUpdate"}
            if risk is not None:  # ACP clients show the title with the buttons: the level belongs there
                request["title"] = f"{request['title']} ({risk['level']} risk: {risk['reason']})"
            ask = PermissionAsk(call_id=call_id, tool_call=request, tool=name, server=server)
        return [update], ask

    def _fit(self, update: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
        """Keep one update under the size limit: drop diffs (show the unified diff's size instead), then raw input."""
        if _size(update) <= UPDATE_LIMIT:
            return update
        update = dict(update)
        if "content" in update:
            details = content.get("details") or {}
            lines = f"+{details.get('linesAdded', '?')} -{details.get('linesRemoved', '?')}"
            update["content"] = [_text(f"The change ({lines} lines) is too large to show here.")]
        if _size(update) > UPDATE_LIMIT:
            update.pop("rawInput", None)
        return update

    def _call(self, content: dict[str, Any]) -> _Call:
        call_id = str(content.get("id") or "")
        call = self._calls.get(call_id)
        if call is None:  # an update for a call we never announced (e.g. replay of a partial chat)
            call = _Call(self._new_id(call_id), tool_kind(str(content.get("name") or ""), str(content.get("server")
                                                                                          or "eca")))
            self._calls[call_id] = call
        return call

    def _progress(self, content: dict[str, Any], status: str) -> list[dict[str, Any]]:
        call = self._call(content)
        call.status = status
        update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "status": status}
        details = content.get("details")
        if isinstance(details, dict) and details.get("type") == "subagent" and details.get("step"):
            self._watch_subagent(content)
            steps = f"{details['step']}/{details['maxSteps']}" if details.get("maxSteps") else str(details["step"])
            update["title"] = f"{content.get('summary') or details.get('agentName')} (step {steps})"
        return [update]

    def _called(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        call = self._call(content)
        failed = bool(content.get("error"))
        call.status = "failed" if failed else "completed"
        outputs = content.get("outputs") or []
        text = "\n".join(str(o.get("text") or o.get("content") or "") for o in outputs if isinstance(o, dict))
        if call.kind == "execute" and text and not failed:
            text = f"```\n{text}\n```"
        items: list[dict[str, Any]] = list(call.diffs) if not failed else []
        if text:
            items.append(_text(text))
        update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id,
                                  "status": call.status, "content": items}
        if _size(update) > UPDATE_LIMIT:
            update["content"] = [_text(text[: TEXT_CHUNK])] if text else []
        return [update]

    def _rejected(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        call = self._call(content)
        call.status = "failed"
        reason = content.get("reason")
        why = {"user-config": "Denied by the configuration (toolCall.approval).",
               "hook-rejected": "Rejected by a hook (config `hooks`)."}.get(reason or "", "Rejected.")
        return [{"sessionUpdate": "tool_call_update", "toolCallId": call.acp_id, "status": "failed",
                 "content": [_text(why)]}]


def _risk(content: dict[str, Any]) -> dict[str, str] | None:
    """The engine's risk assessment of a call (``{"level", "reason"}``), when the content carries a valid one."""
    risk = content.get("risk")
    if not isinstance(risk, dict) or risk.get("level") not in ("low", "medium", "high"):
        return None
    return {"level": str(risk["level"]), "reason": str(risk.get("reason") or "")}


def _system_text(text: str) -> str:
    """System texts are notes next to the answer, not part of it: set them apart on their own lines."""
    return text if text.endswith("\n") else text + "\n"
