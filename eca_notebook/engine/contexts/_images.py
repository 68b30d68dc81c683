"""Attached images: an ``image`` context (base64 bytes inline) or a ``file`` context naming a ``.png``, ``.jpg``,
``.jpeg``, ``.gif`` or ``.webp`` file, as an :class:`~eca_notebook._images.ImagePart` for the prompt's user message
rather than text in the ``<contexts>`` block (the model sees it, or a description when it cannot see).

Blocking (file reads, Pillow): the caller runs it in a thread. An image that cannot be sent raises
:class:`~._context_blocks.ContextProblem` with the reason, like any context: the prompt goes on without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._images import ImageError, ImagePart, image_from_base64, image_from_file, is_image_path
from ...protocol.context import FileContext, ImageContext
from ._blocks import ContextProblem
from ._files import resolve_path

__all__ = ["is_image_context", "load_image_context"]


def is_image_context(ctx: Any) -> bool:
    """An ``image`` context, or a whole-file ``file`` context whose name says image."""
    return isinstance(ctx, ImageContext) or (isinstance(ctx, FileContext) and ctx.lines_range is None
                                             and is_image_path(ctx.path))


def load_image_context(ctx: Any, folders: list[Path], number: int) -> ImagePart:
    """The image *ctx* attaches (*number*: its place among the prompt's images, for an unnamed one's label)."""
    try:
        if isinstance(ctx, ImageContext):
            return image_from_base64(ctx.base64, media_type=ctx.media_type, name=ctx.name or f"image {number}")
        path = resolve_path(ctx.path, folders)
        if not path.is_file():
            raise ContextProblem(f"image not found: {ctx.path}" if not path.exists() else f"not a file: {ctx.path}")
        return image_from_file(path, name=path.name)
    except ImageError as exc:
        raise ContextProblem(f"image not sent: {exc}") from None
