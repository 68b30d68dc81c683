"""Tool results' images for APIs whose tool results hold only text (OpenAI Responses and Chat Completions, Ollama).

Anthropic puts images inside a ``tool_result`` block; the others take images only in a user message. Such a message
may not come between one assistant turn's tool results (Chat Completions requires every ``tool`` message to follow
the assistant's ``tool_calls`` directly), so the images of a run of results go in one user message right after the
run, naming the call each image came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .base import Message, ToolResultMessage, UserMessage

__all__ = ["lift_tool_images"]


def lift_tool_images(messages: Sequence[Message]) -> list[Message]:
    """*messages* with each run of tool results' images moved into a :class:`UserMessage` after the run (the
    results themselves keep their text). Unchanged when no tool result has images."""
    if not any(isinstance(m, ToolResultMessage) and m.images for m in messages):
        return list(messages)
    out: list[Message] = []
    pending: list[ToolResultMessage] = []
    for message in messages:
        if pending and not isinstance(message, ToolResultMessage):
            out.append(_images_message(pending))
            pending = []
        if isinstance(message, ToolResultMessage) and message.images:
            out.append(dataclasses.replace(message, images=[]))
            pending.append(message)
        else:
            out.append(message)
    if pending:
        out.append(_images_message(pending))
    return out


def _images_message(results: list[ToolResultMessage]) -> UserMessage:
    names = "; ".join(f"{r.name}: " + ", ".join(i.name or i.media_type for i in r.images) for r in results)
    return UserMessage(text=f"The images the tool calls above returned, in order ({names}).",
                       images=[i for r in results for i in r.images])
