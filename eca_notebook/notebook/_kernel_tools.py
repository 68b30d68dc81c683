"""Notebook-aware tools, offered to the model when the engine runs inside a kernel.

``list_variables`` and ``inspect_variable`` let the model look at the user's live data (read-only: allowed without
asking by the config layer the notebook session adds); ``run_python`` executes code in the user's namespace with
its output captured (asks approval by default, like any tool the config does not allow); ``insert_cell`` and
``replace_cell`` propose notebook edits, shown as diffs and applied only on approval.

They are plug-in tools with ``server = "eca"`` and ``origin = "native"``: the model calls them as
``eca__run_python``, approval rules select them like native tools, and they appear in the native
``tool/serverUpdated`` list.

Why cell edits go through ``set_next_input``: a kernel cannot touch the notebook document; the only channel is the
``set_next_input`` payload of the *executing* cell's reply. When the approval arrives while the ``%eca`` cell is
still executing (``--wait``, ``--format code``, headless runs) the new cell appears right below it; otherwise the
payload rides on the next execution's reply (the cell appears below the next cell run). ``replace_cell`` only
replaces in place the cell that is executing; for any other cell the new version is inserted instead — never
overwriting a cell the user did not look at.
"""

from __future__ import annotations

import ast
import inspect
import io
import logging
import traceback
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from ..plugins import BasePlugin
from ..tools.base import Prepared, ToolContext, ToolResult
from ._mentions import type_name

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
_HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})


def approval_config() -> dict[str, Any]:
    """The config layer that lets the read-only kernel tools run without asking."""
    return {"toolCall": {"approval": {"allow": {f"eca__{name}": {} for name in READ_ONLY_TOOLS}}}}


def _cap(text: str, limit: int = MAX_RUN_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters cut]"


class _KernelTool:
    server = "eca"
    origin = "native"
    mutates = False
    default_approval = "allow"
    name = ""
    description = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def namespace(self) -> dict[str, Any]:
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _fail(self, args: dict[str, Any], summary: str, message: str) -> Prepared:
        return Prepared(args=dict(args) if isinstance(args, dict) else {}, summary=summary,
                        error=f"{self.name}: {message}")

    @staticmethod
    def _string(args: dict[str, Any], key: str, *, required: bool = True) -> str | None:
        value = args.get(key)
        if value is None:
            if required:
                raise ValueError(f"missing required argument '{key}'")
            return None
        if not isinstance(value, str):
            raise ValueError(f"argument '{key}' must be a string")
        return value


def user_variables(shell: Any) -> list[tuple[str, Any]]:
    """The user's own variables: no private names, modules, IPython machinery or names IPython put there."""
    hidden = getattr(shell, "user_ns_hidden", {})
    out = []
    for name, value in list(shell.user_ns.items()):
        if name.startswith("_") or name in _HIDDEN_NAMES:
            continue
        if name in hidden and hidden[name] is value:
            continue
        if inspect.ismodule(value):
            continue
        out.append((name, value))
    return out


def short_summary(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None:
        try:
            return f"shape={tuple(shape)}"
        except TypeError:
            pass
    if inspect.isroutine(value) or inspect.isclass(value):
        try:
            return f"signature={inspect.signature(value)}"
        except (TypeError, ValueError):
            return ""
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        text = repr(value) if len(value) <= 8 or isinstance(value, str) and len(value) <= 60 else ""
        if len(text) > 80:
            text = text[:79] + "…"
        return f"len={len(value)}" + (f" value={text}" if text else "")
    if isinstance(value, (int, float, complex, bool)) or value is None:
        return f"value={value!r}"
    return ""


class ListVariablesTool(_KernelTool):
    name = "list_variables"
    description = ("List the variables defined in the user's Jupyter kernel: name, type and a short summary "
                   "(shape of arrays and DataFrames, length of containers, value of scalars).")
    parameters = {"type": "object", "properties": {
        "filter": {"type": "string", "description": "Only names containing this text (optional)."}}}

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        try:
            pattern = self._string(args, "filter", required=False)
        except ValueError as exc:
            return self._fail(args, "Listing kernel variables", str(exc))
        return Prepared(args={"filter": pattern} if pattern else {}, summary="Listing kernel variables")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        pattern = (prepared.args.get("filter") or "").lower()
        rows = [(n, v) for n, v in user_variables(self.shell) if pattern in n.lower()]
        if not rows:
            return ToolResult(output="No user variables are defined in the kernel" +
                              (f" matching '{pattern}'." if pattern else "."))
        lines = []
        for name, value in rows[:MAX_VARIABLES]:
            summary = short_summary(value)
            lines.append(f"{name}: {type_name(value)}" + (f" ({summary})" if summary else ""))
        if len(rows) > MAX_VARIABLES:
            lines.append(f"… and {len(rows) - MAX_VARIABLES} more (use 'filter')")
        return ToolResult(output="\n".join(lines))


class InspectVariableTool(_KernelTool):
    name = "inspect_variable"
    description = ("Describe one variable of the user's Jupyter kernel: type, shape, dtypes and the first rows of a "
                   "DataFrame or array, or a size-capped repr. Accepts a name, a dotted attribute path "
                   "(results.best) or In[n]/Out[n].")
    parameters = {"type": "object", "properties": {
        "name": {"type": "string", "description": "Variable name, dotted path, or In[n]/Out[n]."},
        "max_chars": {"type": "integer", "description": "Longest description to return (default 4000)."}},
        "required": ["name"]}

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        try:
            name = (self._string(args, "name") or "").strip()
            max_chars = args.get("max_chars", 4000)
            if isinstance(max_chars, str) and max_chars.isdigit():
                max_chars = int(max_chars)
            if not isinstance(max_chars, int) or max_chars < 100:
                raise ValueError("argument 'max_chars' must be an integer >= 100")
        except ValueError as exc:
            return self._fail(args, "Inspecting a kernel variable", str(exc))
        from ._mentions import find_mentions

        if not find_mentions(f"@{name}", self.namespace):
            return self._fail({"name": name}, f"Inspecting {name}",
                              f"no variable '{name}' in the kernel (call list_variables to see what exists)")
        return Prepared(args={"name": name, "max_chars": max_chars}, summary=f"Inspecting {name}")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        from ._mentions import _describe_mention

        name = prepared.args["name"]
        text = _describe_mention(name, self.namespace)
        return ToolResult(output=_cap(text, int(prepared.args.get("max_chars") or 4000)))


class RunPythonTool(_KernelTool):
    name = "run_python"
    description = ("Run Python code in the user's Jupyter kernel, in the user's namespace (variables persist, the "
                   "user's data is available). Returns what it printed and the value of the last expression. "
                   "The user approves each call.")
    parameters = {"type": "object", "properties": {
        "code": {"type": "string", "description": "The Python code to run."}}, "required": ["code"]}
    mutates = True
    default_approval = "ask"

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        try:
            code = self._string(args, "code") or ""
        except ValueError as exc:
            return self._fail(args, "Running Python in the kernel", str(exc))
        if not code.strip():
            return self._fail(args, "Running Python in the kernel", "argument 'code' must not be empty")
        try:
            tree = ast.parse(code, "<run_python>", "exec")
        except SyntaxError as exc:
            return self._fail({"code": code}, "Running Python in the kernel",
                              f"syntax error at line {exc.lineno}: {exc.msg}")
        first = code.strip().splitlines()[0]
        summary = f"Running Python: {first[:60]}" + ("…" if len(first) > 60 or "\n" in code.strip() else "")
        return Prepared(args={"code": code}, summary=summary, state=tree)

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        output, error = run_in_namespace(self.shell, prepared.args["code"], prepared.state)
        return ToolResult(output=_cap(output), error=error)


def run_in_namespace(shell: Any, code: str, tree: ast.Module | None = None) -> tuple[str, bool]:
    """Execute ``code`` in the user namespace, capturing stdout, stderr and displays; ``(output, failed)``.

    The value of a final expression is shown like a cell's result. Runs on the calling thread (the kernel's main
    thread: GUI and plotting libraries expect it)."""
    tree = tree if tree is not None else ast.parse(code, "<run_python>", "exec")
    body, last = tree.body, None
    if body and isinstance(final := body[-1], ast.Expr):
        body, last = body[:-1], ast.Expression(final.value)
    ns = shell.user_ns
    out, err = io.StringIO(), io.StringIO()
    failed = False
    displays: list[str] = []
    value_text = ""
    capture = _display_capture(shell, displays)
    try:
        with redirect_stdout(out), redirect_stderr(err), capture:
            if body:
                exec(compile(ast.Module(body=body, type_ignores=[]), "<run_python>", "exec"), ns)  # noqa: S102
            if last is not None:
                value = eval(compile(last, "<run_python>", "eval"), ns)  # noqa: S307
                if value is not None:
                    value_text = _plain(shell, value)
    except BaseException as exc:  # the user's code may raise anything, even SystemExit
        if isinstance(exc, (KeyboardInterrupt,)):
            raise
        failed = True
        stack = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in stack if f.filename == "<run_python>"] or stack[-1:]
        err.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)))
        err.write("".join(traceback.format_exception_only(type(exc), exc)))
    parts = []
    if out.getvalue():
        parts.append(out.getvalue().rstrip("\n"))
    parts += displays
    if err.getvalue():
        parts.append(("stderr:\n" if not failed else "") + err.getvalue().rstrip("\n"))
    if value_text:
        parts.append(f"Out: {value_text}")
    return ("\n".join(parts) if parts else "(no output)"), failed


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


class _display_capture:
    """Capture ``display()`` calls of the code as their text/plain, instead of printing into some cell."""

    def __init__(self, shell: Any, sink: list[str]) -> None:
        self.shell = shell
        self.sink = sink
        self.saved: Any = None

    def __enter__(self) -> None:
        pub = getattr(self.shell, "display_pub", None)
        if pub is None:
            return
        sink = self.sink

        def publish(data: dict[str, Any], metadata: Any = None, *args: Any, **kwargs: Any) -> None:
            text = data.get("text/plain") if isinstance(data, dict) else None
            kinds = ", ".join(k for k in (data or {}) if k != "text/plain")
            sink.append(str(text) if text is not None else f"<display: {kinds}>")

        self.saved = pub.publish
        pub.publish = publish

    def __exit__(self, *exc: object) -> None:
        pub = getattr(self.shell, "display_pub", None)
        if pub is not None and self.saved is not None:
            pub.publish = self.saved


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


def _cell_diff(old: str, new: str, label: str) -> dict[str, Any]:
    import difflib

    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    if old_lines and not old_lines[-1].endswith("\n"):
        old_lines[-1] += "\n"
    if new_lines and not new_lines[-1].endswith("\n"):
        new_lines[-1] += "\n"
    diff = "".join(difflib.unified_diff(old_lines, new_lines, f"a/{label}", f"b/{label}"))
    added = sum(1 for line in diff.splitlines()[2:] if line.startswith("+"))
    removed = sum(1 for line in diff.splitlines()[2:] if line.startswith("-"))
    return {"type": "fileChange", "path": label, "diff": diff, "linesAdded": added, "linesRemoved": removed}


class InsertCellTool(_KernelTool):
    name = "insert_cell"
    description = ("Propose a new notebook cell (code or markdown) below the current one. The user sees it as a "
                   "diff and it is added only if they approve.")
    parameters = {"type": "object", "properties": {
        "source": {"type": "string", "description": "The cell's full content."},
        "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Default: code."}},
        "required": ["source"]}
    mutates = True
    default_approval = "ask"

    def __init__(self, shell: Any, writer: CellWriter) -> None:
        super().__init__(shell)
        self.writer = writer

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        try:
            source = self._string(args, "source") or ""
            cell_type = self._string(args, "cell_type", required=False) or "code"
        except ValueError as exc:
            return self._fail(args, "Inserting a cell", str(exc))
        if cell_type not in ("code", "markdown"):
            return self._fail(args, "Inserting a cell", "argument 'cell_type' must be 'code' or 'markdown'")
        text = source if cell_type == "code" else _as_markdown_cell(source)
        return Prepared(args={"source": source, "cell_type": cell_type}, summary=f"Inserting a new {cell_type} cell",
                        details=_cell_diff("", text, "notebook/new-cell"), state=text)

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        return ToolResult(output=self.writer.insert(prepared.state), details=prepared.details)


def _as_markdown_cell(source: str) -> str:
    """``set_next_input`` always makes a code cell; a markdown cell is written with the ``%%markdown`` magic."""
    return source if source.lstrip().startswith("%%markdown") else "%%markdown\n" + source


class ReplaceCellTool(_KernelTool):
    name = "replace_cell"
    description = ("Propose new content for a notebook cell, identified by its execution count n (the cell shown "
                   "as In[n]). The user sees the change as a diff and it is applied only if they approve.")
    parameters = {"type": "object", "properties": {
        "cell": {"type": "integer", "description": "The execution count n of the cell In[n]."},
        "source": {"type": "string", "description": "The cell's new full content."}},
        "required": ["cell", "source"]}
    mutates = True
    default_approval = "ask"

    def __init__(self, shell: Any, writer: CellWriter) -> None:
        super().__init__(shell)
        self.writer = writer

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        try:
            source = self._string(args, "source") or ""
        except ValueError as exc:
            return self._fail(args, "Replacing a cell", str(exc))
        cell = args.get("cell")
        if isinstance(cell, str) and cell.strip().lstrip("In[").rstrip("]").isdigit():
            cell = int(cell.strip().lstrip("In[").rstrip("]"))
        if not isinstance(cell, int) or isinstance(cell, bool):
            return self._fail(args, "Replacing a cell", "argument 'cell' must be the integer n of In[n]")
        history = self.namespace.get("In") or []
        if not 0 < cell < len(history):
            return self._fail(args, f"Replacing cell In[{cell}]",
                              f"there is no cell In[{cell}] (cells run so far: 1..{len(history) - 1})")
        old = history[cell]
        return Prepared(args={"cell": cell, "source": source}, summary=f"Replacing cell In[{cell}]",
                        details=_cell_diff(old, source, f"notebook/In[{cell}]"), state=(cell, source))

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
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
