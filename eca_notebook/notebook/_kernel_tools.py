"""Notebook-aware tools, offered to the model when the engine runs inside a kernel.

``list_variables`` and ``inspect_variable`` let the model look at the user's live data (read-only: allowed without
asking by the config layer the notebook session adds); ``run_python`` executes code in the user's namespace with
its output captured (asks approval by default, like any tool the config does not allow); ``insert_cell`` and
``replace_cell`` propose notebook edits, shown as diffs and applied only on approval.

They are plug-in tools with ``server = "eca"`` and ``origin = "native"``: the model calls them as
``eca__run_python``, approval rules select them like native tools, and they appear in the native
``tool/serverUpdated`` list. They are written as every native tool is (``tools.NativeTool`` with a pydantic
argument model: one schema, one validation, the model's mistakes told back in the same words), the first three
with the arguments of the panel's live-kernel tools (``tools/live_kernel.py``), and describe values as ``@name``
does (``eca_notebook/_kernel_values.py``).

Why cell edits go through ``set_next_input``: a kernel cannot touch the notebook document; the only channel is the
``set_next_input`` payload of the *executing* cell's reply. When the approval arrives while the ``%eca`` cell is
still executing (``--wait``, ``--format code``, headless runs) the new cell appears right below it; otherwise the
payload rides on the next execution's reply (the cell appears below the next cell run). ``replace_cell`` only
replaces in place the cell that is executing; for any other cell the new version is inserted instead — never
overwriting a cell the user did not look at.
"""

from __future__ import annotations

import ast
import difflib
import logging
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from .._kernel_values import NOT_FOUND, cap, describe_mention, resolve, run_code, summary, type_name, user_variables
from ..plugins import BasePlugin
from ..protocol import FileChangeDetails
from ..tools import NativeTool, ToolArgs
from ..tools.base import Prepared, ToolContext, ToolResult
from ..tools.live_kernel import CodeArgs, InspectVariableArgs, ListVariablesArgs, check_code

__all__ = [
    "READ_ONLY_TOOLS",
    "CellWriter",
    "InsertCellTool",
    "InspectVariableTool",
    "KernelToolsPlugin",
    "ListVariablesTool",
    "ReplaceCellTool",
    "RunPythonTool",
    "approval_config",
]

log = logging.getLogger(__name__)

READ_ONLY_TOOLS = ("list_variables", "inspect_variable")
MAX_VARIABLES = 200
MAX_RUN_OUTPUT = 20000
A = TypeVar("A", bound=ToolArgs)


def approval_config() -> dict[str, Any]:
    """The config layer that lets the read-only kernel tools run without asking."""
    return {"toolCall": {"approval": {"allow": {f"eca__{name}": {} for name in READ_ONLY_TOOLS}}}}


class _KernelTool(NativeTool[A]):
    server = "eca"
    origin = "native"

    def __init__(self, shell: Any) -> None:
        super().__init__()
        self.shell = shell

    @property
    def namespace(self) -> dict[str, Any]:
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace


class ListVariablesTool(_KernelTool[ListVariablesArgs]):
    name = "list_variables"
    description = ("List the variables defined in the user's Jupyter kernel: name, type and a short summary "
                   "(shape of arrays and DataFrames, length of containers, value of scalars).")
    Args = ListVariablesArgs
    generic_summary = "Listing kernel variables"

    def _prepare(self, args: ListVariablesArgs, ctx: ToolContext) -> Prepared:
        return Prepared(args={"filter": args.filter} if args.filter else {}, summary=self.generic_summary)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        pattern = (prepared.args.get("filter") or "").lower()
        hidden = getattr(self.shell, "user_ns_hidden", {})
        rows = [(n, v) for n, v in user_variables(self.namespace, hidden) if pattern in n.lower()]
        if not rows:
            return ToolResult(output="No user variables are defined in the kernel" +
                              (f" matching '{pattern}'." if pattern else "."))
        lines = []
        for name, value in rows[:MAX_VARIABLES]:
            short = summary(value)
            lines.append(f"{name}: {type_name(value)}" + (f" ({short})" if short else ""))
        if len(rows) > MAX_VARIABLES:
            lines.append(f"… and {len(rows) - MAX_VARIABLES} more (use 'filter')")
        return ToolResult(output="\n".join(lines))


class InspectVariableTool(_KernelTool[InspectVariableArgs]):
    name = "inspect_variable"
    description = ("Describe one variable of the user's Jupyter kernel: type, shape, dtypes and the first rows of a "
                   "DataFrame or array, or a size-capped repr. Accepts a name, a dotted attribute path "
                   "(results.best) or In[n]/Out[n].")
    Args = InspectVariableArgs
    generic_summary = "Inspecting a kernel variable"

    def _prepare(self, args: InspectVariableArgs, ctx: ToolContext) -> Prepared:
        name = args.name.strip()
        value = resolve(name, self.namespace)
        if value is NOT_FOUND:
            return Prepared(args={"name": name}, summary=f"Inspecting {name}", error=f"{self.name}: no variable "
                            f"'{name}' in the kernel (call list_variables to see what exists)")
        return Prepared(args={"name": name, "max_chars": args.max_chars}, summary=f"Inspecting {name}")

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        name = prepared.args["name"]
        value = resolve(name, self.namespace)
        return ToolResult(output=describe_mention(name, value, int(prepared.args.get("max_chars") or 4000)))


class RunPythonTool(_KernelTool[CodeArgs]):
    name = "run_python"
    description = ("Run Python code in the user's Jupyter kernel, in the user's namespace (variables persist, the "
                   "user's data is available). Returns what it printed and the value of the last expression. "
                   "The user approves each call.")
    Args = CodeArgs
    generic_summary = "Running Python in the kernel"
    mutates = True
    default_approval = "ask"

    def _prepare(self, args: CodeArgs, ctx: ToolContext) -> Prepared:
        tree, summary = check_code(args.code)
        return Prepared(args={"code": args.code}, summary=summary, state=tree)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        output, error = run_in_namespace(self.shell, prepared.args["code"], prepared.state)
        return ToolResult(output=cap(output, MAX_RUN_OUTPUT), error=error)


def run_in_namespace(shell: Any, code: str, tree: ast.Module | None = None) -> tuple[str, bool]:
    """Execute ``code`` in the user namespace, capturing stdout, stderr and displays; ``(output, failed)``.

    The value of a final expression is shown like a cell's result (the shell's text/plain); an interrupt (the user's
    Ctrl+C in the kernel) stops it as it stops a cell. Runs on the calling thread (the kernel's main thread)."""
    return run_code(shell.user_ns, code, shell=shell, tree=tree, plain=lambda value: _plain(shell, value),
                    keep_interrupts=True)


def _plain(shell: Any, value: Any) -> str:
    formatter = getattr(shell, "display_formatter", None)
    if formatter is not None:
        try:
            data, _ = formatter.format(value, include=("text/plain",))
            if "text/plain" in data:
                return str(data["text/plain"])
        except Exception:
            pass
    try:
        return repr(value)
    except Exception as exc:
        return f"<repr failed: {exc}>"


class CellWriter:
    """Applies approved cell edits through ``set_next_input`` (see the module docstring for what that can do)."""

    def __init__(self, shell: Any, executing: Callable[[], bool] | None = None) -> None:
        self.shell = shell
        self.executing = executing or (lambda: False)  # is the %eca cell that started this turn still executing?
        self.applied: list[tuple[str, str]] = []  # (kind, source), for tests and the transcript

    def insert(self, source: str) -> str:
        self.shell.set_next_input(source, replace=False)
        self.applied.append(("insert", source))
        if self.executing():
            return "Inserted the new cell below the current one."
        return "The new cell is queued: it appears below the next cell the user runs."

    def replace(self, count: int | None, source: str) -> str:
        current = getattr(self.shell, "execution_count", None)
        if self.executing() and (count is None or count == current):
            self.shell.set_next_input(source, replace=True)
            self.applied.append(("replace", source))
            return "Replaced the cell's content."
        self.shell.set_next_input(source, replace=False)
        self.applied.append(("insert", source))
        return ("That cell is not executing, so it cannot be replaced in place; the new version was inserted as a new "
                "cell instead" + ("." if self.executing() else ", below the next cell the user runs."))


def _cell_diff(old: str, new: str, label: str) -> FileChangeDetails:
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    if old_lines and not old_lines[-1].endswith("\n"):
        old_lines[-1] += "\n"
    if new_lines and not new_lines[-1].endswith("\n"):
        new_lines[-1] += "\n"
    diff = "".join(difflib.unified_diff(old_lines, new_lines, f"a/{label}", f"b/{label}"))
    added = sum(1 for line in diff.splitlines()[2:] if line.startswith("+"))
    removed = sum(1 for line in diff.splitlines()[2:] if line.startswith("-"))
    return FileChangeDetails(path=label, diff=diff, lines_added=added, lines_removed=removed)


class InsertCellArgs(ToolArgs):
    source: str = Field(description="The cell's full content.")
    cell_type: Literal["code", "markdown"] | None = Field(None, description="Default: code.")


def _cell_number(value: Any) -> Any:
    """``3``, ``"3"`` and ``"In[3]"`` name cell In[3] (models write all three); ``true`` names none."""
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "the integer n of In[n]")
    if isinstance(value, str) and value.strip().lstrip("In[").rstrip("]").isdigit():
        return int(value.strip().lstrip("In[").rstrip("]"))
    return value


class ReplaceCellArgs(ToolArgs):
    cell: Annotated[int, BeforeValidator(_cell_number)] = Field(
        description="The execution count n of the cell In[n].")
    source: str = Field(description="The cell's new full content.")


class InsertCellTool(_KernelTool[InsertCellArgs]):
    name = "insert_cell"
    description = ("Propose a new notebook cell (code or markdown) below the current one. The user sees it as a "
                   "diff and it is added only if they approve.")
    Args = InsertCellArgs
    generic_summary = "Inserting a cell"
    mutates = True
    default_approval = "ask"

    def __init__(self, shell: Any, writer: CellWriter) -> None:
        super().__init__(shell)
        self.writer = writer

    def _prepare(self, args: InsertCellArgs, ctx: ToolContext) -> Prepared:
        cell_type = args.cell_type or "code"
        text = args.source if cell_type == "code" else _as_markdown_cell(args.source)
        return Prepared(args={"source": args.source, "cell_type": cell_type},
                        summary=f"Inserting a new {cell_type} cell",
                        details=_cell_diff("", text, "notebook/new-cell").dump(), state=text)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=self.writer.insert(prepared.state), details=prepared.details)


def _as_markdown_cell(source: str) -> str:
    """``set_next_input`` always makes a code cell; a markdown cell is written with the ``%%markdown`` magic."""
    return source if source.lstrip().startswith("%%markdown") else "%%markdown\n" + source


class ReplaceCellTool(_KernelTool[ReplaceCellArgs]):
    name = "replace_cell"
    description = ("Propose new content for a notebook cell, identified by its execution count n (the cell shown "
                   "as In[n]). The user sees the change as a diff and it is applied only if they approve.")
    Args = ReplaceCellArgs
    generic_summary = "Replacing a cell"
    mutates = True
    default_approval = "ask"

    def __init__(self, shell: Any, writer: CellWriter) -> None:
        super().__init__(shell)
        self.writer = writer

    def _prepare(self, args: ReplaceCellArgs, ctx: ToolContext) -> Prepared:
        cell, source = args.cell, args.source
        history = self.namespace.get("In") or []
        if not 0 < cell < len(history):
            return Prepared(args={"cell": cell, "source": source}, summary=f"Replacing cell In[{cell}]",
                            error=f"{self.name}: there is no cell In[{cell}] (cells run so far: "
                                  f"1..{len(history) - 1})")
        return Prepared(args={"cell": cell, "source": source}, summary=f"Replacing cell In[{cell}]",
                        details=_cell_diff(history[cell], source, f"notebook/In[{cell}]").dump(),
                        state=(cell, source))

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        cell, source = prepared.state
        return ToolResult(output=self.writer.replace(cell, source), details=prepared.details)


class KernelToolsPlugin(BasePlugin):
    """The kernel's tools as an engine plug-in (``engine.add_plugin(KernelToolsPlugin(shell))``)."""

    name = "kernel"

    def __init__(self, shell: Any, writer: CellWriter | None = None) -> None:
        self.shell = shell
        self.writer = writer or CellWriter(shell)
        self._tools = [
            ListVariablesTool(shell),
            InspectVariableTool(shell),
            RunPythonTool(shell),
            InsertCellTool(shell, self.writer),
            ReplaceCellTool(shell, self.writer),
        ]

    #: Offer ``insert_cell``/``replace_cell`` (``set_next_input``). The session turns them off when it knows the
    #: kernel's notebook: the ``notebook_*`` tools then put cells exactly where asked, as per-cell diffs.
    cell_writers = True

    def tools(self) -> Sequence[Any]:
        if self.cell_writers:
            return self._tools
        return [t for t in self._tools if not isinstance(t, (InsertCellTool, ReplaceCellTool))]
