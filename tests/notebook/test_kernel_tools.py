"""The kernel's tools against a real IPython shell: listing and inspecting variables, running code in the user
namespace with output captured, and cell proposals shown as diffs and applied through ``set_next_input``."""

from __future__ import annotations

import pytest

from eca_notebook.notebook._kernel_tools import (
    CellWriter,
    KernelToolsPlugin,
    approval_config,
)
from eca_notebook.tools.base import ToolContext, llm_name, tool_origin, tool_server

CTX = ToolContext(workspace_folders=[])


@pytest.fixture
def ip():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.reset(new_session=False)
    yield shell
    shell.reset(new_session=False)
    if hasattr(shell, "rl_next_input"):
        del shell.rl_next_input


def tools_of(ip, executing=False):
    writer = CellWriter(ip, executing=lambda: executing)
    return {t.name: t for t in KernelToolsPlugin(ip, writer).tools()}, writer


async def call(tool, args):
    prepared = tool.prepare(args, CTX)
    if prepared.error:
        return prepared, None
    return prepared, await tool.run(prepared, CTX)


def test_identity_native_eca_tools():
    from IPython.core.interactiveshell import InteractiveShell

    tools, _ = tools_of(InteractiveShell.instance())
    assert sorted(tools) == ["insert_cell", "inspect_variable", "list_variables", "replace_cell", "run_python"]
    for tool in tools.values():
        assert tool_server(tool) == "eca" and tool_origin(tool) == "native"
        assert llm_name(tool) == f"eca__{tool.name}"
        assert tool.parameters["type"] == "object"
    assert approval_config() == {"toolCall": {"approval": {"allow": {"eca__list_variables": {},
                                                                      "eca__inspect_variable": {}}}}}


async def test_list_variables_hides_machinery(ip):
    ip.run_cell("import os\nx = 5\nrows = [1, 2, 3]\n_private = 1\ndef f(a, b=2): return a\n")
    tools, _ = tools_of(ip)
    _, result = await call(tools["list_variables"], {})
    lines = result.output.splitlines()
    assert "x: int (value=5)" in lines
    assert "rows: list (len=3 value=[1, 2, 3])" in lines
    assert any(line.startswith("f: function (signature=(a, b=2))") for line in lines)
    assert not any(line.split(":")[0] in ("os", "_private", "In", "Out", "get_ipython", "exit") for line in lines)
    _, filtered = await call(tools["list_variables"], {"filter": "ROW"})
    assert filtered.output == "rows: list (len=3 value=[1, 2, 3])"


async def test_inspect_variable(ip):
    ip.run_cell("data = {'a': 1}\n")
    tools, _ = tools_of(ip)
    _, result = await call(tools["inspect_variable"], {"name": "data"})
    assert "type: dict" in result.output and "{'a': 1}" in result.output
    prepared, _ = await call(tools["inspect_variable"], {"name": "nope"})
    assert "no variable 'nope'" in prepared.error
    prepared, _ = await call(tools["inspect_variable"], {})
    assert "missing required argument 'name'" in prepared.error


async def test_run_python_uses_the_user_namespace_and_captures_output(ip):
    ip.run_cell("base = 10\n")
    tools, _ = tools_of(ip)
    tool = tools["run_python"]
    assert tool.default_approval == "ask"
    prepared, result = await call(tool, {"code": "print('hello')\nfrom IPython.display import display\n"
                                                 "display('shown')\ntotal = base + 1\ntotal * 2"})
    assert prepared.summary.startswith("Running Python: print('hello')")
    assert result.output == "hello\n'shown'\nOut: 22" and not result.error
    assert ip.user_ns["total"] == 11  # the variable persists for the user


async def test_run_python_errors(ip):
    tools, _ = tools_of(ip)
    _, result = await call(tools["run_python"], {"code": "x = 1\n1 / 0"})
    assert result.error and "ZeroDivisionError: division by zero" in result.output
    assert "<run_python>" in result.output
    prepared, _ = await call(tools["run_python"], {"code": "def ("})
    assert "syntax error at line 1" in prepared.error
    prepared, _ = await call(tools["run_python"], {"code": "  "})
    assert "must not be empty" in prepared.error


async def test_insert_cell_shows_a_diff_and_uses_set_next_input(ip):
    tools, writer = tools_of(ip, executing=True)
    prepared, result = await call(tools["insert_cell"], {"source": "import math\nmath.pi\n"})
    assert prepared.details["type"] == "fileChange" and prepared.details["linesAdded"] == 2
    assert "+import math" in prepared.details["diff"]
    assert ip.rl_next_input == "import math\nmath.pi\n"
    assert "below the current one" in result.output
    _, result = await call(tools["insert_cell"], {"source": "# Title", "cell_type": "markdown"})
    assert ip.rl_next_input == "%%markdown\n# Title"
    assert writer.applied[-1] == ("insert", "%%markdown\n# Title")


async def test_insert_cell_when_the_cell_has_finished(ip):
    tools, _ = tools_of(ip, executing=False)
    _, result = await call(tools["insert_cell"], {"source": "x = 1"})
    assert "below the next cell the user runs" in result.output


async def test_replace_cell_diff_against_history(ip):
    ip.run_cell("y = 1 + 1\n", store_history=True)
    count = ip.execution_count - 1
    tools, writer = tools_of(ip, executing=False)
    prepared, result = await call(tools["replace_cell"], {"cell": count, "source": "y = 2\n"})
    assert "-y = 1 + 1" in prepared.details["diff"] and "+y = 2" in prepared.details["diff"]
    # not the executing cell: never overwritten in place, inserted as a new cell instead
    assert writer.applied == [("insert", "y = 2\n")] and "inserted as a new cell" in result.output
    prepared, _ = await call(tools["replace_cell"], {"cell": 999, "source": "z"})
    assert "there is no cell In[999]" in prepared.error


#: The schemas the model saw when these tools hand-wrote them (before they moved onto the pydantic ``ToolBase``).
OLD_SCHEMAS = {
    "list_variables": {"type": "object", "properties": {
        "filter": {"type": "string", "description": "Only names containing this text (optional)."}}},
    "inspect_variable": {"type": "object", "properties": {
        "name": {"type": "string", "description": "Variable name, dotted path, or In[n]/Out[n]."},
        "max_chars": {"type": "integer", "description": "Longest description to return (default 4000)."}},
        "required": ["name"]},
    "run_python": {"type": "object", "properties": {
        "code": {"type": "string", "description": "The Python code to run."}}, "required": ["code"]},
    "insert_cell": {"type": "object", "properties": {
        "source": {"type": "string", "description": "The cell's full content."},
        "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Default: code."}},
        "required": ["source"]},
    "replace_cell": {"type": "object", "properties": {
        "cell": {"type": "integer", "description": "The execution count n of the cell In[n]."},
        "source": {"type": "string", "description": "The cell's new full content."}},
        "required": ["cell", "source"]},
}
#: What the schemas may say beyond the old ones: constraints the old code enforced without telling the model.
ADDED = {("inspect_variable", "max_chars"): {"minimum": 100}}


def meaning(schema: dict) -> dict:
    """What the model reads in a schema: the arguments with their type, description and choices; the required."""
    return {"type": schema["type"], "required": sorted(schema.get("required", [])),
            "properties": {name: {k: v for k, v in prop.items() if k in ("type", "description", "enum")}
                           for name, prop in schema["properties"].items()}}


def test_the_schemas_mean_what_the_hand_written_ones_meant():
    from IPython.core.interactiveshell import InteractiveShell

    tools, _ = tools_of(InteractiveShell.instance())
    for name, tool in tools.items():
        assert meaning(tool.parameters) == meaning(OLD_SCHEMAS[name]), name
        for arg, prop in tool.parameters["properties"].items():
            extra = {k: v for k, v in prop.items() if k not in ("type", "description", "enum")}
            assert extra.items() <= ADDED.get((name, arg), {}).items(), (name, arg)


@pytest.mark.parametrize(("tool", "args"), [
    ("run_python", {"code": 5}), ("run_python", {}), ("list_variables", {"filter": ["x"]}),
    ("inspect_variable", {"name": "x", "max_chars": 50}), ("inspect_variable", {"name": "x", "max_chars": "many"}),
    ("insert_cell", {"source": "x", "cell_type": "html"}), ("replace_cell", {"cell": True, "source": "x"}),
    ("replace_cell", {"cell": 1}), ("run_python", "not json"),
])
def test_a_wrong_call_is_told_back_as_every_native_tool_tells_it(ip, tool, args):
    from eca_notebook.tools._args import parse_args

    ip.run_cell("x = 1\n")
    kernel_tool = tools_of(ip)[0][tool]
    prepared = kernel_tool.prepare(args, CTX)
    expected = parse_args(tool, kernel_tool.Args, args)[1]
    assert expected and prepared.error == expected


async def test_replace_cell_takes_in_n_as_the_model_writes_it(ip):
    ip.run_cell("y = 1\n", store_history=True)
    count = ip.execution_count - 1
    tools, _ = tools_of(ip)
    for written in (count, str(count), f"In[{count}]"):
        prepared, _ = await call(tools["replace_cell"], {"cell": written, "source": "y = 2\n"})
        assert prepared.error is None and prepared.args["cell"] == count


async def test_inspect_variable_returns_up_to_max_chars(ip):
    ip.run_cell("long = 1  # " + "z" * 20000 + "\n", store_history=True)
    cell = f"In[{ip.execution_count - 1}]"
    tools, _ = tools_of(ip)
    _, default = await call(tools["inspect_variable"], {"name": cell})
    _, more = await call(tools["inspect_variable"], {"name": cell, "max_chars": 9000})
    assert len(default.output) < 4100 < 9000 < len(more.output) < 9100
