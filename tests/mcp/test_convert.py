"""MCP results → text, and ``/prompt args`` → prompt arguments."""

from __future__ import annotations

import base64

import pytest

from eca_notebook.mcp._convert import (
    call_result_to_text,
    content_to_text,
    prompt_arguments,
    prompt_to_text,
    resource_to_text,
    truncate,
)

PNG_12K = base64.b64encode(b"\0" * 12 * 1024).decode()
REVIEW = [{"name": "code", "required": True}, {"name": "language", "required": False}]


def test_text_and_non_text_content():
    assert content_to_text({"type": "text", "text": "hello"}) == "hello"
    assert content_to_text({"type": "image", "data": PNG_12K, "mimeType": "image/png"}) == "[image: image/png, 12 KB]"
    assert content_to_text({"type": "audio", "data": base64.b64encode(b"x" * 100).decode(),
                            "mimeType": "audio/wav"}) == "[audio: audio/wav, 100 B]"
    assert content_to_text({"type": "resource", "resource": {"uri": "a://b", "text": "inline"}}) == "inline"
    assert content_to_text({"type": "resource", "resource": {"uri": "a://b", "blob": PNG_12K,
                                                              "mimeType": "application/pdf"}}) == (
        "[binary resource a://b: application/pdf, 12 KB]")
    assert content_to_text({"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt",
                            "mimeType": "text/plain"}) == "[resource link: x.txt <file:///x.txt>, text/plain]"
    assert content_to_text({"type": "hologram"}) == "[hologram content]"


def test_call_results():
    assert call_result_to_text({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}) == (
        "a\nb", False)
    assert call_result_to_text({"content": [{"type": "text", "text": "bad"}], "isError": True}) == ("bad", True)
    # only structured content: the JSON
    assert call_result_to_text({"content": [], "structuredContent": {"n": 1}}) == ('{"n": 1}', False)
    with pytest.raises(ValueError, match="malformed tool result"):
        call_result_to_text({"content": "not a list"})


def test_prompt_and_resource_results():
    prompt = {"messages": [{"role": "user", "content": {"type": "text", "text": "one"}},
                           {"role": "assistant", "content": {"type": "text", "text": "two"}},
                           {"role": "user", "content": {"type": "image", "data": PNG_12K, "mimeType": "image/png"}}]}
    assert prompt_to_text(prompt) == "one\n\ntwo\n\n[image: image/png, 12 KB]"
    assert resource_to_text({"contents": [{"uri": "a://1", "text": "first"}, {"uri": "a://2", "text": "second"}]}) == (
        "first\n\nsecond")


def test_prompt_arguments_by_position():
    assert prompt_arguments("review", REVIEW, "'x = 1' rust") == {"code": "x = 1", "language": "rust"}
    assert prompt_arguments("review", REVIEW, "x") == {"code": "x"}
    # extra words go to the last argument
    assert prompt_arguments("review", REVIEW, "x rust and go") == {"code": "x", "language": "rust and go"}
    assert prompt_arguments("ask", [{"name": "question", "required": True}], "how does it work") == {
        "question": "how does it work"}
    # unbalanced quotes: whitespace words
    assert prompt_arguments("review", REVIEW, "it's fine") == {"code": "it's", "language": "fine"}
    assert prompt_arguments("hello", [], "") == {}


def test_prompt_arguments_errors():
    with pytest.raises(ValueError, match=r"missing required argument code\. Usage: /review <code> \[language\]"):
        prompt_arguments("review", REVIEW, "")
    two = [{"name": "a", "required": True}, {"name": "b", "required": True}]
    with pytest.raises(ValueError, match="missing required arguments a, b"):
        prompt_arguments("pair", two, "  ")
    with pytest.raises(ValueError, match="takes no arguments"):
        prompt_arguments("hello", [], "surprise")


def test_truncate():
    assert truncate("short\n", 10, 1000) == "short\n"
    cut = truncate("".join(f"line {i}\n" for i in range(100)), 10, 10_000)
    assert cut.startswith("line 0\n") and "line 9" in cut and "line 10" not in cut
    assert "[output truncated" in cut and "100 lines" in cut
    cut = truncate("é" * 1000, 10, 101)  # never splits a character
    assert cut.startswith("é" * 50 + "\n") and "[output truncated" in cut
