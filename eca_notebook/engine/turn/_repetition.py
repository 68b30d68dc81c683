"""Spotting a degenerate reply while it streams: the same short span repeated over and over.

Why: a small model can fall into a loop (``1.1.2.1.1.1.1…``, the same line again and again) and stream it until the
token cap — on the embedded model that was 46 s of garbage. Stopping it early and saying so is kinder than the cap.

How, cheaply enough for the hot path: every :data:`CHECK_EVERY` new characters, take the last :data:`PROBE` characters
of the reply, find where they occurred before (``str.rfind`` in the recent window — a C loop), and verify that the
tail is periodic with that distance over at least :data:`MIN_RUN` characters and :data:`MIN_REPEATS` periods. Only the
few nearest occurrences are tried, so each check is a handful of C-speed string operations on a bounded window.

The thresholds are set so real answers don't trip it: a span of at most :data:`SHORT_PERIOD` characters repeated for
at least 400 characters *and* at least 6 times (a markdown table rule or a long ``====`` line is shorter than that); a
longer span, up to :data:`MAX_PERIOD` (a sentence or a paragraph), three times in a row, character for character —
which prose and code never do, while the embedded model did it for 4,000 characters (a newcomer's first question,
"what does this notebook do?", looped over a 190-character paragraph until the token cap).

A loop is not always exact: asked the same question in the newcomer's walk, the model streamed ``edition of the
"pytest-1" edition of the "pytest-2" edition of the "pytest-1" …`` to the cap, a span that never repeats character
for character. So the guard also counts words: when the words of the last :data:`WORD_CHARS` characters (about 80
of prose) hold fewer than :data:`MIN_DISTINCT` distinct three-word sequences for each one (that loop: about 0.1;
this repository's own code, prose, notebooks and specs: 0.5 at the least, over every 80-word window), the reply
has become a loop. It looks only once the exact check has had as many characters, so an exact loop is still cut
by the exact check, keeping one whole copy.
"""

from __future__ import annotations

import re

__all__ = ["RepetitionGuard"]

SHORT_PERIOD = 120  # longest span that must repeat MIN_REPEATS times (a repeated code line fits)
MAX_PERIOD = 480  # longest repeating span considered (a looping paragraph)
MIN_RUN = 400  # characters the repetition must cover
MIN_REPEATS = 6  # ... and at least this many times a short span
LONG_REPEATS = 3  # ... or this many times a longer one
PROBE = 24  # characters from the end looked up earlier in the window
CHECK_EVERY = 32  # new characters between two checks
# how much of the reply's end is kept
WINDOW = max(SHORT_PERIOD * MIN_REPEATS, MAX_PERIOD * LONG_REPEATS) + MIN_RUN + PROBE
_CANDIDATES = 8  # nearest earlier occurrences of the probe tried as the period (a paragraph repeats its words)
WORD_CHARS = MIN_RUN + 2 * CHECK_EVERY  # the end of the reply whose words are counted (about 80 words of prose)
MIN_WORDS = 40  # ... when it has this many (long tokens, e.g. a base64 blob, have too few to judge)
MIN_DISTINCT = 0.3  # distinct three-word sequences per sequence below which those words are a loop


class RepetitionGuard:
    """Feed it the reply's text deltas; :meth:`feed` returns True once the reply has become a loop.

    After that, :attr:`span` is the repeating unit and :attr:`keep` how many characters of the text fed so far are
    worth keeping (everything before the loop plus one copy of the span).
    """

    def __init__(self) -> None:
        self._tail = ""
        self._total = 0
        self._since_check = 0
        self.span: str | None = None
        self.keep: int | None = None

    def feed(self, text: str) -> bool:
        if self.span is not None:
            return True
        self._tail = (self._tail + text)[-WINDOW:]
        self._total += len(text)
        self._since_check += len(text)
        if self._since_check < CHECK_EVERY or len(self._tail) < MIN_RUN:
            return False
        self._since_check = 0
        return self._check()

    def _check(self) -> bool:
        tail = self._tail
        n = len(tail)
        probe = tail[n - PROBE:]
        lowest = max(0, n - PROBE - MAX_PERIOD)
        end = n - 1  # an occurrence must start before the probe itself: at <= n - PROBE - 1
        for _ in range(_CANDIDATES):
            at = tail.rfind(probe, lowest, end)
            if at < 0:
                return False
            period = n - PROBE - at
            need = max(MIN_RUN, (MIN_REPEATS if period <= SHORT_PERIOD else LONG_REPEATS) * period)
            if need <= n and tail[n - need + period:] == tail[n - need:n - period]:
                run = self._run_length(period)
                self.span = tail[n - period:]
                self.keep = self._total - run + period
                return True
            end = at - 1 + PROBE  # the next candidate starts strictly earlier
        return self._check_words()

    def _check_words(self) -> bool:
        """The inexact loop: few distinct three-word sequences among the words of the last :data:`WORD_CHARS`
        characters (after the exact check had as many to look at: a loop that does repeat exactly is left to it,
        which keeps one whole copy). What is kept ends where the commonest sequence first occurs in the window."""
        if len(self._tail) < WORD_CHARS:
            return False
        words = self._tail[-WORD_CHARS:].split()[1:]  # the first may be cut: never counted
        if len(words) < MIN_WORDS:
            return False
        grams = [" ".join(words[i:i + 3]) for i in range(len(words) - 2)]
        if len(set(grams)) >= MIN_DISTINCT * len(grams):
            return False
        span = max(set(grams), key=grams.count)
        first = re.search(r"\s+".join(map(re.escape, span.split())), self._tail)
        assert first is not None  # the sequence is in the window it was read from
        self.span = span
        self.keep = self._total - (len(self._tail) - first.start())
        return True

    def _run_length(self, period: int) -> int:
        """How far back (in the window) the text stays periodic with ``period``."""
        tail = self._tail
        i = len(tail) - period - 1
        while i >= 0 and tail[i] == tail[i + period]:
            i -= 1
        return len(tail) - (i + 1)
