"""Images in the panel, in a real JupyterLab and Chromium (issue 31 items 1-2): a screenshot pasted into the composer
becomes an image chip (thumbnail, name, size, ×) and reaches the model as an image part; a large one is downscaled in
the browser first (the WebSocket's 8 MiB message limit); image chat contents — the prompt's own attachment and an MCP
tool's picture — are drawn as ``<img>`` from a raster ``data:`` URL, enlarged on a click."""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text, ToolCall, Usage

from ._lab import DEFAULT_MODEL, Lab, lab_env, open_panel, screenshot
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DEMO = Path(__file__).parents[1] / "mcp" / "servers" / "demo_server.py"

#: Dispatch a paste of one image File on the composer, as the browser does for a screenshot on the clipboard.
PASTE_JS = """([b64, name, type]) => {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, {type}));
    const box = document.querySelector('.eca-Composer-input');
    box.focus();
    box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: transfer, bubbles: true, cancelable: true}));
}"""


#: Drop one image File on the composer, as the browser does for a file dragged from the desktop.
DROP_JS = """([b64, name, type]) => {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([bytes], name, {type}));
    const target = document.querySelector('.eca-Composer');
    for (const kind of ['dragenter', 'dragover', 'drop']) {
        target.dispatchEvent(new DragEvent(kind, {dataTransfer: transfer, bubbles: true, cancelable: true}));
    }
}"""


def png(width: int, height: int, noisy: bool = False) -> bytes:
    from PIL import Image

    if noisy:  # a photo-like image: PNG cannot compress it (megabytes)
        image = Image.frombytes("RGB", (width, height), __import__("os").urandom(width * height * 3))
    else:
        image = Image.new("RGB", (width, height), "white")
        image.paste((200, 30, 30), (width // 4, height // 4, width // 2, height // 2))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def paste(page, data: bytes, name: str = "screenshot.png") -> None:
    page.evaluate(PASTE_JS, [base64.b64encode(data).decode(), name, "image/png"])


def sent_images(llm) -> list[str]:
    """The ``input_image`` data URLs of the OpenAI Responses requests the scripted server received."""
    urls = []
    for request in llm.requests:
        for item in (request.body or {}).get("input", []) if isinstance(request.body, dict) else []:
            if isinstance(item.get("content"), list):
                urls += [p["image_url"] for p in item["content"] if p.get("type") == "input_image"]
    return urls


@pytest.fixture(scope="module")
def lab(lab_home: Path, workspace: Path, llm, request):
    """The lab with the MCP demo server (its ``chart`` tool returns a PNG) in the user's config, tools allowed."""
    config = {"defaultModel": DEFAULT_MODEL, "localModel": False,
              "mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}},
              "toolCall": {"approval": {"byDefault": "allow"}}}
    server = Lab(root=workspace, env=lab_env(lab_home, llm.url, ECA_CONFIG=json.dumps(config)))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_pasted_screenshot_is_a_chip_then_an_image_part_and_shows_in_the_chat(page, lab, llm):
    open_panel(page, lab, workspace="images-paste")
    page.locator(".eca-new-chat").click()
    shot = png(320, 200)
    paste(page, shot)
    chip = page.locator(".eca-Chip.eca-mod-image")
    chip.wait_for()
    assert "screenshot.png" in chip.inner_text() and "KB" in chip.inner_text()
    assert (chip.locator("img.eca-Chip-thumb").get_attribute("src") or "").startswith("data:image/png;base64,")
    assert page.locator(".eca-Composer-input").input_value() == ""  # nothing pasted as text
    screenshot(page, "images-01-chip")

    llm.enqueue(Reply([Text("A red rectangle on white."), Usage(10, 5)]))
    send(page, "what is in this screenshot?")
    page.get_by_text("A red rectangle on white.").wait_for()
    [url] = wait_until(lambda: sent_images(llm) or None, message="the image part at the scripted server")
    assert url == "data:image/png;base64," + base64.b64encode(shot).decode()  # small: sent as it was
    assert chip.count() == 0  # the chips go with the prompt

    shown = page.locator(".eca-mod-image.eca-mod-user img.eca-ChatImage")  # the prompt's attachment, in the chat
    shown.wait_for()
    assert (shown.get_attribute("src") or "").startswith("data:image/png;base64,")
    shown.click()
    page.locator(".eca-ImageOverlay img").wait_for()
    screenshot(page, "images-02-enlarged")
    page.keyboard.press("Escape")
    page.locator(".eca-ImageOverlay").wait_for(state="detached")

    # a large photo-like paste is redrawn in the browser under the message limit before it is attached
    llm.clear()
    big = png(3000, 2000, noisy=True)
    assert len(big) > 15 * 1024 * 1024
    paste(page, big, "photo.png")
    chip.wait_for()
    src = chip.locator("img.eca-Chip-thumb").get_attribute("src") or ""
    sent = base64.b64decode(src.split(",", 1)[1])
    assert len(sent) <= 2 * 1024 * 1024, len(sent)
    from PIL import Image

    assert max(Image.open(io.BytesIO(sent)).size) <= 2048
    llm.enqueue(Reply([Text("Noise."), Usage(10, 5)]))
    send(page, "and this one?")
    page.get_by_text("Noise.").wait_for()
    assert len(wait_until(lambda: sent_images(llm) or None, message="the downscaled image at the server")) == 2

    # a dropped image file is a chip too; an SVG is not taken (it is no raster image)
    page.evaluate(DROP_JS, [base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'/>").decode(), "x.svg",
                            "image/svg+xml"])
    page.evaluate(DROP_JS, [base64.b64encode(shot).decode(), "dropped.png", "image/png"])
    chip.wait_for()
    assert chip.count() == 1 and "dropped.png" in chip.inner_text()
    assert not page.eca_errors, page.eca_errors


def test_an_mcp_tools_image_is_drawn_in_the_chat(page, lab, llm):
    open_panel(page, lab, workspace="images-mcp")
    servers = page.locator(".eca-McpServers")
    page.locator('.eca-McpServer[data-status="running"]', has_text="demo").wait_for(state="attached", timeout=90_000)
    page.locator(".eca-new-chat").click()
    llm.enqueue(Reply([ToolCall("call_1", "demo__chart", "{}", chunks=1), Usage(5, 1)]),
                Reply([Text("The chart is tiny."), Usage(5, 1)]))
    send(page, "show me the chart")
    page.get_by_text("The chart is tiny.").wait_for()
    image = page.locator(".eca-mod-image.eca-mod-assistant img.eca-ChatImage")
    image.wait_for()
    assert (image.get_attribute("src") or "").startswith("data:image/png;base64,iVBORw0KGgo")
    assert servers.count() == 1
    screenshot(page, "images-03-mcp")
    assert not page.eca_errors, page.eca_errors
