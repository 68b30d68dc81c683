"""Kernel values in prompts: ``{expr}`` interpolation and ``@name`` mentions.

``{name}`` puts a value's text into the prompt itself (``{In[3]}``, ``{cfg.path}``); ``@name`` attaches a *description*
of a kernel variable as context — type, shape, dtypes and a head for DataFrames and arrays, a size-capped repr
otherwise — so the model sees the data the user is looking at without the user pasting it. ``@In[3]`` / ``@Out[3]``
attach a cell's source or result. ``@git`` (``@git:status``, ``@git:diff``, ``@git:log``) is not a kernel value: it
asks the engine to attach the workspace's git state as a context (:func:`git_mentions`), so ``git`` is reserved here.

The description is the one every kernel tool gives (``eca_notebook/_kernel_values.py``): duck-typed, so mentioning
a DataFrame does not pull pandas into every kernel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._kernel_values import MAX_VALUE_CHARS, NOT_FOUND, cap, describe_mention, describe_value, resolve

__all__ = [
    "MAX_CONTEXT_CHARS",
    "MAX_VALUE_CHARS",
    "Mention",
    "attach_mentions",
    "describe_value",
    "find_mentions",
    "git_mentions",
    "interpolate",
    "resolve_mention",
]

MAX_CONTEXT_CHARS = 20000  # every mention of one prompt together
MAX_INTERPOLATED_CHARS = 10000  # one {expr} substitution

# `{name}`, `{a.b}`, `{In[3]}`, `{d['key']}`: names, attributes and literal subscripts only — never a call, so
# interpolation cannot run code the user did not write as code.
_SUBSCRIPT = r"\[(?:-?\d+|'[^'\n]*'|\"[^\"\n]*\")\]"
_EXPR = rf"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|{_SUBSCRIPT})*"
_INTERPOLATION = re.compile(r"\{\{|\}\}|\{(" + _EXPR + r")\}")
# `@df`, `@results.best`, `@In[3]`, `@Out[4]` — not inside a word or an e-mail address (`me@example.com`).
_MENTION = re.compile(r"(?<![\w@.])@(In\[\d+\]|Out\[\d+\]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
# `@git`, `@git:diff`: the git context (a trailing full stop is punctuation; `@git.Repo` is a kernel value)
_GIT_MENTION = re.compile(r"(?<![\w@.])@git(?::([A-Za-z]\w*))?(?![\w\[]|\.\w)")


def _lookup(expr: str, namespace: Mapping[str, Any]) -> Any:
    """The value of a restricted expression (see ``_EXPR``), or ``NOT_FOUND``."""
    try:
        return eval(compile(expr, "<eca-interpolation>", "eval"), {"__builtins__": {}}, namespace)  # noqa: S307
    except Exception:
        return NOT_FOUND


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{expr}`` with ``str(value)`` for expressions that resolve in ``namespace``; ``{{``/``}}`` are literal
    braces. Anything that does not resolve (a set literal in a code sample, a typo) is left exactly as written."""

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "{{":
            return "{"
        if whole == "}}":
            return "}"
        value = _lookup(match.group(1), namespace)
        if value is NOT_FOUND:
            return whole
        try:
            shown = value if isinstance(value, str) else str(value)
        except Exception:
            return whole
        return cap(shown, MAX_INTERPOLATED_CHARS)

    return _INTERPOLATION.sub(replace, text)


@dataclass
class Mention:
    name: str  # as written after the @
    text: str  # the rendered description


def find_mentions(text: str, namespace: Mapping[str, Any]) -> list[str]:
    """``@`` names in ``text`` that resolve in the namespace, in order of first appearance, without duplicates."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        name = match.group(1)
        if name in found or name == "git":  # `@git` is the git context (git_mentions), never a kernel value
            continue
        if resolve(name, namespace) is not NOT_FOUND:
            found.append(name)
    return found


def git_mentions(text: str) -> list[str | None]:
    """The git context parts ``text`` mentions, in order, without duplicates: None for ``@git`` (everything),
    ``"diff"`` for ``@git:diff`` and so on (an unknown part is the engine's to explain)."""
    parts: list[str | None] = []
    for match in _GIT_MENTION.finditer(text):
        part = match.group(1).lower() if match.group(1) else None
        if part not in parts:
            parts.append(part)
    return parts


def resolve_mention(name: str, namespace: Mapping[str, Any]) -> Any:
    """The value ``@name`` refers to (``In[n]`` / ``Out[n]`` from the history), or None when it does not resolve."""
    value = resolve(name, namespace)
    return None if value is NOT_FOUND else value


def attach_mentions(message: str, namespace: Mapping[str, Any]) -> tuple[str, list[Mention]]:
    """``message`` plus a context section describing every ``@name`` that resolves in the namespace.

    The user's text is kept as written (``@df`` stays in it, so the model knows what the user referred to)."""
    names = find_mentions(message, namespace)
    if not names:
        return message, []
    mentions = [Mention(name, describe_mention(name, resolve(name, namespace))) for name in names]
    body = cap("\n\n".join(m.text for m in mentions), MAX_CONTEXT_CHARS)
    context = ("Kernel variables mentioned with @ (live values from the user's Jupyter kernel):\n\n" + body)
    return f"{message}\n\n{context}", mentions
