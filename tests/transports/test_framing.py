"""The pure codecs: what real clients put on the wire, split anyhow, and how one bad frame is survived."""

from __future__ import annotations

import json
import random

import pytest

from eca_notebook.protocol.errors import INVALID_REQUEST, PARSE_ERROR
from eca_notebook.transports.framing import (
    MAX_HEADER_BLOCK,
    ContentLengthDecoder,
    FramingError,
    NdjsonDecoder,
    dumps,
    encode_content_length,
    encode_ndjson,
    loads,
)

MSG = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"rootUri": "file:///tmp/é"}}
BODY = dumps(MSG)


def frame(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers) or f"Content-Length: {len(body)}\r\n"
    return head.encode("ascii") + b"\r\n" + body


def feed_in_pieces(decoder: ContentLengthDecoder | NdjsonDecoder, data: bytes, size: int) -> list:
    out: list = []
    for i in range(0, len(data), size):
        out += decoder.feed(data[i : i + size])
    return out


def errors(items: list) -> list[FramingError]:
    return [i for i in items if isinstance(i, FramingError)]


# -- encoding ---------------------------------------------------------------------------------------------------------


def test_encode_content_length_has_only_that_header_and_counts_utf8_bytes():
    body = dumps({"text": "héllo ✓"})
    encoded = encode_content_length(body)
    head, _, rest = encoded.partition(b"\r\n\r\n")
    assert head == b"Content-Length: %d" % len(body)
    assert len(body) > len("héllo ✓") + 10  # bytes, not characters
    assert rest == body
    assert ContentLengthDecoder().feed(encoded) == [body]


def test_dumps_is_compact_utf8_json():
    assert dumps({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()


def test_dumps_refuses_values_json_cannot_carry():
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})
    with pytest.raises(TypeError):
        dumps({"x": object()})


def test_dumps_says_circular_as_json_does_and_a_failure_leaves_nothing_behind():
    """dumps runs the C encoder without circular-reference markers (built once): a circular message still fails
    with json's ValueError, and a message that failed half-way does not make its containers fail the next time."""
    loop: dict = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(loop)
    inner = {"deep": [1, {"x": 2}]}
    message = {"params": inner, "bad": object()}
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(message)
    del message["bad"]
    assert dumps(message) == b'{"params":{"deep":[1,{"x":2}]}}'
    assert dumps([inner, inner]) == b'[{"deep":[1,{"x":2}]},{"deep":[1,{"x":2}]}]'  # shared, not circular
    assert dumps("just a string") == b'"just a string"'


def test_dumps_escapes_a_lone_surrogate_instead_of_failing():
    body = dumps({"s": "a\ud800b"})
    assert loads(body) == {"s": "a\ud800b"}


# -- loads -------------------------------------------------------------------------------------------------------------


def test_loads_accepts_a_trailing_newline_and_a_bom():
    assert loads(BODY + b"\n") == MSG
    assert loads(b"\xef\xbb\xbf" + BODY) == MSG


@pytest.mark.parametrize(
    "body, fragment",
    [
        (b'{"a":', "invalid JSON"),
        (b"", "invalid JSON"),
        (b'{"a": "\xff"}', "invalid UTF-8"),
        (b'{"a": NaN}', "invalid JSON"),
        (b"[" * 100_000, "invalid JSON"),
    ],
)
def test_loads_raises_parse_error(body, fragment):
    with pytest.raises(FramingError) as info:
        loads(body)
    assert info.value.code == PARSE_ERROR
    assert fragment in info.value.message


# -- Content-Length: what real clients send -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/vscode-jsonrpc; charset=utf-8",
        "application/vscode-jsonrpc; charset=utf8",
        "application/vscode-jsonrpc; charset=UTF-8",
        'application/vscode-jsonrpc; charset="utf-8"',
        "application/json;charset=Utf8",
        "application/json",
    ],
)
def test_content_type_with_a_utf8_charset_is_accepted(content_type):
    data = frame(BODY, f"Content-Length: {len(BODY)}", f"Content-Type: {content_type}")
    assert ContentLengthDecoder().feed(data) == [BODY]


def test_content_type_before_content_length_and_unknown_headers_are_fine():
    data = frame(BODY, "Content-Type: application/vscode-jsonrpc; charset=utf8", "X-Whatever: 1",
                 f"Content-Length: {len(BODY)}")
    assert ContentLengthDecoder().feed(data) == [BODY]


@pytest.mark.parametrize("name", ["content-length", "CONTENT-LENGTH", "Content-length", "cOnTeNt-LeNgTh"])
def test_header_names_are_case_insensitive(name):
    assert ContentLengthDecoder().feed(frame(BODY, f"{name}: {len(BODY)}")) == [BODY]


def test_a_trailing_newline_counted_in_content_length_stays_in_the_body_and_parses():
    body = BODY + b"\n"
    [got] = ContentLengthDecoder().feed(frame(body, f"Content-Length: {len(body)}"))
    assert got == body
    assert loads(got) == MSG


def test_a_newline_after_the_body_not_counted_is_skipped():
    data = frame(BODY) + b"\r\n" + frame(BODY) + b"\n"
    assert ContentLengthDecoder().feed(data) == [BODY, BODY]


def test_lf_only_header_terminator_is_tolerated():
    assert ContentLengthDecoder().feed(b"Content-Length: %d\n\n%s" % (len(BODY), BODY)) == [BODY]


def test_several_frames_in_one_read():
    bodies = [dumps({"jsonrpc": "2.0", "method": "n", "params": {"i": i}}) for i in range(50)]
    assert ContentLengthDecoder().feed(b"".join(frame(b) for b in bodies)) == bodies


def test_a_200kb_frame_split_across_many_reads():
    body = dumps({"jsonrpc": "2.0", "method": "chat/prompt", "params": {"message": "x" * 210_000}})
    decoder = ContentLengthDecoder()
    out = feed_in_pieces(decoder, frame(body) + frame(BODY), 997)
    assert out == [body, BODY]
    assert decoder.buffered == 0


def test_byte_by_byte_feeding():
    bodies = [BODY, dumps({"jsonrpc": "2.0", "id": "x", "result": None}), BODY + b"\n"]
    middle = frame(bodies[1], "content-type: application/json; charset=utf8", f"CONTENT-LENGTH: {len(bodies[1])}")
    data = frame(bodies[0]) + middle + frame(bodies[2])
    decoder = ContentLengthDecoder()
    out = feed_in_pieces(decoder, data, 1)
    assert out == bodies
    assert decoder.buffered == 0


def test_a_frame_larger_than_a_megabyte():
    body = dumps({"jsonrpc": "2.0", "method": "x", "params": {"blob": "é" * 1_500_000}})
    assert len(body) > 3_000_000
    decoder = ContentLengthDecoder()
    out = feed_in_pieces(decoder, frame(body), 64 * 1024)
    assert out == [body]
    assert loads(out[0])["params"]["blob"] == "é" * 1_500_000


def test_partial_frame_is_reported_as_buffered_until_complete():
    decoder = ContentLengthDecoder()
    data = frame(BODY)
    assert decoder.feed(data[:10]) == []
    assert decoder.buffered == 10  # a partial header is held
    assert decoder.feed(data[10:-5]) == []
    assert decoder.buffered == len(BODY) - 5  # the parsed header is not
    assert decoder.feed(data[-5:]) == [BODY]
    assert decoder.buffered == 0


def test_random_splits_give_the_same_frames():
    rng = random.Random(1234)
    bodies = [dumps({"i": i, "pad": "y" * rng.randrange(0, 3000)}) for i in range(40)]
    data = b"".join(frame(b) for b in bodies)
    for _ in range(30):
        decoder = ContentLengthDecoder()
        out, pos = [], 0
        while pos < len(data):
            step = rng.randrange(1, 5000)
            out += decoder.feed(data[pos : pos + step])
            pos += step
        assert out == bodies


def test_an_empty_body_is_delivered_and_fails_to_parse():
    [body] = ContentLengthDecoder().feed(b"Content-Length: 0\r\n\r\n")
    assert body == b""
    with pytest.raises(FramingError):
        loads(body)


# -- Content-Length: refusing a frame and surviving it ---------------------------------------------------------------


@pytest.mark.parametrize("charset", ["latin1", "ISO-8859-1", "utf-16", '"ascii"'])
def test_unsupported_charset_is_an_error_its_body_is_skipped_and_the_next_frame_decodes(charset):
    bad_body = "é".encode("latin-1") * 10
    data = (frame(bad_body, f"Content-Type: text/plain; charset={charset}", f"Content-Length: {len(bad_body)}")
            + frame(BODY))
    for size in (len(data), 3, 1):
        out = feed_in_pieces(ContentLengthDecoder(), data, size)
        assert len(out) == 2, out
        assert isinstance(out[0], FramingError)
        assert out[0].code == PARSE_ERROR
        expected = charset.strip('"').lower()
        assert out[0].message == f"unsupported charset '{expected}': only utf-8 is supported"
        assert out[1] == BODY


def test_oversized_frame_is_refused_not_buffered_and_the_next_frame_decodes():
    decoder = ContentLengthDecoder(max_frame_size=1000)
    huge = b"z" * 50_000
    out = decoder.feed(b"Content-Length: 50000\r\n\r\n" + huge[:100])
    [err] = out
    assert err.code == INVALID_REQUEST
    assert "50000 bytes" in err.message and "1000 bytes" in err.message
    for i in range(100, len(huge), 4096):
        assert decoder.feed(huge[i : i + 4096]) == []
        assert decoder.buffered == 0  # discarded as it arrives
    assert decoder.feed(frame(BODY)) == [BODY]


def test_a_frame_exactly_at_the_limit_is_accepted():
    decoder = ContentLengthDecoder(max_frame_size=len(BODY))
    assert decoder.feed(frame(BODY)) == [BODY]


@pytest.mark.parametrize(
    "garbage",
    [
        b"hello world\r\n",  # a line that is no header
        b"Content-Length: 12abc\r\n\r\n{}",  # invalid length
        b"Content-Length: -5\r\n\r\n{}",
        b"Content-Type: application/json\r\n\r\n" + BODY,  # no Content-Length: unknown body length
        b'{"jsonrpc":"2.0","method":"x"}',  # a body without headers, glued to the next frame
        b'{"jsonrpc":"2.0","method":"x"}\r\n',  # a body without headers, on its own line
        b"Content-Length: 5\r\nnot a header\r\n\r\nhello",
        b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",  # conflicting lengths
        b"\x00\x01\x02\xff\xfe garbage without a newline",
    ],
)
def test_garbage_is_reported_and_the_decoder_resyncs_on_the_next_frame(garbage):
    data = frame(BODY) + garbage + frame(BODY)
    for size in (len(data), 7, 1):
        out = feed_in_pieces(ContentLengthDecoder(), data, size)
        assert out[0] == BODY
        assert out[-1] == BODY, out
        assert 1 <= len(errors(out)) <= 2
        assert all(e.code == PARSE_ERROR for e in errors(out))
        assert [o for o in out if not isinstance(o, FramingError)] == [BODY, BODY]


def test_missing_content_length_error_message():
    out = ContentLengthDecoder().feed(b"Content-Type: application/json\r\n\r\n" + frame(BODY))
    assert out == [FramingError(PARSE_ERROR, "header block without a Content-Length header"), BODY]


def test_header_block_without_end_is_refused_within_a_bound():
    decoder = ContentLengthDecoder()
    out = decoder.feed(b"X" * (MAX_HEADER_BLOCK + 10))
    assert len(out) == 1 and out[0].code == PARSE_ERROR
    assert decoder.buffered <= 2 * 1024
    for _ in range(100):  # endless garbage stays bounded
        decoder.feed(b"Y" * 10_000)
        assert decoder.buffered <= 2 * 1024
    assert decoder.feed(b"\r\n" + frame(BODY)) == [BODY]


def test_many_header_lines_are_refused():
    decoder = ContentLengthDecoder()
    out = decoder.feed(b"X-A: 1\r\n" * (MAX_HEADER_BLOCK // 8 + 10) + frame(BODY))
    assert errors(out) and out[-1] == BODY


# -- NDJSON ---------------------------------------------------------------------------------------------------------


def test_ndjson_roundtrip_crlf_and_blank_lines():
    other = dumps({"jsonrpc": "2.0", "id": 2, "result": {}})
    data = encode_ndjson(BODY) + b"\n  \n" + other + b"\r\n" + b"\r\n"
    assert NdjsonDecoder().feed(data) == [BODY, other]


def test_ndjson_byte_by_byte_and_partial_lines():
    data = encode_ndjson(BODY) * 3
    decoder = NdjsonDecoder()
    assert feed_in_pieces(decoder, data, 1) == [BODY] * 3
    assert decoder.feed(BODY[:10]) == []
    assert decoder.buffered == 10
    assert decoder.feed(BODY[10:] + b"\n") == [BODY]


def test_ndjson_large_line_in_many_reads():
    body = dumps({"blob": "q" * 1_200_000})
    assert feed_in_pieces(NdjsonDecoder(), encode_ndjson(body) + encode_ndjson(BODY), 65536) == [body, BODY]


def test_ndjson_oversized_line_is_refused_then_next_line_decodes():
    decoder = NdjsonDecoder(max_frame_size=100)
    out = decoder.feed(b"a" * 500 + b"\n" + encode_ndjson(BODY[:90]))
    assert out[0] == FramingError(INVALID_REQUEST, "message exceeds the maximum frame size of 100 bytes")
    assert out[1] == BODY[:90]


def test_ndjson_oversized_line_arriving_in_pieces_is_not_buffered():
    decoder = NdjsonDecoder(max_frame_size=100)
    out = []
    for _ in range(50):
        out += decoder.feed(b"b" * 64)
        assert decoder.buffered <= 200
    out += decoder.feed(b"bbb\n" + encode_ndjson(b"[1]"))
    assert len(out) == 2 and out[0].code == INVALID_REQUEST and out[1] == b"[1]"


def test_encode_ndjson_refuses_an_embedded_newline():
    with pytest.raises(ValueError):
        encode_ndjson(json.dumps(MSG, indent=2).encode())


def test_dumps_never_emits_a_raw_newline():
    body = dumps({"text": "line1\nline2\r\n", "u": "\u2028"})
    assert b"\n" not in body
    assert NdjsonDecoder().feed(encode_ndjson(body)) == [body]
