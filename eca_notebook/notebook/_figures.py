"""Figures in ``%eca`` prompts: ``@fig`` (a matplotlib or plotly figure variable) and ``@Out[n]`` whose result is an
image are sent to the model as *images*, beside their text description.

Why render here, in the kernel: the figure lives only in this process (the notebook's PNG output may be stale or
absent), and the engine takes an image as bytes (an ``image`` context), checked there like any image coming in.

What counts as a picture (duck-typed, so neither matplotlib nor plotly is imported by this module):

- a matplotlib ``Figure`` (``savefig``), or anything with a ``.figure`` that is one (``Axes``: ``df.plot()``'s
  result, so ``@Out[3]`` of a plotting cell works);
- a plotly figure (``to_image`` + ``to_plotly_json``): rendered with kaleido when it is installed, else a
  :class:`FigureNote` saying how to get the image sent (the description still goes);
- anything with ``_repr_png_`` / ``_repr_jpeg_`` (``IPython.display.Image``, a PIL image…).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import Any

from .._images import MAX_IMAGE_BYTES
from ..protocol import ImageContext
from ._mentions import find_mentions, resolve_mention

__all__ = ["FigureNote", "figure_contexts", "figure_png"]

#: The resolution figures are rendered at (matplotlib's default is 100; the engine downscales per provider anyway).
DPI = 100


class FigureNote(Exception):
    """A figure that could not be rendered; the message says why, for the user."""


def _bytes_of(value: Any) -> bytes | None:
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, tuple) and value and isinstance(value[0], bytes | bytearray):  # (data, metadata)
        return bytes(value[0])
    return None


def figure_png(value: Any) -> tuple[str, bytes] | None:
    """``(media type, bytes)`` of a figure-like value, None when it is not one. Raises :class:`FigureNote`."""
    figure = value if callable(getattr(value, "savefig", None)) else getattr(value, "figure", None)
    if figure is not None and callable(getattr(figure, "savefig", None)) and hasattr(figure, "canvas"):
        out = io.BytesIO()
        try:
            figure.savefig(out, format="png", dpi=DPI, bbox_inches="tight")
        except Exception as exc:
            raise FigureNote(f"could not render the figure: {type(exc).__name__}: {exc}") from exc
        return "image/png", out.getvalue()
    if callable(getattr(value, "to_image", None)) and callable(getattr(value, "to_plotly_json", None)):
        try:
            return "image/png", bytes(value.to_image(format="png"))
        except Exception as exc:  # plotly raises ValueError without kaleido
            raise FigureNote("a plotly figure is sent as an image only when kaleido is installed "
                             f"(pip install kaleido): {type(exc).__name__}") from exc
    for method, media_type in (("_repr_png_", "image/png"), ("_repr_jpeg_", "image/jpeg")):
        render = getattr(value, method, None)
        if callable(render) and not isinstance(value, type):
            try:
                data = _bytes_of(render())
            except Exception:
                data = None
            if data:
                return media_type, data
    return None


def figure_contexts(text: str, namespace: Mapping[str, Any]) -> tuple[list[ImageContext], list[str]]:
    """The ``image`` contexts for the figures ``text`` mentions (``@fig``, ``@Out[3]``), and notes for the user
    about the ones that could not be sent. Their text descriptions are :func:`attach_mentions`' job."""
    contexts: list[ImageContext] = []
    notes: list[str] = []
    for name in find_mentions(text, namespace):
        if name.startswith("In["):
            continue
        try:
            found = figure_png(resolve_mention(name, namespace))
        except FigureNote as exc:
            notes.append(f"@{name}: {exc}")
            continue
        if found is None:
            continue
        media_type, data = found
        if len(data) > MAX_IMAGE_BYTES:
            notes.append(f"@{name}: the rendered image is over {MAX_IMAGE_BYTES // 2**20} MB; not sent")
            continue
        contexts.append(ImageContext(media_type=media_type, base64=base64.b64encode(data).decode("ascii"),
                                     name=f"@{name}"))
    return contexts, notes
