"""Pasting an image into the panel's composer: time from the paste to the image chip, and the bytes sent per image
after the browser's downscaling (issue 31).

A real ``jupyter lab`` with the ECA panel in headless Chromium (``benchmarks/_panel_lab.py``); the scripted LLM
server plays a vision model (gpt-4.1). Three kinds of image, each pasted ``--rounds`` times as a ``ClipboardEvent``
holding a PNG ``File`` (what the browser dispatches for a screenshot on the clipboard):

* a chart, 640 × 480 (a few colours: ~10 KB) — attached as it is;
* a screenshot, 1920 × 1080 of UI-like blocks and text-like noise (~1 MB) — as it is (under 2048 px and 2 MB);
* a photo, 3000 × 2000 of noise (~18 MB of PNG) — redrawn on a canvas: at most 2048 px, PNG or JPEG, under 2 MB.

Time: ``performance.now()`` in the page from right before the paste event is dispatched to a MutationObserver seeing
the chip (reading the file, decoding it, downscaling when needed, base64, React's render). Bytes: the image as the
chip holds it (what the prompt carries), and as the scripted server received it in the model request (after the
engine's own check and its downscaling to the provider's limit), one prompt per kind. Nothing is asserted on time.
Run: ``.venv/bin/python benchmarks/bench_paste_image.py``.
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._panel_lab import notebook_lab, percentiles  # noqa: E402
from eca_notebook.testing.llm_server import Reply, Text, Usage  # noqa: E402
from tests.panel._lab import chromium_available  # noqa: E402
from tests.panel.test_images import sent_images  # noqa: E402
from tests.panel.test_notebook_tools import write_notebook  # noqa: E402
from tests.panel.test_panel import send, wait_until  # noqa: E402

NOTEBOOK = "bench.ipynb"

#: Paste one PNG File and resolve with the ms until a new image chip is in the composer.
PASTE_JS = """async ([b64, name]) => {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, {type: 'image/png'}));
    const box = document.querySelector('.eca-Composer-input');
    const chips = document.querySelector('.eca-Chips');
    const before = chips.querySelectorAll('.eca-mod-image').length;
    box.focus();
    return await new Promise(resolve => {
        const observer = new MutationObserver(() => {
            if (chips.querySelectorAll('.eca-mod-image').length > before) {
                observer.disconnect();
                resolve(performance.now() - t0);
            }
        });
        observer.observe(chips, {childList: true, subtree: true});
        const t0 = performance.now();
        box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: transfer, bubbles: true, cancelable: true}));
    });
}"""
CHIP_BYTES_JS = """() => [...document.querySelectorAll('.eca-Chip.eca-mod-image img')]
    .map(img => atob(img.src.split(',')[1]).length)"""
REMOVE_CHIPS_JS = """() => document.querySelectorAll('.eca-Chip.eca-mod-image .eca-Chip-remove')
    .forEach(b => b.click())"""


def images() -> list[tuple[str, bytes]]:
    from PIL import Image, ImageDraw

    def png(image: Image.Image) -> bytes:
        out = io.BytesIO()
        image.save(out, "PNG")
        return out.getvalue()

    chart = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(chart)
    draw.line([(40 + 50 * i, 400 - ((i * 37) % 300)) for i in range(12)], fill=(31, 119, 180), width=3)
    draw.line([(40, 20), (40, 440), (620, 440)], fill="black", width=1)
    shot = Image.new("RGB", (1920, 1080), (245, 245, 245))
    draw = ImageDraw.Draw(shot)
    for row in range(0, 1080, 24):  # "text": noisy strips on a plain background, as a code editor shows
        noise = Image.frombytes("L", (900, 10), os.urandom(9000)).convert("RGB")
        shot.paste(noise, (300, row + 7))
    draw.rectangle([0, 0, 280, 1080], fill=(230, 230, 240))
    photo = Image.frombytes("RGB", (3000, 2000), os.urandom(3000 * 2000 * 3))
    return [("chart 640x480", png(chart)), ("screenshot 1920x1080", png(shot)), ("photo 3000x2000", png(photo))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    if not chromium_available():
        print("needs /usr/bin/chromium (apt-get install -y chromium)", file=sys.stderr)
        return 2
    kinds = images()
    rows = []
    with notebook_lab("bench-paste", NOTEBOOK, lambda root: write_notebook(root / NOTEBOOK, "x = 1")) as env:
        page, llm = env.page, env.llm
        page.locator(".eca-new-chat").click()
        for name, data in kinds:
            b64 = base64.b64encode(data).decode()
            times = []
            for _ in range(args.rounds):
                times.append(page.evaluate(PASTE_JS, [b64, "image.png"]))
                chip_bytes = page.evaluate(CHIP_BYTES_JS)[-1]
                page.evaluate(REMOVE_CHIPS_JS)
            page.evaluate(PASTE_JS, [b64, "image.png"])
            llm.clear()
            llm.enqueue(Reply([Text("Seen."), Usage(10, 2)]))
            send(page, f"what is in the {name}?")
            [url] = wait_until(lambda: sent_images(llm) or None, timeout=120, message="the image at the server")
            sent = len(base64.b64decode(url.split(",", 1)[1]))
            page.locator(".eca-new-chat").click()
            rows.append((name, len(data), chip_bytes, sent, percentiles(times)))
    print(f"paste-image benchmark: {args.rounds} pastes per image into the ECA panel's composer, JupyterLab + "
          "headless Chromium, 127.0.0.1; ms by performance.now() in the page (paste event -> chip)")
    print(f"  {'image':22} {'PNG':>9} {'attached':>9} {'to model':>9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, raw, chip, sent, s in rows:
        print(f"  {name:22} {raw / 1024:8.0f}K {chip / 1024:8.0f}K {sent / 1024:8.0f}K "
              f"{s['p50']:8.1f} {s['p95']:8.1f} {s['max']:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
