"""pandas helpers: a prompt template over the rows of a DataFrame, and the answers back as columns.

pandas is imported only inside these functions (it is an optional dependency, and ``import eca_notebook.batch``
must stay light).
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol import JsonObject
from ._models import ItemPrompt, ItemResult, WorkItem

__all__ = ["dataframe_batch", "render_template", "results_frame", "template_columns"]

RESULT_COLUMNS = ("status", "answer", "error", "model", "tokens", "input_tokens", "output_tokens", "cost")


def template_columns(template: str) -> list[str]:
    """The ``{column}`` placeholders of a template, in order (``{{``/``}}`` are literal braces)."""
    names = []
    for _, field_name, _, _ in string.Formatter().parse(template):
        if field_name is not None and field_name not in names:
            names.append(field_name)
    return names


def render_template(template: str, row: Mapping[str, Any]) -> str:
    """``template`` with each ``{column}`` replaced by the row's value (``str.format`` rules, so ``{price:.2f}``
    works); a missing column is a KeyError naming it."""
    try:
        return template.format_map(row)
    except KeyError as exc:
        raise KeyError(f"the template names {exc.args[0]!r}, which is not a column") from None


def results_frame(results: Iterable[ItemResult]) -> Any:
    """One row per result: id, prompt and the result columns (and ``data``'s keys when structured)."""
    import pandas as pd

    rows = []
    for r in results:
        row: JsonObject = {"id": r.id, "prompt": r.prompt, "status": r.status, "answer": r.text, "error": r.error,
               "model": r.model, "tokens": r.tokens, "input_tokens": r.input_tokens,
               "output_tokens": r.output_tokens, "cost": r.cost}
        row.update(r.data or {})
        rows.append(row)
    return pd.DataFrame(rows)


def dataframe_batch(df: Any, template: str, *, output_schema: JsonObject | None = None,
                    id_column: str | None = None, **kwargs: Any) -> Any:
    """Run ``template`` over every row of ``df`` (see :func:`~eca_notebook.batch.batch` for ``kwargs``: executor,
    store, budget, progress, model, …) and return a copy of ``df`` with the columns ``status``, ``answer``,
    ``error``, ``model``, ``tokens``, ``input_tokens``, ``output_tokens``, ``cost`` — and, with ``output_schema``
    (a JSON schema of an object), one column per property, parsed from the answer (a property named like an
    existing column gets an ``answer_`` prefix).

    Each row is an item whose id is ``id_column``'s value, or else derived from the rendered prompt: rerunning the
    same call with the same ``store`` sends only the rows not answered yet.
    """
    from ._run import batch

    missing = [c for c in template_columns(template) if c not in df.columns]
    if missing:
        raise KeyError(f"the template names column(s) the DataFrame lacks: {', '.join(missing)}")
    prompts: list[str | ItemPrompt | WorkItem] = []
    # (records, not iterrows: each value keeps its column's type — iterrows makes a row of ints and floats all
    # floats, so {count} would read "3.0" — and it is many times faster on 200,000 rows)
    for row in df.to_dict("records"):
        prompt: ItemPrompt = {"message": render_template(template, row)}
        if id_column is not None:
            prompt["id"] = str(row[id_column])
        if output_schema is not None:
            prompt["output_schema"] = output_schema
        prompts.append(prompt)
    results = batch(prompts, **kwargs)
    out = df.copy()
    out["status"] = [r.status for r in results]
    out["answer"] = [r.text for r in results]
    out["error"] = [r.error for r in results]
    out["model"] = [r.model for r in results]
    for column in ("tokens", "input_tokens", "output_tokens"):
        out[column] = [getattr(r, column) for r in results]
        out[column] = out[column].astype("Int64")
    out["cost"] = [r.cost for r in results]
    out["cost"] = out["cost"].astype("float64")
    if output_schema is not None:
        properties = output_schema.get("properties")
        for key in (properties if isinstance(properties, dict) else {}):
            column = f"answer_{key}" if key in df.columns or key in RESULT_COLUMNS else key
            out[column] = [(r.data or {}).get(key) for r in results]
    # the item ids (the rows' keys in the results store) and the batch's totals
    out.attrs["eca_batch"] = {"ids": [r.id for r in results], "totals": dataclasses.asdict(results.totals)}
    return out
