from __future__ import annotations

import pytest

from eca_notebook.providers._sse import LineSplitter, SSEDecoder, SSEEvent, aiter_sse, sse_batches


def feed_all(lines):
    decoder = SSEDecoder()
    out = [e for e in (decoder.feed(line) for line in lines) if e is not None]
    tail = decoder.flush()
    return out + ([tail] if tail else [])


def test_events_data_and_default_name():
    lines = ["event: ping", "data: {}", "", "data: plain", "", "data: [DONE]", ""]
    assert feed_all(lines) == [SSEEvent("ping", "{}"), SSEEvent("message", "plain"), SSEEvent("message", "[DONE]")]


def test_multiline_data_comments_ids_and_missing_space():
    lines = [": keep-alive", "id: 7", "data:first", "data:  second", "retry: 100", "unknown: x", ""]
    assert feed_all(lines) == [SSEEvent("message", "first\n second", "7")]


def test_blank_lines_without_data_and_event_reset():
    lines = ["", "", "event: lonely", "", "data: x", ""]
    assert feed_all(lines) == [SSEEvent("message", "x")]


def test_trailing_event_without_blank_line_is_flushed():
    assert feed_all(["event: a", "data: 1"]) == [SSEEvent("a", "1")]


async def test_aiter_sse():
    async def lines():
        for line in ["event: x", "data: 1", "", "data: 2"]:
            yield line

    assert [e async for e in aiter_sse(lines())] == [SSEEvent("x", "1"), SSEEvent("message", "2")]


def split_all(pieces):
    splitter = LineSplitter()
    return [line for piece in pieces for line in splitter.feed(piece)] + splitter.flush()


@pytest.mark.parametrize("pieces", [
    ["a\nb\r\nc\rd\n"], ["a\nb\r", "\nc\rd\n"], ["a", "\n", "b\r", "\n", "c", "\r", "d", "\n"],
    ["a\nb", "\r\nc\r", "d\n"],
])
def test_lines_end_at_lf_crlf_and_cr_however_the_text_is_cut(pieces):
    assert split_all(pieces) == ["a", "b", "c", "d"]


def test_only_sse_line_ends_split_lines():
    # str.splitlines (and httpx's aiter_lines) also split at these; JSON may carry them raw inside a string
    text = "data: x\u2028y\u2029z\x85w\x0bv\x0cu\x1cq"
    assert split_all([text + "\n"]) == [text]


def test_blank_lines_a_cr_before_a_cr_and_a_last_line_without_its_end():
    assert split_all(["a\r", "\rb\n\n", "c"]) == ["a", "", "b", "", "c"]
    assert split_all(["a\r"]) == ["a"]


def test_feed_lines_is_feed_line_by_line():
    lines = [": c", "event: x", "id: 3", "data: 1", "data:2", "data", "", "", "retry: 1", "data: y", "", "data: z"]
    one_by_one = SSEDecoder()
    expected = [e for e in (one_by_one.feed(line) for line in lines) if e is not None]
    assert SSEDecoder().feed_lines(lines) == expected == [SSEEvent("x", "1\n2\n", "3"), SSEEvent("message", "y", "3")]


async def test_sse_batches_groups_the_events_of_each_piece_and_drops_an_unfinished_one():
    async def pieces():
        for piece in ["data: 1\n\ndata: 2\n\nda", "ta: 3\r\n", "\r\n", "data: never dispatched"]:
            yield piece

    assert [batch async for batch in sse_batches(pieces())] == [
        [SSEEvent("message", "1"), SSEEvent("message", "2")], [SSEEvent("message", "3")]]
