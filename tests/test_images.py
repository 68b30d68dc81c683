"""eca_notebook._images: what is accepted as an image for the model (the four formats, by their bytes), what is
kept (downscaled past 2048 px), and how an image is fitted to a provider's limits (pixels, then bytes)."""

from __future__ import annotations

import base64
import io
import os

import pytest
from PIL import Image

from eca_notebook._images import ImageError, fit_image, image_from_base64, load_image
from eca_notebook.protocol import NotebookCellRun
from eca_notebook.tools._notebook_view import MAX_IMAGES, output_images


def encoded(fmt: str, size: tuple[int, int] = (40, 30), mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, 120 if mode == "L" else (10, 200, 30)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "media_type"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"),
                                                 ("WEBP", "image/webp")])
def test_the_four_formats_are_recognised_by_their_bytes(fmt: str, media_type: str) -> None:
    data = encoded(fmt)
    part = load_image(data, name="x")
    assert (part.media_type, part.data, part.width, part.height) == (media_type, data, 40, 30)
    assert image_from_base64(base64.encodebytes(data).decode(), media_type=media_type).data == data  # lines ok
    assert part.data_url().startswith(f"data:{media_type};base64,")


def test_a_claimed_alias_is_accepted_and_svg_is_not() -> None:
    assert load_image(encoded("JPEG"), claimed="image/jpg").media_type == "image/jpeg"
    with pytest.raises(ImageError, match="unsupported media type 'image/svg\\+xml'"):
        load_image(b"<svg/>", claimed="image/svg+xml")


def test_an_image_over_2048_px_is_kept_downscaled() -> None:
    part = load_image(encoded("JPEG", (4000, 1000)), name="wide")
    assert (part.width, part.height, part.media_type) == (2048, 512, "image/jpeg")
    assert Image.open(io.BytesIO(part.data)).size == (2048, 512)


def test_fit_image_downscales_then_shrinks_bytes_and_caches() -> None:
    noisy = Image.frombytes("RGB", (1500, 1500), os.urandom(1500 * 1500 * 3))  # noise: a PNG that stays large
    out = io.BytesIO()
    noisy.save(out, format="PNG")
    part = load_image(out.getvalue(), name="noise")
    fitted = fit_image(part, 1000, 400_000)
    assert max(fitted.width, fitted.height) <= 1000 and len(fitted.data) <= 400_000
    assert fitted.media_type == "image/jpeg"  # PNG could not get under the byte limit
    assert fit_image(part, 1000, 400_000) is fitted  # the same request next round: not encoded again
    assert fit_image(fitted, 1000, 400_000) is fitted  # fits already: itself


def test_output_images_of_cell_runs() -> None:
    png = base64.b64encode(encoded("PNG")).decode()
    runs = [NotebookCellRun(id="a", index=2, status="ok", outputs=[
        {"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"}},
        {"output_type": "display_data", "data": {"image/png": png[: len(png) // 2 // 4 * 4]}},
    ] + [{"output_type": "display_data", "data": {"image/png": png}}] * MAX_IMAGES)]
    images, line = output_images(runs)
    assert len(images) == MAX_IMAGES and images[0].name == "cell 2 image 1"
    assert line.startswith("Images attached, in order: cell 2 image 1, cell 2 image 3,")
    assert "1 more images not attached" in line
    assert "Image not attached: cell 2 image 2 is truncated or corrupt" in line
    assert output_images([NotebookCellRun(id="b", index=0, status="ok")]) == ([], "")
