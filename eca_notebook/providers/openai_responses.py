"""OpenAI Responses API (``/v1/responses``): the built-in ``openai`` provider.

We run it stateless (``store: false``) and send the whole history every turn, as with the other APIs. Reasoning
then only survives across turns as ``encrypted_content``, which we ask for with
``include: ["reasoning.encrypted_content"]`` and send back verbatim as ``reasoning`` input items.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TypedDict

import httpx

from ..protocol import JsonObject, JsonValue
from ._http import HttpProvider, parse_json
from ._sse import sse_batches
from ._tool_images import lift_tool_images
from .base import (
    AssistantMessage,
    Finished,
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

__all__ = ["OpenAIResponsesProvider", "reasoning_effort"]


class _InputDetails(TypedDict, total=False):
    cached_tokens: int


class _Usage(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    input_tokens_details: _InputDetails


class _IncompleteDetails(TypedDict, total=False):
    reason: str


class _Response(TypedDict, total=False):
    """The ``response`` of ``response.completed`` / ``response.incomplete`` (the keys read)."""

    status: str
    usage: _Usage
    incomplete_details: _IncompleteDetails


_RETRYABLE_CODES = {"rate_limit_exceeded", "server_error", "server_is_overloaded", "slow_down"}


def reasoning_effort(budget: int | None) -> str:
    """Map a thinking-token budget onto the Responses API's coarse effort levels."""
    if budget is None:
        return "medium"
    if budget < 4096:
        return "low"
    if budget < 16384:
        return "medium"
    return "high"


@dataclass
class _Call:
    call_id: str
    name: str
    args: list[str] = field(default_factory=list)
    finished: bool = False


class OpenAIResponsesProvider(HttpProvider):
    api = "openai-responses"
    default_path = "/v1/responses"
    terminal_event = "response.completed"

    def build_body(self, request: ProviderRequest) -> JsonObject:
        items: list[JsonValue] = []
        for message in lift_tool_images(request.messages):
            if isinstance(message, UserMessage):
                content: str | list[JsonValue] = message.text
                if message.images:  # input_text then input_image parts (data URLs)
                    content = [{"type": "input_text", "text": message.text}] if message.text else []
                    content += [{"type": "input_image", "image_url": i.data_url()} for i in message.images]
                items.append({"type": "message", "role": "user", "content": content})
            elif isinstance(message, AssistantMessage):
                for reasoning in message.reasoning:
                    if not reasoning.encrypted:
                        continue  # stateless: a reasoning item without encrypted content can't be resolved
                    item: JsonObject = {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": reasoning.text}] if reasoning.text else [],
                        "encrypted_content": reasoning.encrypted,
                    }
                    if reasoning.id:
                        item["id"] = reasoning.id
                    items.append(item)
                if message.text:
                    items.append({"type": "message", "role": "assistant", "content": message.text})
                for call in message.tool_calls:
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.name,
                            "arguments": call.arguments or "{}",
                        }
                    )
            elif isinstance(message, ToolResultMessage):
                items.append(
                    {"type": "function_call_output", "call_id": message.tool_call_id, "output": message.output}
                )
        body: JsonObject = {"model": request.model, "input": items, "stream": True, "store": False}
        if request.full_system():
            body["instructions"] = request.full_system()
        if request.tools:
            # strict defaults to true here; our tools' schemas are not written for strict mode.
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": False,
                }
                for t in request.tools
            ]
        if request.max_tokens is not None:
            body["max_output_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.reasoning:
            body["reasoning"] = {"effort": reasoning_effort(request.reasoning_budget), "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        body.update(self.cache_key_field(request))
        return body

    async def parse(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        calls: dict[str, _Call] = {}  # by item id
        open_reasoning: set[str] = set()
        final: _Response | None = None
        stop = "end_turn"
        stop_reading = False

        async for batch in sse_batches(response.aiter_text()):
            for sse in batch:
                ev = parse_json(sse.data)
                if not isinstance(ev, dict):
                    continue
                kind = ev.get("type") or sse.event

                if kind == "response.output_text.delta" or kind == "response.refusal.delta":
                    if ev.get("delta"):
                        yield TextDelta(ev["delta"])
                elif kind == "response.output_text.annotation.added":
                    annotation = ev.get("annotation")
                    if isinstance(annotation, dict) and annotation.get("type") == "url_citation" \
                            and isinstance(annotation.get("url"), str):
                        yield UrlCitation(str(annotation.get("title") or annotation["url"]), annotation["url"])
                elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                    item_id = ev.get("item_id") or ""
                    if item_id not in open_reasoning:
                        open_reasoning.add(item_id)
                        yield ReasoningStarted(item_id)
                    if ev.get("delta"):
                        yield ReasoningDelta(item_id, ev["delta"])
                elif kind == "response.reasoning_summary_part.added":
                    if ev.get("summary_index", 0) > 0 and ev.get("item_id") in open_reasoning:
                        yield ReasoningDelta(ev["item_id"], "\n\n")
                elif kind == "response.function_call_arguments.delta":
                    call = calls.get(ev.get("item_id") or "")
                    if call is not None and ev.get("delta"):
                        call.args.append(ev["delta"])
                        yield ToolCallDelta(call.call_id, ev["delta"])
                elif kind == "response.output_item.added":
                    item = ev.get("item") or {}
                    if item.get("type") == "reasoning" and item.get("id") not in open_reasoning:
                        open_reasoning.add(item.get("id") or "")
                        yield ReasoningStarted(item.get("id") or "")
                    elif item.get("type") == "function_call":
                        call = _Call(call_id=item.get("call_id") or item.get("id") or "", name=item.get("name") or "")
                        calls[item.get("id") or call.call_id] = call
                        yield ToolCallStarted(call.call_id, call.name, len(calls) - 1)
                elif kind == "response.output_item.done":
                    item = ev.get("item") or {}
                    if item.get("type") == "reasoning":
                        item_id = item.get("id") or ""
                        if item_id not in open_reasoning:
                            yield ReasoningStarted(item_id)
                        open_reasoning.discard(item_id)
                        yield ReasoningFinished(item_id, encrypted=item.get("encrypted_content"))
                    elif item.get("type") == "function_call":
                        call = calls.get(item.get("id") or "") or calls.get(item.get("call_id") or "")
                        if call is None:  # done without added: start it now so the order stays valid
                            call = _Call(call_id=item.get("call_id") or item.get("id") or "",
                                         name=item.get("name") or "")
                            calls[item.get("id") or call.call_id] = call
                            yield ToolCallStarted(call.call_id, call.name, len(calls) - 1)
                        if not call.finished:
                            call.finished = True
                            arguments = item.get("arguments") or "".join(call.args) or "{}"
                            yield ToolCallFinished(call.call_id, item.get("name") or call.name, arguments)
                elif kind == "response.completed":
                    final = ev.get("response") or {}
                    stop = "tool_calls" if calls else "end_turn"
                    stop_reading = True
                    break
                elif kind == "response.incomplete":
                    final = ev.get("response") or {}
                    reason = (final.get("incomplete_details") or {}).get("reason")
                    stop = "max_tokens" if reason == "max_output_tokens" else "other"
                    stop_reading = True
                    break
                elif kind == "response.failed":
                    error = (ev.get("response") or {}).get("error") or {}
                    raise self._error_event(error if isinstance(error, dict) else {"message": str(error)})
                elif kind == "error":
                    error = ev.get("error")
                    raise self._error_event(error if isinstance(error, dict) else ev)
            if stop_reading:
                break

        if final is None:
            raise self.ended_unexpectedly()
        for item_id in sorted(open_reasoning):
            yield ReasoningFinished(item_id)
        for call in calls.values():
            if not call.finished:
                call.finished = True
                yield ToolCallFinished(call.call_id, call.name, "".join(call.args) or "{}")
        usage = final.get("usage")
        if isinstance(usage, dict) and any(isinstance(usage.get(k), int) for k in ("input_tokens", "output_tokens")):
            yield _usage(usage)
        reason = (final.get("incomplete_details") or {}).get("reason") or final.get("status")
        yield Finished(stop, reason=reason if isinstance(reason, str) else None)

    def _error_event(self, error: JsonObject) -> Exception:
        message = str(error.get("message") or error.get("code") or "unknown error")
        code = str(error.get("code") or error.get("type") or "")
        return self.stream_error(message, retryable=code in _RETRYABLE_CODES, code=code or None)


def _usage(usage: _Usage) -> Usage:
    total_in = int(usage.get("input_tokens") or 0)
    details = usage.get("input_tokens_details") or {}
    cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
    return Usage(
        input_tokens=max(0, total_in - cached),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_tokens=cached,
    )
