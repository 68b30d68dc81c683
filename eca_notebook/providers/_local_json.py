"""Tool calling for a model whose chat template has none: constrained JSON in, real tool-call events out.

SmolLM2's template knows only system/user/assistant turns, so we never send ``tools`` or ``role: tool`` to it.
Instead each request with tools gets:

* a short "# Tools" section appended to the system prompt (name, parameters, one-line description per tool);
* a ``response_format`` JSON schema admitting exactly ``{"tool": <one tool name>, "arguments": <that tool's
  parameters>}`` or ``{"answer": "<text>"}`` — the runtime's grammar sampler makes any other output impossible, so
  the structure is valid however badly a tiny model chooses;
* the history rewritten into plain turns: a past tool call becomes the assistant's own JSON, a tool result becomes
  a user turn (:func:`render_history`), which this template renders as it was trained.

:class:`ReplyReader` turns the streamed JSON back into provider events: answer text streams as it is decoded, a
tool call is emitted whole (started → delta → finished, fresh call id) once its JSON is complete and parsed.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from typing import Any

from ..protocol import JsonObject
from ._blocks import new_id
from .base import (
    AssistantMessage,
    Message,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

_REF_DEPTH = 8  # how deep local $refs are inlined; a recursive schema is cut off (accept anything) below it
_DROP_KEYS = ("$schema", "$id", "$defs", "definitions", "$comment")


# ---------------------------------------------------------------------------------------------------------------
# The request side
# ---------------------------------------------------------------------------------------------------------------


def tool_choice(extra: JsonObject, tools: list[ToolSpec]) -> tuple[str, list[ToolSpec]]:
    """OpenAI's ``tool_choice`` (from the request's extra payload) → ("auto" | "required" | "none", offered tools).

    ``{"type": "function", "function": {"name": X}}`` means "required", offering only X.
    """
    choice = extra.get("tool_choice", "auto")
    if isinstance(choice, dict):
        function = choice.get("function")
        name = (function.get("name") if isinstance(function, dict) else None) or choice.get("name")
        chosen = [t for t in tools if t.name == name]
        return ("required", chosen) if chosen else ("auto", tools)
    if choice in ("none", "required"):
        return choice, tools
    return "auto", tools


def reply_schema(tools: list[ToolSpec], *, require_tool: bool = False, loose: bool = False) -> JsonObject:
    """The JSON schema a reply must match. ``loose`` accepts any object as arguments (for a tool schema the
    runtime's grammar converter rejects); the tool name is always one of ``tools``."""
    branches: list[JsonObject] = []
    for tool in tools:
        arguments: JsonObject = {"type": "object"} if loose else parameters_schema(tool.parameters)
        branches.append(
            {
                "type": "object",
                "properties": {"tool": {"const": tool.name}, "arguments": arguments},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    if not require_tool or not branches:
        branches.append(
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    return branches[0] if len(branches) == 1 else {"anyOf": [*branches]}


def parameters_schema(parameters: JsonObject | None) -> JsonObject:
    """A tool's parameter schema made self-contained: local ``$ref``s inlined (they would otherwise resolve
    against our wrapper's root), meta keys dropped, and ``type: object`` ensured."""
    if not isinstance(parameters, dict) or not parameters:
        return {"type": "object"}
    schema = _inline(copy.deepcopy(parameters), parameters, 0)
    if not isinstance(schema, dict):
        return {"type": "object"}
    schema.setdefault("type", "object")
    return schema


def _inline(node: Any, root: JsonObject, depth: int) -> Any:
    if isinstance(node, list):
        return [_inline(item, root, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root) if depth < _REF_DEPTH else None
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if target is None:
            return _inline(rest, root, depth)  # unresolvable or too deep: keep the sibling constraints only
        merged = {**copy.deepcopy(target), **rest}
        return _inline(merged, root, depth + 1)
    return {key: _inline(value, root, depth) for key, value in node.items() if key not in _DROP_KEYS}


def _resolve(ref: str, root: JsonObject) -> JsonObject | None:
    if not ref.startswith("#"):
        return None  # remote refs: nothing is fetched
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def short_names(tools: Iterable[ToolSpec], also: Iterable[str] = ()) -> dict[str, str]:
    """Real tool name → the name shown to the model: without the ``server__`` prefix where that is unambiguous.
    ``also``: more real names to map (tools called earlier in the history, offered or not this round).

    Why: the 135M model copied ``eca__read_file`` into the ``path`` argument; ``read_file`` is what it knows.
    """
    names = list(dict.fromkeys([t.name for t in tools] + list(also)))
    shorts = [name.split("__", 1)[1] if "__" in name else name for name in names]
    return {
        name: (short if shorts.count(short) == 1 and short else name)
        for name, short in zip(names, shorts, strict=True)
    }


def history_tool_names(messages: Iterable[Message]) -> list[str]:
    """The names of the tools called in ``messages``."""
    names: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            names += [call.name for call in message.tool_calls]
        elif isinstance(message, ToolResultMessage):
            names.append(message.name)
    return names


def required_only(parameters: JsonObject | None) -> JsonObject:
    """A tool's parameter schema without its optional properties. A tiny model fills every field it is shown
    (``read_file`` got ``limit: 1`` and read one line, forty times); the tool's defaults are better."""
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(parameters, dict) or not isinstance(properties, dict):
        return parameters or {"type": "object"}
    listed = parameters.get("required")
    names = listed if isinstance(listed, list) else []
    required = [name for name in names if isinstance(name, str) and name in properties]
    trimmed = dict(parameters)
    trimmed["properties"] = {name: properties[name] for name in required}
    return trimmed


def tool_instructions(tools: list[ToolSpec], *, require_tool: bool = False) -> str:
    """The system-prompt section describing the reply format and the tools, kept short for a small context."""
    lines = ["# Tools", "Reply with one JSON object and nothing else:"]
    if not require_tool:  # the answer first: listed second, a tiny model calls a tool even to say hello
        lines.append('- to reply to the user: {"answer": "<your reply>"}')
    lines += [
        '- to call a tool: {"tool": "<tool name>", "arguments": {<the tool\'s arguments>}}',
        "Call a tool only when you need it, one at a time; its result comes back in the next message.",
        "",
        "Available tools:",
    ]
    for tool in tools:
        lines.append(f"- {tool.name}({_signature(tool.parameters)}): {_first_sentence(tool.description)}")
    if any(tool.name == "read_file" for tool in tools):
        lines += ["", 'Example: {"tool": "read_file", "arguments": {"path": "README.md"}}']
    return "\n".join(lines)


def _signature(parameters: JsonObject | None) -> str:
    if not isinstance(parameters, dict):
        return ""
    props, listed = parameters.get("properties"), parameters.get("required")
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    parts = []
    for name, spec in (props.items() if isinstance(props, dict) else ()):
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        if isinstance(kind, list):
            kind = "|".join(str(k) for k in kind)
        parts.append(f"{name}: {kind}" + ("" if name in required else " (optional)"))
    return ", ".join(parts)


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def call_text(name: str, arguments: str) -> str:
    """How a past tool call reads in the history: exactly the JSON the model is asked to produce."""
    try:
        args: Any = json.loads(arguments) if arguments else {}
    except ValueError:
        args = arguments  # keep what the model produced, as a string
    return json.dumps({"tool": name, "arguments": args}, ensure_ascii=False)


def render_history(
    messages: Iterable[Message], *, max_result_chars: int | None = None, names: dict[str, str] | None = None
) -> list[Message]:
    """The history with tool calls and results rewritten as plain user/assistant turns (see the module doc).
    ``names`` renames tools as the model is shown them (:func:`short_names`)."""
    names = names or {}
    out: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            parts = [message.text] if message.text else []
            parts += [call_text(names.get(call.name, call.name), call.arguments) for call in message.tool_calls]
            if parts:
                out.append(AssistantMessage(text="\n".join(parts)))
        elif isinstance(message, ToolResultMessage):
            label = "Tool error" if message.is_error else "Tool result"
            name = names.get(message.name, message.name)
            out.append(UserMessage(f"{label} ({name}):\n{_clip(message.output, max_result_chars)}"))
        else:
            out.append(message)
    return out


def fit_history(messages: list[Message], max_chars: int) -> list[Message]:
    """The most recent rendered turns that fit ``max_chars`` (a cheap stand-in for tokens: ~3 characters each),
    oldest dropped first, starting at a user turn, with a note where earlier ones were left out. The newest turn is
    always kept (clipped by the runtime if it alone is too long). Why: past the model's 8k window the runtime
    refuses the request; a long chat with the small model should forget its beginning, not stop working."""
    sizes = [len(_text_of(m)) for m in messages]
    if sum(sizes) <= max_chars or len(messages) <= 1:
        return messages
    start, total = len(messages), 0
    while start > 0 and total + sizes[start - 1] <= max_chars:
        start -= 1
        total += sizes[start]
    start = min(start, len(messages) - 1)
    while start < len(messages) - 1 and not isinstance(messages[start], UserMessage):
        start += 1
    note = UserMessage("(Earlier messages of this chat were left out to fit the model's context.)")
    kept = messages[start:]
    if kept and isinstance(kept[0], UserMessage):
        kept = [UserMessage(f"{note.text}\n\n{kept[0].text}"), *kept[1:]]
    return kept


def _text_of(message: Message) -> str:
    return getattr(message, "text", "") or getattr(message, "output", "") or ""


def remind_request(rendered: list[Message], original: Iterable[Message], limit: int = 600) -> list[Message]:
    """``rendered`` plus a last user turn repeating the user's request. After tool results (rendered as user turns)
    a tiny model has lost the question; asked again, it answers from the results."""
    request = next((m.text for m in reversed(list(original)) if isinstance(m, UserMessage)), "")
    request = request if len(request) <= limit else request[:limit] + "…"
    return [*rendered, UserMessage(f"Using the tool results above, answer my request: {request}")]


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - limit} characters omitted …]\n{text[-tail:]}"


# ---------------------------------------------------------------------------------------------------------------
# The response side
# ---------------------------------------------------------------------------------------------------------------

_HEAD = re.compile(r'\s*\{\s*"(tool|answer)"\s*:\s*')
TRUNCATED_CALL = "(The local model's tool call was cut off by the token limit, so it was not run.)"


class ReplyReader:
    """Incremental reader for one constrained reply.

    :meth:`feed` returns the events available so far (answer text as it is decoded); :meth:`finish` parses the
    whole reply and returns the rest: the tool call, or any answer text not streamed yet. ``stop_reason`` tells
    the caller how the turn ended ("tool_calls" when a call was emitted).
    """

    def __init__(self, tool_names: Iterable[str], *, rename: dict[str, str] | None = None) -> None:
        self.tool_names = set(tool_names)
        self.rename = rename or {}  # name shown to the model → real name (see short_names)
        self.buffer = ""
        self.kind: str | None = None  # "answer" | "tool" once the first key is known
        self._answer_start: int | None = None  # index of the answer string's first character in buffer
        self._scan = 0  # next undecoded index inside the answer string
        self._answer_done = False
        self.streamed = ""  # answer text already emitted
        self.call: ToolCallFinished | None = None

    def feed(self, text: str) -> list[StreamEvent]:
        self.buffer += text
        if self.kind is None:
            match = _HEAD.match(self.buffer)
            if match is None:
                return []
            self.kind = match.group(1)
            if self.kind == "answer":
                self._open_string(match.end())
        elif self.kind == "answer" and self._answer_start is None:
            self._open_string(_HEAD.match(self.buffer).end())  # type: ignore[union-attr]
        if self.kind == "answer" and self._answer_start is not None and not self._answer_done:
            piece = self._decode_available()
            if piece:
                self.streamed += piece
                return [TextDelta(piece)]
        return []

    def _open_string(self, index: int) -> None:
        rest = self.buffer[index:].lstrip()
        if rest.startswith('"'):
            self._answer_start = len(self.buffer) - len(rest) + 1
            self._scan = self._answer_start

    def _decode_available(self) -> str:
        """Decode the answer string from ``_scan`` up to the last complete character (escapes may be split)."""
        buf, i, end = self.buffer, self._scan, len(self.buffer)
        out: list[str] = []
        while i < end:
            ch = buf[i]
            if ch == '"':
                self._answer_done = True
                i += 1
                break
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            if i + 1 >= end:
                break  # a lone backslash: wait for the escaped character
            if buf[i + 1] == "u":
                seq = buf[i : i + 6]
                if len(seq) < 6:
                    break
                code = int(seq[2:], 16) if re.fullmatch(r"\\u[0-9a-fA-F]{4}", seq) else 0xFFFD
                if 0xD800 <= code < 0xDC00:  # high surrogate: needs its low half to form one character
                    pair = buf[i + 6 : i + 12]
                    if len(pair) < 6:
                        break
                    if re.fullmatch(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", pair):
                        low = int(pair[2:], 16)
                        out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                        i += 12
                        continue
                    code = 0xFFFD
                out.append(chr(code))
                i += 6
                continue
            out.append(_ESCAPES.get(buf[i + 1], buf[i + 1]))
            i += 2
        self._scan = i
        return "".join(out)

    def finish(self) -> tuple[list[StreamEvent], str | None]:
        """The remaining events and the stop reason they imply (``None``: keep the runtime's own)."""
        try:
            reply = json.loads(self.buffer)
        except ValueError:
            return self._unfinished()
        if isinstance(reply, dict) and isinstance(reply.get("answer"), str):
            answer = reply["answer"]
            rest = answer[len(self.streamed):] if answer.startswith(self.streamed) else ""
            self.streamed += rest
            return ([TextDelta(rest)] if rest else []), None
        if (
            isinstance(reply, dict)
            and reply.get("tool") in self.tool_names
            and isinstance(reply.get("arguments", {}), dict)
        ):
            name = str(self.rename.get(reply["tool"], reply["tool"]))
            arguments = json.dumps(reply.get("arguments") or {}, ensure_ascii=False)
            call_id = new_id("call")
            self.call = ToolCallFinished(call_id, name, arguments)
            events: list[StreamEvent] = [
                ToolCallStarted(call_id, name, 0),
                ToolCallDelta(call_id, arguments),
                self.call,
            ]
            return events, "tool_calls"
        # Valid JSON of an unexpected shape (only possible if the runtime ignored the schema): show it as text.
        text = self.buffer.strip()
        return ([TextDelta(text)] if text and not self.streamed else []), None

    def _unfinished(self) -> tuple[list[StreamEvent], str | None]:
        if self.kind == "answer":
            return [], "max_tokens"  # the streamed text is all there is
        if self.kind == "tool":
            return [TextDelta(TRUNCATED_CALL)], "max_tokens"
        text = self.buffer.strip()
        return ([TextDelta(text)] if text else []), None


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
