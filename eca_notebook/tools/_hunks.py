"""A file change split into hunks, so the user can take some of them and leave the rest.

The hunks are exactly the ``@@`` blocks of the unified diff the user is shown (:func:`.unified_diff`): both come from
the same :class:`difflib.SequenceMatcher` grouping, so hunk ``h2`` is the second block on screen. Ids are positional
(``h1``, ``h2``…) and stable for the life of one tool call — the diff is computed once, in ``prepare``, and the
approval names the ids it saw.

:func:`apply_hunks` rebuilds the file from the *old* text, taking the new lines of the chosen hunks only; the
unchosen ones keep the old lines. Hunks never overlap in the old text (context lines are shared at most), so the
result is well defined whatever subset is chosen.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from ._output import split_lines

__all__ = ["Hunk", "apply_hunks", "describe", "diff_hunks"]

_CONTEXT = 3  # lines of context around each hunk, as in the diff shown (unified_diff's default)


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` block: where it sits in the old and new file (1-based starts, as in the header) and its text."""

    id: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    text: str  # the header line and the body, as in the unified diff
    lines_added: int
    lines_removed: int
    # the changed ranges (SequenceMatcher opcodes without the context ``equal`` ones), to rebuild a partial file
    changes: tuple[tuple[int, int, int, int], ...]

    @property
    def header(self) -> str:
        return self.text.split("\n", 1)[0]


def _range(start: int, length: int) -> str:
    """The ``start,length`` of a hunk header, spelled as difflib (and git) spell it."""
    beginning = start + 1
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1  # an empty range names the line before it
    return f"{beginning},{length}"


def _line(prefix: str, line: str) -> str:
    """A diff body line as :func:`.unified_diff` writes it (a missing final newline marked the way git marks it)."""
    return prefix + line if line.endswith("\n") else f"{prefix}{line}\n\\ No newline at end of file\n"


def diff_hunks(old: str, new: str, context: int = _CONTEXT) -> list[Hunk]:
    """The hunks of the change from *old* to *new* (none when they are equal)."""
    a, b = split_lines(old), split_lines(new)
    hunks: list[Hunk] = []
    for n, group in enumerate(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(context), start=1):
        first, last = group[0], group[-1]
        i1, i2, j1, j2 = first[1], last[2], first[3], last[4]
        body: list[str] = [f"@@ -{_range(i1, i2 - i1)} +{_range(j1, j2 - j1)} @@\n"]
        added = removed = 0
        changes: list[tuple[int, int, int, int]] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                body.extend(_line(" ", line) for line in a[a1:a2])
                continue
            changes.append((a1, a2, b1, b2))
            body.extend(_line("-", line) for line in a[a1:a2])
            body.extend(_line("+", line) for line in b[b1:b2])
            removed += a2 - a1
            added += b2 - b1
        hunks.append(Hunk(id=f"h{n}", old_start=i1 + 1 if i2 > i1 else i1, old_lines=i2 - i1,
                          new_start=j1 + 1 if j2 > j1 else j1, new_lines=j2 - j1, text="".join(body),
                          lines_added=added, lines_removed=removed, changes=tuple(changes)))
    return hunks


def apply_hunks(old: str, new: str, hunks: Iterable[Hunk], chosen: Iterable[str]) -> str:
    """*old* with the changes of the *chosen* hunk ids applied (all of *hunks* came from ``diff_hunks(old, new)``)."""
    keep = set(chosen)
    a, b = split_lines(old), split_lines(new)
    out: list[str] = []
    at = 0
    for change in sorted(c for h in hunks if h.id in keep for c in h.changes):
        a1, a2, b1, b2 = change
        out.extend(a[at:a1])
        out.extend(b[b1:b2])
        at = a2
    out.extend(a[at:])
    return "".join(out)


def describe(hunks: Iterable[Hunk]) -> str:
    """``h1 (@@ -3,4 +3,5 @@), h3 (…)`` — how the model is told which hunks were applied or left out."""
    return ", ".join(f"{h.id} ({h.header})" for h in hunks)
