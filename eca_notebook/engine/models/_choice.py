"""The model choice outside a chat's own: the config, the registry and the model the user selected.

Inline completion, rewrite, the built-in commands and a subagent's model all start from these three, so they
receive this view of the engine (which satisfies it) rather than the engine itself.
"""

from __future__ import annotations

from typing import Protocol, TypedDict

from ..config import Config, selectable
from ._registry import ModelRegistry

__all__ = ["ModelChoice", "VariantSelection", "variant_selection"]


class ModelChoice(Protocol):
    """The models in effect. Read at each use, not kept: a config reload replaces the config and the registry."""

    @property
    def config(self) -> Config:
        """The config in effect (replaced whole when the files change)."""
        ...

    @property
    def registry(self) -> ModelRegistry:
        """The models that config makes available, and their providers."""
        ...

    @property
    def selected_model(self) -> str | None:
        """The model of new prompts (``chat/selectedModelChanged``); None until one is chosen."""
        ...


class VariantSelection(TypedDict):
    """A model's selectable variants and the one selected (``config/updated``'s ``variants``/``selectVariant``)."""

    variants: list[str]
    select_variant: str | None


def variant_selection(registry: ModelRegistry, model: str | None, variant: str | None) -> VariantSelection:
    """``variants`` of a model and the ``selectVariant`` for it: the given one when the model has it, else None."""
    info = registry.model_infos().get(model) if model else None
    names = selectable(info.variants) if info is not None else []
    return {"variants": names, "select_variant": variant if variant in names else None}
