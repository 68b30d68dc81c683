"""Attaching a web page: fetched with limits (size, time, text types only) and reduced to readable text.

A page is read up to :data:`~._context_blocks.WEB_MAX_BYTES` and only when it is text (an image or a PDF is a
problem, not a blob of replacement characters); HTML becomes headings, paragraphs and list items without scripts,
styles or navigation, because the model needs the words, not the markup.
"""

from __future__ import annotations

import asyncio
import logging
import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from ..._fileio import SNIFF_BYTES, looks_binary
from ._blocks import WEB_MAX_BYTES, Block, ContextProblem

if TYPE_CHECKING:
    import httpx

__all__ = ["html_to_text", "render_web"]

log = logging.getLogger(__name__)

_TEXT_TYPES = {"application/xhtml+xml", "application/json", "application/xml", "application/javascript",
               "application/x-yaml", "application/yaml", "application/toml"}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)


async def render_web(url: str, http: httpx.AsyncClient, timeout: float) -> Block:
    import httpx  # lazy: importing the engine must stay cheap

    scheme = urlparse(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise ContextProblem(f"unsupported URL (only http and https can be fetched): {url}")
    chunks: list[bytes] = []
    size = 0
    cut = False
    try:
        async with asyncio.timeout(timeout):
            async with http.stream("GET", url, follow_redirects=True, timeout=timeout,
                                   headers={"Accept": "text/html, text/plain;q=0.9, */*;q=0.5"}) as resp:
                if resp.status_code >= 400:
                    reason = f" {resp.reason_phrase}" if resp.reason_phrase else ""
                    raise ContextProblem(f"could not fetch {url}: HTTP {resp.status_code}{reason}")
                mime = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                if mime and not (mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith("+json")
                                 or mime.endswith("+xml")):
                    raise ContextProblem(f"not a text page ({mime}): {url}")
                async for chunk in resp.aiter_bytes():
                    room = WEB_MAX_BYTES - size
                    if len(chunk) > room:
                        chunks.append(chunk[:room])
                        cut = True
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                charset = resp.charset_encoding
                final_url = str(resp.url)
    except TimeoutError:
        raise ContextProblem(f"timed out fetching {url} (after {timeout:g} s)") from None
    except httpx.TimeoutException:
        raise ContextProblem(f"timed out fetching {url}") from None
    except httpx.HTTPError as exc:
        raise ContextProblem(f"could not fetch {url}: {type(exc).__name__}") from None
    data = b"".join(chunks)
    if not mime and looks_binary(data[:SNIFF_BYTES]):
        raise ContextProblem(f"not a text page: {url}")
    is_html = mime in ("text/html", "application/xhtml+xml") or (not mime and data.lstrip()[:1] == b"<")
    if charset is None and is_html:
        m = _META_CHARSET.search(data[:4096])
        charset = m.group(1).decode("ascii") if m else None
    try:
        text = data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    title = None
    if is_html:
        title, text = html_to_text(text)
    attrs: dict[str, object] = {"url": url}
    if final_url != url:
        attrs["final-url"] = final_url
    attrs["title"] = title
    block = Block("web", attrs, text)
    if cut:
        block.notes.append(f"page larger than {WEB_MAX_BYTES // 1000} KB: only the beginning was read")
    return block


class _TextExtractor(HTMLParser):
    """Readable text of an HTML page: headings (as ``#`` lines), paragraphs, list items, link texts, ``<pre>``
    verbatim; scripts, styles, navigation and other non-content elements dropped; whitespace collapsed."""

    SKIP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "canvas", "iframe", "object"})
    BLOCK = frozenset({"p", "div", "section", "article", "main", "header", "footer", "aside", "ul", "ol", "table",
                       "tr", "blockquote", "dl", "dt", "dd", "figure", "figcaption", "form", "details", "summary",
                       "hr", "address", "fieldset", "body", "html", "title"})
    VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track",
                      "wbr", "param"})
    _PRE = "\ue000"  # marks lines of <pre> text so the final clean-up keeps their whitespace

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.in_title = False
        self.title_parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            if tag not in self.VOID:
                self.skip += 1
            return
        if self.skip:
            return
        if tag == "title":
            self.in_title = True
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag == "pre":
            self.pre += 1
            self.out.append("\n")
        elif tag == "br":
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" ")
        elif tag in self.BLOCK:
            self.out.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.SKIP:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag == "title":
            self.in_title = False
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.out.append("\n")
        elif tag in self.BLOCK or tag in ("h1", "h2", "h3", "h4", "h5", "h6", "li"):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.pre:
            self.out.append("\n".join(self._PRE + line for line in data.split("\n")))
        else:
            self.out.append(re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines: list[str] = []
        blank = True
        for line in "".join(self.out).split("\n"):
            if line.startswith(self._PRE):
                lines.append(line.replace(self._PRE, ""))
                blank = False
                continue
            line = " ".join(line.replace(self._PRE, "").split())
            if not line:
                if not blank:
                    lines.append("")
                blank = True
                continue
            lines.append(line)
            blank = False
        return "\n".join(lines).strip("\n") + "\n"


def html_to_text(page: str) -> tuple[str | None, str]:
    """(title, readable text) of an HTML page; see :class:`_TextExtractor`."""
    parser = _TextExtractor()
    try:
        parser.feed(page)
        parser.close()
    except Exception:  # noqa: BLE001 - html.parser is lenient, but a broken page must not fail the turn
        log.debug("HTML parse error", exc_info=True)
    title = " ".join("".join(parser.title_parts).split()) or None
    return title, parser.text()
