"""The code :mod:`.live_kernel` runs inside a notebook's kernel: list, describe and run, answered as one JSON text.

Why a self-contained module: the kernel is the user's (any environment, maybe without eca-notebook installed), so
this file imports only the standard library and is sent as source with each request, executed in a fresh dictionary
— nothing is left in the user's namespace. The variables and their descriptions are those
``%eca @df`` attaches: ``eca_notebook/_kernel_values.py``, also standard library only, whose source runs first in
the same dictionary (hence the guarded import below). ``run`` captures what ``%eca``'s ``run_python`` captures
(printed text, displays as text, the last expression's value).

Entry point: ``_eca_main(ns, args)`` with the user namespace and ``{"op": "list"|"describe"|"run", …}``.
"""

from __future__ import annotations

import ast
import io
import json
import traceback
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

__all__: list[str] = []  # run as source in the kernel (live_kernel.probe_expression), not imported

if __name__ != "_eca_probe":  # imported (type checkers, tests); in the kernel _kernel_values' source ran first
    from .._kernel_values import (
        MAX_VALUE_CHARS,
        NOT_FOUND,
        cap,
        describe_mention,
        resolve,
        safe,
        summary,
        type_name,
        user_variables,
    )

_MAX_RUN = 20000


def _list(ns: dict[str, Any], query: str, limit: int) -> dict[str, Any]:
    shell = ns.get("get_ipython")
    try:
        hidden = shell().user_ns_hidden if callable(shell) else {}
    except Exception:
        hidden = {}
    q = query.lower()
    rows = [(n, v) for n, v in user_variables(ns, hidden) if q in n.lower()]
    rows.sort(key=lambda row: (not row[0].lower().startswith(q), row[0].lower()))
    found = [{"name": n, "type": type_name(v), "summary": summary(v)} for n, v in rows[:limit]]
    return {"variables": found, "more": max(0, len(rows) - limit)}


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
                    value_text = safe(lambda: repr(value))
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
    return {"output": cap("\n".join(parts) if parts else "(no output)", _MAX_RUN), "failed": failed}


def _eca_main(ns: dict[str, Any], args: dict[str, Any]) -> str:
    op = args.get("op")
    if op == "list":
        result = _list(ns, str(args.get("query") or ""), int(args.get("limit") or 200))
    elif op == "describe":
        name = str(args.get("name") or "")
        value = resolve(name, ns)
        result = {"found": False} if value is NOT_FOUND else {
            "found": True, "text": describe_mention(name, value, int(args.get("max_chars") or MAX_VALUE_CHARS))}
    elif op == "run":
        result = _run(ns, str(args.get("code") or ""))
    else:
        result = {"error": f"unknown operation {op!r}"}
    return json.dumps(result)
