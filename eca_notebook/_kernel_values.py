"""What the model is told about a kernel's variables: which are the user's, a one-line summary of each, and the
description of one (type, shape, dtypes and the head of a DataFrame or array, a size-capped repr otherwise).

And what running code there gives back (:func:`run_code`: printed text, displays as text, the last value).

One module for the three places that tell it: ``%eca @df`` (``notebook/_mentions.py``), the ``%eca`` session's
``list_variables`` / ``inspect_variable`` (``notebook/_kernel_tools.py``) and the panel's live kernel, where this
file's source runs inside the notebook's kernel ahead of ``tools/_kernel_probe.py`` (``tools/live_kernel.py``).

Why standard library only, and nothing imported from the package: that kernel is the user's (any environment,
maybe without eca-notebook installed), so this file must run as bare source there. Duck-typed (``shape``,
``dtypes``, ``head``) for the same reason, and so that a mention does not pull pandas into every kernel:
polars/xarray-like objects get the same treatment when they quack alike.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import reprlib
import traceback
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

__all__ = [
    "HEAD_ROWS",
    "HIDDEN_NAMES",
    "MAX_VALUE_CHARS",
    "NOT_FOUND",
    "cap",
    "describe_mention",
    "describe_value",
    "resolve",
    "run_code",
    "safe",
    "summary",
    "type_name",
    "user_variables",
]

MAX_VALUE_CHARS = 4000  # one value's description
HEAD_ROWS = 5
#: Names the user did not define, though IPython puts them in the namespace.
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
#: What :func:`resolve` answers for a name that does not resolve (None is a value like any other).
NOT_FOUND: Any = object()

# `df`, `results.best`, `In[3]`, `Out[4]`: names and attributes only, never a call or a subscript the user did not
# write, so resolving a name the model chose cannot run code.
_NAME = re.compile(r"(In|Out)\[\d+\]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_CELL = re.compile(r"(In|Out)\[(\d+)\]")

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 30
_REPR.maxdict = 20
_REPR.maxstring = 2000
_REPR.maxother = 2000
_REPR.maxlong = 200


def cap(text: str, limit: int) -> str:
    """*text* cut to *limit* characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


def type_name(value: Any) -> str:
    """``int``, ``pandas.core.frame.DataFrame``: the qualified class name, without ``builtins.`` or ``__main__.``
    (the bare name when the class will not say more: a metaclass may raise on any attribute)."""
    cls = type(value)
    try:
        module, qualname = str(cls.__module__), str(cls.__qualname__)
    except Exception:
        return type.__dict__["__name__"].__get__(cls)  # type: ignore[no-any-return]
    return qualname if module in ("builtins", "__main__") else f"{module}.{qualname}"


def safe(call: Any, default: str = "") -> str:
    """``str(call())``; when the user's object raises (a broken ``__repr__``), *default* or what went wrong."""
    try:
        return str(call())
    except Exception as exc:  # a broken __repr__ must not break the answer
        return default or f"<unavailable: {type(exc).__name__}: {exc}>"


def user_variables(namespace: Mapping[str, Any], hidden: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The user's own variables, in the namespace's order: no private names, modules, IPython machinery or names
    IPython put there (*hidden*: the shell's ``user_ns_hidden``)."""
    out = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in HIDDEN_NAMES or inspect.ismodule(value):
            continue
        if name in hidden and hidden[name] is value:
            continue
        out.append((name, value))
    return out


def _summary(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None:
        try:
            return f"shape={tuple(shape)}"
        except TypeError:
            pass
    if inspect.isroutine(value) or inspect.isclass(value):
        return safe(lambda: f"signature={inspect.signature(value)}", " ").strip()
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        text = repr(value) if len(value) <= 8 or isinstance(value, str) and len(value) <= 60 else ""
        if len(text) > 80:
            text = text[:79] + "…"
        return f"len={len(value)}" + (f" value={text}" if text else "")
    if isinstance(value, (int, float, complex, bool)) or value is None:
        return f"value={value!r}"
    return ""


def summary(value: Any) -> str:
    """One short line for a listing: the shape of arrays and DataFrames, the signature of a function, the length of
    a container, the value of a scalar; "" when there is nothing short to say."""
    return safe(lambda: _summary(value))


def resolve(name: str, namespace: Mapping[str, Any]) -> Any:
    """The value *name* refers to (``In[n]`` / ``Out[n]`` from the history, a name or a dotted attribute path), or
    :data:`NOT_FOUND`. Anything else (a call, an operator) is not looked up at all."""
    if not _NAME.fullmatch(name):
        return NOT_FOUND
    cell = _CELL.fullmatch(name)
    try:
        if cell is not None:
            return namespace[cell.group(1)][int(cell.group(2))]  # In is a list, Out a dict
        # a name and attributes only, no builtins: never a call the user did not write
        return eval(compile(name, "<eca-mention>", "eval"), {"__builtins__": {}}, namespace)  # noqa: S307
    except Exception:
        return NOT_FOUND


def describe_value(name: str, value: Any, max_chars: int = MAX_VALUE_CHARS) -> str:
    """A description of one value for the model: what it is, its shape, and a bounded look at its content. A value
    whose ``shape``, ``dtypes`` or ``len`` raise (a lazy frame) is described by its repr, not failed."""
    try:
        return _describe_value(name, value, max_chars)
    except Exception as exc:
        lines = [f"### `{name}`", f"type: {type_name(value)}", f"(not described further: {type(exc).__name__})",
                 "value:", safe(lambda: _REPR.repr(value))]
        return cap("\n".join(lines), max_chars)


def _describe_value(name: str, value: Any, max_chars: int) -> str:
    lines = [f"### `{name}`", f"type: {type_name(value)}"]
    shape: Any = getattr(value, "shape", None)
    is_table = shape is not None and hasattr(value, "dtypes") and hasattr(value, "head") and hasattr(value, "columns")
    is_series = shape is not None and hasattr(value, "dtype") and hasattr(value, "head") and hasattr(value, "index")
    is_array = shape is not None and hasattr(value, "dtype") and hasattr(value, "ndim")
    if is_table:
        lines.append(f"shape: {tuple(shape)} (rows, columns)")
        lines.append("dtypes:")
        lines.append(safe(lambda: value.dtypes.to_string()))
        lines.append(f"head({HEAD_ROWS}):")
        lines.append(safe(lambda: value.head(HEAD_ROWS).to_string(max_cols=30, max_colwidth=60)))
    elif is_series:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}, name: {getattr(value, 'name', None)!r}")
        lines.append(f"head({HEAD_ROWS}):")
        lines.append(safe(lambda: value.head(HEAD_ROWS).to_string()))
    elif is_array:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}")
        lines.append("values:")
        lines.append(safe(lambda: repr(value)))  # numpy summarises big arrays itself
    elif inspect.isroutine(value) or inspect.isclass(value):
        lines.append(f"signature: {getattr(value, '__name__', name)}{safe(lambda: inspect.signature(value), '(…)')}")
        doc = inspect.getdoc(value)
        if doc:
            lines.append("doc: " + doc.strip().split("\n\n")[0])
        source = safe(lambda: inspect.getsource(value), " ").rstrip()  # none for a builtin: nothing to show
        if source:
            lines.append("source:\n" + source)
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
        lines.append(safe(lambda: _REPR.repr(value)))
    return cap("\n".join(lines), max_chars)


def describe_mention(name: str, value: Any, max_chars: int = MAX_VALUE_CHARS) -> str:
    """The description ``@name`` attaches: a cell's source for ``In[n]``, :func:`describe_value` otherwise."""
    if name.startswith("In["):
        return f"### `{name}` (source of cell {name[3:-1]})\n```python\n{cap(str(value), max_chars)}\n```"
    return describe_value(name, value, max_chars)


def run_code(namespace: dict[str, Any], code: str, *, shell: Any = None, tree: ast.Module | None = None,
             plain: Callable[[Any], str] | None = None, keep_interrupts: bool = False) -> tuple[str, bool]:
    """Run *code* in *namespace* as a cell would and tell what came of it: ``(output, failed)``, the output made of
    what it printed, what it displayed (as text, through *shell*'s ``display_pub`` while it runs, instead of into
    some cell), a traceback of its own frames when it raised, and ``Out:`` the last expression's value (as *plain*
    shows it; ``repr`` by default). Runs on the calling thread (the kernel's main thread: GUI and plotting libraries
    expect it). An interrupt is reported like any failure, or raised with *keep_interrupts*."""
    tree = tree if tree is not None else ast.parse(code, "<run_python>", "exec")
    body, last = tree.body, None
    if body and isinstance(final := body[-1], ast.Expr):
        body, last = body[:-1], ast.Expression(final.value)
    out, err, displays = io.StringIO(), io.StringIO(), []
    failed, value_text = False, ""
    pub = getattr(shell, "display_pub", None)
    saved = getattr(pub, "publish", None)

    def publish(data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        text = data.get("text/plain") if isinstance(data, dict) else None
        kinds = ", ".join(k for k in (data or {}) if k != "text/plain")
        displays.append(str(text) if text is not None else f"<display: {kinds}>")

    if pub is not None:
        pub.publish = publish
    try:
        with redirect_stdout(out), redirect_stderr(err):
            if body:
                exec(compile(ast.Module(body=body, type_ignores=[]), "<run_python>", "exec"), namespace)  # noqa: S102
            if last is not None:
                value = eval(compile(last, "<run_python>", "eval"), namespace)  # noqa: S307
                if value is not None:
                    value_text = plain(value) if plain is not None else safe(lambda: repr(value))
    except BaseException as exc:  # the user's code may raise anything, even SystemExit
        if keep_interrupts and isinstance(exc, KeyboardInterrupt):
            raise
        failed = True
        stack = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in stack if f.filename == "<run_python>"] or stack[-1:]
        err.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)))
        err.write("".join(traceback.format_exception_only(type(exc), exc)))
    finally:
        if pub is not None and saved is not None:
            pub.publish = saved
    parts = [out.getvalue().rstrip("\n")] if out.getvalue() else []
    parts += displays
    if err.getvalue():
        parts.append(("stderr:\n" if not failed else "") + err.getvalue().rstrip("\n"))
    if value_text:
        parts.append(f"Out: {value_text}")
    return ("\n".join(parts) if parts else "(no output)"), failed
