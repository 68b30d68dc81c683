"""A small built-in catalog of well-known models: public list prices and token limits.

Why built in: cost and context-window figures must work offline and with an empty config. The reference server
fetches them from models.dev; we ship the handful users pick most and let config override any value
(``providers.<id>.models.<name>`` with ``inputCost`` ... or the reference's ``cost``/``limit`` objects).

Prices are USD per 1M tokens, list prices of the providers' public pricing pages (standard tier, not batch/flex).
``cache_write`` is None where the provider does not bill cache writes separately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "BUILTIN_PROVIDERS",
    "CATALOG",
    "DEFAULT_MODELS",
    "BuiltinProvider",
    "CatalogEntry",
    "lookup",
    "sees_images",
]


@dataclass(frozen=True)
class CatalogEntry:
    input_cost: float
    output_cost: float
    cache_read_cost: float | None
    cache_write_cost: float | None
    context_limit: int
    output_limit: int
    reasoning: bool
    api_name: str | None = None  # the name the API expects when it differs from our catalog key


@dataclass(frozen=True)
class BuiltinProvider:
    api: str
    url_env: str
    default_url: str
    key_env: str | None


BUILTIN_PROVIDERS: dict[str, BuiltinProvider] = {
    "openai": BuiltinProvider("openai-responses", "OPENAI_API_URL", "https://api.openai.com", "OPENAI_API_KEY"),
    "anthropic": BuiltinProvider("anthropic", "ANTHROPIC_API_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "ollama": BuiltinProvider("ollama", "OLLAMA_API_URL", "http://localhost:11434", None),
}

CATALOG: dict[str, dict[str, CatalogEntry]] = {
    "openai": {
        "gpt-5": CatalogEntry(1.25, 10.0, 0.125, None, 400_000, 128_000, True),
        "gpt-5-mini": CatalogEntry(0.25, 2.0, 0.025, None, 400_000, 128_000, True),
        "gpt-4.1": CatalogEntry(2.0, 8.0, 0.5, None, 1_047_576, 32_768, False),
        "gpt-4.1-mini": CatalogEntry(0.4, 1.6, 0.1, None, 1_047_576, 32_768, False),
        "gpt-4o": CatalogEntry(2.5, 10.0, 1.25, None, 128_000, 16_384, False),
        "gpt-4o-mini": CatalogEntry(0.15, 0.6, 0.075, None, 128_000, 16_384, False),
        "o4-mini": CatalogEntry(1.1, 4.4, 0.275, None, 200_000, 100_000, True),
    },
    "anthropic": {
        "claude-sonnet-4-5": CatalogEntry(3.0, 15.0, 0.3, 3.75, 200_000, 64_000, True),
        "claude-opus-4-1": CatalogEntry(15.0, 75.0, 1.5, 18.75, 200_000, 32_000, True),
        "claude-haiku-4-5": CatalogEntry(1.0, 5.0, 0.1, 1.25, 200_000, 64_000, True),
        "claude-sonnet-4": CatalogEntry(
            3.0, 15.0, 0.3, 3.75, 200_000, 64_000, True, api_name="claude-sonnet-4-20250514"
        ),
        "claude-3-5-haiku": CatalogEntry(
            0.8, 4.0, 0.08, 1.0, 200_000, 8_192, False, api_name="claude-3-5-haiku-20241022"
        ),
    },
}

# Models offered for a built-in provider even when the config lists none (config entries are added to these).
DEFAULT_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "o4-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "claude-sonnet-4", "claude-3-5-haiku"),
}


def lookup(provider: str, name: str) -> CatalogEntry | None:
    """The entry for *name* under *provider*, matching either the catalog key or the API name."""
    entries = CATALOG.get(provider, {})
    if name in entries:
        return entries[name]
    for entry in entries.values():
        if entry.api_name == name:
            return entry
    return None


# Models known to take image input (vision), by name, whichever provider serves them (OpenAI, Anthropic, a proxy such
# as OpenRouter's "openai/gpt-4o", Ollama's tags): GPT-4o/4.1/4.5/5 and the o-series reasoning models, GPT-4 Turbo,
# Claude 3 and later, and Ollama's vision families. Anything else is taken to be text-only until the config says
# ``imageInput: true`` — a text-only model sent an image fails the request, one wrongly taken for text-only only gets
# a description.
_VISION = re.compile(
    r"(^|[/:])("
    r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-4-turbo|gpt-4-vision|o1(?!-mini)|o3|o4|chatgpt-4o"
    r"|claude-3|claude-(sonnet|opus|haiku)-4|claude-(sonnet|opus|haiku)-[5-9]|claude-[4-9]"
    r"|llava|bakllava|llama3\.2-vision|llama4|gemma3(?!:(1b|270m))|gemma3n|qwen2\.5-?vl|qwen2-vl|qwen3-vl"
    r"|minicpm-v|moondream|granite3\.2-vision|mistral-small3\.[12]|llama-4|pixtral|internvl"
    r")",
    re.IGNORECASE,
)


def sees_images(name: str) -> bool:
    """Whether the model *name* takes images by default (the config's ``imageInput`` overrides it)."""
    return _VISION.search(name) is not None
