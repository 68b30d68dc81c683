"""From configuration to usable providers: URLs, keys, models with prices and limits.

Kept apart from the config models so the rules about *where a key comes from* live in one small place:
config ``key`` > ``<ID>_API_KEY`` env var; config ``url`` > ``<ID>_API_URL`` > built-in default. The key never
appears in ``repr`` and :func:`mask_secret` is the only way it should ever be shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ...protocol import JsonObject
from ._catalog import BUILTIN_PROVIDERS, CATALOG, DEFAULT_MODELS, CatalogEntry, lookup, sees_images
from ._variants import effective_variants

if TYPE_CHECKING:  # only attribute access at run time; avoids an import cycle with config.py
    from ..config import Config, ModelConfig

__all__ = ["DEFAULT_OUTPUT_TOKENS", "ModelInfo", "ResolvedProvider", "env_prefix", "mask_secret", "resolve_providers"]

# Output tokens asked for when neither config nor the catalog knows the model's limit. Servers without a limit of
# their own (Ollama, llama.cpp) otherwise generate until the context is full: a small model stuck repeating itself
# ran for minutes. 8192 is a full answer or a large file edit, and fits every context window worth coding with
# (vLLM rejects a request whose prompt + max_tokens exceed the window).
DEFAULT_OUTPUT_TOKENS = 8192


@dataclass
class ModelInfo:
    """A model the user can pick. ``id`` is ``provider/model``; ``name`` is what the API is sent.

    Costs are USD per 1M tokens (None = unknown). :meth:`cost` expects ``input_tokens`` *without* cached tokens,
    which are counted separately as ``cache_read_tokens`` / ``cache_write_tokens``.
    """

    id: str
    provider: str
    name: str
    extra_payload: JsonObject = field(default_factory=dict)
    extra_headers: dict[str, str] = field(default_factory=dict)
    input_cost: float | None = None
    output_cost: float | None = None
    cache_read_cost: float | None = None
    cache_write_cost: float | None = None
    context_limit: int | None = None
    output_limit: int | None = None
    output_max: int | None = None  # the most the model can produce (catalog), whatever the config asks for
    reasoning: bool = False
    reasoning_history: str | None = None
    # A small model (the embedded one): compact system prompt, smaller context budgets, tools only when the prompt
    # asks for them (see engine/turn/_small_model.py).
    compact: bool = False
    system_prompt: str | None = None  # a compact model's own base prompt (the one it was trained with)
    # Takes images (``imageInput``; else the catalog's default by name): images are sent to it, otherwise described.
    image_input: bool = False
    # named payload presets (engine/config/_variants.py): built-in reasoning efforts and the config's ``variants``
    variants: dict[str, JsonObject] = field(default_factory=dict)

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0, cache_write_tokens: int = 0
    ) -> float | None:
        """USD for these token counts, or None when the input/output price is unknown.

        A missing cache price falls back to the input price (that is how providers without a separate cache-write
        price bill those tokens, and an upper bound for reads).
        """
        if self.input_cost is None or self.output_cost is None:
            return None
        read = self.cache_read_cost if self.cache_read_cost is not None else self.input_cost
        write = self.cache_write_cost if self.cache_write_cost is not None else self.input_cost
        total = (
            input_tokens * self.input_cost
            + output_tokens * self.output_cost
            + cache_read_tokens * read
            + cache_write_tokens * write
        )
        return total / 1_000_000

    def max_output_tokens(self) -> int:
        """The output limit every request sends: the configured one (``limit.output`` / ``outputLimit``, else the
        catalog's), capped by the model's own maximum, :data:`DEFAULT_OUTPUT_TOKENS` when none is known.

        A limit as large as the context window can never succeed (providers check prompt + output ≤ context; some
        catalogs copy the window into the output field), so it is cut to half the window.
        """
        limit = self.output_limit or DEFAULT_OUTPUT_TOKENS
        if self.output_max:
            limit = min(limit, self.output_max)
        if self.context_limit and limit >= self.context_limit:
            limit = max(1, self.context_limit // 2)
        return limit


@dataclass
class ResolvedProvider:
    """A provider ready to use. ``authenticated`` says whether requests can be made (key present, or no key needed)."""

    id: str
    api: str
    url: str
    key: str | None = field(default=None, repr=False)
    key_source: Literal["config", "env"] | None = None
    completion_path: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    think_tag_start: str | None = None
    think_tag_end: str | None = None
    models: dict[str, ModelInfo] = field(default_factory=dict)
    authenticated: bool = False
    fetch_models: bool | None = None
    cache_retention: Literal["short", "long"] = "short"
    prompt_cache_key: bool | None = None


def env_prefix(provider_id: str) -> str:
    """``my-company`` → ``MY_COMPANY`` (for ``<ID>_API_KEY`` / ``<ID>_API_URL``)."""
    return re.sub(r"[^A-Za-z0-9]", "_", provider_id).upper()


_KNOWN_PREFIXES = ("sk-ant-", "sk-proj-", "sk-or-", "sk-", "gsk_", "xai-")


def mask_secret(value: str | None) -> str:
    """A display form of a secret: a well-known non-secret prefix, then ``…`` and at most the last 4 characters.

    Short values show no characters at all, so the mask never reveals a meaningful share of the secret.
    """
    if not value:
        return "(not set)"
    prefix = next((p for p in _KNOWN_PREFIXES if value.startswith(p)), "")
    tail = value[-4:] if len(value) - len(prefix) >= 16 else ""
    return f"{prefix}…{tail}"


def _nonempty(value: str | None) -> str | None:
    return value if value else None


def _catalog_anywhere(name: str) -> CatalogEntry | None:
    for provider in CATALOG:
        entry = lookup(provider, name)
        if entry is not None:
            return entry
    return None


def _model_info(provider_id: str, key: str, mc: ModelConfig | None, api: str = "",
                long_cache: bool = False) -> ModelInfo:
    own = lookup(provider_id, key)
    api_name = (mc.model_name if mc is not None else None) or (own.api_name if own and own.api_name else None) or key
    if own is None:
        own = lookup(provider_id, api_name)
    # Another provider serving the same model (a proxy, Azure, OpenRouter…) has the same limits but maybe not the
    # same prices, so only limits and the reasoning flag are borrowed from the catalog there.
    borrowed = None if own is not None else _catalog_anywhere(api_name)

    def pick(attr: str, catalog_attr: str | None = None, *, prices: bool) -> Any:
        configured = getattr(mc, attr) if mc is not None else None
        if configured is not None:
            return configured
        entry = own if prices else (own or borrowed)
        return getattr(entry, catalog_attr or attr) if entry is not None else None

    reasoning = pick("reasoning", prices=False)
    known = own or borrowed
    cache_write = pick("cache_write_cost", prices=True)
    input_cost = pick("input_cost", prices=True)
    if long_cache and (mc is None or mc.cache_write_cost is None) and input_cost is not None:
        cache_write = 2 * input_cost  # Anthropic bills 1-hour cache writes at twice the input price
    return ModelInfo(
        id=f"{provider_id}/{key}",
        provider=provider_id,
        name=api_name,
        extra_payload=dict(mc.extra_payload) if mc is not None else {},
        extra_headers=dict(mc.extra_headers) if mc is not None else {},
        input_cost=input_cost,
        output_cost=pick("output_cost", prices=True),
        cache_read_cost=pick("cache_read_cost", prices=True),
        cache_write_cost=cache_write,
        context_limit=pick("context_limit", prices=False),
        output_limit=pick("output_limit", prices=False),
        output_max=known.output_limit if known is not None else None,
        reasoning=bool(reasoning),
        reasoning_history=mc.reasoning_history if mc is not None else None,
        compact=bool(mc is not None and mc.compact),
        image_input=mc.image_input if mc is not None and mc.image_input is not None else sees_images(api_name),
        variants=effective_variants(api, api_name, bool(reasoning), mc.variants if mc is not None else None),
    )


def resolve_providers(
    config: Config, env: Mapping[str, str] | None = None, *, problems: list[str] | None = None
) -> dict[str, ResolvedProvider]:
    """Every usable provider: the built-ins (openai, anthropic, ollama) plus each configured id.

    A configured id that is not built in needs ``api`` and a URL (config or ``<ID>_API_URL``); otherwise it is left
    out and, when *problems* is given, a message (no secrets) is appended.
    """
    env = os.environ if env is None else env
    ids = list(BUILTIN_PROVIDERS) + [pid for pid in config.providers if pid not in BUILTIN_PROVIDERS]
    resolved: dict[str, ResolvedProvider] = {}
    for pid in ids:
        pc = config.providers.get(pid)
        builtin = BUILTIN_PROVIDERS.get(pid)
        prefix = env_prefix(pid)

        api = (pc.api if pc is not None else None) or (builtin.api if builtin else None)
        if api is None:
            if problems is not None:
                problems.append(
                    f"providers.{pid}: 'api' is required for a custom provider "
                    "(openai-responses, openai-chat, anthropic or ollama); provider ignored"
                )
            continue

        explicit_url = _nonempty(pc.url if pc is not None else None) or _nonempty(env.get(f"{prefix}_API_URL"))
        url = explicit_url or (builtin.default_url if builtin else None)
        if url is None:
            if problems is not None:
                problems.append(f"providers.{pid}: no URL (set 'url' or {prefix}_API_URL); provider ignored")
            continue

        key_source: Literal["config", "env"] | None = None
        key = _nonempty(pc.key if pc is not None else None)
        if key is not None:
            key_source = "config"
        else:
            key = _nonempty(env.get(f"{prefix}_API_KEY"))
            key_source = "env" if key is not None else None

        configured = pc.models if pc is not None else {}
        names = list(dict.fromkeys([*DEFAULT_MODELS.get(pid, ()), *configured]))
        long_cache = api == "anthropic" and pc is not None and pc.cache_retention == "long"
        models = {name: _model_info(pid, name, configured.get(name), api, long_cache) for name in names}

        # A local OpenAI-compatible server (llama.cpp, vLLM, LM Studio) needs no key: an explicit URL and
        # explicitly configured models are the user saying "this is mine".
        keyless_local = api == "openai-chat" and explicit_url is not None and bool(configured)
        resolved[pid] = ResolvedProvider(
            id=pid,
            api=api,
            url=url.rstrip("/"),
            key=key,
            key_source=key_source,
            completion_path=pc.completion_url_relative_path if pc is not None else None,
            headers=dict(pc.headers) if pc is not None else {},
            think_tag_start=pc.think_tag_start if pc is not None else None,
            think_tag_end=pc.think_tag_end if pc is not None else None,
            models=models,
            authenticated=key is not None or api == "ollama" or keyless_local,
            fetch_models=pc.fetch_models if pc is not None else None,
            cache_retention=(pc.cache_retention if pc is not None else None) or "short",
            prompt_cache_key=pc.prompt_cache_key if pc is not None else None,
        )
    return resolved
