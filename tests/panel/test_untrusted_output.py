"""Model output is untrusted in every renderer, in a real browser: an answer made of known XSS and exfiltration
payloads (``tests/xss_corpus.json``) runs nothing and fetches nothing — neither in the ``%eca`` widget (an ipywidgets
``Output``, a trusted output area) nor in the side panel — while its ordinary markdown still renders; a remote image
in the panel is fetched only when the user clicks its placeholder.

Every payload that runs sets ``window.__pwned``; every one that fetches asks a recording HTTP server here. Before
asserting that nothing happened, the test makes the same kinds of event happen on purpose (an image that fails, a
request to the recorder) and waits for them: what the answer would have caused came before them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from eca_notebook.testing.llm_server import Reply, Text

from ._lab import open_panel, screenshot
from .test_notebook_tools import open_notebook, run_cell, write_notebook
from .test_panel import send, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "xss_corpus.json").read_text())
# a 1×1 PNG: what the recorder answers, so an image loaded on a click shows
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                      "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e7f1e6d20000000049454e44ae426082")


class Recorder:
    """An HTTP server that records the path of every request (the exfiltration target)."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(PIXEL)))
                self.end_headers()
                self.wfile.write(PIXEL)

            do_POST = do_GET  # noqa: N815 - a form's submit

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def payload_hits(self) -> list[str]:
        return [h for h in self.hits if "/control" not in h]


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def answer(recorder: Recorder) -> str:
    """The benign markdown first, then every payload; the unclosed ones after "The end." (a ``<script>`` left open
    swallows what follows it, when sanitised too)."""
    parts, last = [], []
    for entry in CORPUS["payloads"]:
        url = f"{recorder.base}/hit/{entry['name']}"
        text = entry["markdown"].replace("{{HIT}}", url).replace("{{HIT_PR}}", url.split(":", 1)[1])
        (last if "unclosed" in entry["name"] or "breakout" in entry["name"] else parts).append(text)
    return "\n\n".join([CORPUS["benign"], *parts, "The end.", *last])


def settle(page, recorder: Recorder) -> None:
    """Cause on purpose what the payloads would have: an image that fails (as ``<img src=x onerror>`` does) and a
    request to the recorder; once both arrived, the answer's own would have arrived before them."""
    page.evaluate("""async (base) => {
        await new Promise(r => { const i = new Image(); i.onerror = r; i.onload = r; i.src = 'x?control'; });
        await new Promise(r => { const i = new Image(); i.onerror = r; i.onload = r; i.src = base + '/control'; });
    }""", recorder.base)
    wait_until(lambda: any("/control" in h for h in recorder.hits), message="the control request")


def assert_nothing_ran(page, recorder: Recorder) -> None:
    settle(page, recorder)
    assert page.evaluate("() => window.__pwned") is None, "a payload ran script in the page"
    assert recorder.payload_hits() == [], f"the answer made the browser fetch: {recorder.payload_hits()}"


def test_eca_widget_renders_the_corpus_without_running_or_fetching_it(page, lab, llm, recorder, workspace: Path):
    write_notebook(workspace / "untrusted.ipynb", "x = 1", "%load_ext eca_notebook\n%eca -n show me the report")
    llm.enqueue(Reply([Text(answer(recorder))]))
    open_panel(page, lab, workspace="untrusted-widget")
    open_notebook(page, "untrusted.ipynb")
    for index in (0, 1):
        run_cell(page, index)
    chat = page.locator(".eca-chat")
    wait_until(lambda: chat.count() > 0 and "The end." in chat.first.inner_text(), timeout=120,
               message="the %eca widget's answer")
    chat.locator("button:not([disabled])", has_text="Send").wait_for()  # the turn is over: all of it is drawn
    assert chat.locator("strong", has_text="bold text").count() == 1, "bold still renders"
    assert chat.locator("li", has_text="second item").count() == 1, "the list still renders"
    assert "return 42" in chat.locator("pre").first.inner_text(), "the code block still renders"
    chat.locator("mjx-container").first.wait_for()  # TeX is typeset by JupyterLab's MathJax, as in markdown
    image = chat.locator("a.eca-remote-image", has_text="Image from 127.0.0.1: chart").first
    assert "/hit/markdown-image-remote" in (image.get_attribute("href") or ""), "a remote image is a link"
    screenshot(page, "untrusted-01-widget")
    assert_nothing_ran(page, recorder)
    assert not page.eca_errors, page.eca_errors


def test_panel_renders_the_corpus_and_loads_a_remote_image_only_on_click(page, lab, llm, recorder):
    recorder.hits.clear()
    llm.enqueue(Reply([Text(answer(recorder))]))
    open_panel(page, lab, workspace="untrusted-panel")
    send(page, "show me the report")
    markdown = page.locator("#eca-chat-panel .eca-Markdown", has_text="The end.")
    markdown.wait_for(timeout=120_000)
    assert markdown.locator("strong", has_text="bold text").count() == 1, "bold still renders"
    assert markdown.locator("li", has_text="second item").count() == 1, "the list still renders"
    assert "return 42" in markdown.locator("pre").first.inner_text(), "the code block still renders"
    assert markdown.locator("img").count() == 0, "no image element before a click"
    placeholder = markdown.locator('button.eca-remote-image[data-eca-src*="/hit/markdown-image-remote"]')
    assert placeholder.inner_text().startswith("Load image from 127.0.0.1"), placeholder.inner_text()
    screenshot(page, "untrusted-02-panel")
    assert_nothing_ran(page, recorder)

    placeholder.click()
    wait_until(lambda: any("/hit/markdown-image-remote" in h for h in recorder.hits), timeout=30,
               message="the image requested after the click")
    markdown.locator('img[src*="/hit/markdown-image-remote"]').wait_for()
    assert [h for h in recorder.payload_hits() if "markdown-image-remote" not in h] == [], "only the clicked one"
    assert page.evaluate("() => window.__pwned") is None
    assert not page.eca_errors, page.eca_errors
