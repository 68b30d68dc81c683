"""Models: which models exist, which one serves a chat, and what each can see.

``_registry`` resolves the configured providers into a ``ModelRegistry`` (provider instances, the default model,
Ollama's discovered models); ``_preload`` warms the embedded model when the Jupyter server starts; ``_vision`` fits a
request's images to what the chosen model accepts (or explains why it cannot take them); ``_choice``'s
``ModelChoice`` is the view of the engine that picks a model outside a chat (the config, the registry, the selected
model). Config comes from ``engine.config``; nothing here knows about chats or turns.
"""

from __future__ import annotations

from ._choice import ModelChoice, VariantSelection, variant_selection
from ._preload import preload_default_model
from ._registry import ModelRegistry, UnknownModel
from ._vision import ImagePolicy, has_images, prepare_images, redact_content

__all__ = [
    "ImagePolicy",
    "ModelChoice",
    "ModelRegistry",
    "UnknownModel",
    "VariantSelection",
    "has_images",
    "preload_default_model",
    "prepare_images",
    "redact_content",
    "variant_selection",
]
