"""The code :mod:`.live_kernel` runs inside a notebook's kernel: list, describe and run, answered as one JSON text.

Why a self-contained module: the kernel is the user's (any environment, maybe without eca-notebook installed), so
this file imports only the standard library and is sent as source with each request, executed in a fresh dictionary
— nothing is left in the user's namespace. The descriptions are the ones ``%eca @df`` attaches
(``notebook/_mentions.py``: type, shape, dtypes and the head of a DataFrame, a size-capped repr otherwise) and ``run``
captures what ``%eca``'s ``run_python`` captures (printed text, displays as text, the last expression's value).
Duck-typed (``shape``, ``dtypes``, ``head``): no pandas or numpy import.

Entry point: ``_eca_main(ns, args)`` with the user namespace and ``{"op": "list"|"describe"|"run", …}``.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import re
import reprlib
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

__all__: list[str] = []  # run as source in the kernel (live_kernel.PROBE_SOURCE), not imported

_HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_HEAD = 5
_MAX_VALUE = 4000
_MAX_RUN = 20000
_NOT_FOUND = object()
_MENTION = re.compile(r"(In|Out)\[(\d+)\]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 30
_REPR.maxdict = 20
_REPR.maxstring = 2000
_REPR.maxother = 2000
_REPR.maxlong = 200


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more characters not shown]"


def _type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


def _safe(call: Any, default: str = "") -> str:
    try:
        return str(call())
    except Exception as exc:  # a broken __repr__ must not break the answer
        return default or f"<unavailable: {type(exc).__name__}: {exc}>"


def _user_variables(ns: dict[str, Any]) -> list[tuple[str, Any]]:
    shell = ns.get("get_ipython")
    try:
        hidden = shell().user_ns_hidden if callable(shell) else {}
    except Exception:
        hidden = {}
    out = []
    for name, value in list(ns.items()):
        if name.startswith("_") or name in _HIDDEN or inspect.ismodule(value):
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
        return _safe(lambda: f"signature={inspect.signature(value)}", " ").strip()
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        text = repr(value) if len(value) <= 8 or isinstance(value, str) and len(value) <= 60 else ""
        if len(text) > 80:
            text = text[:79] + "…"
        return f"len={len(value)}" + (f" value={text}" if text else "")
    if isinstance(value, (int, float, complex, bool)) or value is None:
        return f"value={value!r}"
    return ""


def _list(ns: dict[str, Any], query: str, limit: int) -> dict[str, Any]:
    q = query.lower()
    rows = [(n, v) for n, v in _user_variables(ns) if q in n.lower()]
    rows.sort(key=lambda row: (not row[0].lower().startswith(q), row[0].lower()))
    found = [{"name": n, "type": _type_name(v), "summary": _safe(lambda v=v: _summary(v))} for n, v in rows[:limit]]
    return {"variables": found, "more": max(0, len(rows) - limit)}


def _resolve(name: str, ns: dict[str, Any]) -> Any:
    if not _MENTION.fullmatch(name):
        return _NOT_FOUND
    cell = re.fullmatch(r"(In|Out)\[(\d+)\]", name)
    try:
        if cell is not None:
            return ns.get(cell.group(1))[int(cell.group(2))]  # type: ignore[index]
        # a name and attributes only, no builtins: never a call the user did not write
        return eval(compile(name, "<eca-probe>", "eval"), {"__builtins__": {}}, ns)  # noqa: S307
    except Exception:
        return _NOT_FOUND


def _describe(name: str, value: Any, limit: int) -> str:
    if name.startswith("In["):
        return f"### `{name}` (source of cell {name[3:-1]})\n```python\n{_cap(str(value), limit)}\n```"
    lines = [f"### `{name}`", f"type: {_type_name(value)}"]
    shape: Any = getattr(value, "shape", None)
    is_table = shape is not None and hasattr(value, "dtypes") and hasattr(value, "head") and hasattr(value, "columns")
    is_series = shape is not None and hasattr(value, "dtype") and hasattr(value, "head") and hasattr(value, "index")
    is_array = shape is not None and hasattr(value, "dtype") and hasattr(value, "ndim")
    if is_table:
        lines.append(f"shape: {tuple(shape)} (rows, columns)")
        lines.append("dtypes:")
        lines.append(_safe(lambda: value.dtypes.to_string()))
        lines.append(f"head({_HEAD}):")
        lines.append(_safe(lambda: value.head(_HEAD).to_string(max_cols=30, max_colwidth=60)))
    elif is_series:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}, name: {getattr(value, 'name', None)!r}")
        lines.append(f"head({_HEAD}):")
        lines.append(_safe(lambda: value.head(_HEAD).to_string()))
    elif is_array:
        lines.append(f"shape: {tuple(shape)}, dtype: {value.dtype}")
        lines.append("values:")
        lines.append(_safe(lambda: repr(value)))
    elif inspect.isroutine(value) or inspect.isclass(value):
        lines.append(f"signature: {getattr(value, '__name__', name)}{_safe(lambda: inspect.signature(value), '(…)')}")
        doc = inspect.getdoc(value)
        if doc:
            lines.append("doc: " + doc.strip().split("\n\n")[0])
        source = _safe(lambda: inspect.getsource(value), " ").strip()
        if source:
            lines.append("source:\n" + source)
    else:
        try:
            size = len(value)
        except Exception:
            size = None
        if size is not None and not isinstance(value, str):
            lines.append(f"len: {size}")
        lines.append("value:")
        lines.append(_safe(lambda: _REPR.repr(value)))
    return _cap("\n".join(lines), limit)


def _run(ns: dict[str, Any], code: str) -> dict[str, Any]:
    """``%eca``'s ``run_python``: the code in the user's namespace, printed text, displays and the last value."""
    tree = ast.parse(code, "<run_python>", "exec")
    body, last = tree.body, None
    if body and isinstance(final := body[-1], ast.Expr):
        body, last = body[:-1], ast.Expression(final.value)
    out, err, displays = io.StringIO(), io.StringIO(), []
    failed, value_text = False, ""
    shell = ns.get("get_ipython")
    shell = shell() if callable(shell) else None
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
                exec(compile(ast.Module(body=body, type_ignores=[]), "<run_python>", "exec"), ns)  # noqa: S102
            if last is not None:
                value = eval(compile(last, "<run_python>", "eval"), ns)  # noqa: S307
                if value is not None:
                    value_text = _safe(lambda: repr(value))
    except BaseException as exc:  # the user's code may raise anything (an interrupt included: reported, not fatal)
        failed = True
        stack = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in stack if f.filename == "<run_python>"] or stack[-1:]
        err.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)))
        err.write("".join(traceback.format_exception_only(type(exc), exc)))
    finally:
        if pub is not None:
            pub.publish = saved
    parts = [out.getvalue().rstrip("\n")] if out.getvalue() else []
    parts += displays
    if err.getvalue():
        parts.append(("stderr:\n" if not failed else "") + err.getvalue().rstrip("\n"))
    if value_text:
        parts.append(f"Out: {value_text}")
    return {"output": _cap("\n".join(parts) if parts else "(no output)", _MAX_RUN), "failed": failed}


def _eca_main(ns: dict[str, Any], args: dict[str, Any]) -> str:
    op = args.get("op")
    if op == "list":
        result = _list(ns, str(args.get("query") or ""), int(args.get("limit") or 200))
    elif op == "describe":
        name = str(args.get("name") or "")
        value = _resolve(name, ns)
        result = {"found": False} if value is _NOT_FOUND else {
            "found": True, "text": _describe(name, value, int(args.get("max_chars") or _MAX_VALUE))}
    elif op == "run":
        result = _run(ns, str(args.get("code") or ""))
    else:
        result = {"error": f"unknown operation {op!r}"}
    return json.dumps(result)
