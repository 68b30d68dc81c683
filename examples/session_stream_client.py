"""A reference client of the session stream (``http-websocket-api.md``), written from the spec alone.

Why it exists: the spec describes an editor extension talking to the assistant over
``WS /v1/sessions/{session_id}/stream`` with a typed message set. This file is a small client of that stream that
imports nothing from ``eca_notebook`` — its message models are its own, copied from the spec (plus the extensions
the server documents: ``session_id``/``patch_mode``/``command_mode`` in ``server.hello``, hunk ``id``s,
``stop_reason``…). If it works against the server, a client written to the spec works.

Three layers, usable separately:

* the models (``ClientHello`` … ``SessionState``) and :func:`parse_server_message`;
* :class:`SessionStream`: one socket — ``hello()``, ``send_user_message()``, ``approve()``, ``patch_apply_result()``,
  ``command_result()``, ``cancel()``, ``context_update()``, ``file_changes()`` and ``async for msg in stream``;
  REST helpers :func:`create_session` / :func:`list_sessions`; :func:`apply_unified_diff` and :func:`run_command`
  for a client that applies patches and runs commands itself;
* a terminal client (``main``)::

      python examples/session_stream_client.py --url http://127.0.0.1:8888/ --token abc \\
          --message "Fix the failing test" [--run-commands] [--apply-patches] [--session ID] [--root DIR]

  It prints tokens as they come and patches as diffs, asks ``y``/``n``/``a``/hunk ids on stdin for approvals, runs
  approved commands itself with ``--run-commands`` (local_terminal mode) and applies patches itself with
  ``--apply-patches``.

Needs ``websockets`` (>= 13), ``httpx`` and ``pydantic`` (2).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

# ----------------------------------------------------------------------------------------------------------------
# Messages, as the spec writes them. Server messages allow extra fields (a server may add extensions); client
# messages forbid them (we send exactly what the spec says, plus the documented extensions).


class _Out(BaseModel):
    """A message this client sends."""

    model_config = ConfigDict(extra="forbid")


class _In(BaseModel):
    """A message (or part of one) the server sends; unknown extension fields are kept, not refused."""

    model_config = ConfigDict(extra="allow")


# -- client → server ---------------------------------------------------------------------------------------------


class ClientInfo(_Out):
    name: str
    version: str
    #: "diff_preview", "terminal_exec" (we run commands: local_terminal), "apply_patches" (we write files),
    #: "git_integration"
    capabilities: list[str] = Field(default_factory=list)


class ClientHello(_Out):
    type: Literal["client.hello"] = "client.hello"
    client_info: ClientInfo


class Position(_Out):
    line: int
    character: int


class Selection(_Out):
    start: Position
    end: Position


class LineRange(_Out):
    start: int
    end: int


class ActiveEditor(_Out):
    file_path: str
    language: str | None = None
    selection: Selection | None = None
    visible_range: LineRange | None = None
    content_hash: str | None = None


class OpenEditor(_Out):
    file_path: str
    is_dirty: bool = False
    visible: bool = False


class Diagnostic(_Out):
    file_path: str
    severity: Literal["error", "warning", "info", "hint"]
    message: str
    line: int
    character: int = 0
    source: str | None = None


class TerminalOutput(_Out):
    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timestamp: str | None = None


class Commit(_Out):
    sha: str
    message: str
    author: str | None = None
    timestamp: str | None = None


class GitContext(_Out):
    branch: str | None = None
    staged_files: list[str] = Field(default_factory=list)
    modified_files: list[str] = Field(default_factory=list)
    recent_commits: list[Commit] = Field(default_factory=list)


class Mention(_Out):
    type: Literal["file", "symbol"]
    path: str | None = None  # type "file"
    name: str | None = None  # type "symbol"
    file_path: str | None = None
    line: int | None = None


class Context(_Out):
    """The automatic context of ``client.user_message`` (every part optional)."""

    active_editor: ActiveEditor | None = None
    open_editors: list[OpenEditor] | None = None
    diagnostics: list[Diagnostic] | None = None
    terminal_output: TerminalOutput | None = None
    git_context: GitContext | None = None
    mentions: list[Mention] | None = None
    command: str | None = None


class UserMessage(_Out):
    type: Literal["client.user_message"] = "client.user_message"
    message: str
    context: Context | None = None


class ContextUpdate(_Out):
    type: Literal["client.context_update"] = "client.context_update"
    updates: Context


class ApprovalResponse(_Out):
    type: Literal["client.approval_response"] = "client.approval_response"
    request_id: str
    approved: bool
    scope: Literal["all", "file", "hunk"]
    file_path: str | None = None
    hunks: list[str] | None = None  # extension: the hunk ids approved with scope "hunk"


class PatchError(_Out):
    message: str
    type: str  # "conflict", …


class PatchApplyResult(_Out):
    type: Literal["client.patch_apply_result"] = "client.patch_apply_result"
    patch_id: str
    file_path: str
    success: bool
    error: PatchError | None = None
    applied_hash: str | None = None


class CommandResult(_Out):
    type: Literal["client.command_result"] = "client.command_result"
    command_id: str
    command: str
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int


class Cancel(_Out):
    type: Literal["client.cancel"] = "client.cancel"
    reason: str = "user_cancelled"


class FileChange(_Out):
    type: Literal["created", "modified", "deleted"]
    file_path: str
    content_hash: str | None = None
    timestamp: str | None = None


class FileChanges(_Out):
    type: Literal["client.file_changes"] = "client.file_changes"
    changes: list[FileChange]


# -- server → client ---------------------------------------------------------------------------------------------


class ModelInfo(_In):
    provider: str | None = None
    model_name: str | None = None
    capabilities: list[str] = Field(default_factory=list)


class ServerInfo(_In):
    version: str
    model: ModelInfo | None = None
    capabilities: list[str] = Field(default_factory=list)


class ServerHello(_In):
    type: Literal["server.hello"]
    server_info: ServerInfo
    # extensions of this server
    session_id: str | None = None
    workspace_id: str | None = None
    command_mode: Literal["local_terminal", "server_runner"] | None = None
    patch_mode: Literal["client", "server"] | None = None
    capabilities: list[str] = Field(default_factory=list)


class Thinking(_In):
    type: Literal["assistant.thinking"]
    phase: Literal["analyzing", "planning", "retrieving", "executing"]
    message: str


class PlanStep(_In):
    step_number: int
    description: str
    files_involved: list[str] = Field(default_factory=list)


class Plan(_In):
    type: Literal["agent.plan"]
    steps: list[PlanStep]
    rationale: str | None = None


class RetrieveStatus(_In):
    type: Literal["agent.retrieve.status"]
    stage: Literal["symbol_search", "text_search", "vector_search", "reranking"]
    results_count: int
    message: str


class ToolExecute(_In):
    type: Literal["tool.execute"]
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    status: Literal["started", "completed", "failed"]
    result: dict[str, Any] | None = None


class Hunk(_In):
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    content: str
    id: str | None = None  # extension: "h1", "h2"… what approve(scope="hunk", hunks=[...]) names


class PatchProposed(_In):
    type: Literal["patch.proposed"]
    patch_id: str
    file_path: str
    diff: str
    rationale: str | None = None
    acceptance_criteria: list[str] = Field(default_factory=list)
    requires_approval: bool
    hunks: list[Hunk] = Field(default_factory=list)


class ToolApprovalRequest(_In):
    type: Literal["tool.request_approval"]
    request_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    risk_level: Literal["low", "medium", "high"]


class CommandApprovalRequest(_In):
    type: Literal["command.request_approval"]
    command_id: str
    command: str
    working_directory: str
    environment: dict[str, str] = Field(default_factory=dict)
    requires_approval: bool
    reason: str | None = None


class Token(_In):
    type: Literal["assistant.token"]
    token: str
    cumulative_text: str


class FinalMetadata(_In):
    tokens_used: int | None = None
    files_modified: int | None = None
    tools_used: list[str] = Field(default_factory=list)
    success: bool
    stop_reason: Literal["completed", "cancelled", "error"] | None = None  # extension


class MessageFinal(_In):
    type: Literal["assistant.message_final"]
    message: str
    metadata: FinalMetadata


class ErrorBody(_In):
    code: str
    message: str
    details: Any = None
    recoverable: bool


class ServerError(_In):
    type: Literal["server.error"]
    error: ErrorBody


class StateBody(_In):
    pending_patches: list[str] = Field(default_factory=list)
    applied_patches: list[str] = Field(default_factory=list)
    pending_approvals: list[str] = Field(default_factory=list)
    current_step: int | None = None
    total_steps: int | None = None


class SessionState(_In):
    type: Literal["session.state"]
    state: StateBody


class Unknown(_In):
    """A message type this client does not know (a newer server): kept as is, never an error."""

    type: str


SERVER_MESSAGES: dict[str, type[BaseModel]] = {
    "server.hello": ServerHello, "assistant.thinking": Thinking, "agent.plan": Plan,
    "agent.retrieve.status": RetrieveStatus, "tool.execute": ToolExecute, "patch.proposed": PatchProposed,
    "tool.request_approval": ToolApprovalRequest, "command.request_approval": CommandApprovalRequest,
    "assistant.token": Token, "assistant.message_final": MessageFinal, "server.error": ServerError,
    "session.state": SessionState,
}


class ProtocolViolation(Exception):
    """The server sent something the spec does not allow (not JSON, or a known type with wrong fields)."""


def parse_server_message(text: str | bytes) -> BaseModel:
    """One text frame → its model. A known ``type`` with wrong fields raises :class:`ProtocolViolation`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ProtocolViolation(f"not JSON: {text!r:.200}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise ProtocolViolation(f"not a message object: {text!r:.200}")
    model = SERVER_MESSAGES.get(data["type"], Unknown)
    try:
        message = model.model_validate(data)
    except ValidationError as exc:
        raise ProtocolViolation(f"{data['type']} does not match the spec: {exc}\nframe: {text!r:.2000}") from exc
    return message


# ----------------------------------------------------------------------------------------------------------------
# REST


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def api_url(base_url: str, *path: str) -> str:
    """``<base_url>api/eca/v1/<path…>`` — where a Jupyter server with the extension serves the spec's ``/v1``."""
    return base_url.rstrip("/") + "/api/eca/v1/" + "/".join(quote(p, safe="") for p in path)


async def create_session(base_url: str, token: str | None, workspace_id: str | None = None,
                         title: str | None = None) -> dict[str, Any]:
    """``POST /v1/sessions`` → the new session (``id`` is what :meth:`SessionStream.open` needs)."""
    body = {k: v for k, v in {"workspace_id": workspace_id, "title": title}.items() if v is not None}
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(api_url(base_url, "sessions"), json=body, headers=_headers(token))
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


async def list_sessions(base_url: str, token: str | None, workspace_id: str | None = None) -> list[dict[str, Any]]:
    """``GET /v1/sessions[?workspace_id=]`` → the sessions."""
    params = {"workspace_id": workspace_id} if workspace_id else None
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.get(api_url(base_url, "sessions"), params=params, headers=_headers(token))
        response.raise_for_status()
        sessions: list[dict[str, Any]] = response.json()["sessions"]
        return sessions


def stream_url(base_url: str, session_id: str, workspace_id: str | None = None, token: str | None = None) -> str:
    """The ``ws(s)://`` URL of a session's stream."""
    parts = urlsplit(api_url(base_url, "sessions", session_id, "stream"))
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    query = {k: v for k, v in {"workspace_id": workspace_id, "token": token}.items() if v}
    return urlunsplit((scheme, parts.netloc, parts.path, urlencode(query), ""))


# ----------------------------------------------------------------------------------------------------------------
# The stream

M = TypeVar("M", bound=BaseModel)


class SessionStream:
    """One open session stream. Every server message is parsed, kept in :attr:`received` (in order) and yielded by
    ``async for``; the ``send`` methods write one JSON object per text frame."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.received: list[BaseModel] = []
        self.frames: list[str] = []  # every frame as received (for logs and bug reports)
        self.hello_reply: ServerHello | None = None
        self.closed = False
        self.violations: list[ProtocolViolation] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, base_url: str, session_id: str, token: str | None = None, *,
                   workspace_id: str | None = None, origin: str | None = None, token_in_url: bool = False,
                   open_timeout: float = 60) -> SessionStream:
        """Connect (the token as ``Authorization: Bearer``, or ``?token=``). Refusals raise
        ``websockets.exceptions.InvalidStatus`` (``.response.status_code``: 401/403/404) before any message."""
        url = stream_url(base_url, session_id, workspace_id, token if token_in_url else None)
        ws = await connect(url, additional_headers=None if token_in_url else _headers(token),
                           origin=origin,  # type: ignore[arg-type]
                           open_timeout=open_timeout, max_size=16 * 1024 * 1024)
        return cls(ws)

    async def __aenter__(self) -> SessionStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.ws.close()
        try:
            await asyncio.wait_for(self._reader, 10)
        except (TimeoutError, asyncio.CancelledError):
            self._reader.cancel()

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                self.frames.append(frame if isinstance(frame, str) else frame.decode(errors="replace"))
                try:
                    message = parse_server_message(frame)
                except ProtocolViolation as exc:
                    self.violations.append(exc)
                    continue
                if isinstance(message, ServerHello):
                    self.hello_reply = message
                self.received.append(message)
                self._changed.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed = True
            self._changed.set()

    # -- reading -------------------------------------------------------------------------------------------------

    async def messages(self, start: int = 0) -> AsyncIterator[BaseModel]:
        """Every message from index ``start`` of :attr:`received` on, waiting for new ones until the socket closes."""
        index = start
        while True:
            while index < len(self.received):
                index += 1
                yield self.received[index - 1]
            if self.closed:
                return
            self._changed.clear()
            await self._changed.wait()

    def __aiter__(self) -> AsyncIterator[BaseModel]:
        return self.messages()

    async def wait_for(self, kind: type[M], where: Callable[[M], bool] = lambda m: True, *, start: int = 0,
                       timeout: float = 60) -> M:
        """The first message of ``kind`` (from index ``start``) satisfying ``where``; raises TimeoutError, or
        ConnectionError when the socket closes first."""

        async def find() -> M:
            async for message in self.messages(start):
                if isinstance(message, kind) and where(message):
                    return message
            raise ConnectionError(f"stream closed before a {kind.__name__} arrived")

        return await asyncio.wait_for(find(), timeout)

    def of(self, kind: type[M], start: int = 0) -> list[M]:
        """The messages of ``kind`` received so far."""
        return [m for m in self.received[start:] if isinstance(m, kind)]

    @property
    def mark(self) -> int:
        """The index of the next message: pass it as ``start=`` to wait only for what comes after now."""
        return len(self.received)

    # -- sending -------------------------------------------------------------------------------------------------

    async def send(self, message: BaseModel) -> None:
        await self.ws.send(message.model_dump_json(exclude_none=True))

    async def send_raw(self, text: str) -> None:
        """Any text frame (tests of the server's error handling)."""
        await self.ws.send(text)

    async def hello(self, capabilities: list[str] | None = None, name: str = "reference-client",
                    version: str = "0.1.0", timeout: float = 60) -> ServerHello:
        """``client.hello`` → the ``server.hello`` (the server then sends a ``session.state``)."""
        start = self.mark
        await self.send(ClientHello(client_info=ClientInfo(name=name, version=version,
                                                           capabilities=list(capabilities or []))))
        return await self.wait_for(ServerHello, start=start, timeout=timeout)

    async def send_user_message(self, text: str, context: Context | dict[str, Any] | None = None) -> None:
        """Start a turn; what follows arrives on the stream, ending with one ``assistant.message_final``."""
        ctx = Context.model_validate(context) if isinstance(context, dict) else context
        await self.send(UserMessage(message=text, context=ctx))

    async def approve(self, request_id: str, scope: Literal["all", "file", "hunk"] = "file",
                      file_path: str | None = None, hunks: list[str] | None = None, approved: bool = True) -> None:
        """Answer a ``tool.request_approval`` (or a ``command.request_approval``: its ``command_id``)."""
        await self.send(ApprovalResponse(request_id=request_id, approved=approved, scope=scope,
                                         file_path=file_path, hunks=hunks))

    async def reject(self, request_id: str, file_path: str | None = None) -> None:
        await self.approve(request_id, "file", file_path, approved=False)

    async def patch_apply_result(self, patch_id: str, file_path: str, success: bool, error: PatchError | None = None,
                                 applied_hash: str | None = None) -> None:
        await self.send(PatchApplyResult(patch_id=patch_id, file_path=file_path, success=success, error=error,
                                         applied_hash=applied_hash))

    async def command_result(self, result: CommandResult) -> None:
        await self.send(result)

    async def cancel(self, reason: str = "user_cancelled") -> None:
        await self.send(Cancel(reason=reason))

    async def context_update(self, updates: Context | dict[str, Any]) -> None:
        await self.send(ContextUpdate(updates=Context.model_validate(updates) if isinstance(updates, dict)
                                      else updates))

    async def file_changes(self, changes: list[FileChange | dict[str, Any]]) -> None:
        await self.send(FileChanges(changes=[FileChange.model_validate(c) if isinstance(c, dict) else c
                                             for c in changes]))


# ----------------------------------------------------------------------------------------------------------------
# Doing what the server asks of a client: apply a patch, run a command


class PatchConflict(Exception):
    """The diff does not fit the file (its context or removed lines are not where the hunk says)."""


_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply a unified diff to ``old``; every context and removed line must match (else :class:`PatchConflict`)."""
    lines = old.splitlines(keepends=True)
    out: list[str] = []
    pos = 0  # next line of ``lines`` not yet copied
    body = diff.splitlines(keepends=True)
    i = 0
    while i < len(body) and not body[i].startswith("@@"):
        i += 1  # the ---/+++ header
    while i < len(body):
        match = _HEADER.match(body[i])
        if not match:
            raise PatchConflict(f"bad hunk header: {body[i]!r}")
        old_start, old_count = int(match[1]), int(match[2] if match[2] is not None else 1)
        at = old_start - 1 if old_count else old_start  # an empty old range names the line before it
        if at < pos or at > len(lines):
            raise PatchConflict(f"hunk {body[i].strip()} is outside the file")
        out.extend(lines[pos:at])
        pos = at
        i += 1
        while i < len(body) and not body[i].startswith("@@"):
            line = body[i]
            tag, text = line[:1], line[1:]
            if i + 1 < len(body) and body[i + 1].startswith("\\"):
                text = text.rstrip("\n")  # "\ No newline at end of file" applies to this line
            if tag in (" ", "-"):
                if pos >= len(lines) or lines[pos].rstrip("\r\n") != text.rstrip("\r\n"):
                    found = lines[pos].rstrip("\n") if pos < len(lines) else "<end of file>"
                    raise PatchConflict(f"line {pos + 1}: expected {text.rstrip(chr(10))!r}, found {found!r}")
                if tag == " ":
                    out.append(lines[pos])
                pos += 1
            elif tag == "+":
                out.append(text)
            elif tag != "\\":
                raise PatchConflict(f"bad diff line: {line!r}")
            i += 1
    out.extend(lines[pos:])
    return "".join(out)


def content_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def apply_patch_file(root: Path, patch: PatchProposed) -> PatchApplyResult:
    """Apply ``patch`` to ``root / patch.file_path``; the result to send back (a conflict is not raised)."""
    path = root / patch.file_path
    try:
        old = path.read_text() if path.exists() else ""
        new = apply_unified_diff(old, patch.diff)
    except (PatchConflict, OSError, UnicodeDecodeError) as exc:
        return PatchApplyResult(patch_id=patch.patch_id, file_path=patch.file_path, success=False,
                                error=PatchError(message=str(exc), type="conflict"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new)
    return PatchApplyResult(patch_id=patch.patch_id, file_path=patch.file_path, success=True,
                            applied_hash=content_hash(new))


async def run_command(request: CommandApprovalRequest, timeout: float = 600) -> CommandResult:
    """Run a ``command.request_approval``'s command in its working directory, as the user's terminal would."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_shell(
        request.command, cwd=request.working_directory, env={**os.environ, **request.environment},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        stdout, stderr = await proc.communicate()
    return CommandResult(command_id=request.command_id, command=request.command,
                         exit_code=proc.returncode if proc.returncode is not None else -1,
                         stdout=stdout.decode(errors="replace"), stderr=stderr.decode(errors="replace"),
                         duration_ms=int((time.monotonic() - started) * 1000))


# ----------------------------------------------------------------------------------------------------------------
# The terminal client


# What the model, a tool or a command printed is untrusted: in a terminal, escape sequences can recolour or hide
# text, rewrite the title, write the clipboard (OSC 52) or fake a link (OSC 8), and bidi controls can make text read
# otherwise than it runs. Whole sequences are dropped first (so "\x1b[31mred" prints "red"); then every remaining
# control character but newline and tab — a lone ESC included, so a sequence split across tokens cannot form either.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: title, hyperlink, clipboard (to BEL or ST, or the end)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """Model, tool or command text as it may reach a terminal: no escape sequence, no control character but newline
    and tab, no bidi control (``\r`` goes too: it could overwrite what was printed on the line)."""
    return _UNPRINTABLE.sub("", _ESCAPE_SEQUENCE.sub("", text))


def _say(*parts: object, end: str = "\n", file: Any = None, flush: bool = False) -> None:
    """``print`` for untrusted text: each part through :func:`terminal_safe`."""
    print(*(terminal_safe(str(part)) for part in parts), end=end, file=file or sys.stdout, flush=flush)


async def _ask(prompt: str) -> str:
    return (await asyncio.to_thread(input, terminal_safe(prompt))).strip().lower()


async def run_terminal(args: argparse.Namespace) -> int:
    """One turn, printed like a terminal client: returns 0 when the turn completed."""
    root = Path(args.root).resolve()
    session_id = args.session or (await create_session(args.url, args.token, args.workspace_id))["id"]
    capabilities = ["diff_preview"]
    if args.run_commands:
        capabilities.append("terminal_exec")
    if args.apply_patches:
        capabilities.append("apply_patches")
    stream = await SessionStream.open(args.url, session_id, args.token, workspace_id=args.workspace_id)
    async with stream:
        hello = await stream.hello(capabilities, name="session_stream_client")
        _say(f"# session {session_id} — patches: {hello.patch_mode}, commands: {hello.command_mode}",
              file=sys.stderr)
        await stream.send_user_message(args.message)
        patches: dict[str, PatchProposed] = {}
        applied: set[str] = set()
        streamed = False
        async for message in stream:
            if isinstance(message, Token):
                streamed = True
                _say(message.token, end="", flush=True)
            elif isinstance(message, Thinking):
                _say(f"\n[{message.phase}] {message.message}", file=sys.stderr)
            elif isinstance(message, Plan):
                _say("\n[plan]" + "".join(f"\n  {s.step_number}. {s.description}" for s in message.steps))
            elif isinstance(message, ToolExecute):
                _say(f"\n[tool {message.tool_name}: {message.status}]", file=sys.stderr)
            elif isinstance(message, PatchProposed):
                patches[message.patch_id] = message
                if message.requires_approval or hello.patch_mode != "client":
                    _say(f"\n[patch {message.patch_id}] {message.rationale or ''}\n{message.diff}")
                elif message.patch_id not in applied:  # the final patch: ours to apply
                    applied.add(message.patch_id)
                    result = apply_patch_file(root, message)
                    _say(f"[applied {message.file_path}: {'ok' if result.success else result.error}]")
                    await stream.send(result)
            elif isinstance(message, ToolApprovalRequest):
                patch = patches.get(str(message.args.get("patch_id")))
                ids = [h.id for h in patch.hunks if h.id] if patch else []
                choices = "y/n/a" + (f" or hunk ids ({','.join(ids)})" if ids else "")
                answer = await _ask(f"\nApprove {message.tool_name} {message.args.get('file_path') or ''} "
                                    f"[{message.risk_level} risk]? {choices}: ")
                file_path = message.args.get("file_path")
                if answer in ("y", "yes"):
                    await stream.approve(message.request_id, "file", file_path)
                elif answer in ("a", "all"):
                    await stream.approve(message.request_id, "all", file_path)
                elif answer and answer not in ("n", "no"):
                    hunks = [h.strip() for h in answer.split(",") if h.strip()]
                    await stream.approve(message.request_id, "hunk", file_path, hunks)
                else:
                    await stream.reject(message.request_id, file_path)
            elif isinstance(message, CommandApprovalRequest):
                _say(f"\n$ {message.command}   (in {message.working_directory})")
                if message.requires_approval and await _ask("Run it? y/n: ") not in ("y", "yes"):
                    await stream.reject(message.command_id)
                    continue
                ran = await run_command(message)  # a result counts as the approval
                _say(ran.stdout, end="")
                _say(ran.stderr, end="", file=sys.stderr)
                await stream.command_result(ran)
            elif isinstance(message, ServerError):
                _say(f"\n[error {message.error.code}] {message.error.message}", file=sys.stderr)
                if not message.error.recoverable:
                    return 1
            elif isinstance(message, MessageFinal):
                # a command's answer (/skills, /context…) or an error comes only here: no tokens streamed it
                _say(message.message if not streamed else "")
                return 0 if message.metadata.success else 1
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--url", required=True, help="the Jupyter server's base URL, e.g. http://127.0.0.1:8888/")
    parser.add_argument("--token", default=os.environ.get("JUPYTER_TOKEN"), help="Jupyter token ($JUPYTER_TOKEN)")
    parser.add_argument("--message", required=True, help="what to ask")
    parser.add_argument("--session", help="an existing session id (default: a new session)")
    parser.add_argument("--workspace-id", help="the workspace of a new session (default: the server's root)")
    parser.add_argument("--root", default=".", help="the workspace folder on this machine (for --apply-patches)")
    parser.add_argument("--run-commands", action="store_true", help="run the model's commands here (terminal_exec)")
    parser.add_argument("--apply-patches", action="store_true", help="write approved patches here (apply_patches)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(run_terminal(args))
    except KeyboardInterrupt:
        return 130
    except (httpx.HTTPStatusError, InvalidStatus, httpx.TransportError, OSError) as exc:
        print(f"error: {refusal(exc, args)}", file=sys.stderr)
        return 1


def refusal(exc: BaseException, args: argparse.Namespace) -> str:
    """One line for a server that refused us or could not be reached, instead of a traceback."""
    status = (exc.response.status_code if isinstance(exc, httpx.HTTPStatusError)
              else exc.response.status_code if isinstance(exc, InvalidStatus) else None)
    if status in (401, 403):
        return (f"the server refused the request ({status}): check --token (or $JUPYTER_TOKEN) and that the URL "
                "is the Jupyter server's own (a cross-site Origin is refused too)")
    if status == 404:
        return (f"not found (404): no session {args.session!r} on this server" if args.session
                else "not found (404): is eca-notebook's server extension enabled on this Jupyter server?")
    if status is not None:
        return f"the server answered {status}"
    return f"cannot reach {args.url}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
