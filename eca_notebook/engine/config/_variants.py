"""Model variants: named payload presets of a model (reasoning effort…), chosen per prompt or per chat.

The reference server's concept and shapes (``docs/config/variants.md``): a variant is a JSON object deep-merged
into the request body (over ``extraPayload``, as the reference merges them); ``providers.<id>.models.<name>.variants``
adds to or overrides the built-in ones, and ``{}`` removes a built-in one; a variant named ``default`` is applied when
none is selected and is not offered in a picker.

Built-in variants are the reasoning effort of each wire API, for models that reason (catalog or ``reasoning: true``):
OpenAI Responses ``reasoning.effort``, Chat Completions ``reasoning_effort``, Anthropic ``thinking.budget_tokens``,
Ollama ``think``. Why by API rather than by model name as the reference does: every model we can reach speaks one of
four APIs, and each API has one documented reasoning knob.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...protocol import JsonObject

__all__ = ["ANTHROPIC_BUDGETS", "builtin_variants", "effective_variants", "selectable", "variant_payload"]

EFFORTS = ("low", "medium", "high")
#: Thinking tokens per effort for Anthropic (the API's minimum is 1024).
ANTHROPIC_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
# Ollama models that think (``think`` is refused by the others): the families Ollama lists under "thinking".
_OLLAMA_THINKING = re.compile(r"(^|[/:])(qwen3|deepseek-r1|deepseek-v3\.1|gpt-oss|magistral|phi4-reasoning|cogito)",
                              re.IGNORECASE)


def builtin_variants(api: str, name: str, reasoning: bool) -> dict[str, JsonObject]:
    """The built-in variants of a model served over ``api`` (none for a model that does not reason)."""
    if api == "ollama" and (reasoning or _OLLAMA_THINKING.search(name)):
        return {e: {"think": e} for e in EFFORTS}
    if not reasoning:
        return {}
    if api == "openai-responses":
        return {e: {"reasoning": {"effort": e, "summary": "auto"}} for e in EFFORTS}
    if api == "openai-chat":
        return {e: {"reasoning_effort": e} for e in EFFORTS}
    if api == "anthropic":
        return {e: {"thinking": {"type": "enabled", "budget_tokens": b}} for e, b in ANTHROPIC_BUDGETS.items()}
    return {}


def effective_variants(api: str, name: str, reasoning: bool,
                       configured: Mapping[str, Mapping[str, Any]] | None) -> dict[str, JsonObject]:
    """Built-in variants with the configured ones merged over them (same name: the config's wins; ``{}`` removes)."""
    merged = dict(builtin_variants(api, name, reasoning))
    for key, payload in (configured or {}).items():
        if payload:
            merged[key] = dict(payload)
        else:
            merged.pop(key, None)
    return merged


def selectable(variants: Mapping[str, Any]) -> list[str]:
    """The names a client offers: sorted, without ``default`` (applied by itself), as the reference lists them."""
    return sorted(k for k in variants if k != "default")


def variant_payload(variants: Mapping[str, JsonObject], selected: str | None) -> JsonObject:
    """The payload for the selected variant; ``default`` when none (or an unknown one) is selected; else empty."""
    if selected and selected in variants:
        return variants[selected]
    return variants.get("default", {})
