"""``rewrite/prompt``: rewrite a selection as the user asks, streamed back as ``rewrite/contentReceived``.

The request answers ``{status: "prompting", model}`` at once; the rewrite then streams to the connection that asked
(only to it: another client of the same workspace has no editor showing that selection):

``started`` (the model answered) → ``reasoning`` (once per reasoning block, when the model reasons; its text is not
sent) → ``text`` chunks (clients append) → ``replace`` (the whole text, when markdown fences or blank edge lines were
removed from what was streamed) → ``finished {totalTimeMs}``. A failure sends ``error {message}`` and then
``finished``; ``rewrite/stop {id}`` (or the connection closing) ends it with ``finished`` — what was streamed so far
is what the client has.

The model: ``rewrite.model``, else the chat's selected/default model (as the reference server). The prompt is the
reference's (``resources/prompts/rewrite.md``): the file around the selection (``rewrite.fullFileMaxLines`` lines
centred on it), the selection and its range, and "answer with the replacement only". A small model (the embedded
one) gets a short prompt of its own — the long one made its answers worse — and a smaller window of the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

from ..._redact import redact_json
from ..._tasks import BackgroundTasks
from ...protocol import (
    JsonObject,
    MetadataContent,
    ProgressContent,
    RewriteContent,
    RewriteContentReceivedParams,
    RewriteErrorContent,
    RewriteFinishedContent,
    RewritePromptParams,
    RewritePromptResult,
    RewriteReasoningContent,
    RewriteReplaceContent,
    RewriteStartedContent,
    RewriteTextContent,
    TextContent,
)
from ...protocol.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ...providers import local as _local
from ...providers.base import (
    AssistantMessage,
    ProviderError,
    ProviderRequest,
    ReasoningStarted,
    TextDelta,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..chats import title_from
from ..config import ModelInfo
from ..models import ModelChoice, UnknownModel
from ..turn import Answer, Listener, ToolCallRunner, TurnHost, answer_approval
from ._text import strip_fences

__all__ = ["COMPACT_REWRITE_PROMPT", "REWRITE_PROMPT", "RewriteHost", "Rewriter", "normalize_rewrite", "rewrite_model"]

log = logging.getLogger(__name__)

REWRITE_PROMPT = """You are ECA (Editor Code Assistant), an AI coding assistant that operates on an editor.

## Task

Given the following text in USER editor, replace it following the USER request.

## General Context

{path}
{full_text}

## User text

```
{text}
```

## User selection range

{range_text}

## Core Principle

- Generate code in full, do not abbreviate or omit code.
- Do not ask for further clarification, and make any assumptions you need to follow instructions.

## Response

Generate ONLY the text to be replaced, without any explanation or markdown code fences.
The system will take your output and replace in the editor."""

# For a small model: the instruction next to the code, in the user's message, nothing else to get lost in.
COMPACT_REWRITE_PROMPT = """{request}

```
{text}
```

Reply with only the rewritten code."""

_COMPACT_FILE_LINES = 0  # the embedded model gets no file window: its 8k context and its attention are too small


def rewrite_model(models: ModelChoice) -> str | None:
    """``rewrite.model``, else the chat's selected model, else its default model."""
    configured = models.config.rewrite.model
    if configured:
        return configured
    registry = models.registry
    if models.selected_model and models.selected_model in registry.model_infos():
        return models.selected_model
    return registry.default_model()


def normalize_rewrite(text: str) -> str:
    """The rewritten text without the markdown fence a model wrapped it in, and without blank edge lines
    (indentation of the first line kept: the selection may start inside a block)."""
    inner, _ = strip_fences(text)
    lines = inner.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def file_window(path: str | None, line: int, max_lines: int, folders: list[Path]) -> str | None:
    """The file's text, or ``max_lines`` lines centred on ``line`` (1-based) with a marker saying which — as the
    reference shows it. None when there is no readable file (an unsaved buffer, a notebook cell's virtual path)."""
    if not path or max_lines <= 0:
        return None
    file = Path(path.removeprefix("file://"))
    if not file.is_absolute() and folders:
        file = folders[0] / file
    try:
        if not file.is_file() or file.stat().st_size > 2_000_000:
            return None
        content = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = content.splitlines()
    total = len(lines)
    if total <= max_lines:
        return content
    half = max_lines // 2
    start = max(1, min(total - max_lines + 1, max(1, line) - half))
    end = min(total, start + max_lines - 1)
    window = "\n".join(lines[start - 1:end])
    return f"[File truncated: showing lines {start}-{end} of {total}]\n{window}"


class RewriteHost(TurnHost, Protocol):
    """What the rewrites use of the engine: a turn's needs (a proposed call runs as one), the workspace folders (the
    file around a selection) and the engine's background tasks (a rewrite outlives its request)."""

    @property
    def workspace_folders(self) -> list[Path]: ...

    @property
    def background(self) -> BackgroundTasks: ...


class Rewriter:
    """The engine's rewrites, by (connection, rewrite id)."""

    def __init__(self, engine: RewriteHost) -> None:
        self._engine = engine
        self._running: dict[tuple[int, str], asyncio.Task[None]] = {}

    def start(self, params: RewritePromptParams, listener: Listener) -> RewritePromptResult:
        """Start rewrite ``params.id`` for ``listener``; RpcError when no model can do it (nothing is streamed)."""
        engine = self._engine
        model_id, provider, info = self._model()
        key = (id(listener), params.id)
        self.stop(params.id, listener)  # the same id again: the newer request wins
        task = engine.background.spawn(self._run(params, listener, provider, info), f"eca-rewrite-{params.id}")
        self._running[key] = task
        task.add_done_callback(lambda _: self._running.pop(key, None) if self._running.get(key) is task else None)
        return RewritePromptResult(model=model_id)

    def _model(self) -> tuple[str, Any, Any]:
        """The rewrite model (``rewrite.model``, else the chat's): its id, provider and info; RpcError when there is
        none or it is unknown."""
        engine = self._engine
        model_id = rewrite_model(engine)
        if model_id is None:
            raise RpcError(INVALID_REQUEST, engine.registry.missing_key_hint())
        try:
            provider, info = engine.registry.resolve(model_id)
        except UnknownModel:
            raise RpcError(INVALID_PARAMS, f"Unknown rewrite model '{model_id}' (rewrite.model)") from None
        return model_id, provider, info

    def stop(self, rewrite_id: str, listener: Listener | None = None) -> bool:
        """Stop a running rewrite (of this listener, or of any); False when none was running."""
        found = False
        for (owner, rid), task in list(self._running.items()):
            if rid == rewrite_id and (listener is None or owner == id(listener)) and not task.done():
                task.cancel()
                found = True
        return found

    def forget(self, listener: Listener) -> None:
        """The listener is gone: stop its rewrites (nobody would see them)."""
        for (owner, _), task in list(self._running.items()):
            if owner == id(listener) and not task.done():
                task.cancel()

    async def rewrite_text(self, params: RewritePromptParams) -> tuple[str, str]:
        """The whole rewrite at once (``%eca rewrite``): (the model id, the normalized text). Raises
        :class:`ProviderError` when the model fails, RpcError when there is no model."""
        engine = self._engine
        model_id, provider, info = self._model()
        parts: list[str] = []
        async with asyncio.timeout(engine.config.rewrite.timeout_seconds):
            stream: Any = provider.stream(await self._request(params, info))
            async with contextlib.aclosing(stream):
                async for event in stream:
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
        return model_id, normalize_rewrite("".join(parts))

    def propose(self, chat_id: str | None, tool: str, arguments: JsonObject, message: str,
                answer: bool | None = None) -> tuple[str, asyncio.Task[None]]:
        """Propose one tool call the user asked for (not the model) in a chat, through the chat's normal path: the
        user echo ``message``, the call's ``toolCallRun`` with its diff and — unless the approval rules allow it —
        the wait for Approve/Reject, the result, and ``progress finished``. The exchange joins the chat's history,
        so a next prompt knows what was changed. ``answer``: approve (True) or reject (False) it without asking
        (where nobody can click). Returns (the chat id, the chat's task); ValueError when the chat is busy."""
        engine = self._engine
        chat = engine.chat_book.open_for_prompt(chat_id)
        if chat.running:
            raise ValueError("A prompt is already running in this chat: stop it first.")
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=f"eca__{tool}", arguments=json.dumps(arguments))
        turn = _Proposal(engine, chat, call, message, answer)
        engine.chat_book.start(chat, turn)  # type: ignore[arg-type]  # a turn without a model: run() is all it needs
        assert chat.task is not None
        return chat.id, chat.task

    # -- one rewrite ---------------------------------------------------------------------------------------------

    async def _request(self, params: RewritePromptParams, info: ModelInfo) -> ProviderRequest:
        engine = self._engine
        small = info.provider == _local.PROVIDER_ID or info.compact
        if small:
            system = info.system_prompt or ""
            user = COMPACT_REWRITE_PROMPT.format(request=params.prompt.strip(), text=params.text)
        else:
            start, end = params.range.start, params.range.end
            full = await asyncio.to_thread(file_window, params.path, start.line,  # a file read: off the loop
                                           engine.config.rewrite.full_file_max_lines, engine.workspace_folders)
            system = REWRITE_PROMPT.format(
                path=f"- File path: {params.path}" if params.path else "",
                full_text=f"- Full file content:\n```\n{full}\n```" if full else "",
                text=params.text,
                range_text=(f"- Start line: {start.line}\n- Start character: {start.character}\n"
                            f"- End line: {end.line}\n- End character: {end.character}"),
            )
            user = params.prompt
        return ProviderRequest(
            model=info.name,
            messages=[UserMessage(user)],
            system=system,
            max_tokens=info.output_limit,
            reasoning=info.reasoning,
            extra=dict(info.extra_payload),
            extra_headers=dict(info.extra_headers),
        )

    async def _run(self, params: RewritePromptParams, listener: Listener, provider: Any, info: ModelInfo) -> None:
        started = time.perf_counter()

        def send(content: RewriteContent) -> None:
            wire = RewriteContentReceivedParams(rewrite_id=params.id, content=content).dump()
            try:
                listener.send("rewrite/contentReceived", redact_json(wire))
            except Exception:  # a broken client must not break the engine
                log.exception("rewrite %s: sending failed", params.id)

        parts: list[str] = []
        reached = False
        try:
            async with asyncio.timeout(self._engine.config.rewrite.timeout_seconds):
                stream = provider.stream(await self._request(params, info))
                async with contextlib.aclosing(stream):
                    async for event in stream:
                        if not reached:
                            reached = True
                            send(RewriteStartedContent())
                        if isinstance(event, ReasoningStarted):
                            send(RewriteReasoningContent())
                        elif isinstance(event, TextDelta) and event.text:
                            parts.append(event.text)
                            send(RewriteTextContent(text=event.text))
            raw = "".join(parts)
            normalized = normalize_rewrite(raw)
            if normalized != raw:
                send(RewriteReplaceContent(text=normalized))
        except ProviderError as exc:
            log.info("rewrite %s with %s failed: %s", params.id, info.id, exc.message)
            send(RewriteErrorContent(message=exc.message))
        except TimeoutError:
            send(RewriteErrorContent(
                message=f"The rewrite took longer than {self._engine.config.rewrite.timeout_seconds:g} s "
                        "(rewrite.timeoutSeconds)."))
        except asyncio.CancelledError:
            pass  # stopped (rewrite/stop, the client left, the engine closing): finished says so
        except Exception as exc:
            log.exception("rewrite %s failed", params.id)
            send(RewriteErrorContent(message=f"Error: {exc}"))
        send(RewriteFinishedContent(total_time_ms=int((time.perf_counter() - started) * 1000)))


class _Proposal:
    """The turn of :meth:`Rewriter.propose`: one tool call, run by the same runner as a model's calls."""

    def __init__(self, engine: TurnHost, chat: Any, call: ToolCall, message: str, answer: bool | None) -> None:
        self.engine = engine
        self.chat = chat
        self.call = call
        self.message = message
        self.answer = answer

    def _runner(self) -> ToolCallRunner:
        engine, chat = self.engine, self.chat
        toolbox = engine.toolbox
        behavior = chat.behavior or engine.selected_behavior
        return ToolCallRunner(
            chat_id=chat.id,
            tools=toolbox.all_tools(),
            context=dataclasses.replace(toolbox.tool_context(), default_notebook=engine.default_notebook),
            approval_config=engine.agents.tool_call_for(behavior).approval,
            session=engine.session_approvals,
            pending=engine.pending_approvals,
            undo_log=engine.undo_log,
            emit=lambda role, content: engine.emit_content(chat, role, content),
            progress=lambda state, text: engine.emit_content(chat, "system", ProgressContent(state="running",
                                                                                              text=text)),
        )

    async def _answer(self) -> None:
        """Answer the call's approval as soon as it waits (``answer`` given)."""
        key = (self.chat.id, self.call.id)
        while key not in self.engine.pending_approvals:
            await asyncio.sleep(0.01)
        answer_approval(self.engine.pending_approvals, self.chat.id, self.call.id, Answer(bool(self.answer)))

    async def run(self) -> None:
        engine, chat, call = self.engine, self.chat, self.call
        content_id = str(uuid.uuid4())
        engine.emit_content(chat, "user", TextContent(text=self.message + "\n", content_id=content_id))
        if chat.title is None:
            chat.title = title_from(self.message)
            engine.emit_content(chat, "system", MetadataContent(title=chat.title))
        chat.messages.append(UserMessage(self.message, content_id=content_id))
        chat.messages.append(AssistantMessage(tool_calls=[call]))
        answering = asyncio.create_task(self._answer()) if self.answer is not None else None
        output, error = "Stopped by the user.", True
        try:
            result = await self._runner().run(call)
            output, error = result.output, result.error
        finally:
            if answering is not None:
                answering.cancel()
            chat.messages.append(ToolResultMessage(call.id, call.name, output, error))
            closing = "The change was not made." if error else "Done: the change was applied."
            chat.messages.append(AssistantMessage(text=closing))
            engine.emit_content(chat, "assistant", TextContent(text=closing))
            engine.emit_content(chat, "system", ProgressContent(state="finished", text=""))
