"""LLM providers: one module per wire API, all streaming provider-neutral events (see :mod:`.base`).

The engine builds one :class:`ProviderSettings` per configured provider and gets a :class:`Provider` from
:func:`create_provider`; all providers share one ``httpx.AsyncClient`` made by :func:`make_http_client`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below are imported on first use (module __getattr__): see _LAZY
    import httpx

    from ._http import ProviderSettings, Timeouts, make_http_client
    from .anthropic import AnthropicProvider
    from .base import (
        AssistantMessage,
        CompletionRequest,
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
        TextCompleter,
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

# Why lazy: importing every wire API (and httpx with them) cost a cold ``%eca`` or ``eca_notebook.engine`` import
# well over 100 ms before anything needed them; a door that never prompts needs none of them.
_LAZY: dict[str, str] = {
    "ProviderSettings": "._http",
    "Timeouts": "._http",
    "make_http_client": "._http",
    "AnthropicProvider": ".anthropic",
    "OllamaProvider": ".ollama",
    "list_ollama_models": ".ollama",
    "OpenAIChatProvider": ".openai_chat",
    "OpenAIResponsesProvider": ".openai_responses",
    **dict.fromkeys(
        [
            "AssistantMessage",
            "CompletionRequest",
            "Finished",
            "Message",
            "Provider",
            "ProviderError",
            "ProviderRequest",
            "Reasoning",
            "ReasoningDelta",
            "ReasoningFinished",
            "ReasoningStarted",
            "StreamEvent",
            "TextCompleter",
            "TextDelta",
            "ToolCall",
            "ToolCallDelta",
            "ToolCallFinished",
            "ToolCallStarted",
            "ToolResultMessage",
            "ToolSpec",
            "Usage",
            "UserMessage",
        ],
        ".base",
    ),
}

#: API kind -> (module, class name) of its provider.
_PROVIDERS: dict[str, tuple[str, str]] = {
    "openai-responses": (".openai_responses", "OpenAIResponsesProvider"),
    "openai-chat": (".openai_chat", "OpenAIChatProvider"),
    "anthropic": (".anthropic", "AnthropicProvider"),
    "ollama": (".ollama", "OllamaProvider"),
}

API_KINDS: tuple[str, ...] = tuple(_PROVIDERS)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def create_provider(settings: ProviderSettings, client: httpx.AsyncClient) -> Provider:
    """The provider for ``settings.api``; raises ``ValueError`` for an unknown API kind."""
    try:
        module, name = _PROVIDERS[settings.api]
    except KeyError:
        raise ValueError(
            f"provider {settings.id!r}: unknown api {settings.api!r} (expected one of {', '.join(API_KINDS)})"
        ) from None
    cls = getattr(importlib.import_module(module, __name__), name)
    return cls(settings, client)  # type: ignore[no-any-return]


__all__ = [
    "API_KINDS",
    "AnthropicProvider",
    "AssistantMessage",
    "CompletionRequest",
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
    "TextCompleter",
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
