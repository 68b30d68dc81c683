"""Small text helpers shared by every layer (a leaf module: imports nothing from the package)."""

from __future__ import annotations

import re

__all__ = ["human_size", "is_host_guidance", "strip_controls", "user_words", "visible"]

#: How a host's own guidance starts when it puts it before the user's words in a prompt: Jupyter AI 3.2 prepends
#: "System note: When creating or editing Jupyter notebooks (.ipynb), use the Jupyter notebook MCP tools…" to the
#: first prompt of every session; other hosts write "System: …", "[System] …" or a ``<system-reminder>`` element.
_GUIDANCE = re.compile(
    r"\s*(?:system(?:[ _-]?(?:note|notice|message|reminder|instructions?|prompt|guidance))?\s*:"
    r"|\[system[^\]\n]*\]|<system[\w-]*>)", re.IGNORECASE)
_SYSTEM_ELEMENT = re.compile(r"\s*<(system[\w-]*)>.*?</\1>", re.IGNORECASE | re.DOTALL)
#: Where a host that resends the chat's history marks the user's new message (Jupyter AI, after a lost session:
#: "<conversation_history>…</conversation_history>\n\nCurrent user message:\n…").
_CURRENT_MESSAGE = re.compile(r"^[ \t]*current user message:[ \t]*$", re.IGNORECASE | re.MULTILINE)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


def is_host_guidance(text: str) -> bool:
    """Whether *text* (a paragraph or a prompt block) is a host's guidance rather than the user's words."""
    return _GUIDANCE.match(text) is not None


def user_words(message: str) -> str:
    """The user's own words in a prompt a host added to: its guidance paragraphs before them and a resent history
    skipped. The message itself when nothing else would be left (a user may well start with "System: …")."""
    text = message
    marks = list(_CURRENT_MESSAGE.finditer(text))
    if marks and text[marks[-1].end():].strip():
        text = text[marks[-1].end():]
    while (element := _SYSTEM_ELEMENT.match(text)) and text[element.end():].strip():
        text = text[element.end():]
    paragraphs = _PARAGRAPHS.split(text.strip())
    while len(paragraphs) > 1 and is_host_guidance(paragraphs[0]):
        paragraphs.pop(0)
    return "\n\n".join(paragraphs).strip() or message


def human_size(n: int) -> str:
    """812 B, 50 KB, 3.2 MB."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB", "TB"):
        size /= 1024
        if size < 1024 or unit == "TB":
            break
    text = f"{size:.0f}" if size >= 10 else f"{size:.1f}".removesuffix(".0")
    return f"{text} {unit}"


# Terminal escape sequences: CSI (colours, cursor moves), OSC (titles, OSC 8 hyperlinks, OSC 52 clipboard writes) with
# either terminator, DCS/SOS/PM/APC strings, two-character ESC sequences, and their 8-bit C1 forms (a C1 string only
# with its terminator: a lone U+009D from a mis-decoded file is escaped, not taken to swallow the rest).
_ESCAPE_SEQUENCES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -~]?|\x9b[0-?]*[ -/]*[@-~]?|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """*text* without terminal escape sequences, other control characters shown as ``\\xNN`` (tab, newline and
    carriage return kept). Why: tool output quotes files and file names anyone may have written, and it is shown in
    terminals (ACP editors, the session stream's clients) and sent to the model — an OSC 8 hyperlink or a colour
    code there would disguise what the text says."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", _ESCAPE_SEQUENCES.sub("", text))


# What a one-line label must not carry as itself: C0/C1 controls (newline and tab included), DEL, and the invisible
# format characters that reorder or hide text — bidi embeddings, overrides and isolates (U+202A–U+202E,
# U+2066–U+2069), the marks U+200E/U+200F/U+061C, zero-width characters, the line and paragraph separators, the BOM.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """*text* with every control and invisible formatting character written out (``\\n``, ``\\x1b``, ``\\u202e``).
    Why: an approval summary names a file or a command line anyone may have written; ``evil\\u202efdp.sh`` shows
    as "evilhs.pdf" and a newline can push the real command out of a one-line label — the user must see what they
    approve."""
    if not _INVISIBLE.search(text):
        return text

    def one(m: re.Match[str]) -> str:
        ch = m.group()
        code = ord(ch)
        return _NAMED.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")

    return _INVISIBLE.sub(one, text)
