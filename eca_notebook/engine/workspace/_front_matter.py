"""The YAML front matter of the markdown files users write for us — custom commands, skills (``SKILL.md``) and
agents — read by one YAML parser (PyYAML's ``safe_load``), so all three accept what YAML accepts: lists, quoted
strings, block scalars, comments.

A file's front matter is a first line ``---``, YAML, and a closing ``---`` (or ``...``) line; the rest is the body.
"""

from __future__ import annotations

import yaml

from ...protocol import JsonObject

__all__ = ["FrontMatterError", "parse_front_matter", "split_front_matter"]


class FrontMatterError(ValueError):
    """The front matter is there but is not a YAML map (the message says where)."""


def split_front_matter(text: str) -> tuple[str, str] | None:
    """(YAML text, body) of a file that starts with a ``---`` block; None without one, or when it is not closed."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1:]).lstrip("\r\n")
    return None


def parse_front_matter(text: str) -> tuple[JsonObject, str]:
    """(front matter as a map, body); ``({}, text)`` when the file has no closed front matter block.

    Raises :class:`FrontMatterError` when the block is not valid YAML or not a map of keys."""
    split = split_front_matter(text)
    if split is None:
        return {}, text
    try:
        meta = yaml.safe_load(split[0])
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise FrontMatterError(f"the front matter is not valid YAML{line}: {problem}") from None
    if meta is None:
        return {}, split[1]
    if not isinstance(meta, dict):
        raise FrontMatterError("the front matter must be a map of keys (name: value)")
    return {str(k): v for k, v in meta.items()}, split[1]
