"""The live-kernel tools and ``@`` variables over an in-process :class:`NotebookKernels` that evaluates the probe the
way ipykernel evaluates ``user_expressions`` (``eval`` in the user's namespace, the text/plain repr back)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.live_kernel import (
    BUSY_MESSAGE,
    KernelBusy,
    LiveKernelPlugin,
    NoKernel,
    probe,
)

NOTEBOOK = Path("/work/nb.ipynb")


class NamespaceKernels:
    """A kernel that is a dict: ``busy`` makes it refuse like a kernel running the user's cell."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns
        self.busy = False
        self.interrupted = 0

    async def evaluate(self, notebook: Path, expression: str, *, timeout: float) -> dict[str, Any]:
        if notebook != NOTEBOOK:
            raise NoKernel("no kernel")
        if self.busy:
            raise KernelBusy()
        try:
            value = eval(expression, self.ns)  # noqa: S307 - what ipykernel does with user_expressions
        except Exception as exc:
            return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc)}
        return {"status": "ok", "data": {"text/plain": repr(value)}, "metadata": {}}

    async def interrupt(self, notebook: Path) -> None:
        self.interrupted += 1


def run(coro):
    return asyncio.run(coro)


def test_probe_leaves_nothing_in_the_namespace_and_lists_user_variables():
    ns: dict[str, Any] = {"__builtins__": __builtins__, "threshold": 3, "_private": 1, "In": [], "asyncio": asyncio}
    before = set(ns)
    answer = run(probe(NamespaceKernels(ns), NOTEBOOK, {"op": "list", "query": "", "limit": 10}, timeout=5))
    assert answer == {"variables": [{"name": "threshold", "type": "int", "summary": "value=3"}], "more": 0}
    assert set(ns) == before


def test_at_offers_variables_of_the_attached_notebook_and_reads_their_description():
    pd = pytest.importorskip("pandas")
    ns = {"__builtins__": __builtins__, "sales": pd.DataFrame({"region": ["n"], "revenue": [1.5]}), "salt": "x"}
    plugin = LiveKernelPlugin(NamespaceKernels(ns))
    assert run(plugin.query_contexts("sal")) == []  # no notebook attached: nothing to offer
    found = run(plugin.query_contexts("sale", [{"type": "file", "path": str(NOTEBOOK)}]))
    assert [(c["name"], c["description"]) for c in found] == [("sales", "DataFrame shape=(1, 2)")]
    text = run(plugin.read_context(found[0]))
    assert text is not None and "dtypes:" in text and "revenue" in text and "float64" in text
    assert run(plugin.read_context({"type": "mcpResource", "server": "other", "uri": "x"})) is None


def test_tools_answer_kernel_busy_without_waiting_and_need_a_notebook():
    kernels = NamespaceKernels({"__builtins__": __builtins__, "a": 1})
    tools = {t.name: t for t in LiveKernelPlugin(kernels).tools()}
    ctx = ToolContext(workspace_folders=[], default_notebook=NOTEBOOK)
    listing = tools["list_variables"]
    assert run(listing.run(listing.prepare({}, ctx), ctx)).output == "a: int (value=1)"
    kernels.busy = True
    result = run(listing.run(listing.prepare({}, ctx), ctx))
    assert result.error and BUSY_MESSAGE in result.output
    nowhere = ToolContext(workspace_folders=[])
    assert "no notebook is attached" in run(listing.run(listing.prepare({}, nowhere), nowhere)).output
    inspect = tools["inspect_variable"]
    assert inspect.prepare({"name": "a; import os"}, ctx).error  # names only, never code


def test_run_python_captures_output_and_the_last_value():
    ns: dict[str, Any] = {"__builtins__": __builtins__}
    tool = next(t for t in LiveKernelPlugin(NamespaceKernels(ns)).tools() if t.name == "run_python")
    assert tool.default_approval == "ask" and tool.mutates
    ctx = ToolContext(workspace_folders=[], default_notebook=NOTEBOOK)
    result = run(tool.run(tool.prepare({"code": "x = 2\nprint('hi')\nx * 21"}, ctx), ctx))
    assert (result.output, result.error) == ("hi\nOut: 42", False)
    assert ns["x"] == 2
    failed = run(tool.run(tool.prepare({"code": "1 / 0"}, ctx), ctx))
    assert failed.error and "ZeroDivisionError" in failed.output


#: The schemas the model saw when these tools hand-wrote them (before they moved onto the pydantic ``ToolBase``),
#: and what the new ones may add: constraints the old code enforced without telling the model.
OLD_SCHEMAS = {
    "list_variables": {"type": "object", "properties": {
        "filter": {"type": "string", "description": "Only names containing this text (optional)."}}},
    "inspect_variable": {"type": "object", "properties": {
        "name": {"type": "string", "description": "Variable name, dotted path, or In[n]/Out[n]."},
        "max_chars": {"type": "integer", "description": "Longest description to return (default 4000)."}},
        "required": ["name"]},
    "run_python": {"type": "object", "properties": {
        "code": {"type": "string", "description": "The Python code to run."},
        "timeout_seconds": {"type": "integer", "description": "Stop (interrupt) the run after this long (120)."}},
        "required": ["code"]},
}
ADDED = {("inspect_variable", "max_chars"): {"minimum": 100}, ("run_python", "timeout_seconds"): {"minimum": 1}}
KEYS = ("type", "description", "enum")


def test_the_schemas_mean_what_the_hand_written_ones_meant():
    tools = {t.name: t for t in LiveKernelPlugin(NamespaceKernels({})).tools()}
    assert sorted(tools) == sorted(OLD_SCHEMAS)
    for name, tool in tools.items():
        new, old = tool.parameters, OLD_SCHEMAS[name]
        assert (new["type"], sorted(new.get("required", []))) == (old["type"], sorted(old.get("required", [])))
        assert {a: {k: v for k, v in p.items() if k in KEYS} for a, p in new["properties"].items()} == \
            old["properties"], name
        for arg, prop in new["properties"].items():
            extra = {k: v for k, v in prop.items() if k not in KEYS}
            assert extra.items() <= ADDED.get((name, arg), {}).items(), (name, arg)
