"""OpenAI Chat Completions (``/v1/chat/completions``): the lingua franca of local and hosted model servers.

vLLM, llama.cpp's server, LM Studio, OpenRouter and many more speak it, each with small variations this module
absorbs: reasoning arrives as ``reasoning_content`` (DeepSeek, vLLM), ``reasoning`` (OpenRouter, newer vLLM) or
inline ``<think>`` tags in the content; tool-call ids may be missing; some servers omit the final ``[DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypedDict
from urllib.parse import urlsplit

import httpx

from ..protocol import JsonObject, JsonValue
from ._blocks import ReasoningBlocks, new_id
from ._complete import completions_url, openai_completion_pieces, post_completion
from ._http import HttpProvider, parse_json
from ._sse import sse_batches
from ._think import ThinkTagSplitter
from ._tool_images import lift_tool_images
from .base import (
    AssistantMessage,
    CompletionRequest,
    Finished,
    ProviderRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["OpenAIChatProvider"]


class _PromptDetails(TypedDict, total=False):
    cached_tokens: int


class _Usage(TypedDict, total=False):
    """A chunk's ``usage`` (the last chunk's, with ``stream_options.include_usage``); DeepSeek's cache count too."""

    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_details: _PromptDetails
    prompt_cache_hit_tokens: int


_FINISH = {"stop": "end_turn", "tool_calls": "tool_calls", "function_call": "tool_calls", "length": "max_tokens"}
_LIMIT_KEYS = {"max_tokens", "max_completion_tokens"}


@dataclass
class _Call:
    id: str
    name: str
    index: int
    args: list[str] = field(default_factory=list)
    finished: bool = False


class OpenAIChatProvider(HttpProvider):
    api = "openai-chat"
    default_path = "/v1/chat/completions"
    terminal_event = "data: [DONE]"

    def build_body(self, request: ProviderRequest) -> JsonObject:
        messages: list[JsonValue] = []
        if request.full_system():
            messages.append({"role": "system", "content": request.full_system()})
        for message in lift_tool_images(request.messages):
            if isinstance(message, UserMessage):
                content: str | list[JsonValue] = message.text
                if message.images:  # text then image_url parts (data URLs)
                    content = [{"type": "text", "text": message.text}] if message.text else []
                    content += [{"type": "image_url", "image_url": {"url": i.data_url()}} for i in message.images]
                messages.append({"role": "user", "content": content})
            elif isinstance(message, AssistantMessage):
                if not message.text and not message.tool_calls:
                    continue  # reasoning-only turns are not sent back: most servers reject them
                item: JsonObject = {"role": "assistant", "content": message.text or None}
                if message.tool_calls:
                    item["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments or "{}"},
                        }
                        for call in message.tool_calls
                    ]
                messages.append(item)
            elif isinstance(message, ToolResultMessage):
                messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.output})
        body: JsonObject = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        # extraPayload naming either key is the user's choice (``null`` drops it), so ours is not added next to it.
        if request.max_tokens is not None and not _LIMIT_KEYS & request.extra.keys():
            body[self.limit_key()] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(self.cache_key_field(request))
        return body

    def complete(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Raw completion through the OpenAI-compatible legacy ``/v1/completions`` (next to the chat URL), with
        ``suffix`` when there is one (fill-in-the-middle); see :mod:`._complete`."""
        body: JsonObject = {"model": request.model, "prompt": request.prefix, "stream": True}
        if request.suffix:
            body["suffix"] = request.suffix
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            stop: list[JsonValue] = [*request.stop[:4]]  # OpenAI's limit
            body["stop"] = stop
        headers = self.request_headers(ProviderRequest(request.model, [], extra_headers=request.extra_headers))
        return post_completion(self, completions_url(self.endpoint), body, headers, openai_completion_pieces)

    def limit_key(self) -> str:
        """OpenAI's own service deprecated ``max_tokens`` and rejects it for reasoning models; every compatible
        server (vLLM, llama.cpp, LM Studio, Ollama, LiteLLM, OpenRouter) reads ``max_tokens``, not all of them the
        newer name."""
        host = (urlsplit(self.endpoint).hostname or "").lower()
        openai_host = host == "api.openai.com" or host.endswith(".openai.azure.com")
        return "max_completion_tokens" if openai_host else "max_tokens"

    async def parse(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        batches = self.parse_batches(response)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await batches.aclose()  # type: ignore[attr-defined]  # an async generator

    async def parse_batches(self, response: httpx.Response) -> AsyncIterator[list[StreamEvent]]:
        """The events of each network read together (the hot path: thousands of chunks, a few reads)."""
        splitter = ThinkTagSplitter(self.settings.think_tag_start, self.settings.think_tag_end)
        reasoning = ReasoningBlocks()
        calls: dict[Any, _Call] = {}
        finish_reason: str | None = None
        usage: _Usage | None = None
        done = False

        async for batch in sse_batches(response.aiter_text()):
            out: list[StreamEvent] = []
            try:
                for sse in batch:
                    data = sse.data
                    if data[:1] != "{" and data.strip() == "[DONE]":  # (a chunk is a JSON object)
                        done = True
                        break
                    chunk = parse_json(data)
                    if not isinstance(chunk, dict):
                        continue
                    if chunk.get("error"):
                        raise self._chunk_error(chunk["error"])
                    if isinstance(chunk.get("usage"), dict):
                        usage = chunk["usage"]
                    for choice in chunk.get("choices") or ():
                        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                            continue
                        delta = choice.get("delta") or {}
                        thought = delta.get("reasoning_content") or delta.get("reasoning")
                        if isinstance(thought, str) and thought:
                            out += reasoning.delta(thought)
                        content = delta.get("content")
                        if isinstance(content, str) and content:
                            for kind, piece in splitter.feed(content):
                                if kind == "reasoning":
                                    out += reasoning.delta(piece)
                                else:
                                    if reasoning.current is not None:
                                        out += reasoning.close()
                                    out.append(TextDelta(piece))
                        for position, tc in enumerate(delta.get("tool_calls") or ()):
                            out += reasoning.close()
                            out += self._tool_delta(calls, position, tc)
                        if choice.get("finish_reason"):
                            finish_reason = choice["finish_reason"]
                            out += self._finish_calls(calls)
            except Exception:
                if out:  # what came before the error in this read is shown first, as it arrived
                    yield out
                raise
            if out:
                yield out
            if done:
                break

        if not done and finish_reason is None:
            raise self.ended_unexpectedly()
        out = []
        for kind, piece in splitter.flush():
            if kind == "reasoning":
                out += reasoning.delta(piece)
            else:
                out += reasoning.close()
                out.append(TextDelta(piece))
        out += reasoning.close()
        out += self._finish_calls(calls)
        if usage is not None and any(isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens")):
            out.append(_usage(usage))
        stop = _FINISH.get(finish_reason or "", "other" if finish_reason else "end_turn")
        if calls and stop == "end_turn":
            stop = "tool_calls"  # some servers say "stop" even when they called tools
        out.append(Finished(stop, reason=finish_reason if isinstance(finish_reason, str) else None))
        yield out

    def _tool_delta(self, calls: dict[Any, _Call], position: int, tc: Any) -> list[StreamEvent]:
        if not isinstance(tc, dict):
            return []
        fn = tc.get("function") or {}
        key = tc.get("index", position)
        call = calls.get(key)
        new_id_given = tc.get("id")
        if call is not None and new_id_given and new_id_given != call.id and call.args:
            # A server reusing index 0 for a second parallel call: keep both.
            key = (key, new_id_given)
            call = calls.get(key)
        events: list[StreamEvent] = []
        if call is None:
            call = _Call(id=new_id_given or new_id("call"), name=fn.get("name") or "", index=len(calls))
            calls[key] = call
            events.append(ToolCallStarted(call.id, call.name, call.index))
        elif fn.get("name") and not call.name:
            call.name = fn["name"]
        args = fn.get("arguments")
        if isinstance(args, dict):  # a few servers send the object itself
            args = json.dumps(args)
        if isinstance(args, str) and args:
            call.args.append(args)
            events.append(ToolCallDelta(call.id, args))
        return events

    @staticmethod
    def _finish_calls(calls: dict[Any, _Call]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for call in calls.values():
            if not call.finished:
                call.finished = True
                events.append(ToolCallFinished(call.id, call.name, "".join(call.args) or "{}"))
        return events

    def _chunk_error(self, error: Any) -> Exception:
        if isinstance(error, dict):
            message = str(error.get("message") or error.get("type") or error)
            code = error.get("code")
        else:
            message, code = str(error), None
        status = code if isinstance(code, int) else None
        retryable = status in (429, 500, 502, 503, 504) or "overload" in message.lower()
        kind = error.get("type") if isinstance(error, dict) else None
        name = code if isinstance(code, str) else kind if isinstance(kind, str) else None
        return self.stream_error(message, status=status, retryable=retryable, code=name)


def _usage(usage: _Usage) -> Usage:
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
    cached = cached or int(usage.get("prompt_cache_hit_tokens") or 0)  # DeepSeek
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )
