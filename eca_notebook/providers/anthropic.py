"""Anthropic Messages API (``/v1/messages``).

Things this API is strict about and this module therefore gets right: ``max_tokens`` is required; tool results go
as ``tool_result`` blocks in the *user* message right after the assistant's ``tool_use``, all results of one turn in
one message; thinking blocks must be sent back unchanged with their ``signature`` (or as ``redacted_thinking``);
with extended thinking, ``max_tokens`` must exceed the budget and ``temperature`` must be left unset. An explicit
``max_tokens`` (the model's output limit) is never exceeded: the thinking budget shrinks to fit, and thinking is left
off when not even the API's minimum budget fits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..protocol import JsonObject, JsonValue
from ._blocks import new_id
from ._http import HttpProvider, parse_json
from ._sse import sse_batches
from .base import (
    AssistantMessage,
    Finished,
    ImagePart,
    ProviderRequest,
    ReasoningDelta,
    ReasoningFinished,
    ReasoningStarted,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    UrlCitation,
    Usage,
    UserMessage,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_THINKING_BUDGET",
    "MIN_THINKING_BUDGET",
    "AnthropicProvider",
    "image_block",
    "mark_messages",
    "tool_input",
]

log = logging.getLogger(__name__)

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_THINKING_BUDGET = 4096
MIN_THINKING_BUDGET = 1024  # the API rejects smaller budgets

_STOP = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_calls", "max_tokens": "max_tokens"}
# In-stream error types → (HTTP status they correspond to, worth retrying later)
_ERRORS = {
    "overloaded_error": (529, True),
    "rate_limit_error": (429, True),
    "api_error": (500, True),
    "timeout_error": (504, True),
    "authentication_error": (401, False),
    "permission_error": (403, False),
    "invalid_request_error": (400, False),
    "not_found_error": (404, False),
    "request_too_large": (413, False),
}


def image_block(image: ImagePart) -> JsonObject:
    """An ``image`` content block with a base64 source (in a user message or inside a ``tool_result``)."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.base64()}}


def tool_input(arguments: str) -> JsonObject:
    """``tool_use.input`` must be an object; the model's raw JSON text is parsed back into one."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        log.warning("tool call arguments are not valid JSON; sending {} instead")
        return {}
    return value if isinstance(value, dict) else {"value": value}


@dataclass
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)  # tool-call JSON fragments / signature fragments
    data: str | None = None  # redacted_thinking payload


class AnthropicProvider(HttpProvider):
    api = "anthropic"
    default_path = "/v1/messages"
    terminal_event = "message_stop"

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.settings.key:
            headers["x-api-key"] = self.settings.key
        return headers

    def build_body(self, request: ProviderRequest) -> JsonObject:
        messages: list[JsonValue] = []

        def add(role: str, blocks: list[JsonValue]) -> None:
            if not blocks:
                return
            last = messages[-1] if messages else None
            content = last.get("content") if isinstance(last, dict) and last.get("role") == role else None
            if isinstance(content, list):
                content.extend(blocks)  # e.g. several tool results → one user message
            else:
                messages.append({"role": role, "content": blocks})

        for message in request.messages:
            if isinstance(message, UserMessage):
                # images first: Anthropic's vision guide finds them best placed before the question
                user_blocks: list[JsonValue] = [image_block(i) for i in message.images]
                if message.text:
                    user_blocks.append({"type": "text", "text": message.text})
                add("user", user_blocks)
            elif isinstance(message, AssistantMessage):
                blocks: list[JsonValue] = []
                for reasoning in message.reasoning:
                    if reasoning.signature:
                        blocks.append(
                            {"type": "thinking", "thinking": reasoning.text, "signature": reasoning.signature}
                        )
                    elif reasoning.encrypted and not reasoning.text:
                        blocks.append({"type": "redacted_thinking", "data": reasoning.encrypted})
                    # unsigned reasoning (e.g. from another provider) cannot be sent back: dropped
                if message.text:
                    blocks.append({"type": "text", "text": message.text})
                for call in message.tool_calls:
                    blocks.append(
                        {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.arguments)}
                    )
                add("assistant", blocks)
            elif isinstance(message, ToolResultMessage):
                block: JsonObject = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.output,
                }
                if message.images:  # a tool_result's content may be a list of text and image blocks
                    result_blocks: list[JsonValue] = [image_block(i) for i in message.images]
                    if message.output:
                        result_blocks.insert(0, {"type": "text", "text": message.output})
                    block["content"] = result_blocks
                if message.is_error:
                    block["is_error"] = True
                add("user", [block])

        max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
        body: JsonObject = {"model": request.model, "max_tokens": max_tokens, "messages": messages, "stream": True}
        cache = self.cache_control()
        if request.system:
            system: list[JsonValue] = [{"type": "text", "text": request.system, "cache_control": cache}]
            if request.system_note:  # after the breakpoint: a changing note leaves the cached prefix intact
                system.append({"type": "text", "text": request.system_note})
            body["system"] = system
        elif request.system_note:
            body["system"] = request.system_note
        if request.tools:
            tools: list[JsonObject] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
            ]
            tools[-1]["cache_control"] = cache
            body["tools"] = [*tools]
        mark_messages(messages, cache)
        thinking = False
        if request.reasoning:
            budget = max(MIN_THINKING_BUDGET, request.reasoning_budget or DEFAULT_THINKING_BUDGET)
            if max_tokens <= budget and request.max_tokens is None:
                body["max_tokens"] = budget + DEFAULT_MAX_TOKENS  # no limit was asked for: make room
            elif max_tokens <= budget:
                budget = max_tokens // 2  # the asked-for limit holds; thinking gets half of it
            thinking = budget >= MIN_THINKING_BUDGET
            if thinking:
                body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if not thinking and request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    def cache_control(self) -> JsonObject:
        """The breakpoint marker: 5-minute cache, or 1 hour with ``cacheRetention: "long"``."""
        if self.settings.cache_retention == "long":
            return {"type": "ephemeral", "ttl": "1h"}
        return {"type": "ephemeral"}

    def request_body(self, request: ProviderRequest) -> JsonObject:
        """The body with ``extraPayload`` and a variant's payload merged; thinking a payload turned on (a variant's
        ``budget_tokens``) is kept within ``max_tokens``, and ``temperature`` dropped next to it, as the API wants."""
        body = super().request_body(request)
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"):
            body.pop("temperature", None)
            budget = thinking.get("budget_tokens")
            max_tokens = body.get("max_tokens")
            if isinstance(budget, int) and isinstance(max_tokens, int) and budget >= max_tokens:
                if request.max_tokens is None:
                    body["max_tokens"] = budget + DEFAULT_MAX_TOKENS
                elif max_tokens // 2 >= MIN_THINKING_BUDGET:
                    body["thinking"] = {**thinking, "budget_tokens": max_tokens // 2}
                else:
                    body.pop("thinking")
        return body

    async def parse(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        blocks: dict[int, _Block] = {}
        n_calls = 0
        message_id = ""
        usage: dict[str, int] = {}
        stop: str | None = None
        done = False
        stop_reading = False

        async for batch in sse_batches(response.aiter_text()):
            for sse in batch:
                ev = parse_json(sse.data)
                if not isinstance(ev, dict):
                    continue
                kind = ev.get("type") or sse.event

                if kind == "content_block_delta":
                    block = blocks.get(ev.get("index", -1))
                    delta = ev.get("delta") or {}
                    dtype = delta.get("type")
                    if dtype == "text_delta":
                        if delta.get("text"):
                            yield TextDelta(delta["text"])
                    elif dtype == "citations_delta":  # web search's sources: the reference shows them as url contents
                        citation = delta.get("citation")
                        if isinstance(citation, dict) and citation.get("type") == "web_search_result_location" \
                                and isinstance(citation.get("url"), str):
                            yield UrlCitation(str(citation.get("title") or citation["url"]), citation["url"])
                    elif block is None:
                        continue
                    elif dtype == "thinking_delta":
                        if delta.get("thinking"):
                            yield ReasoningDelta(block.id, delta["thinking"])
                    elif dtype == "signature_delta":
                        block.parts.append(delta.get("signature") or "")
                    elif dtype == "input_json_delta":
                        if delta.get("partial_json"):
                            block.parts.append(delta["partial_json"])
                            yield ToolCallDelta(block.id, delta["partial_json"])
                elif kind == "content_block_start":
                    index = ev.get("index", len(blocks))
                    cb = ev.get("content_block") or {}
                    ctype = cb.get("type")
                    if ctype == "text":
                        blocks[index] = _Block("text")
                        if cb.get("text"):
                            yield TextDelta(cb["text"])
                    elif ctype in ("thinking", "redacted_thinking"):
                        block = _Block(ctype, id=f"{message_id or new_id('msg')}_thinking_{index}", data=cb.get("data"))
                        if cb.get("signature"):
                            block.parts.append(cb["signature"])
                        blocks[index] = block
                        yield ReasoningStarted(block.id)
                        if cb.get("thinking"):
                            yield ReasoningDelta(block.id, cb["thinking"])
                    elif ctype == "tool_use":
                        block = _Block("tool_use", id=cb.get("id") or new_id("toolu"), name=cb.get("name") or "")
                        blocks[index] = block
                        yield ToolCallStarted(block.id, block.name, n_calls)
                        n_calls += 1
                        if cb.get("input"):  # normally {} with the JSON streamed after; some proxies send it whole
                            block.parts.append(json.dumps(cb["input"]))
                            yield ToolCallDelta(block.id, block.parts[-1])
                    else:
                        blocks[index] = _Block(ctype or "unknown")
                elif kind == "content_block_stop":
                    block = blocks.pop(ev.get("index", -1), None)
                    if block is not None:
                        for event in self._close_block(block):
                            yield event
                elif kind == "message_start":
                    message = ev.get("message") or {}
                    message_id = message.get("id") or ""
                    _merge_usage(usage, message.get("usage"))
                elif kind == "message_delta":
                    stop = (ev.get("delta") or {}).get("stop_reason") or stop
                    _merge_usage(usage, ev.get("usage"))
                elif kind == "message_stop":
                    done = True
                    stop_reading = True
                    break
                elif kind == "error":
                    error = ev.get("error") or {}
                    status, retryable = _ERRORS.get(error.get("type") or "", (None, False))
                    raise self.stream_error(str(error.get("message") or error.get("type") or ev), status=status,
                                            retryable=retryable, code=error.get("type") or None)
            if stop_reading:
                break

        if not done:
            raise self.ended_unexpectedly()
        for index in sorted(blocks):
            for event in self._close_block(blocks[index]):
                yield event
        if usage:  # only counts the stream carried (a proxy may send none)
            yield Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_read_tokens=usage.get("cache_read_input_tokens", 0),
                cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
            )
        yield Finished(_STOP.get(stop or "end_turn", "other"), reason=stop if isinstance(stop, str) else None)

    @staticmethod
    def _close_block(block: _Block) -> list[StreamEvent]:
        if block.kind == "thinking":
            return [ReasoningFinished(block.id, signature="".join(block.parts) or None)]
        if block.kind == "redacted_thinking":
            return [ReasoningFinished(block.id, encrypted=block.data)]
        if block.kind == "tool_use":
            return [ToolCallFinished(block.id, block.name, "".join(block.parts) or "{}")]
        return []


def mark_messages(messages: list[JsonValue], cache: JsonObject) -> None:
    """Cache breakpoints on the history, as Anthropic's guidance for multi-turn tool use places them: the last block
    of the last message (everything up to it is written to the cache) and of the user message before it — the
    previous request's last message, so the next request reads the cache from there even when more than the API's
    20-block look-back was added since. With the tools' and the system prompt's that makes the API's maximum of 4."""
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user" and m.get("content")]
    for message in users[-2:]:
        content = message["content"]
        if isinstance(content, list) and isinstance(content[-1], dict):
            content[-1]["cache_control"] = cache


def _merge_usage(usage: dict[str, int], update: Any) -> None:
    """message_start carries input counts, message_delta the (cumulative) output count and sometimes inputs too."""
    if not isinstance(update, dict):
        return
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = update.get(key)
        if isinstance(value, int):
            usage[key] = value
