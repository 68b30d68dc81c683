"""The one redaction (eca_notebook/_redact.py): registered values, the pattern pass, JSON values, the log filter."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from eca_notebook._redact import (
    RedactingFilter,
    add_secrets,
    redact,
    redact_json,
    secret_env_values,
    secret_header_values,
    secrets_of_url,
)


def test_registered_values_are_replaced_longest_first_and_bearer_tokens_alone():
    add_secrets(["reg-value-AAAA-1", "reg-value-AAAA-1-longer", "Bearer reg-bearer-token-77", None, "tiny"])
    assert redact("a reg-value-AAAA-1-longer b reg-value-AAAA-1 c") == "a *** b *** c"
    assert redact("token reg-bearer-token-77 alone") == "token *** alone"
    assert redact("tiny words stay") == "tiny words stay"  # too short to register


def test_percent_encoded_form_of_a_registered_value_is_registered_too():
    add_secrets(["pct%40value-999"])
    assert redact("decoded pct@value-999 and raw pct%40value-999") == "decoded *** and raw ***"


@pytest.mark.parametrize("text, expected", [
    ("cannot connect at http://user:pw-x@127.0.0.1:9/v1: refused",
     "cannot connect at http://***@127.0.0.1:9/v1: refused"),
    ("https://TOKEN123@github.com/a/b", "https://***@github.com/a/b"),
    ("http://u:p@ss@host/x", "http://***@host/x"),  # '@' in the password: up to the last '@' of the authority
    ("https://mcp.example/sse?token=abc123&x=1", "https://mcp.example/sse?token=***&x=1"),
    ("GET /v1?API_KEY=zz9&model=a", "GET /v1?API_KEY=***&model=a"),
    ("https://x/y?sig=abc;session_id=s1", "https://x/y?sig=***;session_id=***"),
    ("Authorization: Bearer abcdefgh1234", "Authorization: Bearer ***"),
    ('{"x-api-key": "k-123456"}', '{"x-api-key": "***"}'),
    ("sent bearer eyJhbGciOi.J9x.y1z as auth", "sent bearer *** as auth"),
    ("key sk-proj-abcdefghijklmnop1234 here", "key sk-proj-*** here"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_***"),
    ("AKIAABCDEFGHIJKLMNOP", "AKIA***"),
])
def test_the_pattern_pass_catches_unregistered_secrets(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize("text", [
    "the bearer receives it", "task-management-system-design", "mailto:me@example.org", "see https://github.com/a/b@c",
    "scikit-learn sk-learn", "a plain sentence with a URL https://example.org/path?page=2",
])
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


@pytest.mark.parametrize("text, expected", [
    ("FOO_API_KEY=plainvalue-abc123xyz", "FOO_API_KEY=***"),  # a .env line: no well-known shape needed
    ('export GITHUB_TOKEN="abcDEF123456ghi"', 'export GITHUB_TOKEN="***"'),
    ('{"api_key": "abc123def456", "max_tokens": 100000}', '{"api_key": "***", "max_tokens": 100000}'),
    ("DB_PASSWORD=s3cr3tP4ss\npassword: hunter22", "DB_PASSWORD=***\npassword: ***"),
    ("SECRET_KEY = 'django-insecure-abcdefghijklmnopqrstu'", "SECRET_KEY = '***'"),
    ("a jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0 here", "a jwt *** here"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nafter",
     "-----BEGIN RSA PRIVATE KEY-----\n***\n-----END RSA PRIVATE KEY-----\nafter"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz",  # cut short: masked to the end
     "-----BEGIN OPENSSH PRIVATE KEY-----\n***\n-----END OPENSSH PRIVATE KEY-----"),
    ("machine api.github.com login me password odd-shape-pw", "machine api.github.com login me password ***"),
    ("machine x\n  login me\n  password pw-secret-1\n", "machine x\n  login me\n  password ***\n"),
    ("xoxb-123456789012-abcdefghijklmnop", "xoxb-***"),
    ("sk-ant-api03-abcdefghijklmnop1234", "sk-ant-api03-***"),
])
def test_secrets_in_files_are_caught_too(text, expected):
    """What a file sent to the model may hold: .env and config assignments, JWTs, private keys, netrc entries."""
    assert redact(text) == expected


@pytest.mark.parametrize("text", [
    "api_key: string;", "API_KEY = os.environ['X']", "api_key = os.environ.get('X')", "token=token_v2)",
    "max_tokens=4096, tokenizer = 'bert-base-uncased1'", "Please login with password manager",
    "TOKEN_URL=https://example.org/oauth/token1", "password=None", "secret = settings.SECRET_KEY",
])
def test_code_naming_credentials_is_left_alone(text):
    assert redact(text) == text


def test_json_values_are_redacted_keys_included_and_not_mutated():
    add_secrets(["json-secret-5555"])
    value = {"a": ["x json-secret-5555", {"json-secret-5555": 1}], "n": 3, "b": None, "t": True}
    assert redact_json(value) == {"a": ["x ***", {"***": 1}], "n": 3, "b": None, "t": True}
    assert value["a"][0] == "x json-secret-5555"
    assert redact_json("extra-only-value-1", ["extra-only-value-1"]) == "***"


def test_json_values_of_every_shape_are_redacted():
    """The quick walk of plain dicts and lists hands other shapes to the general one: tuples, read-only mappings,
    str subclasses, numbers; long keys and values too."""
    from types import MappingProxyType

    class Name(str):
        pass

    add_secrets(["shape-secret-6Z6Z"])
    value = {"t": ("x shape-secret-6Z6Z", 1.5), "m": MappingProxyType({"k": "shape-secret-6Z6Z"}),
             "s": Name("shape-secret-6Z6Z"), "n": [True, None, 3], "shape-secret-6Z6Z longer key": "ok value",
             "deep": [{"a": [{"b": "token=ab12cd34"}]}]}
    assert redact_json(value) == {"t": ["x ***", 1.5], "m": {"k": "***"}, "s": "***", "n": [True, None, 3],
                                  "*** longer key": "ok value", "deep": [{"a": [{"b": "token=***"}]}]}


def test_a_text_seen_before_its_secret_was_registered_is_redacted_after():
    """Short texts are remembered once redacted (the streaming hot path sends the same ones again and again); a
    secret registered later must still be caught in a text remembered before — as a whole, inside a JSON value, and
    as a key."""
    text = "chunk late-secret-7Q7Q-x9 here"
    value = {"content": {"type": "text", "text": text}, "late-secret-7Q7Q-x9": 1}
    assert redact(text) == text
    assert redact_json(value) == value
    assert redact("late-secret-7Q7Q-x9") == "late-secret-7Q7Q-x9"
    add_secrets(["late-secret-7Q7Q-x9"])
    assert redact(text) == "chunk *** here"
    assert redact_json(value) == {"content": {"type": "text", "text": "chunk *** here"}, "***": 1}
    assert redact("late-secret-7Q7Q-x9") == "***"


@pytest.mark.parametrize("text, expected", [
    ("password x9Yz12", "password ***"), ("PASSWORD x9Yz12", "PASSWORD ***"), ("Bearer abc12345", "Bearer ***"),
    ("token=ab12cd34", "token=***"), ("http://u:p@h/x", "http://***@h/x"), ("api-key: ab12cd", "api-key: ***"),
])
def test_short_texts_go_through_the_pattern_pass_too(text, expected):
    """A streamed chunk is short: the quick check that rules the patterns out for it must not rule out these."""
    assert redact(text) == expected
    assert redact_json({"content": {"type": "text", "text": text}}) == {"content": {"type": "text", "text": expected}}


def test_many_distinct_short_texts_keep_being_redacted():
    """The memo of short texts is bounded: past its size it is emptied and every text is still redacted."""
    add_secrets(["bulk-secret-3R3R-y8"])
    for i in range(20_000):
        assert redact(f"{i} bulk-secret-3R3R-y8") == f"{i} ***"
        assert redact(f"plain text number {i}") == f"plain text number {i}"


def test_what_config_places_count_as_secrets():
    assert set(secrets_of_url("http://alice:pw%2Fx@h/v1?api_key=q1&model=m&token=t2")) == {
        "alice:pw%2Fx", "alice", "pw%2Fx", "q1", "t2"}
    assert secrets_of_url("https://api.openai.com") == [] and secrets_of_url(None) == []
    assert secret_header_values({"Authorization": "Bearer x", "anthropic-version": "2023-06-01",
                                 "X-Org-Secret": "s"}) == ["Bearer x", "s"]
    assert secret_env_values({"GITHUB_TOKEN": "abc", "NODE_ENV": "production", "PATH": "/usr/bin:/bin",
                              "GH": "ghx0123456789abcdefXYZ"}) == ["abc", "ghx0123456789abcdefXYZ"]


def test_log_filter_redacts_message_args_and_traceback():
    add_secrets(["log-secret-4242"])
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed with %s", ("log-secret-4242",), None)
    try:
        raise ValueError("boom log-secret-4242")
    except ValueError:
        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "failed with ***" in text and "ValueError: boom ***" in text and "log-secret-4242" not in text


def test_the_module_imports_nothing_of_the_project():
    code = ("import sys, eca_notebook._redact, eca_notebook._logging\n"
            "print(sorted(m for m in sys.modules if m.startswith('eca_notebook.') and m not in "
            "('eca_notebook._redact', 'eca_notebook._logging', 'eca_notebook._version')))")  # _version: the root's
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_long_runs_of_name_characters_are_redacted_in_linear_time():
    """"a-a-a-…" has a word boundary at each letter: a pattern that rescanned the rest from each one took minutes on
    60 KB (this test then never ends rather than asserting a time)."""
    for text in ("a-a" * 20000 + " key", "x." * 30000 + "token", "\n" * 60000 + "password x"):
        assert redact(text).startswith(text[:100])
