"""Bytes ↔ JSON message bodies: the LSP-style ``Content-Length`` codec and NDJSON. Pure: no I/O, no asyncio.

Why pure: every byte-oriented door (stdio, subprocess pipes, sockets) reuses the same decoder, and a decoder that
only turns ``feed(bytes)`` into ``list[body | error]`` can be fuzzed and tested byte by byte without a loop.

Robustness rules (one bad frame must never kill a connection — editors keep a server for hours):

* A problem with one frame is reported *in place* as a :class:`FramingError` in the list ``feed`` returns, and
  decoding goes on with the next frame. The endpoint answers such an error with ``id: null``.
* A frame whose body we refuse (too large, unsupported charset) is *skipped*: its bytes are discarded as they arrive,
  never buffered — until its declared end, or until the next frame's ``Content-Length`` line shows up among them
  (a length of a terabyte cannot swallow the connection).
* A header block we cannot make sense of (garbage, missing or invalid ``Content-Length``) makes the decoder *resync*:
  it discards bytes up to the next ``Content-Length: <digits>`` header line. A JSON body cannot contain such a line
  (raw CR/LF never occur inside JSON strings), so this finds the next real frame even when bodies and headers are
  glued together without newlines, which is how most clients write them. The same line inside a body means the
  declared length was wrong: the frame is reported and decoding resumes at that line.
* The output is split-invariant: it depends only on the bytes, never on how reads cut them.

Large bodies are accumulated in one ``bytearray`` read through an offset and compacted once per ``feed`` call, so
a 10 MB frame arriving in 64 KiB pieces costs linear time, and so does a header fed one byte at a time.
"""

from __future__ import annotations

import json
import re
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]  # (not in typeshed)
from typing import Any

from ..protocol.errors import INVALID_REQUEST, PARSE_ERROR

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "ContentLengthDecoder",
    "FramingError",
    "NdjsonDecoder",
    "dumps",
    "encode_content_length",
    "encode_ndjson",
    "loads",
]

DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
# A header block longer than this is garbage (real ones are < 100 bytes); bounds what we buffer while looking for it.
# It also bounds a "Content-Length: N" line searched for while resyncing, so at most this much of an unmatched tail
# is ever kept.
MAX_HEADER_BLOCK = 8 * 1024

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DIGITS = re.compile(rb"[0-9]+")
# The header block as nearly every peer (and we) write it: the fast path of the decoder.
_CANONICAL = re.compile(rb"Content-Length: ([0-9]{1,18})\r\n\r\n")
# The start of a frame, found again after garbage or inside a body that cannot be one (see _find_mark).
_MARK = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
# What a mark looks like before its newline has arrived: fullmatched up to the end of the input so far.
_MARK_PARTIAL = re.compile(rb"content-length[ \t]*(?::[ \t]*(?:[0-9]+[ \t]*\r?)?)?", re.IGNORECASE)
# A literal first byte lets the regex engine skip through a body at memchr speed; "content" is checked per hit.
_MARK_HINT = re.compile(rb"-[lL][eE][nN][gG][tT][hH]")
_MARK_WORD = b"content-length"
_HINT_OFFSET = len(b"content")
_UTF8_CHARSETS = frozenset({"utf-8", "utf8"})
_BLOCK_TOO_LONG = f"header block longer than {MAX_HEADER_BLOCK} bytes"


def _find_mark(buf: bytearray, lo: int, end: int, *, complete: bool) -> tuple[int | None, int]:
    """The first ``Content-Length: <digits>`` header line (at most :data:`MAX_HEADER_BLOCK` bytes, newline
    included) lying wholly inside ``buf[lo:end]``, as ``(start, start)``; else ``(None, resume)`` where *resume* is
    the earliest position a mark could still start at once bytes after *end* arrive (*end* when *complete*: no
    byte after *end* counts).

    Why this is the resync point, even inside a body: such a line cannot occur in JSON (a raw newline is not
    allowed inside a string, and ``content-length`` is no JSON token outside one), so finding it means a frame
    started there. The answer depends only on the bytes, never on how they were split into reads, which is what
    keeps the decoder's output split-invariant; earlier positions never need rescanning (*resume* only grows).
    """
    for hint in _MARK_HINT.finditer(buf, lo + _HINT_OFFSET, end):
        start = hint.start() - _HINT_OFFSET
        if buf[start : start + _HINT_OFFSET].lower() != b"content":
            continue
        if _MARK.match(buf, start, min(end, start + MAX_HEADER_BLOCK)):
            return start, start
        if not complete and end - start < MAX_HEADER_BLOCK and _MARK_PARTIAL.fullmatch(buf, start, end):
            return None, start  # no newline after it yet, so no later mark is complete either
    if complete:
        return None, end
    for k in range(min(len(_MARK_WORD) - 1, end - lo), 0, -1):  # "…conte" at the end may become a mark
        if buf[end - k : end].lower() == _MARK_WORD[:k]:
            return None, end - k
    return None, end


class FramingError(Exception):
    """A frame could not be turned into a message; ``code`` is the JSON-RPC error code to answer with.

    Returned (not raised) in place by the decoders, because decoding continues after it; raised by :func:`loads`.
    """

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)

    def __repr__(self) -> str:
        return f"FramingError({self.code}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FramingError) and (self.code, self.message) == (other.code, other.message)

    __hash__ = Exception.__hash__


def _show(raw: bytes, limit: int = 40) -> str:
    """A short, printable rendering of untrusted header bytes for an error message."""
    text = raw[:limit].decode("latin-1")
    return repr(text + ("…" if len(raw) > limit else ""))


def _charset(content_type: bytes) -> str | None:
    """The ``charset`` parameter of a Content-Type value, lower-cased and unquoted; None when absent."""
    for param in content_type.decode("latin-1").split(";")[1:]:
        key, sep, value = param.partition("=")
        if sep and key.strip().lower() == "charset":
            return value.strip().strip("\"'").strip().lower()
    return None


# States of the Content-Length decoder.
_HEADERS, _BODY, _SKIP, _RESYNC = range(4)


class ContentLengthDecoder:
    """Incremental decoder for ``Content-Length: N\\r\\n\\r\\n<N bytes>`` frames (LSP base protocol).

    Accepts what real clients send: header names in any case and order, unknown headers (ignored), an optional
    ``Content-Type`` whose charset is ``utf-8``/``utf8``, ``\\n\\n`` as well as ``\\r\\n\\r\\n`` after the headers, and
    stray blank lines between frames.

    Split-invariant: the list of bodies and errors depends only on the concatenated input, never on how it was cut
    into ``feed`` calls (a property test checks this). A declared length that is wrong is caught as soon as the
    next frame's ``Content-Length`` line shows up inside the body (or inside a refused body being skipped): the frame
    is reported and decoding resumes there, instead of swallowing the next frames.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0  # start of the unconsumed bytes in _buf (start of the header block in _HEADERS)
        self._line = 0  # _HEADERS: start of the header line being parsed
        self._scan = 0  # _HEADERS: where to look for the next b"\n"; otherwise where a mark may still start
        self._headers: list[tuple[bytes, bytes]] = []
        self._need = 0  # _BODY: body length (from _pos); _SKIP: bytes still to discard (from _pos)
        self._state = _HEADERS

    @property
    def buffered(self) -> int:
        """Bytes held waiting for the rest of a frame."""
        return len(self._buf) - self._pos

    @property
    def partial(self) -> bool:
        """True in the middle of a frame the peer still owes bytes of (a header block or a body)."""
        if self._state == _BODY:
            return True
        return self._state == _HEADERS and bool(bytes(self._buf[self._pos :]).strip())

    def abandon(self) -> FramingError | None:
        """Give up on the frame in progress (its sender stalled): drop what is held and say what was lost.

        The transport calls this when no byte arrived for a while in the middle of a frame, so a wrong
        ``Content-Length`` ends with an error instead of a wait for bytes that never come.
        """
        error = None
        if self._state == _BODY:
            error = FramingError(
                PARSE_ERROR,
                f"incomplete frame dropped: Content-Length {self._need} declared, {self.buffered} bytes arrived",
            )
        elif self.partial:
            error = FramingError(PARSE_ERROR, "incomplete header block dropped")
        self._buf.clear()
        self._enter_headers(0)
        return error

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """Add *data*; return the bodies completed by it, in order, with errors in their place."""
        out: list[bytes | FramingError] = []
        self._buf += data
        while True:
            if self._state == _HEADERS and not self._headers and self._line == self._pos:
                self._canonical_frames(out)
            if not self._step(out):
                break
        self._compact()
        return out

    def _canonical_frames(self, out: list[bytes | FramingError]) -> None:
        """Take the run of whole frames written as every peer writes them — the canonical header, a body with no
        ``-length`` in it — in one loop, as :meth:`_step` would take each in two steps; stop at anything else (an
        incomplete frame, a body that may hold a mark, another header block) and leave it to the state machine.
        A streamed reply reads as thousands of such frames."""
        buf, pos, limit, size_limit = self._buf, self._pos, len(self._buf), self.max_frame_size
        match, hint = _CANONICAL.match, _MARK_HINT.search
        with memoryview(buf) as view:
            while (canonical := match(buf, pos)) is not None:
                start = canonical.end()
                end = start + int(canonical[1])
                if end > limit or end - start > size_limit or hint(buf, start + _HINT_OFFSET, end) is not None:
                    break
                out.append(bytes(view[start:end]))
                pos = end
        if pos != self._pos:
            self._enter_headers(pos)

    # -- state machine --------------------------------------------------------------------------------------------

    def _step(self, out: list[bytes | FramingError]) -> bool:
        """Advance by one unit of work; False when more input is needed."""
        if self._state == _HEADERS:
            if not self._headers and self._line == self._pos:
                # The block every client writes, whole: straight to its body (what the line-by-line parse below
                # would conclude from it, in one regex match).
                canonical = _CANONICAL.match(self._buf, self._pos)
                if canonical is not None:
                    size = int(canonical[1])
                    if size <= self.max_frame_size:
                        self._pos = self._line = self._scan = canonical.end()
                        self._state, self._need = _BODY, size
                        return True
            return self._header_line(out)
        buf, pos = self._buf, self._pos
        if self._state == _RESYNC:
            end, complete = len(buf), False
        else:
            end = pos + self._need
            complete = len(buf) >= end
            end = min(end, len(buf))
        mark, resume = _find_mark(buf, self._scan, end, complete=complete)
        if mark is not None:
            if self._state == _BODY:
                out.append(
                    FramingError(
                        PARSE_ERROR,
                        f"frame dropped: Content-Length {self._need} declared, but the next frame's header came "
                        f"after {mark - pos} bytes",
                    )
                )
            self._enter_headers(mark)
            return True
        if complete:
            if self._state == _BODY:
                with memoryview(buf) as view:
                    out.append(bytes(view[pos:end]))
            self._enter_headers(end)
            return True
        self._scan = resume
        if self._state != _BODY:  # skipped or garbage bytes before *resume* can never matter again
            if self._state == _SKIP:
                self._need -= resume - pos
            self._pos = resume
        return False

    def _header_line(self, out: list[bytes | FramingError]) -> bool:
        buf = self._buf
        newline = buf.find(b"\n", self._scan)
        # A block is refused once it is certain to exceed the bound (newline included), whatever the read sizes.
        if newline < 0:
            self._scan = len(buf)
            if len(buf) - self._pos >= MAX_HEADER_BLOCK:
                self._fail(out, PARSE_ERROR, _BLOCK_TOO_LONG)
                return True
            return False
        if newline + 1 - self._pos > MAX_HEADER_BLOCK:
            self._fail(out, PARSE_ERROR, _BLOCK_TOO_LONG)
            return True
        line_start = self._line
        line = bytes(buf[line_start:newline]).strip()
        self._line = self._scan = newline + 1
        if not line:
            if not self._headers:
                self._pos = self._line  # a stray blank line between frames
                return True
            self._end_of_headers(out)
            return True
        name, sep, value = line.partition(b":")
        name = name.rstrip()
        if not sep or not _TOKEN.fullmatch(name):
            # Resync from this line's start: a header glued behind garbage ("…}Content-Length: 9") is found again.
            self._fail(out, PARSE_ERROR, f"malformed header line {_show(line)}", resync_from=line_start)
            return True
        self._headers.append((name.lower(), value.strip()))
        return True

    def _end_of_headers(self, out: list[bytes | FramingError]) -> None:
        lengths = {value for name, value in self._headers if name == b"content-length"}
        if not lengths:
            self._fail(out, PARSE_ERROR, "header block without a Content-Length header")
            return
        # A well-formed block with a bad length: the next frame cannot start inside it, resync after it.
        if len(lengths) > 1:
            self._fail(out, PARSE_ERROR, "conflicting Content-Length headers", resync_from=self._line)
            return
        raw = lengths.pop()
        if not _DIGITS.fullmatch(raw):
            self._fail(out, PARSE_ERROR, f"invalid Content-Length {_show(raw)}", resync_from=self._line)
            return
        size = int(raw)
        charsets = [_charset(value) for name, value in self._headers if name == b"content-type"]
        bad = next((c for c in charsets if c is not None and c not in _UTF8_CHARSETS), None)
        self._pos = self._scan = self._line
        self._headers = []
        if bad is not None:
            out.append(FramingError(PARSE_ERROR, f"unsupported charset {bad!r}: only utf-8 is supported"))
            self._state, self._need = _SKIP, size
        elif size > self.max_frame_size:
            out.append(
                FramingError(
                    INVALID_REQUEST,
                    f"message of {size} bytes exceeds the maximum frame size of {self.max_frame_size} bytes",
                )
            )
            self._state, self._need = _SKIP, size
        else:
            self._state, self._need = _BODY, size

    def _fail(
        self, out: list[bytes | FramingError], code: int, message: str, *, resync_from: int | None = None
    ) -> None:
        """Report a broken header block and resync; by default after the block's first byte (the real frame may
        start inside the block, e.g. ``xxContent-Length: 9`` when garbage preceded it on the same line)."""
        out.append(FramingError(code, message))
        self._headers = []
        self._pos = self._scan = self._pos + 1 if resync_from is None else resync_from
        self._state = _RESYNC

    def _enter_headers(self, pos: int) -> None:
        self._pos = self._line = self._scan = pos
        self._headers = []
        self._need = 0
        self._state = _HEADERS

    def _compact(self) -> None:
        """Drop consumed bytes: once per feed, so its cost is linear in what is kept, never per frame."""
        pos = self._pos
        if pos:
            del self._buf[:pos]
            self._pos = 0
            self._line = max(0, self._line - pos)
            self._scan = max(0, self._scan - pos)


class NdjsonDecoder:
    """Incremental decoder for newline-delimited JSON (one message per line; ACP's framing).

    Blank lines are skipped and a trailing ``\\r`` is dropped. A line longer than ``max_frame_size`` is refused with
    ``FramingError(INVALID_REQUEST)`` and discarded up to its newline without being buffered.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._pos = 0
        self._scan = 0
        self._discarding = False

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        out: list[bytes | FramingError] = []
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                return out
            self._discarding = False
            self._buf += memoryview(data)[newline + 1 :]
        else:
            self._buf += data
        buf = self._buf
        while True:
            newline = buf.find(b"\n", self._scan)
            if newline < 0:
                self._scan = len(buf)
                pending = len(buf) - self._pos
                if pending > self.max_frame_size + 1:  # + 1: a trailing "\r" is not part of the line
                    out.append(self._too_large())
                    self._pos = self._scan = len(buf)
                    self._discarding = True
                break
            start, end = self._pos, newline
            self._pos = self._scan = newline + 1
            if end > start and buf[end - 1] == 0x0D:
                end -= 1
            if end - start > self.max_frame_size:
                out.append(self._too_large())
                continue
            with memoryview(buf) as view:
                line = bytes(view[start:end])
            if line.strip():
                out.append(line)
        if self._pos:
            del buf[: self._pos]
            self._scan -= self._pos
            self._pos = 0
        return out

    def _too_large(self) -> FramingError:
        # The same message however the line arrived (whole or in pieces): the output is split-invariant.
        return FramingError(
            INVALID_REQUEST, f"message exceeds the maximum frame size of {self.max_frame_size} bytes"
        )


def encode_content_length(body: bytes) -> bytes:
    """One frame, ready for a single write. Only ``Content-Length`` (some clients choke on other headers)."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def encode_ndjson(body: bytes) -> bytes:
    if b"\n" in body:
        raise ValueError("an NDJSON body must not contain a newline (use dumps(), which never emits one)")
    return body + b"\n"


# Built once: ``json.dumps``/``json.loads`` with options build a new encoder/decoder on every call, and every streamed
# chunk is encoded here once and decoded once by the peer.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ENCODE = _ENCODER.encode
_ENCODE_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
# And the C encoder under it, built once too (JSONEncoder.encode builds one per call, most of its cost for a small
# message): the same output and the same TypeError/ValueError, but without the circular-reference markers, which it
# would leave behind after a failure — a circular message ends in RecursionError there, and _ENCODE says which.
_C_ENCODE = None if c_make_encoder is None else c_make_encoder(
    None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, False
)


def dumps(message: Any) -> bytes:
    """Compact UTF-8 JSON. Raises TypeError/ValueError for values JSON cannot carry (objects, NaN)."""
    try:
        if _C_ENCODE is None:
            return _ENCODE(message).encode("utf-8")
        try:
            return "".join(_C_ENCODE(message, 0)).encode("utf-8")
        except RecursionError:
            return _ENCODE(message).encode("utf-8")  # "Circular reference detected" (ValueError), or too deep
    except UnicodeEncodeError:
        # A lone surrogate in a str: only the \\uXXXX escape can carry it.
        return _ENCODE_ASCII(message).encode("ascii")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_DECODE = _DECODER.decode
_RAW_DECODE = _DECODER.raw_decode


def loads(body: bytes) -> Any:
    """Parse one body (strict UTF-8, standard JSON; surrounding whitespace such as a trailing newline is fine)."""
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FramingError(PARSE_ERROR, f"invalid UTF-8 at byte {exc.start}") from None
    if text[:1] == "{" and text[-1:] == "}":  # a message as peers write it, nothing around it: no whitespace to skip
        try:
            value, end = _RAW_DECODE(text)
            if end == len(text):
                return value
        except (ValueError, RecursionError):
            pass  # the full parse below says what is wrong
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return _DECODE(text)
    except (ValueError, RecursionError) as exc:
        raise FramingError(PARSE_ERROR, f"invalid JSON: {exc}") from None
