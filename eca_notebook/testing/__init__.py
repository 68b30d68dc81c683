"""Test helpers that ship with the package, so downstream tests and e2e runs can use them without copying.

:mod:`.llm_server` is a scripted LLM server speaking the OpenAI Responses, Chat Completions, Anthropic Messages and
Ollama wire formats. Stdlib only; importing this package costs nothing else.
"""

from __future__ import annotations

from .llm_server import (
    Cut,
    Delay,
    Error,
    Reasoning,
    RecordedRequest,
    Reply,
    ScriptedLLMServer,
    Stall,
    Step,
    StreamError,
    Text,
    ToolCall,
    Usage,
)

__all__ = [
    "Cut",
    "Delay",
    "Error",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ScriptedLLMServer",
    "Stall",
    "Step",
    "StreamError",
    "Text",
    "ToolCall",
    "Usage",
]
