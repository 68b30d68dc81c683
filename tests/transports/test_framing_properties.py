"""Property tests of the codecs: the output depends only on the bytes, never on how reads split them.

The streams are built from fragments real and hostile peers produce: good frames, extra headers, ``Content-Length:``
followed by thousands of spaces, wrong lengths, over-limit lengths, bad charsets, garbage, stray newlines and
partial headers. Hypothesis shrinks a failure to a small stream and a few split points.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eca_notebook.transports.framing import (
    MAX_HEADER_BLOCK,
    ContentLengthDecoder,
    FramingError,
    NdjsonDecoder,
    dumps,
    loads,
)

MAX_FRAME = 300  # small, so over-limit frames and their skipping are common
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

bodies = st.builds(
    lambda i, text: dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": {"t": text}}),
    st.integers(0, 10**6),
    st.text(max_size=40),
)


@st.composite
def fragments(draw) -> bytes:
    body = draw(bodies)
    kind = draw(st.integers(0, 13))
    spaces = b" " * draw(st.sampled_from([0, 1, 2, 1023, 1024, 1025, 3000, MAX_HEADER_BLOCK - 20,
                                          MAX_HEADER_BLOCK + 5]))
    if kind == 0:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    if kind == 1:  # many spaces after the colon (once split-dependent)
        return b"Content-Length:" + spaces + b"%d\r\n\r\n%s" % (len(body), body)
    if kind == 2:  # other headers, lower case, LF only
        return b"content-type: application/json; charset=utf8\ncontent-length: %d\n\n%s" % (len(body), body)
    if kind == 3:  # a declared length too large by some bytes
        return b"Content-Length: %d\r\n\r\n%s" % (len(body) + draw(st.integers(1, 400)), body)
    if kind == 4:  # too small
        return b"Content-Length: %d\r\n\r\n%s" % (max(0, len(body) - draw(st.integers(1, 20))), body)
    if kind == 5:  # over the limit, or absurdly over it
        return b"Content-Length: %d\r\n\r\n" % draw(st.sampled_from([MAX_FRAME + 1, 5000, 10**15])) + body
    if kind == 6:
        return b"Content-Type: text/plain; charset=latin1\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    if kind == 7:
        return draw(st.binary(max_size=60))
    if kind == 8:
        return draw(st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\n\r\n", b" "]))
    if kind == 9:  # a partial header word, a lone mark, a header without its block end
        return draw(st.sampled_from([b"Content-", b"content-length", b"Content-Length: 12", b"CONTENT-LENGTH:",
                                     b"Content-Length: 5\r\n", b"Content-Length: 3\r\n\r\n"]))
    if kind == 10:  # a long garbage header line, or a long run of spaces before the newline
        return b"X-Pad: " + spaces + b"\r\n"
    if kind == 11:
        return b"Content-Length: 2" + spaces + b"\r\n\r\n{}"
    if kind == 12:
        return body
    return b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body) + 1) + body


streams = st.lists(fragments(), min_size=1, max_size=12).map(b"".join)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


def decode(decoder, pieces: list[bytes]) -> list:
    out: list = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out


@SETTINGS
@given(data=streams, cuts=st.lists(st.integers(0, 10**9), max_size=30))
def test_content_length_output_does_not_depend_on_how_reads_split_the_stream(data, cuts):
    whole = ContentLengthDecoder(MAX_FRAME).feed(data)
    assert decode(ContentLengthDecoder(MAX_FRAME), split(data, cuts)) == whole
    if len(data) <= 4000:
        assert decode(ContentLengthDecoder(MAX_FRAME), [data[i : i + 1] for i in range(len(data))]) == whole


@SETTINGS
@given(data=streams)
def test_content_length_holds_bounded_memory_and_a_good_frame_after_anything_decodes(data):
    decoder = ContentLengthDecoder(MAX_FRAME)
    decoder.feed(data)
    assert decoder.buffered <= max(MAX_FRAME, MAX_HEADER_BLOCK) + 64
    good = dumps({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    # Whatever state the stream left (a body still owed, garbage, a skipped frame), a frame sent twice gets through:
    # the first copy's header cuts an owed body short, or is eaten by it and the second copy is found.
    frame = b"Content-Length: %d\r\n\r\n%s" % (len(good), good)
    out = decoder.feed(frame + frame)
    assert out and out[-1] == good
    # And what the stdio door does when a peer stalls mid-frame leaves a clean decoder.
    decoder.feed(data)
    decoder.abandon()
    assert decoder.feed(frame) == [good]


@SETTINGS
@given(
    lines=st.lists(
        st.one_of(
            bodies,
            st.binary(max_size=40),
            st.sampled_from([b"", b"\r", b" " * 120, b"x" * (MAX_FRAME - 1), b"x" * MAX_FRAME, b"x" * (MAX_FRAME + 1)]),
            st.builds(lambda n: b"y" * n + b"\r", st.sampled_from([MAX_FRAME - 1, MAX_FRAME, MAX_FRAME + 1])),
        ),
        max_size=10,
    ),
    tail=st.binary(max_size=20),
    cuts=st.lists(st.integers(0, 10**9), max_size=30),
)
def test_ndjson_output_does_not_depend_on_how_reads_split_the_stream(lines, tail, cuts):
    data = b"\n".join(lines) + b"\n" + tail
    whole = NdjsonDecoder(MAX_FRAME).feed(data)
    assert decode(NdjsonDecoder(MAX_FRAME), split(data, cuts)) == whole
    assert decode(NdjsonDecoder(MAX_FRAME), [data[i : i + 1] for i in range(len(data))]) == whole


def test_over_1024_spaces_after_the_colon_decode_the_same_whole_or_split():
    """The stream the probe found: a broken frame, then a header with 2,000 spaces after ``Content-Length:``."""
    body = dumps({"jsonrpc": "2.0", "id": 1, "method": "m"})
    data = b"garbage\r\n" + b"Content-Length:" + b" " * 2000 + b"%d\r\n\r\n%s" % (len(body), body)
    whole = ContentLengthDecoder().feed(data)
    assert whole[-1] == body
    for size in (1, 7, 512, 1000, 1024):
        assert decode(ContentLengthDecoder(), [data[i : i + size] for i in range(0, len(data), size)]) == whole


def test_a_length_too_large_is_cut_short_by_the_next_frame_and_that_frame_decodes():
    good = dumps({"jsonrpc": "2.0", "id": 2, "method": "m"})
    data = b"Content-Length: 60000000\r\n\r\n{\"id\":1}" + b"Content-Length: %d\r\n\r\n%s" % (len(good), good)
    out = ContentLengthDecoder().feed(data)
    assert len(out) == 2 and out[1] == good
    assert isinstance(out[0], FramingError) and "60000000" in out[0].message


def test_an_absurd_length_over_the_limit_is_refused_and_does_not_swallow_the_next_frames():
    good = dumps({"jsonrpc": "2.0", "id": 2, "method": "m"})
    decoder = ContentLengthDecoder()
    first = decoder.feed(b"Content-Length: 99999999999999\r\n\r\n{\"id\":1}")
    assert [type(e) for e in first] == [FramingError] and "99999999999999 bytes" in first[0].message
    assert decoder.feed(b"Content-Length: %d\r\n\r\n%s" % (len(good), good)) == [good]


def test_a_stalled_body_can_be_abandoned_with_an_error_and_decoding_goes_on():
    decoder = ContentLengthDecoder()
    assert decoder.feed(b"Content-Length: 100\r\n\r\n{\"id\":1}") == []
    assert decoder.partial
    error = decoder.abandon()
    assert isinstance(error, FramingError) and "100" in error.message and "8 bytes" in error.message
    assert not decoder.partial and decoder.buffered == 0
    good = dumps({"id": 3})
    assert decoder.feed(b"Content-Length: %d\r\n\r\n%s" % (len(good), good)) == [good]
    assert json.loads(good) == {"id": 3}


class StepByStep(ContentLengthDecoder):
    """The decoder without its loop over whole canonical frames: every frame through the state machine."""

    def _canonical_frames(self, out: list) -> None:
        pass


# what a body may hold that makes the canonical loop stop and hand over: "-length" in a string, a real mark
marked_bodies = st.builds(
    lambda i, text: dumps({"jsonrpc": "2.0", "id": i, "method": "m", "params": {"t": text}}),
    st.integers(0, 10**6),
    st.sampled_from(["Content-Length: 12", "x-LENGTH", "content-length:\\r\\n", "-length", "-lengt"]),
)


@st.composite
def canonical_runs(draw) -> bytes:
    body = draw(st.one_of(bodies, marked_bodies))
    frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return frame * draw(st.integers(1, 4)) if draw(st.booleans()) else draw(fragments())


@SETTINGS
@given(data=st.lists(canonical_runs(), min_size=1, max_size=12).map(b"".join),
       cuts=st.lists(st.integers(0, 10**9), max_size=30))
def test_whole_canonical_frames_taken_in_one_loop_decode_as_the_state_machine_decodes_them(data, cuts):
    expected = StepByStep(MAX_FRAME).feed(data)
    assert ContentLengthDecoder(MAX_FRAME).feed(data) == expected
    assert decode(ContentLengthDecoder(MAX_FRAME), split(data, cuts)) == expected
    assert decode(StepByStep(MAX_FRAME), split(data, cuts)) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=20)
    | st.sampled_from(["a\ud800b", "\udfff"]),  # lone surrogates: the ASCII escape path
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8) | st.integers(-5, 5) | st.booleans() | st.none(), inner, max_size=4),
    max_leaves=12,
)


def reference_dumps(value: object) -> bytes:
    """dumps as the standard library writes it (a JSONEncoder per call)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def outcome(encode, value: object) -> tuple:
    try:
        return ("ok", encode(value))
    except (TypeError, ValueError) as exc:
        return (type(exc), str(exc))


@SETTINGS
@given(value=json_values | st.dictionaries(st.text(max_size=5), st.sampled_from([object(), {1, 2}, b"x"])))
def test_dumps_gives_the_standard_encoder_s_bytes_and_errors(value):
    assert outcome(dumps, value) == outcome(reference_dumps, value)


@SETTINGS
@given(value=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
       around=st.sampled_from(["", " ", "\n", "\ufeff", " }", "x"]), indent=st.sampled_from([None, 1]))
def test_loads_reads_a_message_as_the_standard_decoder_does(value, around, indent):
    try:
        text = json.dumps(value, indent=indent)  # (NaN written as NaN: a constant the decoder refuses)
    except ValueError:
        return
    body = (text + around if around != "\ufeff" else around + text).encode("utf-8", "surrogatepass")
    try:
        expected: object = json.loads(body.decode("utf-8").removeprefix("\ufeff"), parse_constant=refuse)
    except (ValueError, RecursionError):
        expected = FramingError
    try:
        got: object = loads(body)
    except FramingError:
        got = FramingError
    assert repr(got) == repr(expected)  # (repr: NaN never equals itself, and neither is ever decoded)


def refuse(name: str) -> object:
    raise ValueError(name)
