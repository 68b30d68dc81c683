"""The code :mod:`.live_kernel` runs inside a notebook's kernel: list, describe and run, answered as one JSON text.

Why a self-contained module: the kernel is the user's (any environment, maybe without eca-notebook installed), so
this file imports only the standard library and is sent as source with each request, executed in a fresh dictionary
— nothing is left in the user's namespace. The variables and their descriptions are those
``%eca @df`` attaches: ``eca_notebook/_kernel_values.py``, also standard library only, whose source runs first in
the same dictionary (hence the guarded import below). ``run`` is ``%eca``'s ``run_python`` (``run_code`` there).

Entry point: ``_eca_main(ns, args)`` with the user namespace and ``{"op": "list"|"describe"|"run", …}``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

__all__: list[str] = []  # run as source in the kernel (live_kernel.probe_expression), not imported

if __name__ != "_eca_probe":  # imported (type checkers, tests); in the kernel _kernel_values' source ran first
    from .._kernel_values import (
        MAX_VALUE_CHARS,
        NOT_FOUND,
        cap,
        describe_mention,
        resolve,
        run_code,
        summary,
        type_name,
        user_variables,
    )

if TYPE_CHECKING:
    from .live_kernel import ProbeListing, ProbeRequest, ProbeVariable

_MAX_RUN = 20000


def _list(ns: dict[str, object], query: str, limit: int) -> ProbeListing:
    shell = ns.get("get_ipython")
    try:
        hidden = shell().user_ns_hidden if callable(shell) else {}
    except Exception:
        hidden = {}
    q = query.lower()
    rows = [(n, v) for n, v in user_variables(ns, hidden) if q in n.lower()]
    rows.sort(key=lambda row: (not row[0].lower().startswith(q), row[0].lower()))
    found: list[ProbeVariable] = [{"name": n, "type": type_name(v), "summary": summary(v)} for n, v in rows[:limit]]
    return {"variables": found, "more": max(0, len(rows) - limit)}


def _eca_main(ns: dict[str, object], args: ProbeRequest) -> str:
    op = args.get("op")
    result: object  # one JSON object per op: ProbeListing, {found, text}, {output, failed} or {error}
    if op == "list":
        result = _list(ns, str(args.get("query") or ""), int(args.get("limit") or 200))
    elif op == "describe":
        name = str(args.get("name") or "")
        value = resolve(name, ns)
        result = {"found": False} if value is NOT_FOUND else {
            "found": True, "text": describe_mention(name, value, int(args.get("max_chars") or MAX_VALUE_CHARS))}
    elif op == "run":
        # %eca's run_python, without its display formatter: an interrupt (a timeout) is reported, not raised
        shell = ns.get("get_ipython")
        output, failed = run_code(ns, str(args.get("code") or ""), shell=shell() if callable(shell) else None)
        result = {"output": cap(output, _MAX_RUN), "failed": failed}
    else:
        result = {"error": f"unknown operation {op!r}"}
    return json.dumps(result)
