from __future__ import annotations

from eca_notebook.providers._sse import SSEDecoder, SSEEvent, aiter_sse


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
