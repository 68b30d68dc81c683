"""Rendering one scripted reply in each API's wire format (OpenAI Responses, Chat Completions, Anthropic, Ollama).

Renderers only produce text; :mod:`.llm_server` owns the socket. The hot paths (text and reasoning deltas) use
pre-built string templates around ``json.dumps`` of the chunk, so long scripts render fast. Event names and fields
follow the public API references, so a provider that works here works against the real service.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypedDict

from ..protocol import JsonObject, JsonValue
from ._script import Citation, Reasoning, Reply, Step, StreamError, Text, ToolCall, Usage, split_text

_dumps = json.dumps


def _rid(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


class Out:
    """Collects rendered text and writes it as few, large chunked-transfer frames."""

    LIMIT = 1 << 16

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._parts: list[str] = []
        self._size = 0

    def add(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            data = "".join(self._parts).encode()
            self._parts = []
            self._size = 0
            if data:  # an empty chunk would end the chunked body
                self._write(data)


class Renderer:
    """One reply in one wire format. ``step`` is called for content steps only, in script order."""

    content_type = "text/event-stream"

    def __init__(self, reply: Reply, request: Any, server: Any) -> None:
        self.request: JsonObject = request if isinstance(request, dict) else {}
        self.model = str(self.request.get("model") or "scripted-model")
        self.stop = reply.resolved_stop_reason()
        usage = [s for s in reply.steps if isinstance(s, Usage)]
        self.usage = usage[-1] if usage else Usage(0, 0)
        self.server = server
        self.created = int(time.time())
        cache = getattr(server, "prompt_cache", None)
        if cache is not None:  # the input and cache counts follow from the request, as the API bills (_cache.py)
            self.usage = self.billed(cache, self.usage)

    def billed(self, cache: Any, usage: Usage) -> Usage:
        """The usage of this request as the API's prompt cache bills it (only the output count is scripted)."""
        return usage

    def start(self, out: Out) -> None: ...

    def step(self, out: Out, step: Step) -> None: ...

    def stream_error(self, out: Out, step: StreamError) -> None: ...

    def finish(self, out: Out) -> None: ...

    @staticmethod
    def error_body(status: int, message: str, code: str | None = None) -> JsonObject:
        kind = "invalid_request_error" if status < 500 else "server_error"
        if status == 429:
            kind = "rate_limit_exceeded"
        return {"error": {"message": message, "type": code or kind, "param": None, "code": code or kind}}


class _OpenItem(TypedDict):
    """The message or reasoning item a Responses stream is writing: the item, its output index, its text so far."""

    item: JsonObject
    index: int
    parts: list[str]


class ResponsesRenderer(Renderer):
    """OpenAI Responses API semantic events (``event: <type>`` + ``data: {"type": <type>, ...}``)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.id = _rid("resp")
        self.seq = 0
        self.output: list[JsonValue] = []  # the finished items (JSON objects)
        self.block: _OpenItem | None = None  # the open message/reasoning item
        self.block_kind = ""
        self.reasoning_blocks = 0

    def ev(self, out: Out, kind: str, payload: JsonObject) -> None:
        out.add(f"event: {kind}\ndata: {_dumps({'type': kind, 'sequence_number': self.seq, **payload})}\n\n")
        self.seq += 1

    def billed(self, cache: Any, usage: Usage) -> Usage:
        fresh, cached = cache.bill_openai(self.request)
        return Usage(fresh, usage.output_tokens, cache_read_tokens=cached)

    def response(self, status: str, usage: bool = False) -> JsonObject:
        resp: JsonObject = {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": self.request.get("instructions"),
            "model": self.model,
            "output": self.output if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "store": False,
            "tool_choice": "auto",
            "tools": self.request.get("tools") or [],
            "usage": None,
        }
        if usage:
            u = self.usage
            resp["usage"] = {
                "input_tokens": u.input_tokens + u.cache_read_tokens,
                "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
                "output_tokens": u.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u.input_tokens + u.cache_read_tokens + u.output_tokens,
            }
        return resp

    def start(self, out: Out) -> None:
        self.ev(out, "response.created", {"response": self.response("in_progress")})
        self.ev(out, "response.in_progress", {"response": self.response("in_progress")})

    def open(self, out: Out, kind: str) -> None:
        if self.block_kind == kind:
            return
        self.close(out)
        index = len(self.output)
        item: JsonObject
        if kind == "text":
            item = {"id": _rid("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            self.ev(out, "response.output_item.added", {"output_index": index, "item": item})
            self.ev(
                out,
                "response.content_part.added",
                {
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "part": {"type": "output_text", "annotations": [], "text": ""},
                },
            )
        else:
            item = {"id": _rid("rs"), "type": "reasoning", "summary": []}
            self.ev(out, "response.output_item.added", {"output_index": index, "item": item})
            self.ev(
                out,
                "response.reasoning_summary_part.added",
                {
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""},
                },
            )
        self.block = {"item": item, "index": index, "parts": []}
        self.block_kind = kind
        # hot path: one template per block
        if kind == "text":
            self.delta_prefix = (
                'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":'
            )
            self.delta_middle = f',"item_id":"{item["id"]}","output_index":{index},"content_index":0,"delta":'
            self.delta_suffix = ',"logprobs":[]}\n\n'
        else:
            self.delta_prefix = (
                "event: response.reasoning_summary_text.delta\n"
                'data: {"type":"response.reasoning_summary_text.delta","sequence_number":'
            )
            self.delta_middle = f',"item_id":"{item["id"]}","output_index":{index},"summary_index":0,"delta":'
            self.delta_suffix = "}\n\n"

    def close(self, out: Out) -> None:
        if self.block is None:
            return
        item, index, text = self.block["item"], self.block["index"], "".join(self.block["parts"])
        if self.block_kind == "text":
            part: JsonObject = {"type": "output_text", "annotations": [], "text": text}
            base = {"item_id": item["id"], "output_index": index, "content_index": 0}
            self.ev(out, "response.output_text.done", {**base, "text": text, "logprobs": []})
            self.ev(out, "response.content_part.done", {**base, "part": part})
            item = {**item, "status": "completed", "content": [part]}
        else:
            self.reasoning_blocks += 1
            part = {"type": "summary_text", "text": text}
            base = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            self.ev(out, "response.reasoning_summary_text.done", {**base, "text": text})
            self.ev(out, "response.reasoning_summary_part.done", {**base, "part": part})
            item = {**item, "summary": [part], "encrypted_content": f"enc-{self.reasoning_blocks}"}
        self.ev(out, "response.output_item.done", {"output_index": index, "item": item})
        self.output.append(item)
        self.block = None
        self.block_kind = ""

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Citation):  # an annotation on the open text (one opened when there is none)
            self.open(out, "text")
            assert self.block is not None
            self.ev(out, "response.output_text.annotation.added", {
                "item_id": self.block["item"]["id"], "output_index": self.block["index"], "content_index": 0,
                "annotation_index": 0, "annotation": {"type": "url_citation", "title": step.title, "url": step.url,
                                                      "start_index": 0, "end_index": 0}})
        elif isinstance(step, (Text, Reasoning)):
            self.open(out, "text" if isinstance(step, Text) else "reasoning")
            assert self.block is not None
            self.block["parts"].append(step.text)
            out.add(f"{self.delta_prefix}{self.seq}{self.delta_middle}{_dumps(step.text)}{self.delta_suffix}")
            self.seq += 1
        elif isinstance(step, ToolCall):
            self.close(out)
            index = len(self.output)
            item: JsonObject = {
                "id": _rid("fc"),
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": step.id,
                "name": step.name,
            }
            self.ev(out, "response.output_item.added", {"output_index": index, "item": item})
            for piece in split_text(step.arguments, step.chunks):
                if piece:
                    self.ev(
                        out,
                        "response.function_call_arguments.delta",
                        {"item_id": item["id"], "output_index": index, "delta": piece},
                    )
            self.ev(
                out,
                "response.function_call_arguments.done",
                {"item_id": item["id"], "output_index": index, "arguments": step.arguments},
            )
            item = {**item, "status": "completed", "arguments": step.arguments}
            self.ev(out, "response.output_item.done", {"output_index": index, "item": item})
            self.output.append(item)

    def stream_error(self, out: Out, step: StreamError) -> None:
        self.ev(out, "error", {"code": step.code or "server_error", "message": step.message, "param": None})

    def finish(self, out: Out) -> None:
        self.close(out)
        if self.stop == "max_tokens":
            resp = self.response("incomplete", usage=True)
            resp["incomplete_details"] = {"reason": "max_output_tokens"}
            self.ev(out, "response.incomplete", {"response": resp})
        else:
            self.ev(out, "response.completed", {"response": self.response("completed", usage=True)})


class ChatRenderer(Renderer):
    """OpenAI Chat Completions chunks (``data: {"object": "chat.completion.chunk", ...}`` … ``data: [DONE]``)."""

    _FINISH = {"end_turn": "stop", "tool_calls": "tool_calls", "max_tokens": "length"}

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        options = self.request.get("stream_options")
        self.include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        self.id = _rid("chatcmpl")
        self.head = (
            f'data: {{"id":"{self.id}","object":"chat.completion.chunk","created":{self.created},'
            f'"model":{_dumps(self.model)},"system_fingerprint":null,"choices":[{{"index":0,"delta":'
        )
        usage = ',"usage":null' if self.include_usage else ""
        self.tail = ',"logprobs":null,"finish_reason":null}]' + usage + "}\n\n"
        self.reasoning_key = _dumps(self.server.chat_reasoning_field)
        self.tool_index = 0

    def billed(self, cache: Any, usage: Usage) -> Usage:
        fresh, cached = cache.bill_openai(self.request)
        return Usage(fresh, usage.output_tokens, cache_read_tokens=cached)

    def chunk(self, out: Out, delta: str) -> None:
        out.add(self.head + delta + self.tail)

    def start(self, out: Out) -> None:
        self.chunk(out, '{"role":"assistant","content":""}')

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Text):
            out.add(self.head + '{"content":' + _dumps(step.text) + "}" + self.tail)
        elif isinstance(step, Reasoning):
            out.add(self.head + "{" + self.reasoning_key + ":" + _dumps(step.text) + "}" + self.tail)
        elif isinstance(step, ToolCall):
            i = self.tool_index
            self.tool_index += 1
            function = {"arguments": ""} if step.name_late else {"name": step.name, "arguments": ""}
            first = {"index": i, "id": step.id, "type": "function", "function": function}
            self.chunk(out, _dumps({"tool_calls": [first]}))
            for n, piece in enumerate(split_text(step.arguments, step.chunks)):
                if piece:
                    self.chunk(out, _dumps({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
                if n == 0 and step.name_late:
                    self.chunk(out, _dumps({"tool_calls": [{"index": i, "function": {"name": step.name}}]}))

    def stream_error(self, out: Out, step: StreamError) -> None:
        err = {"message": step.message, "type": step.code or "server_error", "param": None, "code": step.code}
        out.add(f"data: {_dumps({'error': err})}\n\n")

    def finish(self, out: Out) -> None:
        reason = self._FINISH.get(self.stop, self.stop)
        out.add(self.head + "{}" + self.tail.replace('"finish_reason":null', f'"finish_reason":{_dumps(reason)}', 1))
        if self.include_usage:
            u = self.usage
            usage = {
                "prompt_tokens": u.input_tokens + u.cache_read_tokens,
                "completion_tokens": u.output_tokens,
                "total_tokens": u.input_tokens + u.cache_read_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
            }
            chunk = {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "system_fingerprint": None,
                "choices": [],
                "usage": usage,
            }
            out.add(f"data: {_dumps(chunk)}\n\n")
        out.add("data: [DONE]\n\n")


class AnthropicRenderer(Renderer):
    """Anthropic Messages stream: message_start, content_block_* per block, message_delta, message_stop."""

    _STOP = {"end_turn": "end_turn", "tool_calls": "tool_use", "max_tokens": "max_tokens"}
    _ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.id = _rid("msg")
        self.index = -1
        self.block_kind = ""
        self.thinking_blocks = 0

    @staticmethod
    def ev(out: Out, kind: str, payload: JsonObject) -> None:
        out.add(f"event: {kind}\ndata: {_dumps({'type': kind, **payload})}\n\n")

    def billed(self, cache: Any, usage: Usage) -> Usage:
        fresh, read, write = cache.bill_anthropic(self.request)
        return Usage(fresh, usage.output_tokens, cache_read_tokens=read, cache_write_tokens=write)

    @classmethod
    def error_body(cls, status: int, message: str, code: str | None = None) -> JsonObject:
        kind = code or cls._ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def start(self, out: Out) -> None:
        u = self.usage
        message: JsonObject = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": u.input_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
                "cache_read_input_tokens": u.cache_read_tokens,
                "output_tokens": 1,
            },
        }
        self.ev(out, "message_start", {"message": message})
        self.ev(out, "ping", {})

    def open(self, out: Out, kind: str, block: JsonObject) -> None:
        self.close(out)
        self.index += 1
        self.block_kind = kind
        self.ev(out, "content_block_start", {"index": self.index, "content_block": block})
        head = f'event: content_block_delta\ndata: {{"type":"content_block_delta","index":{self.index},"delta":'
        if kind == "text":
            self.delta_head = head + '{"type":"text_delta","text":'
        elif kind == "thinking":
            self.delta_head = head + '{"type":"thinking_delta","thinking":'

    def close(self, out: Out) -> None:
        if not self.block_kind:
            return
        if self.block_kind == "thinking":
            self.thinking_blocks += 1
            delta: JsonObject = {"type": "signature_delta", "signature": f"sig-{self.thinking_blocks}"}
            self.ev(out, "content_block_delta", {"index": self.index, "delta": delta})
        self.ev(out, "content_block_stop", {"index": self.index})
        self.block_kind = ""

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Text):
            if self.block_kind != "text":
                self.open(out, "text", {"type": "text", "text": ""})
            out.add(self.delta_head + _dumps(step.text) + "}}\n\n")
        elif isinstance(step, Reasoning):
            if self.block_kind != "thinking":
                self.open(out, "thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out.add(self.delta_head + _dumps(step.text) + "}}\n\n")
        elif isinstance(step, ToolCall):
            self.open(out, "tool_use", {"type": "tool_use", "id": step.id, "name": step.name, "input": {}})
            for piece in ["", *split_text(step.arguments, step.chunks)]:
                delta: JsonObject = {"type": "input_json_delta", "partial_json": piece}
                self.ev(out, "content_block_delta", {"index": self.index, "delta": delta})
            self.close(out)

    def stream_error(self, out: Out, step: StreamError) -> None:
        kind = step.code or ("overloaded_error" if "overload" in step.message.lower() else "api_error")
        self.ev(out, "error", {"error": {"type": kind, "message": step.message}})

    def finish(self, out: Out) -> None:
        self.close(out)
        delta: JsonObject = {"stop_reason": self._STOP.get(self.stop, self.stop), "stop_sequence": None}
        self.ev(out, "message_delta", {"delta": delta, "usage": {"output_tokens": self.usage.output_tokens}})
        self.ev(out, "message_stop", {})


class OllamaRenderer(Renderer):
    """Ollama ``/api/chat`` NDJSON: one object per line, the last with ``done: true`` and the counts."""

    content_type = "application/x-ndjson"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.stamp = _dumps(datetime.now(UTC).isoformat().replace("+00:00", "Z"))
        self.head = (
            f'{{"model":{_dumps(self.model)},"created_at":{self.stamp},"message":{{"role":"assistant","content":'
        )
        self.tool_index = 0

    @staticmethod
    def error_body(status: int, message: str, code: str | None = None) -> JsonObject:
        return {"error": message}

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Text):
            out.add(self.head + _dumps(step.text) + '},"done":false}\n')
        elif isinstance(step, Reasoning):
            out.add(self.head + '"","thinking":' + _dumps(step.text) + '},"done":false}\n')
        elif isinstance(step, ToolCall):
            try:
                arguments: Any = json.loads(step.arguments) if step.arguments else {}
            except ValueError:
                arguments = step.arguments
            call = {"id": step.id, "function": {"index": self.tool_index, "name": step.name, "arguments": arguments}}
            self.tool_index += 1
            out.add(self.head + '"","tool_calls":' + _dumps([call]) + '},"done":false}\n')

    def stream_error(self, out: Out, step: StreamError) -> None:
        out.add(_dumps({"error": step.message}) + "\n")

    def finish(self, out: Out) -> None:
        final = {
            "model": self.model,
            "created_at": json.loads(self.stamp),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "length" if self.stop == "max_tokens" else "stop",
            "total_duration": 1_000_000,
            "load_duration": 100_000,
            "prompt_eval_count": self.usage.input_tokens,
            "prompt_eval_duration": 200_000,
            "eval_count": self.usage.output_tokens,
            "eval_duration": 700_000,
        }
        out.add(_dumps(final) + "\n")


class CompletionsRenderer(Renderer):
    """OpenAI legacy completions (``/v1/completions``, what llama.cpp, vLLM and DeepSeek serve for raw and
    fill-in-the-middle completion): ``data: {"object": "text_completion", "choices": [{"text": …}]}`` chunks, then
    ``data: [DONE]``; one ``text_completion`` object when the request says ``"stream": false``. Text steps only."""

    _FINISH = {"end_turn": "stop", "tool_calls": "stop", "max_tokens": "length"}

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.streaming = self.request.get("stream") is not False
        if not self.streaming:
            self.content_type = "application/json"
        self.id = _rid("cmpl")
        self.parts: list[str] = []

    def _object(self, text: str, finish: str | None) -> JsonObject:
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]}

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Text):
            if self.streaming:
                out.add(f"data: {_dumps(self._object(step.text, None))}\n\n")
            else:
                self.parts.append(step.text)

    def stream_error(self, out: Out, step: StreamError) -> None:
        err = {"message": step.message, "type": step.code or "server_error", "param": None, "code": step.code}
        out.add(f"data: {_dumps({'error': err})}\n\n")

    def finish(self, out: Out) -> None:
        reason = self._FINISH.get(self.stop, self.stop)
        u = self.usage
        usage = {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                 "total_tokens": u.input_tokens + u.output_tokens}
        if self.streaming:
            out.add(f"data: {_dumps({**self._object('', reason), 'usage': usage})}\n\n")
            out.add("data: [DONE]\n\n")
        else:
            out.add(_dumps({**self._object("".join(self.parts), reason), "usage": usage}))


class OllamaGenerateRenderer(Renderer):
    """Ollama ``/api/generate`` (raw and ``suffix`` completion) NDJSON: ``{"response": …, "done": false}`` lines, the
    last with ``done: true``; one object when the request says ``"stream": false``. Text steps only."""

    content_type = "application/x-ndjson"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.streaming = self.request.get("stream") is not False
        if not self.streaming:
            self.content_type = "application/json"
        self.stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self.parts: list[str] = []

    @staticmethod
    def error_body(status: int, message: str, code: str | None = None) -> JsonObject:
        return {"error": message}

    def step(self, out: Out, step: Step) -> None:
        if isinstance(step, Text):
            if self.streaming:
                chunk = {"model": self.model, "created_at": self.stamp, "response": step.text, "done": False}
                out.add(_dumps(chunk) + "\n")
            else:
                self.parts.append(step.text)

    def stream_error(self, out: Out, step: StreamError) -> None:
        out.add(_dumps({"error": step.message}) + "\n")

    def finish(self, out: Out) -> None:
        final = {
            "model": self.model,
            "created_at": self.stamp,
            "response": "" if self.streaming else "".join(self.parts),
            "done": True,
            "done_reason": "length" if self.stop == "max_tokens" else "stop",
            "total_duration": 1_000_000,
            "prompt_eval_count": self.usage.input_tokens,
            "eval_count": self.usage.output_tokens,
        }
        out.add(_dumps(final) + ("\n" if self.streaming else ""))


ROUTES: dict[str, type[Renderer]] = {
    "/v1/responses": ResponsesRenderer,
    "/responses": ResponsesRenderer,
    "/v1/chat/completions": ChatRenderer,
    "/chat/completions": ChatRenderer,
    "/v1/messages": AnthropicRenderer,
    "/api/chat": OllamaRenderer,
    "/v1/completions": CompletionsRenderer,
    "/completions": CompletionsRenderer,
    "/api/generate": OllamaGenerateRenderer,
}
