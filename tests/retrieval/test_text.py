"""Identifier splitting and the FTS5 queries built from what the model types."""

from __future__ import annotations

from eca_notebook.retrieval._text import chunk_lines, fts_query, identifier_parts, snippet, split_form


def test_identifiers_split_at_case_digit_and_underscore_boundaries():
    assert identifier_parts("parseHTTPResponse2") == ["parse", "http", "response", "2"]
    assert identifier_parts("snake_case_name") == ["snake", "case", "name"]
    assert identifier_parts("XMLParser") == ["xml", "parser"]
    assert identifier_parts("plain") == ["plain"]


def test_the_split_form_holds_what_the_tokenizer_would_not_split():
    form = split_form("x = getUserName(user_id) + mixed_Case")
    assert set(form.split()) == {"get", "user", "name", "mixed", "case"}
    assert split_form("lower words only") == ""
    # only identifiers that may have parts are looked at: digits, capitals, `$` and `_` after the first letter,
    # also right after a number or a non-ASCII letter; one-part words (UPPER, Capital, _private) add nothing
    assert set(split_form("12abC éxY v2 $el_Ref UPPER Capital _private a1b").split()) == {
        "ab", "c", "x", "y", "v", "2", "el", "ref", "a", "1", "b"}
    assert split_form("getUserName getUserName") == split_form("getUserName")  # each identifier once


def test_queries_match_identifiers_as_themselves_or_as_their_parts():
    assert fts_query("parseConfig") == ('("parseconfig"* OR "parse config")', None)
    assert fts_query("load settings") == ('"load" AND "settings"*', None)
    assert fts_query('"return json"') == ('"return json"', "return json")
    assert fts_query("   ") == (None, None)
    assert fts_query("a b", any_term=True) == ('"a" OR "b"', None)


def test_chunks_overlap_and_cover_every_line():
    text = "\n".join(f"line {i}" for i in range(1, 101))
    chunks = list(chunk_lines(text))
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 40), (31, 70), (61, 100)]
    assert chunks[1].text.split("\n")[0] == "line 31"


def test_snippets_show_the_lines_that_match_most():
    text = "import os\ndef parse_config(path):\n    return parse(path)\n"
    assert snippet(text, 10, "parse config") == [(11, "def parse_config(path):"), (12, "return parse(path)")]
