"""MCP results → the text the model and the user see; ``/prompt args`` → MCP prompt arguments.

Pure functions over the *wire* shape of MCP results (camelCase dicts, as ``model_dump(by_alias=True)`` gives them)
rather than over the SDK's classes: the SDK renamed its attributes between major versions, the wire did not.

Models read text. Content they cannot read here (audio, binary blobs) is *described* — kind, MIME type, size — so
the model knows something was returned and the user sees it in the tool output, instead of megabytes of base64
landing in the context window. Images are described in the text too, and passed through as images
(:func:`call_result_images`): a vision model sees them, the chat shows them.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from .._images import ImageError, ImagePart, image_from_base64
from .._text import human_size

__all__ = [
    "MAX_IMAGES",
    "call_result_images",
    "call_result_to_text",
    "content_to_text",
    "dump",
    "prompt_arguments",
    "prompt_to_text",
    "resource_to_text",
    "truncate",
]


def dump(model: Any) -> Any:
    """An SDK model (or anything) as its JSON wire shape."""
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return model


def _b64_size(data: Any) -> int:
    """Decoded size of a base64 string, without decoding it."""
    if not isinstance(data, str):
        return 0
    text = data.strip()
    return max(0, len(text) * 3 // 4 - text[-2:].count("="))


def _resource_contents(resource: Mapping[str, Any]) -> str:
    if isinstance(text := resource.get("text"), str):
        return text
    mime = resource.get("mimeType") or "application/octet-stream"
    return f"[binary resource {resource.get('uri', '')}: {mime}, {human_size(_b64_size(resource.get('blob')))}]"


def content_to_text(block: Any) -> str:
    """One MCP content block (tool result or prompt message) as text."""
    block = dump(block)
    if not isinstance(block, Mapping):
        return str(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        mime = block.get("mimeType") or "unknown type"
        return f"[{kind}: {mime}, {human_size(_b64_size(block.get('data')))}]"
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        return _resource_contents(block["resource"])
    if kind == "resource_link":
        name = block.get("name") or block.get("uri", "")
        mime = f", {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {name} <{block.get('uri', '')}>{mime}]"
    return f"[{kind or 'unknown'} content]"


def call_result_to_text(result: Any) -> tuple[str, bool]:
    """A ``tools/call`` result → (text for the model, is_error). Text blocks are joined with newlines; a result
    with no content but ``structuredContent`` gives that JSON."""
    data = dump(result)
    if not isinstance(data, Mapping):
        raise ValueError(f"malformed tool result: {str(data)[:200]}")
    content = data.get("content")
    if content is None:
        content = []
    if not isinstance(content, list):
        raise ValueError("malformed tool result: 'content' is not a list")
    parts = [content_to_text(block) for block in content]
    text = "\n".join(p for p in parts if p != "")
    if not text and data.get("structuredContent") is not None:
        text = json.dumps(data["structuredContent"], ensure_ascii=False)
    return text, bool(data.get("isError"))


#: The most images one tool result passes through (the first ones; the rest stay described in the text).
MAX_IMAGES = 8


def call_result_images(result: Any) -> tuple[list[ImagePart], list[str]]:
    """A ``tools/call`` result's ``image`` blocks (MCP ``ImageContent``: ``data`` base64, ``mimeType``), each
    checked like any image (eca_notebook._images), at most :data:`MAX_IMAGES`; and why any was not passed on.
    Blocking (Pillow): run it in a thread."""
    data = dump(result)
    content = data.get("content") if isinstance(data, Mapping) else None
    images: list[ImagePart] = []
    problems: list[str] = []
    blocks = [dump(b) for b in content] if isinstance(content, list) else []
    for number, block in enumerate((b for b in blocks if isinstance(b, Mapping) and b.get("type") == "image"), 1):
        if len(images) >= MAX_IMAGES:
            problems.append(f"only the first {MAX_IMAGES} images of a tool result are shown")
            break
        try:
            images.append(image_from_base64(str(block.get("data") or ""), media_type=str(block.get("mimeType") or ""),
                                            name=f"image {number}"))
        except ImageError as exc:
            problems.append(str(exc))
    return images, problems


def prompt_to_text(result: Any) -> str:
    """A ``prompts/get`` result → one prompt text: every message's content, in order, separated by blank lines.
    (The engine sends it as the user's message, so roles are not kept; assistant turns are rare in MCP prompts.)"""
    data = dump(result)
    parts = []
    for message in data.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if block is not None:
                text = content_to_text(block)
                if text:
                    parts.append(text)
    return "\n\n".join(parts)


def resource_to_text(result: Any) -> str:
    """A ``resources/read`` result → text (several contents joined by blank lines)."""
    data = dump(result)
    return "\n\n".join(_resource_contents(c) for c in data.get("contents") or [] if isinstance(c, Mapping))


def _usage(name: str, arguments: Sequence[Mapping[str, Any]]) -> str:
    words = [f"<{a['name']}>" if a.get("required") else f"[{a['name']}]" for a in arguments]
    return " ".join([f"/{name}", *words])


def prompt_arguments(name: str, arguments: Sequence[Mapping[str, Any]], args_text: str) -> dict[str, str]:
    """Map ``/name`` argument text onto the prompt's declared arguments, by position in declared order.

    Words are split like a shell (quotes group; unbalanced quotes fall back to whitespace words). Words beyond the
    declared arguments are appended to the last one, so ``/explain how does this work`` fills a single ``question``
    argument with the whole phrase. Missing required arguments raise ``ValueError`` with a usage line.
    """
    try:
        words = shlex.split(args_text)
    except ValueError:
        words = args_text.split()
    values: dict[str, str] = {}
    for i, arg in enumerate(arguments):
        if i >= len(words):
            break
        if i == len(arguments) - 1:
            values[arg["name"]] = " ".join(words[i:])
        else:
            values[arg["name"]] = words[i]
    missing = [a["name"] for a in arguments if a.get("required") and a["name"] not in values]
    if missing:
        raise ValueError(f"missing required argument{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(missing)}. Usage: {_usage(name, arguments)}")
    if words and not arguments:
        raise ValueError(f"/{name} takes no arguments")
    return values


def truncate(text: str, max_lines: int, max_bytes: int) -> str:
    """Keep the head of `text` within `max_lines` lines and `max_bytes` UTF-8 bytes, with a note when cut."""
    lines = text.splitlines(keepends=True)
    total_bytes = len(text.encode("utf-8"))
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return text
    head = "".join(lines[:max_lines])
    data = head.encode("utf-8")
    if len(data) > max_bytes:
        head = data[:max_bytes].decode("utf-8", errors="ignore")
    kept = len(head.encode("utf-8"))
    return (f"{head.rstrip()}\n\n[output truncated: showing {human_size(kept)} of {human_size(total_bytes)} "
            f"({len(lines)} lines); ask the tool for less]")
