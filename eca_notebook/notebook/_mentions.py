"""Kernel values in prompts: ``{expr}`` interpolation and ``@name`` mentions.

``{name}`` puts a value's text into the prompt itself (``{In[3]}``, ``{cfg.path}``); ``@name`` attaches a *description*
of a kernel variable as context — type, shape, dtypes and a head for DataFrames and arrays, a size-capped repr
otherwise — so the model sees the data the user is looking at without the user pasting it. ``@In[3]`` / ``@Out[3]``
attach a cell's source or result. ``@git`` (``@git:status``, ``@git:diff``, ``@git:log``) is not a kernel value: it
asks the engine to attach the workspace's git state as a context (:func:`git_mentions`), so ``git`` is reserved here.

Why no pandas/numpy import here: the description is duck-typed (``shape``, ``dtypes``, ``head``), so mentioning a
DataFrame works without this module pulling pandas into every kernel, and polars/xarray-like objects get the same
treatment when they quack alike.
"""

from __future__ import annotations

import inspect
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
    "type_name",
]

MAX_VALUE_CHARS = 4000  # one mentioned value's description
MAX_CONTEXT_CHARS = 20000  # every mention of one prompt together
MAX_INTERPOLATED_CHARS = 10000  # one {expr} substitution
HEAD_ROWS = 5

_NOT_FOUND = object()

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
    """The value of a restricted expression (see ``_EXPR``), or ``_NOT_FOUND``."""
    try:
        return eval(compile(expr, "<eca-interpolation>", "eval"), {"__builtins__": {}}, namespace)  # noqa: S307
    except Exception:
        return _NOT_FOUND


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


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
        if value is _NOT_FOUND:
            return whole
        try:
            shown = value if isinstance(value, str) else str(value)
        except Exception:
            return whole
        return _cap(shown, MAX_INTERPOLATED_CHARS)

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
        if _resolve_mention(name, namespace) is not _NOT_FOUND:
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


def _resolve_mention(name: str, namespace: Mapping[str, Any]) -> Any:
    cell = re.fullmatch(r"(In|Out)\[(\d+)\]", name)
    if cell is not None:
        kind, number = cell.group(1), int(cell.group(2))
        history: Any = namespace.get(kind)
        try:
            value = history[number]  # In is a list, Out a dict
        except Exception:
            return _NOT_FOUND
        return value
    return _lookup(name, namespace)


def resolve_mention(name: str, namespace: Mapping[str, Any]) -> Any:
    """The value ``@name`` refers to (``In[n]`` / ``Out[n]`` from the history), or None when it does not resolve."""
    value = _resolve_mention(name, namespace)
    return None if value is _NOT_FOUND else value


def type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _safe(call: Any, default: str = "") -> str:
    try:
        return str(call())
    except Exception as exc:  # a broken __repr__ must not break the prompt
        return default or f"<unavailable: {type(exc).__name__}: {exc}>"


_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 30
_REPR.maxdict = 20
_REPR.maxstring = 2000
_REPR.maxother = 2000
_REPR.maxlong = 200


def describe_value(name: str, value: Any, max_chars: int = MAX_VALUE_CHARS) -> str:
    """A description of one value for the model: what it is, its shape, and a bounded look at its content."""
    lines = [f"### `{name}`", f"type: {type_name(value)}"]
    shape: Any = getattr(value, "shape", None)
    is_table = shape is not None and hasattr(value, "dtypes") and hasattr(value, "head") and hasattr(value, "columns")
    is_series = shape is not None and hasattr(value, "dtype") and hasattr(value, "head") and hasattr(value, "index")
    is_array = shape is not None and hasattr(value, "dtype") and hasattr(value, "ndim")
    if is_table:
        lines.append(f"shape: {tuple(shape)} (rows, columns)")
        lines.append("dtypes:")
        lines.append(_safe(lambda: value.dtypes.to_string()))
        lines.append(f"head({HEAD_ROWS}):")
        lines.append(_safe(lambda: value.head(HEAD_ROWS).to_string(max_cols=30, max_colwidth=60)))
    elif is_series:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}, name: {getattr(value, 'name', None)!r}")
        lines.append(f"head({HEAD_ROWS}):")
        lines.append(_safe(lambda: value.head(HEAD_ROWS).to_string()))
    elif is_array:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}")
        lines.append("values:")
        lines.append(_safe(lambda: repr(value)))  # numpy summarises big arrays itself
    elif inspect.isroutine(value) or inspect.isclass(value):
        signature = _safe(lambda: str(inspect.signature(value)), "(…)")
        lines.append(f"signature: {getattr(value, '__name__', name)}{signature}")
        doc = inspect.getdoc(value)
        if doc:
            lines.append("doc: " + doc.strip().split("\n\n")[0])
        source = _safe(lambda: inspect.getsource(value), "")
        if source:
            lines.append("source:\n" + source.rstrip())
    elif inspect.ismodule(value):
        lines.append(f"module: {value.__name__}")
    else:
        try:
            size = len(value)
        except Exception:
            size = None
        if size is not None and not isinstance(value, str):
            lines.append(f"len: {size}")
        lines.append("value:")
        lines.append(_safe(lambda: _REPR.repr(value)))
    return _cap("\n".join(lines), max_chars)


def _describe_mention(name: str, namespace: Mapping[str, Any]) -> str:
    value = _resolve_mention(name, namespace)
    if name.startswith("In["):
        return f"### `{name}` (source of cell {name[3:-1]})\n```python\n{_cap(str(value), MAX_VALUE_CHARS)}\n```"
    return describe_value(name, value)


def attach_mentions(message: str, namespace: Mapping[str, Any]) -> tuple[str, list[Mention]]:
    """``message`` plus a context section describing every ``@name`` that resolves in the namespace.

    The user's text is kept as written (``@df`` stays in it, so the model knows what the user referred to)."""
    names = find_mentions(message, namespace)
    if not names:
        return message, []
    mentions = [Mention(name, _describe_mention(name, namespace)) for name in names]
    body = _cap("\n\n".join(m.text for m in mentions), MAX_CONTEXT_CHARS)
    context = ("Kernel variables mentioned with @ (live values from the user's Jupyter kernel):\n\n" + body)
    return f"{message}\n\n{context}", mentions
