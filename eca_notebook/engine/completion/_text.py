"""The text side of inline completion: where the cursor is, what the model is shown, and what is kept of its answer.

Pure functions, no I/O, so every rule is unit-tested on strings (``tests/engine/completion/test_inline_text.py``):

* :func:`locate` — the cursor in the document from the wire's **1-based** line and character, clamped to the text.
* :func:`prefix_window` / :func:`suffix_window` — the budgets: at most so many lines *and* characters before and
  after the cursor, cut at whole lines (a model shown half a line guesses its start).
* :class:`Trim` — what is kept of the model's text, applied to the text so far after every streamed piece so the
  request stops as soon as the suggestion is complete: the block around the cursor ends at a **blank line** or at a
  line **dedented below the cursor's line**; mid-line (real code right of the cursor) only the rest of the line is
  completed; markdown fences a chat model wraps its answer in are dropped; and the suggestion never **repeats the
  suffix** — neither the next lines already below the cursor nor the closing brackets/quotes right of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MAX_LINES",
    "TAG",
    "Cursor",
    "Trim",
    "heal",
    "locate",
    "prefix_window",
    "split_trailing_space",
    "strip_fences",
    "suffix_window",
]

TAG = "<ECA_TAG>"  # where the cursor is, in a chat prompt (the reference server's marker)
MAX_LINES = 16  # the longest suggestion kept (the prompt asks for 1–5 lines; a runaway model is cut here)
_CLOSERS = set(")]}'\"`;:,. ")
_PAIRS = {")": "(", "]": "[", "}": "{"}
_FENCE_LINE = re.compile(r"^\s*```[^\n`]*$")


@dataclass(frozen=True)
class Cursor:
    """The document split at the cursor."""

    prefix: str  # everything before the cursor
    suffix: str  # everything after it
    line: int  # 1-based, clamped to the document
    character: int  # 1-based, clamped to the line

    @property
    def line_prefix(self) -> str:
        """The cursor line's text left of the cursor."""
        return self.prefix[self.prefix.rfind("\n") + 1:]

    @property
    def line_suffix(self) -> str:
        """The cursor line's text right of the cursor."""
        end = self.suffix.find("\n")
        return self.suffix if end < 0 else self.suffix[:end]

    @property
    def indent(self) -> int:
        """The cursor line's indentation: the block a suggestion must not leave."""
        line = self.line_prefix
        return len(line) - len(line.lstrip(" \t"))

    @property
    def mid_line(self) -> bool:
        """Real code right of the cursor (not just closing brackets, quotes or punctuation): complete the line only."""
        return any(ch not in _CLOSERS for ch in self.line_suffix.rstrip("\r"))


def locate(doc: str, line: int, character: int) -> Cursor:
    """The cursor at 1-based ``line`` / ``character`` (as the reference clients send them); out-of-range values are
    clamped to the document (a client whose text is a keystroke behind must not fail the request)."""
    lines = doc.split("\n")
    index = min(max(line, 1), len(lines)) - 1
    column = min(max(character, 1) - 1, len(lines[index]))
    offset = sum(len(text) + 1 for text in lines[:index]) + column
    return Cursor(doc[:offset], doc[offset:], index + 1, column + 1)


def prefix_window(prefix: str, max_chars: int, max_lines: int) -> str:
    """The end of ``prefix``: the cursor's line and at most ``max_lines`` lines before it, at most ``max_chars``
    characters, starting at a line."""
    if max_chars <= 0 or max_lines <= 0:
        return prefix[prefix.rfind("\n") + 1:] if max_chars > 0 else ""
    start = len(prefix)
    for _ in range(max_lines + 1):
        newline = prefix.rfind("\n", 0, start)
        if newline < 0:
            start = 0
            break
        start = newline
    window = prefix[start:].removeprefix("\n") if start else prefix
    if len(window) > max_chars:
        window = window[-max_chars:]
        newline = window.find("\n")
        if 0 <= newline < len(window) - 1:
            window = window[newline + 1:]
    return window


def suffix_window(suffix: str, max_chars: int, max_lines: int) -> str:
    """The start of ``suffix``: at most ``max_lines`` lines after the cursor's and ``max_chars`` characters, ending
    at a line's end."""
    if max_chars <= 0:
        return ""
    end = 0
    for _ in range(max_lines + 1):  # the rest of the cursor's line, then max_lines more
        newline = suffix.find("\n", end)
        if newline < 0:
            end = len(suffix)
            break
        end = newline + 1
    window = suffix[:end]
    if len(window) > max_chars:
        window = window[:max_chars]
        newline = window.rfind("\n")
        if newline > 0:
            window = window[:newline + 1]
    return window


def strip_fences(text: str) -> tuple[str, bool]:
    """The code inside a markdown fence a chat model wrapped its answer in (the first fenced block), or the text
    itself; and whether a fence was removed. Indentation inside the block is kept, only the fence lines go."""
    stripped = text.strip()
    if "```" not in stripped:
        if len(stripped) > 1 and stripped.startswith("`") and stripped.endswith("`") and "`" not in stripped[1:-1] \
                and "\n" not in stripped:
            return stripped[1:-1], True
        return text, False
    match = re.search(r"```[^\n`]*\n(.*?)(?:\n[ \t]*```|\Z)", text, re.DOTALL)
    if match is None:
        return text, False
    return match.group(1), True


def split_trailing_space(prefix: str) -> tuple[str, str]:
    """(what a raw completion model is shown, the whitespace held back from its end).

    A model's tokens carry the space *before* a word (``" return"``), so a prompt ending in a space reads like a
    word cut in half and the model answers badly — measured on the embedded model: ``"def f(n):\n    "`` gave
    ``" fibonacci(n) = …"``, ``"def f(n):\n   "`` (one space held back) gave ``" if n == 0:"``. So after code the
    trailing spaces are held back; on an indentation-only line all but the last space are shown (the model then
    writes the indentation's last space with its first word). :func:`heal` drops the held-back part from the
    answer."""
    stripped = prefix.rstrip(" \t")
    trailing = prefix[len(stripped):]
    if trailing and (not stripped or stripped.endswith("\n")):  # an indentation-only line
        if not trailing.endswith(" "):
            return prefix, ""
        return prefix[:-1], " "
    return stripped, trailing


def heal(text: str, trailing: str) -> tuple[str, bool]:
    """The model's text with the ``trailing`` whitespace the prompt left out removed from its start; and whether
    that could be decided yet (False while the text so far is only a part of it)."""
    if not trailing:
        return text, True
    if text.startswith(trailing):
        return text[len(trailing):], True
    if trailing.startswith(text):
        return "", False  # still reading the whitespace
    # the model wrote less (or other) whitespace: drop what it did write of it
    common = 0
    while common < min(len(text), len(trailing)) and text[common] == trailing[common]:
        common += 1
    return text[common:], True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _balance(text: str) -> dict[str, int]:
    """Closers minus openers per bracket kind, and quote parity (naive: strings are not parsed)."""
    counts = {")": 0, "]": 0, "}": 0, '"': 0, "'": 0, "`": 0}
    for ch in text:
        if ch in _PAIRS:
            counts[ch] += 1
        elif ch in "([{":
            counts[{v: k for k, v in _PAIRS.items()}[ch]] -= 1
        elif ch in "\"'`":
            counts[ch] ^= 1
    return counts


class Trim:
    """What is kept of a model's text for one cursor; :meth:`apply` on the text so far says whether it is complete.

    ``chat``: the text came from a chat model (may be fenced, may repeat the line left of the cursor or the tag).
    ``trailing``: whitespace the prompt left out at its end, dropped from the text's start (:func:`heal`).
    """

    def __init__(self, cursor: Cursor, suffix: str, *, chat: bool = False, trailing: str = "") -> None:
        self.cursor = cursor
        self.chat = chat
        self.trailing = trailing  # whitespace left out of the prompt's end (see :func:`split_trailing_space`)
        self.single_line = cursor.mid_line
        after = suffix.split("\n")[1:]
        self._next_line = next((line.strip() for line in after if line.strip()), "")

    def apply(self, text: str, *, final: bool = False) -> tuple[str, bool]:
        """(the suggestion, whether it is complete). Before ``final`` an unfinished last line is held back unless
        it already shows its indentation."""
        text, decided = heal(text, self.trailing)
        if not decided:
            return "", False
        fenced = False
        if self.chat:
            text, fenced = self._unfence(text, final)
            text = text.replace(TAG, "")
            text = self._drop_echo(text)
            final = final or fenced
        lines = text.split("\n")
        kept = [lines[0]]
        ended = fenced
        if self.single_line and len(lines) > 1:
            ended = True
        else:
            for number, line in enumerate(lines[1:], start=1):
                partial = number == len(lines) - 1 and not final
                if not line.strip():
                    if partial:
                        break  # a blank line in the making, or an indentation not yet written
                    ended = True  # a blank line ends the block
                    break
                if _indent(line) < self.cursor.indent or _FENCE_LINE.match(line):
                    ended = True  # dedented below the cursor's block (or a markdown fence: the code is over)
                    break
                if self._next_line and line.strip() == self._next_line and len(self._next_line) > 1:
                    ended = True  # the code already below the cursor: never repeated
                    break
                if number >= MAX_LINES:
                    ended = True
                    break
                kept.append(line)
        suggestion = "\n".join(kept)
        if ended or final:
            suggestion = self._without_suffix_overlap(suggestion.rstrip())
        return suggestion, ended

    # -- chat answers ------------------------------------------------------------------------------------------

    @staticmethod
    def _unfence(text: str, final: bool) -> tuple[str, bool]:
        """Drop an opening fence line (once complete) and end at the closing one."""
        head = text.lstrip()
        if not head.startswith("`"):
            if final:
                return strip_fences(text)[0], True
            return text, False
        if not head.startswith("```"):
            return (strip_fences(text)[0], True) if final else ("", False)
        newline = head.find("\n")
        if newline < 0:
            return "", final
        body = head[newline + 1:]
        lines = body.split("\n")
        for number, line in enumerate(lines):
            if _FENCE_LINE.match(line) and (number < len(lines) - 1 or final or line.strip() == "```"):
                return "\n".join(lines[:number]), True
        return body, final

    def _drop_echo(self, text: str) -> str:
        """A chat model sometimes answers with the whole line instead of its rest: drop what is already typed."""
        line = self.cursor.line_prefix
        typed = line.strip()
        if len(typed) >= 3:
            head = text.lstrip(" \t")
            if head.startswith(typed):
                rest = head[len(typed):]
                # "return " typed, "return x" answered: "x", not " x"
                return rest.lstrip(" ") if line != line.rstrip(" \t") else rest
        return text

    # -- the suffix ----------------------------------------------------------------------------------------------

    def _without_suffix_overlap(self, suggestion: str) -> str:
        """Drop closing brackets/quotes at the end of the suggestion that the text right of the cursor already has
        — only when the suggestion would otherwise close more than it opened (``print(|)`` + ``"hi")`` keeps one
        parenthesis; ``print(|)`` + ``len(x)`` keeps both)."""
        right = self.cursor.line_suffix.lstrip(" ")
        if not right or not suggestion:
            return suggestion
        balance = _balance(suggestion)
        for size in range(min(len(right), len(suggestion)), 0, -1):
            tail = right[:size]
            if not suggestion.endswith(tail) or any(ch not in _CLOSERS for ch in tail):
                continue
            extra = [ch for ch in tail if ch in balance and (balance[ch] > 0)]
            if extra and len(extra) == sum(1 for ch in tail if ch in balance):
                return suggestion[:-size]
        return suggestion
