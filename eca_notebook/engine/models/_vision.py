"""What the model sees of a chat's images: each request's images fitted to the provider, kept within a budget, or
described in text for a model that cannot see.

Images enter the history as :class:`~eca_notebook._images.ImagePart` values on user messages (``image`` contexts,
image files) and tool results (notebook outputs, ``read_file``, MCP tools), already checked. Every request a turn
makes goes through :func:`prepare_images` (``Turn`` wires it in front of the provider), because what fits depends on
the model of *this* request — a chat may switch from a vision model to a text-only one:

- a model that cannot see (``imageInput`` false, the catalog's default for unknown models and the embedded one) gets
  each image as one line of text (name, media type, pixels, size) and the chat a one-line note — never a provider
  error, never silently nothing;
- a vision model gets each image downscaled to its provider's limits (:data:`PROVIDER_LIMITS`: Anthropic 1568 px
  and 5 MB, OpenAI 2048 px), and at most :data:`MAX_IMAGES` images / :data:`MAX_IMAGE_BYTES` bytes per request: the
  largest are left out first (described instead), with a note.

Notes are returned only for images new in the turn (the caller says which are old), so an old screenshot does not
repeat its note on every prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Any

from ..._images import ImageError, ImagePart, fit_image
from ..._redact import redact, redact_json
from ..._text import human_size
from ...providers.base import Message, ToolResultMessage, UserMessage

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "PROVIDER_LIMITS",
    "ImagePolicy",
    "has_images",
    "prepare_images",
    "redact_content",
]

#: At most this many images in one request (Anthropic accepts 100, but each costs ~1.6k tokens at 1568 px).
MAX_IMAGES = 20
#: At most this many image bytes in one request, after downscaling (base64 adds a third on the wire; Anthropic
#: refuses requests over 32 MB).
MAX_IMAGE_BYTES = 15 * 1024 * 1024

#: Per wire API: (longest side in pixels, bytes per image). Anthropic resizes anything over 1568 px itself and
#: refuses images over 5 MB; OpenAI fits images into 2048 × 2048 (and takes up to 20 MB); Ollama's vision models
#: work at a few hundred pixels, so 1568 only keeps the request small.
PROVIDER_LIMITS: dict[str, tuple[int, int]] = {
    "anthropic": (1568, 5 * 1024 * 1024),
    "openai-responses": (2048, 20 * 1024 * 1024),
    "openai-chat": (2048, 20 * 1024 * 1024),
    "ollama": (1568, 10 * 1024 * 1024),
}
_DEFAULT_LIMITS = (1568, 5 * 1024 * 1024)


@dataclass(frozen=True)
class ImagePolicy:
    """What one request may carry: whether the model ``sees`` images, and the limits of its provider."""

    sees: bool
    model: str = "this model"
    max_side: int = _DEFAULT_LIMITS[0]
    max_image_bytes: int = _DEFAULT_LIMITS[1]
    max_images: int = MAX_IMAGES
    budget_bytes: int = MAX_IMAGE_BYTES

    @classmethod
    def for_model(cls, api: str, sees: bool, model: str) -> ImagePolicy:
        """The policy for *model* on a provider speaking *api*: its wire format's image limits."""
        side, size = PROVIDER_LIMITS.get(api, _DEFAULT_LIMITS)
        return cls(sees=sees, model=model, max_side=side, max_image_bytes=size)


def has_images(messages: Sequence[Message]) -> bool:
    """Whether any user message or tool result in *messages* carries an image."""
    return any(isinstance(m, (UserMessage, ToolResultMessage)) and m.images for m in messages)


def prepare_images(messages: Sequence[Message], policy: ImagePolicy,
                   old: Container[str] = ()) -> tuple[list[Message], list[str]]:
    """*messages* as this request sends them (see the module docstring), and the notes for the chat about images
    not in *old* (their ``sha256``). Blocking (Pillow): run it in a thread."""
    located = [(i, j, part) for i, m in enumerate(messages) if isinstance(m, (UserMessage, ToolResultMessage))
               for j, part in enumerate(m.images)]
    if not located:
        return list(messages), []
    notes: list[str] = []
    kept: dict[tuple[int, int], ImagePart] = {}
    described: dict[tuple[int, int], str] = {}
    fresh = [part for _, _, part in located if part.sha256 not in old]
    if not policy.sees:
        for i, j, part in located:
            described[(i, j)] = part.describe()
        if fresh:
            names = ", ".join(_label(p) for p in fresh)
            notes.append(f"{policy.model} cannot see images: it was given a description of {names} instead (set "
                         "imageInput: true in the model's config if it can).")
    else:
        for i, j, part in located:
            try:
                kept[(i, j)] = fit_image(part, policy.max_side, policy.max_image_bytes)
            except ImageError as exc:
                described[(i, j)] = part.describe()
                if part.sha256 not in old:
                    notes.append(f"Image not sent: {exc}.")
        dropped = _over_budget(kept, policy)
        for key in dropped:
            part = kept.pop(key)
            described[key] = f"{part.describe()} (left out: too many images for one request)"
        left_out = [_label(located_part) for (i, j, located_part) in located
                    if (i, j) in dropped and located_part.sha256 not in old]
        if left_out:
            notes.append(f"Left out of the request, largest first, to stay within {policy.max_images} images and "
                         f"{human_size(policy.budget_bytes)}: {', '.join(left_out)} (described to the model instead).")
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, (UserMessage, ToolResultMessage)) or not message.images:
            out.append(message)
            continue
        images = [kept[(i, j)] for j in range(len(message.images)) if (i, j) in kept]
        lines = [described[(i, j)] for j in range(len(message.images)) if (i, j) in described]
        if isinstance(message, UserMessage):
            text = "\n".join([message.text, *lines]) if lines else message.text
            out.append(dataclasses.replace(message, text=text, images=images))
        else:
            output = "\n".join([message.output, *lines]) if lines else message.output
            out.append(dataclasses.replace(message, output=output, images=images))
    return out, notes


def _over_budget(kept: dict[tuple[int, int], ImagePart], policy: ImagePolicy) -> set[tuple[int, int]]:
    """The images to leave out, largest first, until the rest are within the count and byte budget."""
    dropped: set[tuple[int, int]] = set()
    count, total = len(kept), sum(len(p.data) for p in kept.values())
    for key, part in sorted(kept.items(), key=lambda kv: len(kv[1].data), reverse=True):
        if count <= policy.max_images and total <= policy.budget_bytes:
            break
        dropped.add(key)
        count -= 1
        total -= len(part.data)
    return dropped


def _label(part: ImagePart) -> str:
    return part.name or part.media_type


def redact_content(content: Any) -> Any:
    """A chat content redacted as every content is before it is shown or saved — except an ``image`` content's
    ``base64``: the bytes of an image checked and encoded by us (eca_notebook._images), where a secret's text cannot
    appear, and whose scan took ~0.5 s per 5 MB image on the event loop, each time it was shown and on chat/open.

    A streamed text chunk, the content sent most, is redacted without the walk: what ``redact_json`` makes of it (its
    keys and its ``type`` are too short to hold a secret)."""
    if type(content) is dict and len(content) == 2 and content.get("type") == "text":
        text = content.get("text")
        if type(text) is str:
            return {"type": "text", "text": redact(text)}
    if isinstance(content, dict) and content.get("type") == "image" and isinstance(content.get("base64"), str):
        return {**redact_json({k: v for k, v in content.items() if k != "base64"}), "base64": content["base64"]}
    return redact_json(content)
