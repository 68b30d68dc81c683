"""Images the model is shown: one neutral part (:class:`ImagePart`: media type + bytes), checked once when it comes
in, and made to fit each provider's limits when it goes out.

Why one place: an image reaches the model from a prompt's ``image`` context, an attached ``.png`` file, a notebook
output, ``read_file`` or an MCP tool, and any of them may come from an attacker (a workspace file, a tool's output).
Every one goes through :func:`load_image`, which refuses with a sentence the user can read (:class:`ImageError`):

- more than :data:`MAX_IMAGE_BYTES` (checked before decoding base64 or reading a file: nothing unbounded is held);
- bytes that are not PNG, JPEG, GIF or WebP, or not the media type they claim (sniffed by Pillow, not trusted);
- truncated base64 or image data (the pixels are decoded once, so a cut file is found here, not by the provider);
- more than :data:`MAX_PIXELS` pixels — a decompression bomb (a 50 KB PNG of 100 000 × 100 000 pixels). The limit is
  checked on the header before any pixel is decoded (Pillow's own ``DecompressionBombError``, far above it, counts
  as a refusal too). Pillow's process-wide ``Image.MAX_IMAGE_PIXELS`` is left alone on purpose: the ``%eca`` door
  runs inside the user's kernel, whose own Pillow calls it would change; so is the warnings filter (process-wide).

An accepted image is kept at most :data:`MAX_SIDE` pixels on its longest side (larger ones are downscaled once, on
the way in), so a chat's history holds no 8K screenshot. :func:`fit_image` then downscales further to what one
provider accepts (Anthropic's 1568 px, a per-image byte limit), cached so every round of a turn does not re-encode.

Pillow is imported lazily, inside the functions: ``import eca_notebook`` stays cheap.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._text import human_size

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "MAX_PIXELS",
    "MAX_SIDE",
    "ImageError",
    "ImagePart",
    "fit_image",
    "image_from_base64",
    "image_from_file",
    "is_image_path",
    "load_image",
]

#: The largest image accepted, in bytes (as attached: before any downscaling).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: The most pixels an image may have (width × height) before it is refused as a decompression bomb; 25 M is a 6K
#: screenshot, and decoding it takes at most ~100 MB.
MAX_PIXELS = 25_000_000
#: Longest side kept in history: the largest any provider uses (OpenAI fits images into 2048 × 2048).
MAX_SIDE = 2048

#: Pillow's format name → the media type we send (the four every vision API accepts).
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
IMAGE_MEDIA_TYPES: frozenset[str] = frozenset(_FORMATS.values())
#: File name suffixes treated as images (a ``file`` context or ``read_file`` on one of them sends the image).
IMAGE_SUFFIXES: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/x-png": "image/png"}


class ImageError(ValueError):
    """An image that is not sent: the message says why, for the user (and the model, as a tool's error)."""


@dataclass(frozen=True)
class ImagePart:
    """An image for the model: ``media_type`` (one of :data:`IMAGE_MEDIA_TYPES`) and the raw ``data`` bytes.

    ``name`` labels it in notes and in the text a model that cannot see gets instead (a file name, ``Out[3]``…);
    ``width``/``height`` are its pixels; ``sha256`` (of ``data``, computed when not given) names it in saved chats'
    side files and in the caches. Two parts compare equal when their media type and bytes do."""

    media_type: str
    data: bytes = field(repr=False)
    width: int = 0
    height: int = 0
    name: str = field(default="", compare=False)
    sha256: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.sha256:
            object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())

    def base64(self) -> str:
        """The bytes as base64 text (no ``data:`` prefix)."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """A ``data:<media type>;base64,…`` URL (OpenAI's ``image_url`` / ``input_image``)."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        """One line for a model that cannot see it (or an image left out): name, media type, pixels, size."""
        name = f"{self.name}, " if self.name else ""
        pixels = f", {self.width}×{self.height} px" if self.width and self.height else ""
        return f"[image: {name}{self.media_type}{pixels}, {human_size(len(self.data))}]"


def is_image_path(path: str | Path) -> bool:
    """Whether a file is sent as an image by its name (``.png``, ``.jpg``, ``.jpeg``, ``.gif``, ``.webp``)."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency; a broken install still gets a sentence
        raise ImageError("images cannot be read: Pillow is not installed (pip install pillow)") from None
    return Image


def _normal(media_type: str) -> str:
    value = media_type.split(";")[0].strip().lower()
    return _ALIASES.get(value, value)


def load_image(data: bytes, *, name: str = "image", claimed: str | None = None) -> ImagePart:
    """Check *data* and return it as an :class:`ImagePart` (downscaled to :data:`MAX_SIDE` when larger), or raise
    :class:`ImageError` saying why it is refused. *claimed* is the media type the sender gave: bytes of another
    type are refused (a "PNG" that is really something else is not passed on under a false label)."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(f"{name} is too large ({human_size(len(data))}; images are limited to "
                         f"{human_size(MAX_IMAGE_BYTES)})")
    if claimed is not None and _normal(claimed) not in IMAGE_MEDIA_TYPES:
        raise ImageError(f"{name}: unsupported media type {claimed[:60]!r} (PNG, JPEG, GIF or WebP only)")
    image_mod = _pil()
    # (Pillow's own check: an error far above our limit, a warning — an error where warnings are — above its
    # MAX_IMAGE_PIXELS; ours below is what holds. No warnings filter is set: that is process-wide, not per thread.)
    bomb = (image_mod.DecompressionBombWarning, image_mod.DecompressionBombError)
    try:
        im = image_mod.open(io.BytesIO(data), formats=list(_FORMATS))
    except bomb:  # Pillow's own limit, checked on the header (far above ours: see the module docstring)
        raise ImageError(f"{name} is refused: it has more than the {MAX_PIXELS // 1_000_000} million pixels "
                         "allowed (a decompression bomb?)") from None
    except Exception:  # UnidentifiedImageError, or a header Pillow cannot parse
        raise ImageError(f"{name} is not a PNG, JPEG, GIF or WebP image") from None
    with im:
        media_type = _FORMATS[im.format]
        if claimed is not None and _normal(claimed) != media_type:
            raise ImageError(f"{name} says it is {_normal(claimed)} but its bytes are {media_type}: not sent")
        width, height = im.size
        if width * height > MAX_PIXELS:
            raise ImageError(f"{name} is refused: {width}×{height} pixels is more than the "
                             f"{MAX_PIXELS // 1_000_000} million allowed (a decompression bomb?)")
        try:
            if im.format == "PNG":  # chunk checksums and the end marker (a cut file can still decode)
                with image_mod.open(io.BytesIO(data), formats=["PNG"]) as check:
                    check.verify()
            if im.format == "JPEG" and max(width, height) > MAX_SIDE:
                im.draft("RGB", (MAX_SIDE, MAX_SIDE))  # decode a large JPEG at a reduced scale: less memory
            im.load()
        except bomb:
            raise ImageError(f"{name} is refused: it has too many pixels (a decompression bomb?)") from None
        except Exception:  # OSError "image file is truncated", zlib errors, …
            raise ImageError(f"{name} is truncated or corrupt: its pixels cannot be decoded") from None
        if max(width, height) <= MAX_SIDE:
            return ImagePart(media_type, data, width, height, name)
        return _encode(im, MAX_SIDE, MAX_IMAGE_BYTES, name, media_type)


def image_from_base64(text: str, *, media_type: str, name: str = "image") -> ImagePart:
    """An image sent as base64 text (an ``image`` context, an MCP ``ImageContent``, a notebook output): its length
    is checked before anything is decoded, then :func:`load_image`."""
    if len(text) > (MAX_IMAGE_BYTES // 3 + 1) * 4 + 1024:  # (+ room for line breaks some encoders add)
        raise ImageError(f"{name} is too large (~{human_size(len(text) * 3 // 4)}; images are limited to "
                         f"{human_size(MAX_IMAGE_BYTES)})")
    compact = "".join(text.split())  # notebooks keep base64 in lines
    try:
        data = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"{name} is not valid base64 (truncated?)") from None
    return load_image(data, name=name, claimed=media_type)


def image_from_file(path: Path, *, name: str | None = None) -> ImagePart:
    """The image file at *path* (its size checked before it is read; the bytes decide the type, not the suffix)."""
    label = name or path.name
    try:
        # non-blocking open: a FIFO named plot.png must not hang the reader; only a regular file is read
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ImageError(f"{label} is not a regular file")
            size = info.st_size
            if size > MAX_IMAGE_BYTES:
                raise ImageError(f"{label} is too large ({human_size(size)}; images are limited to "
                                 f"{human_size(MAX_IMAGE_BYTES)})")
            data = f.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise ImageError(f"{label} cannot be read: {exc.strerror or type(exc).__name__}") from None
    return load_image(data, name=label)


# -- what one provider accepts --------------------------------------------------------------------------------------

_FITTED: OrderedDict[tuple[str, int, int], ImagePart] = OrderedDict()
_FITTED_LOCK = threading.Lock()
_FITTED_MAX = 64


def fit_image(part: ImagePart, max_side: int, max_bytes: int) -> ImagePart:
    """*part* made to fit a provider: at most *max_side* pixels on its longest side and *max_bytes* bytes
    (re-encoded as JPEG, smaller each try, when PNG is still too large). The part itself when it fits already;
    results are cached (a turn sends the same history every round). Raises :class:`ImageError` when nothing fits."""
    if max(part.width, part.height) <= max_side and len(part.data) <= max_bytes:
        return part
    key = (part.sha256, max_side, max_bytes)
    with _FITTED_LOCK:
        cached = _FITTED.get(key)
        if cached is not None:
            _FITTED.move_to_end(key)
            return cached
    image_mod = _pil()
    with image_mod.open(io.BytesIO(part.data)) as im:
        im.load()
        fitted = _encode(im, max_side, max_bytes, part.name, part.media_type)
    with _FITTED_LOCK:
        _FITTED[key] = fitted
        while len(_FITTED) > _FITTED_MAX:
            _FITTED.popitem(last=False)
    return fitted


def _encode(im: Any, max_side: int, max_bytes: int, name: str, media_type: str) -> ImagePart:
    """*im* (decoded) scaled to *max_side* and encoded as small as it stays clear (:func:`_candidates`), the first
    candidate of at most *max_bytes*; half the pixels again when none is."""
    image_mod = _pil()
    alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    # a chart, a diagram, a UI screenshot: few colours, which smoothing would multiply into thousands (a 2400 px
    # chart downscaled became 5 times larger as plain PNG) — kept few by a palette after scaling
    few_colors = im.getcolors(256) is not None
    frame = im.copy() if im.mode in ("RGB", "RGBA", "L") else im.convert("RGBA" if alpha else "RGB")
    side = max_side
    for _ in range(4):
        frame.thumbnail((side, side), image_mod.Resampling.LANCZOS)
        for fmt, data in _candidates(frame, media_type, few_colors, alpha):
            if len(data) <= max_bytes:
                kind = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[fmt]
                return ImagePart(kind, data, frame.width, frame.height, name)
        side = side // 2  # still too large at the lowest quality: half the pixels again
    raise ImageError(f"{name} cannot be made small enough ({human_size(max_bytes)}) for this model")


def _save(img: Any, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **options)
    return out.getvalue()


def _candidates(frame: Any, media_type: str, few_colors: bool, alpha: bool) -> Iterator[tuple[str, bytes]]:
    """Encodings of *frame* in order of preference, made only as they are asked for: its own kind first (a PNG with
    few colours as a 256-colour palette; one with many as PNG or JPEG, whichever is smaller), then JPEG of falling
    quality."""
    image_mod = _pil()
    rgb = frame.convert("RGB") if frame.mode not in ("RGB", "L") else frame
    if media_type == "image/jpeg":
        yield "JPEG", _save(rgb, "JPEG", quality=85)
    elif media_type == "image/webp":
        yield "WEBP", _save(frame, "WEBP", quality=85)
    elif few_colors:
        yield "PNG", _save(frame.quantize(256, method=image_mod.Quantize.FASTOCTREE), "PNG")
    else:
        png = _save(frame, "PNG")
        jpeg = None if alpha else _save(rgb, "JPEG", quality=90)
        yield ("JPEG", jpeg) if jpeg is not None and len(jpeg) < len(png) else ("PNG", png)
    for quality in (80, 65, 50):
        yield "JPEG", _save(rgb, "JPEG", quality=quality)
