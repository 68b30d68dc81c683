"""Text for the full-text index: identifier splitting, chunking, FTS5 query building and snippets.

Why a *split form* is indexed beside the text: SQLite's ``unicode61`` tokenizer splits ``snake_case`` at the
underscore but keeps ``parseConfigFile`` as one token, so a search for ``config`` would miss it. Each chunk also gets
a column with every camelCase/PascalCase/digit-boundary identifier broken into its lowercase parts (``parse config
file``); a query term is looked for as itself *or* as the phrase of its parts, so ``parse_config``, ``parseConfig``
and ``parse config`` all find both spellings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Chunk", "chunk_lines", "fts_query", "identifier_parts", "snippet", "split_form", "terms"]

#: Lines per chunk and the step between chunk starts: chunks overlap by ``CHUNK_LINES - CHUNK_STEP`` lines, so a
#: match near a boundary is still seen with some context.
CHUNK_LINES = 40
CHUNK_STEP = 30
MAX_CHUNK_CHARS = 16_000  # a chunk of minified code is cut: its first part is plenty for ranking

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+")
# The identifiers of _IDENT that may have more than one part: something other than a lowercase letter after the
# first character. The rest — most words of most code — have one part, and the C scan skips them. A match cannot
# start inside an identifier that failed from its start (all its later characters are lowercase letters), and the
# look-behind spares the tries there.
_MAYBE_PARTS = re.compile(r"(?<![A-Za-z_$])[A-Za-z_$][a-z]*[A-Z0-9_$][A-Za-z0-9_$]*")
_WORD = re.compile(r"\w+", re.UNICODE)
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A window of a file (or of a notebook cell): 1-based inclusive line range."""

    start_line: int
    end_line: int
    text: str
    cell_index: int | None = None
    cell_id: str | None = None


def identifier_parts(word: str) -> list[str]:
    """``parseHTTPResponse2`` → ``[parse, http, response, 2]``; ``snake_case`` → ``[snake, case]``."""
    return [p.lower() for p in _PARTS.findall(word)]


# Identifiers repeat across a workspace (the same names in thousands of files): splitting each distinct one once
# took the split form from a fifth of a 100,000-file build to a few percent. Bounded: cleared when full.
_SPLIT_CACHE: dict[str, str] = {}
_SPLIT_CACHE_MAX = 500_000


def _split_word(word: str) -> str:
    """The parts of one identifier for the split form ("" when ``unicode61`` already splits it as well)."""
    if "_" in word or "$" in word:
        pieces = [piece for piece in re.split(r"[_$]+", word) if piece]
        if any(not piece.islower() and not piece.isdigit() for piece in pieces):
            return " ".join(p for piece in pieces for p in identifier_parts(piece))
        return ""
    parts = identifier_parts(word)
    return " ".join(parts) if len(parts) > 1 else ""


def split_form(text: str) -> str:
    """The parts of every identifier of `text` that has more than one (what ``unicode61`` would not split itself)."""
    out: list[str] = []
    cache = _SPLIT_CACHE
    for word in set(_MAYBE_PARTS.findall(text)):
        split = cache.get(word)
        if split is None:
            split = _split_word(word)
            if len(cache) >= _SPLIT_CACHE_MAX:
                cache.clear()
            cache[word] = split
        if split:
            out.append(split)
    return " ".join(out)


def chunk_lines(text: str, *, cell_index: int | None = None, cell_id: str | None = None) -> Iterator[Chunk]:
    """Windows of ``CHUNK_LINES`` lines every ``CHUNK_STEP`` lines (one chunk for a short text)."""
    lines = text.splitlines()
    if not lines:
        return
    start = 0
    while True:
        end = min(start + CHUNK_LINES, len(lines))
        body = "\n".join(lines[start:end])
        if len(body) > MAX_CHUNK_CHARS:
            body = body[:MAX_CHUNK_CHARS]
        yield Chunk(start + 1, end, body, cell_index, cell_id)
        if end >= len(lines):
            return
        start += CHUNK_STEP


def terms(query: str) -> list[str]:
    """The words of a query (``\\w+``), in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query):
        seen.setdefault(word, None)
    return list(seen)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _term(word: str, *, prefix: bool) -> str:
    """One query word as an FTS5 expression: itself (a prefix when asked) or the phrase of its parts."""
    parts = identifier_parts(word) if not word.isdigit() else [word]
    alternatives = [_quote(word.lower()) + ("*" if prefix else "")]
    if len(parts) > 1:
        alternatives.append(_quote(" ".join(parts)))
    return alternatives[0] if len(alternatives) == 1 else "(" + " OR ".join(alternatives) + ")"


def fts_query(query: str, *, any_term: bool = False) -> tuple[str | None, str | None]:
    """(FTS5 MATCH expression, exact phrase to check) for a user query.

    ``"a phrase"`` in double quotes is an exact phrase (the chunk must contain it as written, case-insensitively);
    otherwise every word must appear (``any_term``: at least one, for the candidates of a semantic search), the last
    one as a prefix, so a query typed as far as ``parseConf`` still finds ``parseConfig``."""
    stripped = query.strip()
    if len(stripped) >= 2 and stripped.startswith('"') and stripped.endswith('"'):
        phrase = stripped[1:-1]
        words = terms(phrase)
        if not words:
            return None, None
        return _quote(" ".join(w.lower() for w in words)), phrase
    words = terms(stripped)
    if not words:
        return None, None
    exprs = [_term(w, prefix=i == len(words) - 1 and not any_term and len(w) >= 3) for i, w in enumerate(words)]
    return (" OR " if any_term else " AND ").join(exprs), None


def snippet(text: str, start_line: int, query: str, *, max_lines: int = 3, width: int = 160) -> list[tuple[int, str]]:
    """The chunk's lines that best show why it matched: (line number, text), at most `max_lines`; lines naming more
    of the query's words first, then in order."""
    words = [w.lower() for w in terms(query.strip('"')) if len(w) > 2 or w.isdigit()]
    parts = {p for w in words for p in identifier_parts(w)} | set(words)
    phrase = query.strip().strip('"').lower() if query.strip().startswith('"') else None
    scored: list[tuple[int, int, str]] = []
    for offset, line in enumerate(text.split("\n")):
        low = line.lower()
        if phrase is not None:
            score = 100 if phrase in low else 0
        else:
            score = sum(3 for w in words if w in low) + sum(1 for p in parts if p in low)
        if score:
            scored.append((score, offset, line))
    best = sorted(scored, key=lambda s: (-s[0], s[1]))[:max_lines]
    out = []
    for _score, offset, line in sorted(best, key=lambda s: s[1]):
        shown = line.strip()
        if len(shown) > width:
            shown = shown[: width - 1] + "…"
        out.append((start_line + offset, shown))
    return out
