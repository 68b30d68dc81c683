"""One redaction for everything that leaves the process or lands on disk.

Why one module, at the bottom of the layers (it imports nothing but the standard library): secrets can reach the
outside through many doors — chat contents, saved chats, logs, ``/doctor``, ``tool/serverUpdated``, REST answers,
error messages, tool results sent back to the model — and each door used to carry its own partial scrubbing. Here
there is a single process-wide answer to "what must never be shown", applied at a few choke points:

* a **registry of known secret values** gathered from config (provider keys and header values, URL userinfo and
  credential-like query values, MCP env and header values, credential-named environment variables). It is
  process-wide on purpose: an error body from one provider that echoes *another* provider's key is still caught,
  and the logging filter (which has no engine at hand) sees every engine's secrets. Values only accumulate; keeping
  a stale one costs a ``***`` in the rare text that repeats it, forgetting one could leak it.
* a **pattern pass** for secrets nobody registered: URL userinfo (``http://user:pw@host`` → ``http://***@host``),
  credential-like query parameters (``?token=…``, ``&api_key=…``), well-known key shapes (``sk-…``, ``ghp_…``),
  ``Bearer …`` tokens and ``Authorization:``-style header lines.

What it cannot promise: a secret streamed to a client split across two text chunks is redacted in the saved chat
(chunks are merged before saving) but not in the live stream; a secret transformed (base64, reversed…) is not
recognised.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MASK",
    "RedactingFilter",
    "add_secrets",
    "credential_name",
    "protect_log_handlers",
    "redact",
    "redact_json",
    "secret_env_values",
    "secret_header_values",
    "secrets_of_url",
    "secrets_version",
    "token_shaped",
]

MASK = "***"
MIN_SECRET_LENGTH = 6  # shorter values would scrub ordinary words out of every text

# Header names whose values are public protocol details, not credentials: redacting them everywhere (a date such as
# anthropic-version's "2023-06-01") would damage ordinary text for nothing.
_PUBLIC_HEADERS = frozenset({
    "accept", "accept-encoding", "accept-language", "content-type", "user-agent", "anthropic-version",
    "anthropic-beta", "openai-beta", "http-referer", "referer", "x-title", "openai-organization", "openai-project",
    "x-stainless-lang",
})

_CREDENTIAL_NAME = re.compile(r"(?i)(key|token|secret|passw(or)?d|pwd|credential|auth|cookie|session|signature)")

_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_SNAKE_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def _assignment(match: re.Match[str]) -> str:
    """A credential-named assignment with its value masked — unless the value reads as code rather than a secret:
    no letter, or no digit and shorter than 20 characters (``api_key: string``, ``password=None``), a dotted name
    (``os.environ``), a snake_case name (``token=token_v2``) or a URL (its secrets are the URL patterns' job)."""
    value = match.group(3)
    letters = any(c.isalpha() for c in value)
    if (not letters or (not any(c.isdigit() for c in value) and len(value) < 20) or _DOTTED_NAME.fullmatch(value)
            or _SNAKE_NAME.fullmatch(value) or "://" in value):
        return match.group(0)
    return match.group(1) + match.group(2) + MASK


# (pattern, replacement, fixed parts one of which any match contains): the substring checks are C-speed and rule out
# most text (a chunk of prose) before any regex runs — redaction sits on the streaming hot path.
_PATTERNS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str], tuple[str, ...]]] = [
    # userinfo of any URL: the user part may itself be a token (https://TOKEN@github.com)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#\"'<>@]*(?:@[^\s/?#\"'<>@]*)*@"), r"\1" + MASK + "@", ("@",)),
    # credential-like query parameters: ?token=…, &api_key=…, ;sig=…
    (re.compile(r"(?i)([?&;][\w.\-]*(?:token|key|secret|passw(?:or)?d|pwd|auth|sig|signature|credential|session)"
                r"[\w.\-]*=)[^&;#\s\"'<>()\[\],]+"), r"\1" + MASK, ("=",)),
    # header lines and JSON-ish fields carrying credentials
    (re.compile(r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key)([\"']?\s*[:=]\s*[\"']?)"
                r"((?:(?:basic|bearer|token)\s+)?)[^\s\"',;}]{4,}"), r"\1\2\3" + MASK,
     ("uthoriz", "UTHORIZ", "pi-key", "pi-Key", "PI-KEY")),
    # Bearer tokens anywhere (a digit is required so English prose is left alone)
    (re.compile(r"\b([Bb]earer\s+)(?=[A-Za-z._~+/\-]*\d)[A-Za-z0-9._~+/\-]{8,}=*"), r"\1" + MASK, ("earer",)),
    # well-known key shapes
    (re.compile(r"\b(sk-(?:ant-(?:api\d\d-|admin\d\d-)?|proj-|or-(?:v1-)?|svcacct-)?|gsk_|xai-|gh[pousr]_|"
                r"github_pat_|hf_|glpat-|xox[abposr]-|AIza)(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{16,}"), r"\1" + MASK,
     ("sk-", "_", "xai-", "glpat-", "xox", "AIza")),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), r"\1" + MASK, ("AKIA", "ASIA")),
    # JSON Web Tokens: header.payload.signature, the first two base64url JSON objects ("eyJ" is '{"')
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"), MASK, ("eyJ",)),
    # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED…), up to their END line or, cut short, to the end of the text
    (re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL),
     r"-----BEGIN \1PRIVATE KEY-----\n" + MASK + r"\n-----END \1PRIVATE KEY-----", ("PRIVATE KEY",)),
    # netrc entries: "machine h login u password p" on one line, or a "password p" line of its own
    (re.compile(r"(?i)(\b(?:machine\s+\S+|default)\s+(?:login\s+\S+\s+)?(?:account\s+\S+\s+)?password\s+)\S+"),
     r"\1" + MASK, ("assword", "ASSWORD")),
    (re.compile(r"(?im)^([ \t]*password[ \t]+)\S+[ \t]*$"), r"\1" + MASK, ("assword", "ASSWORD")),
    # values assigned to credential-named variables and keys in .env files, shell, YAML, JSON and code:
    # FOO_API_KEY=…, export GITHUB_TOKEN="…", "password": "…", clientSecret: … (see _assignment for what is kept)
    # (the match starts at the credential word, whatever comes before it in the name, and every repetition is
    # bounded: a pattern starting at each word boundary of "a-a-a-…" and scanning on took minutes for 60 KB)
    (re.compile(r"(?i)((?:api[_\-]?key|access[_\-]?key|secret|token(?!s|iz)|passw(?:or)?d|pwd)[\w.\-]{0,64}"
                r"[\"']?[ \t]{0,8}[:=][ \t]{0,8})([\"']?)([^\s\"'`,;(){}\[\]<>$&*]{6,512})(?=\2)"
                r"(?=$|[\s\"',;&)}\]])"),
     _assignment, ("key", "KEY", "Key", "ecret", "ECRET", "oken", "OKEN", "assw", "ASSW", "assW", "pwd", "PWD")),
]


# Any fixed part of any pattern: one search rules out every pattern for a short text (a streamed chunk is a few
# characters), where it beats the substring checks below; past about 16 characters those are cheaper.
_ANY_PART = re.compile("|".join(re.escape(part) for part in sorted({p for _, _, parts in _PATTERNS for p in parts},
                                                                     key=len, reverse=True)))
_SHORT_TEXT = 16

_lock = threading.Lock()
_secrets: frozenset[str] = frozenset()
_ordered: tuple[str, ...] = ()  # the same values, longest first (a value containing another is replaced whole)

# Memo of ``redact(text)`` for short texts (no *extra* values): the same strings pass again and again on the
# streaming hot path — JSON keys, method names, roles, chat ids, each a full scan per message otherwise. It belongs
# to one registry state: :func:`add_secrets` starts a new dict (a stale answer can never be given once a secret is
# added), and a computation that began before the change stores into the dict it read, which nobody asks any more.
# Bounded: emptied when full. Plain dict operations are atomic, so threads share it safely.
_MEMO_MAX_TEXT = 128
_MEMO_MAX_ENTRIES = 8192
_memo: dict[str, str] = {}
# Counts the registry states (add_secrets bumps it after the new state is in place), for caches outside this module.
_version = 0


def credential_name(name: str) -> bool:
    """Whether an environment variable or parameter *name* says it holds a credential (``GITHUB_TOKEN``)."""
    return bool(_CREDENTIAL_NAME.search(name))


def add_secrets(values: Iterable[str | None]) -> None:
    """Register secret values (and, for ``Bearer x`` / ``Basic x``, the token alone). Thread-safe; idempotent."""
    global _secrets, _ordered, _memo, _version
    found: set[str] = set()
    for value in values:
        if not isinstance(value, str):
            continue
        value = value.strip()
        for candidate in (value, *value.split()[1:2], unquote(value)):
            if len(candidate) >= MIN_SECRET_LENGTH:
                found.add(candidate)
    with _lock:
        if found <= _secrets:
            return
        merged = _secrets | found
        _ordered = tuple(sorted(merged, key=len, reverse=True))
        _secrets = frozenset(merged)
        _memo = {}
        _version += 1


def secrets_version() -> int:
    """A number that changes whenever a secret is registered: what :func:`redact` made of a text may be kept (a door's
    message template) while it stays the same. Read it before redacting: a secret added meanwhile then only makes
    the kept answer count for the state before it, never the other way round."""
    return _version


def secrets_of_url(url: str | None) -> list[str]:
    """The secret parts of a URL: userinfo (user and password) and the values of credential-like query parameters."""
    if not url or not isinstance(url, str):
        return []
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return []
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        found.append(userinfo)
        found += userinfo.split(":", 1)
    for pair in re.split(r"[&;]", parts.query):
        name, _, value = pair.partition("=")
        if value and credential_name(name):
            found.append(value)
    return [v for v in found if v]


def token_shaped(value: str) -> bool:
    """An opaque value that looks like a token (long, no spaces or path separators, letters and digits mixed)."""
    return (len(value) >= 16 and not any(c.isspace() for c in value) and "/" not in value
            and any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def secret_env_values(env: Mapping[str, str] | None) -> list[str]:
    """Values of an environment given to a tool server that are secrets: under a credential-like name
    (``GITHUB_TOKEN``), or token-shaped under any name (``GH=ghp_…``) — but not ``NODE_ENV=production``."""
    return [v for k, v in (env or {}).items() if isinstance(v, str) and (credential_name(k) or token_shaped(v))]


def secret_header_values(headers: Mapping[str, str] | None) -> list[str]:
    """Configured header values that may be credentials (all but a few public protocol headers)."""
    return [v for k, v in (headers or {}).items() if isinstance(v, str) and k.lower() not in _PUBLIC_HEADERS]


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """*text* with every known secret (plus *extra* values) and every secret-shaped fragment replaced by ``***``."""
    if not isinstance(text, str) or len(text) < MIN_SECRET_LENGTH:  # too short to hold anything we'd replace
        return text
    if not extra and len(text) <= _MEMO_MAX_TEXT:
        # one registry state: add_secrets assigns _ordered before _memo, so a new memo is never read with old values
        memo, ordered = _memo, _ordered
        done = memo.get(text)
        if done is None:
            done = _redact(text, ordered, ())
            if len(memo) >= _MEMO_MAX_ENTRIES:
                memo.clear()
            memo[text] = done
        return done
    return _redact(text, _ordered, extra)


def _redact(text: str, ordered: tuple[str, ...], extra: Iterable[str]) -> str:
    for value in ordered:  # substring search is C-speed; a regex alternation tries every value at every position
        if value in text:
            text = text.replace(value, MASK)
    for value in extra:
        if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH and value in text:
            text = text.replace(value, MASK)
    if len(text) <= _SHORT_TEXT and _ANY_PART.search(text) is None:
        return text
    for pattern, replacement, needs in _PATTERNS:
        for part in needs:
            if part in text:
                text = pattern.sub(replacement, text)
                break
    return text


def redact_json(value: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings…) with every string — keys too — redacted."""
    extra = tuple(extra)
    return _walk(value, extra) if extra else _walk_plain(value)


_SCALARS = frozenset({int, float, bool, type(None)})


def _walk_plain(value: Any) -> Any:
    """:func:`_walk` without extra values, for the doors' every message: strings too short to hold a secret are
    kept without a call, the others answered from the memo where it knows them (what :func:`redact` would do)."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is str and len(k) >= MIN_SECRET_LENGTH:
                k = _memo.get(k) or redact(k)  # (the memo of now: add_secrets may replace it any time)
            t = type(v)
            if t is str:
                if len(v) >= MIN_SECRET_LENGTH:
                    v = _memo.get(v) or redact(v)
            elif t is dict or t is list:
                v = _walk_plain(v)
            elif t not in _SCALARS:
                v = _walk(v, ())
            out[k] = v
        return out
    if kind is list:
        return [_walk_plain(v) for v in value]
    return _walk(value, ())


def _walk(value: Any, extra: tuple[str, ...]) -> Any:
    # exact types first, strings inline: this runs on every message a door sends (see _memo)
    kind = type(value)
    if kind is str:
        return redact(value, extra)
    if kind is dict or (kind not in _SCALARS and isinstance(value, Mapping)):
        return {(redact(k, extra) if type(k) is str else k): (redact(v, extra) if type(v) is str else _walk(v, extra))
                for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_walk(v, extra) for v in value]
    if kind in _SCALARS:
        return value
    if isinstance(value, str):
        return redact(value, extra)
    return value


class RedactingFilter(logging.Filter):
    """A handler filter: the formatted message, its traceback and stack are redacted before anything is written.

    Installed on handlers (not loggers), so it sees records from every logger of the process, libraries included.
    """

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: show the raw parts rather than lose the record
            message = f"{record.msg!r} % {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def protect_log_handlers(*loggers: logging.Logger) -> None:
    """Put a :class:`RedactingFilter` on the handlers our records can reach when someone else owns logging (Jupyter
    server, an IPython kernel): the root's, those of *loggers*, and the last-resort handler used when there are none.
    Idempotent."""
    handlers = [*logging.getLogger().handlers, *(h for lg in loggers for h in getattr(lg, "handlers", []))]
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
