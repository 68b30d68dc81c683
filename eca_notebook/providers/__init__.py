"""LLM providers: one module per wire API, all streaming provider-neutral events (see :mod:`.base`).

The engine builds one :class:`ProviderSettings` per configured provider and gets a :class:`Provider` from
:func:`create_provider`; all providers share one ``httpx.AsyncClient`` made by :func:`make_http_client`.
"""

from __future__ import annotations

import httpx

from ._http import ProviderSettings, Timeouts, make_http_client
from .anthropic import AnthropicProvider
from .base import (
    AssistantMessage,
    Finished,
    Message,
    Provider,
    ProviderError,
    ProviderRequest,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    ReasoningStarted,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from .ollama import OllamaProvider, list_ollama_models
from .openai_chat import OpenAIChatProvider
from .openai_responses import OpenAIResponsesProvider

_PROVIDERS = {
    "openai-responses": OpenAIResponsesProvider,
    "openai-chat": OpenAIChatProvider,
    "anthropic": AnthropicProvider,
    "ollama": OllamaProvider,
}

API_KINDS: tuple[str, ...] = tuple(_PROVIDERS)


def create_provider(settings: ProviderSettings, client: httpx.AsyncClient) -> Provider:
    """The provider for ``settings.api``; raises ``ValueError`` for an unknown API kind."""
    try:
        cls = _PROVIDERS[settings.api]
    except KeyError:
        raise ValueError(
            f"provider {settings.id!r}: unknown api {settings.api!r} (expected one of {', '.join(API_KINDS)})"
        ) from None
    return cls(settings, client)


__all__ = [
    "API_KINDS",
    "AnthropicProvider",
    "AssistantMessage",
    "Finished",
    "Message",
    "OllamaProvider",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderSettings",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningFinished",
    "ReasoningStarted",
    "StreamEvent",
    "TextDelta",
    "Timeouts",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "create_provider",
    "list_ollama_models",
    "make_http_client",
]
