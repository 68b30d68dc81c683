"""Ollama's native chat API (``/api/chat``), streamed as newline-delimited JSON.

Native rather than Ollama's OpenAI-compatible endpoint because only the native one reports thinking
(``message.thinking`` with ``think: true``) and honours per-request ``options``. Tool calls arrive whole, with
arguments as a JSON *object*; tool results are matched by ``tool_name``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any, TypedDict

import httpx

from ..protocol import JsonObject, JsonValue
from ._blocks import ReasoningBlocks, new_id
from ._complete import post_completion
from ._http import HttpProvider, parse_json
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

__all__ = ["OllamaChunk", "OllamaProvider", "list_ollama_models", "ndjson_chunks", "ollama_generate_pieces"]


# What an Ollama NDJSON line carries (the keys read; a server may leave any out, and the reader checks the values
# it uses): types only, nothing validated per line.
class _Function(TypedDict, total=False):
    name: str
    #: An object (Ollama's own) or a JSON text (some compatible servers).
    arguments: JsonValue


class _ToolCall(TypedDict, total=False):
    id: str
    function: _Function


class _Message(TypedDict, total=False):
    role: str
    content: str
    thinking: str
    tool_calls: list[_ToolCall]


class OllamaChunk(TypedDict, total=False):
    """One line of ``/api/chat`` (``message``) or ``/api/generate`` (``response``); the last has ``done`` and the
    counts."""

    model: str
    message: _Message
    response: str
    done: bool
    done_reason: str
    prompt_eval_count: int
    eval_count: int
    error: JsonValue

log = logging.getLogger(__name__)

_DONE = {"stop": "end_turn", "length": "max_tokens"}


def _arguments_object(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        log.warning("tool call arguments are not valid JSON; sending {} instead")
        return {}
    return value


class OllamaProvider(HttpProvider):
    api = "ollama"
    default_path = "/api/chat"
    accept = "application/x-ndjson"
    terminal_event = '"done": true'

    def build_body(self, request: ProviderRequest) -> JsonObject:
        messages: list[JsonValue] = []
        if request.full_system():
            messages.append({"role": "system", "content": request.full_system()})
        for message in lift_tool_images(request.messages):
            if isinstance(message, UserMessage):
                user: JsonObject = {"role": "user", "content": message.text}
                if message.images:  # base64 strings, no data: prefix
                    user["images"] = [i.base64() for i in message.images]
                messages.append(user)
            elif isinstance(message, AssistantMessage):
                if not message.text and not message.tool_calls:
                    continue
                item: JsonObject = {"role": "assistant", "content": message.text}
                if message.tool_calls:
                    item["tool_calls"] = [
                        {"function": {"name": call.name, "arguments": _arguments_object(call.arguments)}}
                        for call in message.tool_calls
                    ]
                messages.append(item)
            elif isinstance(message, ToolResultMessage):
                messages.append({"role": "tool", "content": message.output, "tool_name": message.name})
        body: JsonObject = {"model": request.model, "messages": messages, "stream": True}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        if request.reasoning:
            body["think"] = True
        options: JsonObject = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if options:
            body["options"] = options
        return body

    def complete(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Raw completion through ``/api/generate``: with ``suffix`` the model's template does fill-in-the-middle
        (Ollama refuses models whose template cannot); without one, ``raw`` continues the text as it is."""
        body: JsonObject = {"model": request.model, "prompt": request.prefix, "stream": True}
        if request.suffix:
            body["suffix"] = request.suffix
        else:
            body["raw"] = True
        options: JsonObject = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if request.stop:
            options["stop"] = list(request.stop)
        if options:
            body["options"] = options
        headers = self.request_headers(ProviderRequest(request.model, [], extra_headers=request.extra_headers))
        url = self.endpoint[: -len("/api/chat")] + "/api/generate" if self.endpoint.endswith("/api/chat") else (
            self.settings.url.rstrip("/").removesuffix("/v1") + "/api/generate")
        return post_completion(self, url, body, headers, ollama_generate_pieces)

    async def parse(self, response: httpx.Response) -> AsyncIterator[StreamEvent]:
        reasoning = ReasoningBlocks()
        n_calls = 0
        final: OllamaChunk | None = None

        async for chunk in ndjson_chunks(self, response):
            message = chunk.get("message") or {}
            thinking = message.get("thinking")
            if isinstance(thinking, str) and thinking:
                for event in reasoning.delta(thinking):
                    yield event
            content = message.get("content")
            if isinstance(content, str) and content:
                for event in reasoning.close():
                    yield event
                yield TextDelta(content)
            for tc in message.get("tool_calls") or ():
                for event in reasoning.close():
                    yield event
                fn = (tc or {}).get("function") or {}
                call_id = tc.get("id") or new_id("call")
                args = fn.get("arguments")
                arguments = args if isinstance(args, str) else json.dumps(args if args is not None else {})
                yield ToolCallStarted(call_id, fn.get("name") or "", n_calls)
                yield ToolCallDelta(call_id, arguments)
                yield ToolCallFinished(call_id, fn.get("name") or "", arguments)
                n_calls += 1
            if chunk.get("done"):
                final = chunk
                break

        if final is None:
            raise self.ended_unexpectedly()
        for event in reasoning.close():
            yield event
        if any(isinstance(final.get(k), int) for k in ("prompt_eval_count", "eval_count")):
            yield Usage(
                input_tokens=int(final.get("prompt_eval_count") or 0), output_tokens=int(final.get("eval_count") or 0)
            )
        done_reason = final.get("done_reason")
        stop = _DONE.get(done_reason or "stop", "other")
        if n_calls and stop == "end_turn":
            stop = "tool_calls"
        yield Finished(stop, reason=done_reason if isinstance(done_reason, str) else None)


async def list_ollama_models(url: str, client: httpx.AsyncClient, timeout: float = 2.0) -> list[str]:
    """Names of the models an Ollama server has pulled (``GET /api/tags``); ``[]`` when it isn't reachable.

    Used to discover local models without config, so any failure just means "no Ollama here".
    """
    base = url.rstrip("/")
    if base.endswith("/v1"):  # someone pointed us at Ollama's OpenAI-compatible URL
        base = base[:-3]
    try:
        response = await client.get(base + "/api/tags", timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        log.debug("no Ollama at %s: %s", base, type(exc).__name__)
        return []
    if response.status_code != 200:
        return []
    try:
        data = response.json()
    except ValueError:
        return []
    models = data.get("models") if isinstance(data, dict) else None
    names: list[str] = []
    for model in models or ():
        if isinstance(model, dict):
            name = model.get("name") or model.get("model")
            if isinstance(name, str) and name:
                names.append(name)
    return names


async def ndjson_chunks(provider: HttpProvider, response: httpx.Response) -> AsyncIterator[OllamaChunk]:
    """Ollama's NDJSON stream (``/api/chat`` and ``/api/generate``): each object line, blank and non-object lines
    skipped; a line carrying ``error`` raises it."""
    async for line in response.aiter_lines():
        if not line.strip():
            continue
        chunk: OllamaChunk = parse_json(line)  # (a type for the reader: the line is not checked)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise provider.stream_error(str(chunk["error"]))
        yield chunk


async def ollama_generate_pieces(provider: HttpProvider, response: httpx.Response) -> AsyncIterator[str]:
    """``/api/generate`` (inline completion): ``response`` of each line until ``done``."""
    async for chunk in ndjson_chunks(provider, response):
        text = chunk.get("response")
        if isinstance(text, str):
            yield text
        if chunk.get("done"):
            return
    raise provider.ended_unexpectedly()
