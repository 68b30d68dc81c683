"""The live kernel of a notebook open in JupyterLab, for the panel's chats: its variables as ``@`` contexts and the
tools ``list_variables``, ``inspect_variable`` (read-only, allowed) and ``run_python`` (asks first).

Why an injected :class:`NotebookKernels`: the kernels belong to the Jupyter server (its session and kernel managers),
and nothing below the doors imports jupyter_server — ``server/_kernels.py`` implements this small protocol and the
server extension hands :class:`LiveKernelPlugin` to each workspace engine. Which kernel: the notebook in play (the
panel attaches the active notebook to every prompt and ``@`` query; ``ToolContext.default_notebook``).

Every request is one silent execution (``silent: true, store_history: false``, no input): the empty code with a
``user_expressions`` entry that runs the probe (``_kernel_probe.py``, sent as source, executed in a dictionary of
its own) and returns its JSON answer in the execute reply — nothing printed, nothing in the user's history or
namespace, no execution count used. A read never queues behind the user's running cell: the implementation answers
:class:`KernelBusy` when the kernel is busy, and every request has a timeout.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .base import Approval, Prepared, ToolContext, ToolResult

__all__ = [
    "BUSY_MESSAGE",
    "KERNEL_SERVER",
    "InspectVariableTool",
    "KernelBusy",
    "KernelError",
    "ListVariablesTool",
    "LiveKernelPlugin",
    "NoKernel",
    "NotebookKernels",
    "RunPythonTool",
    "probe",
    "probe_expression",
]

#: The pseudo-server of the ``mcpResource`` contexts that name a kernel variable (``@df`` in the panel).
KERNEL_SERVER = "kernel"
BUSY_MESSAGE = "kernel busy — try again when the cell finishes"
READ_TIMEOUT = 10.0  # seconds a read (list, describe) may take
QUERY_TIMEOUT = 3.0  # seconds the @ completion waits for the kernel's variables
RUN_TIMEOUT = 120.0  # run_python's default
MAX_ANSWER_CHARS = 4_000_000  # the probe's answer, as the kernel's repr of a str
MAX_VARIABLES = 200
_NAME = re.compile(r"(In|Out)\[\d+\]|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_NO_NOTEBOOK = ("no notebook is attached to this prompt: make the notebook the active tab in JupyterLab (its chip "
                "on in the panel) and ask again")


class KernelBusy(RuntimeError):
    """The notebook's kernel is running something (the user's cell): a read would wait behind it."""

    def __init__(self, message: str = BUSY_MESSAGE) -> None:
        super().__init__(message)


class NoKernel(LookupError):
    """The notebook is not open with a running kernel."""


class KernelError(RuntimeError):
    """The probe failed in the kernel (``ename: evalue``), or answered something unreadable."""


class NotebookKernels(Protocol):
    """The kernels of the notebooks open in the front end (implemented by the Jupyter server door)."""

    async def evaluate(self, notebook: Path, expression: str, *, timeout: float) -> dict[str, Any]:
        """Evaluate *expression* in the kernel of *notebook* with a silent, history-free execute request (empty code,
        the expression as a ``user_expressions`` entry); its reply entry (``{"status": "ok", "data": {"text/plain":
        …}}`` or ``{"status": "error", "ename", "evalue"}``). Raises :class:`KernelBusy` when the kernel is busy,
        :class:`NoKernel` when the notebook has none, ``TimeoutError`` after *timeout* seconds."""
        ...

    async def interrupt(self, notebook: Path) -> None:
        """Interrupt the kernel of *notebook* (a run that timed out or was stopped)."""
        ...


@cache
def _probe_source() -> str:
    return Path(__file__).with_name("_kernel_probe.py").read_text(encoding="utf-8")


def probe_expression(args: dict[str, Any]) -> str:
    """The ``user_expressions`` entry that runs the probe with *args* (str/int values: their repr is a literal) in a
    dictionary of its own, handed the user's namespace, and evaluates to its JSON answer."""
    return ("(lambda g: (exec(g['_eca_src'], g), g['_eca_main'](g['_eca_ns'], g['_eca_args']))[1])("
            f"{{'__builtins__': __builtins__, '__name__': '_eca_probe', '_eca_src': {_probe_source()!r}, "
            f"'_eca_ns': globals(), '_eca_args': {args!r}}})")


async def probe(kernels: NotebookKernels, notebook: Path, args: dict[str, Any], *, timeout: float) -> dict[str, Any]:
    """Run the probe in the notebook's kernel; its answer. The kernel's text is untrusted: parsed as a literal only,
    size-capped."""
    reply = await kernels.evaluate(notebook, probe_expression(args), timeout=timeout)
    if reply.get("status") != "ok":
        raise KernelError(f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}".strip())
    text = (reply.get("data") or {}).get("text/plain")
    if not isinstance(text, str) or len(text) > MAX_ANSWER_CHARS:
        raise KernelError("the kernel's answer is missing or too large")
    try:
        value = ast.literal_eval(text)
        answer = json.loads(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise KernelError(f"the kernel's answer could not be read ({type(exc).__name__})") from None
    if not isinstance(answer, dict):
        raise KernelError("the kernel's answer could not be read")
    return answer


def _failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"the kernel did not answer within {timeout:g} s ({BUSY_MESSAGE})"
    return str(exc) or type(exc).__name__


class _LiveTool:
    server = "eca"
    origin = "native"
    mutates: ClassVar[bool] = False
    default_approval: ClassVar[Approval] = "allow"
    name = ""
    description = ""
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self, kernels: NotebookKernels) -> None:
        self.kernels = kernels

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def _fail(self, args: Any, summary: str, message: str) -> Prepared:
        return Prepared(args=dict(args) if isinstance(args, dict) else {}, summary=summary,
                        error=f"{self.name}: {message}")

    async def _probe(self, ctx: ToolContext, args: dict[str, Any], timeout: float) -> dict[str, Any] | ToolResult:
        notebook = ctx.default_notebook
        if notebook is None:
            return ToolResult(output=f"{self.name}: {_NO_NOTEBOOK}", error=True)
        try:
            return await probe(self.kernels, notebook, args, timeout=timeout)
        except (KernelBusy, NoKernel, KernelError, TimeoutError) as exc:
            return ToolResult(output=f"{self.name}: {_failure(exc, timeout)}", error=True)


class ListVariablesTool(_LiveTool):
    name = "list_variables"
    description = ("List the variables defined in the kernel of the user's notebook: name, type and a short summary "
                   "(shape of arrays and DataFrames, length of containers, value of scalars).")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "filter": {"type": "string", "description": "Only names containing this text (optional)."}}}

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        pattern = args.get("filter") if isinstance(args, dict) else None
        if pattern is not None and not isinstance(pattern, str):
            return self._fail(args, "Listing kernel variables", "argument 'filter' must be a string")
        return Prepared(args={"filter": pattern} if pattern else {}, summary="Listing kernel variables")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        pattern = prepared.args.get("filter") or ""
        answer = await self._probe(ctx, {"op": "list", "query": pattern, "limit": MAX_VARIABLES}, READ_TIMEOUT)
        if isinstance(answer, ToolResult):
            return answer
        rows = answer.get("variables") or []
        if not rows:
            return ToolResult(output="No user variables are defined in the kernel" +
                              (f" matching '{pattern}'." if pattern else "."))
        lines = [f"{r.get('name')}: {r.get('type')}" + (f" ({r['summary']})" if r.get("summary") else "")
                 for r in rows if isinstance(r, dict)]
        if answer.get("more"):
            lines.append(f"… and {answer['more']} more (use 'filter')")
        return ToolResult(output="\n".join(lines))


class InspectVariableTool(_LiveTool):
    name = "inspect_variable"
    description = ("Describe one variable of the kernel of the user's notebook: type, shape, dtypes and the first rows "
                   "of a DataFrame or array, or a size-capped repr. Accepts a name, a dotted attribute path "
                   "(results.best) or In[n]/Out[n].")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "name": {"type": "string", "description": "Variable name, dotted path, or In[n]/Out[n]."},
        "max_chars": {"type": "integer", "description": "Longest description to return (default 4000)."}},
        "required": ["name"]}

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        name = args.get("name") if isinstance(args, dict) else None
        if not isinstance(name, str) or not _NAME.fullmatch(name.strip()):
            return self._fail(args, "Inspecting a kernel variable",
                              "argument 'name' must be a variable name, a dotted path or In[n]/Out[n]")
        max_chars = args.get("max_chars", 4000)
        if isinstance(max_chars, str) and max_chars.isdigit():
            max_chars = int(max_chars)
        if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 100:
            return self._fail(args, "Inspecting a kernel variable", "argument 'max_chars' must be an integer >= 100")
        name = name.strip()
        return Prepared(args={"name": name, "max_chars": min(max_chars, 50_000)}, summary=f"Inspecting {name}")

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        name = prepared.args["name"]
        answer = await self._probe(ctx, {"op": "describe", "name": name, "max_chars": prepared.args["max_chars"]},
                                   READ_TIMEOUT)
        if isinstance(answer, ToolResult):
            return answer
        if not answer.get("found"):
            return ToolResult(output=f"{self.name}: no variable '{name}' in the kernel (call list_variables to see "
                                     "what exists)", error=True)
        return ToolResult(output=str(answer.get("text") or ""))


class RunPythonTool(_LiveTool):
    name = "run_python"
    description = ("Run Python code in the kernel of the user's notebook, in the user's namespace (variables persist, "
                   "the user's data is available). Returns what it printed and the value of the last expression. "
                   "The user approves each call.")
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {
        "code": {"type": "string", "description": "The Python code to run."},
        "timeout_seconds": {"type": "integer", "description": "Stop (interrupt) the run after this long (120)."}},
        "required": ["code"]}
    mutates: ClassVar[bool] = True
    default_approval: ClassVar[Approval] = "ask"

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        code = args.get("code") if isinstance(args, dict) else None
        if not isinstance(code, str) or not code.strip():
            return self._fail(args, "Running Python in the kernel", "argument 'code' must be non-empty Python code")
        try:
            ast.parse(code, "<run_python>", "exec")
        except SyntaxError as exc:
            return self._fail({"code": code}, "Running Python in the kernel",
                              f"syntax error at line {exc.lineno}: {exc.msg}")
        timeout = args.get("timeout_seconds", RUN_TIMEOUT)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            timeout = RUN_TIMEOUT
        first = code.strip().splitlines()[0]
        summary = f"Running Python: {first[:60]}" + ("…" if len(first) > 60 or "\n" in code.strip() else "")
        return Prepared(args={"code": code, "timeout_seconds": timeout}, summary=summary)

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        notebook = ctx.default_notebook
        if notebook is None:
            return ToolResult(output=f"{self.name}: {_NO_NOTEBOOK}", error=True)
        timeout = float(prepared.args["timeout_seconds"])
        try:
            answer = await probe(self.kernels, notebook, {"op": "run", "code": prepared.args["code"]},
                                 timeout=timeout)
        except TimeoutError:
            await self.kernels.interrupt(notebook)  # it was idle when we sent: what runs is our code
            return ToolResult(output=f"{self.name}: timed out after {timeout:g} s; the kernel was interrupted",
                              error=True)
        except asyncio.CancelledError:  # Stop: interrupt our run, then stop as asked
            await asyncio.shield(self.kernels.interrupt(notebook))
            raise
        except (KernelBusy, NoKernel, KernelError) as exc:
            return ToolResult(output=f"{self.name}: {_failure(exc, timeout)}", error=True)
        return ToolResult(output=str(answer.get("output") or "(no output)"), error=bool(answer.get("failed")))


def _field(context: Any, key: str) -> Any:
    if isinstance(context, dict):
        return context.get(key)
    value = getattr(context, key, None)
    if value is None:
        value = (getattr(context, "model_extra", None) or {}).get(key)
    return value


def _attached_notebook(contexts: Sequence[Any]) -> Path | None:
    found = [str(_field(c, "path")) for c in contexts
             if _field(c, "type") == "file" and str(_field(c, "path") or "").endswith(".ipynb")
             and not _field(c, "linesRange") and not _field(c, "lines_range")]
    return Path(found[0]) if len(found) == 1 else None


class LiveKernelPlugin:
    """The live-kernel tools and ``@`` variables as an engine plug-in (the server extension adds one per engine).

    It implements the ``plugins.Plugin`` protocol structurally: tools sit below the plug-in contract's layer."""

    name = "kernel"

    def __init__(self, kernels: NotebookKernels) -> None:
        self.kernels = kernels
        self.engine: Any = None
        self._tools = (ListVariablesTool(kernels), InspectVariableTool(kernels), RunPythonTool(kernels))

    def attach(self, host: Any) -> None:
        self.engine = host

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def tools(self) -> Sequence[Any]:
        return self._tools

    def commands(self) -> Sequence[Any]:
        return ()

    async def render_command(self, command: Any, args_text: str) -> str:
        raise NotImplementedError(getattr(command, "name", "command"))

    async def query_contexts(self, query: str, contexts: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """The attached notebook's kernel variables matching ``@query`` (nothing when its kernel is busy: the
        completion must not wait for the user's cell)."""
        notebook = _attached_notebook(contexts)
        if notebook is None or not re.fullmatch(r"[\w.]*", query or ""):
            return []
        try:
            answer = await probe(self.kernels, notebook, {"op": "list", "query": query or "", "limit": 30},
                                 timeout=QUERY_TIMEOUT)
        except (KernelBusy, NoKernel, KernelError, TimeoutError):
            return []
        found = []
        for row in answer.get("variables") or []:
            if not isinstance(row, dict) or not _NAME.fullmatch(str(row.get("name"))):
                continue
            kind = str(row.get("type") or "").rsplit(".", 1)[-1]
            summary = str(row.get("summary") or "")
            found.append({"type": "mcpResource", "server": KERNEL_SERVER, "uri": f"kernel:{row['name']}",
                          "name": str(row["name"]), "description": f"{kind} {summary}".strip()[:200],
                          "mimeType": "text/plain", "notebook": str(notebook)})
        return found

    async def read_context(self, context: Any) -> str | None:
        """The live description of an attached kernel variable (as ``%eca @name`` attaches it)."""
        if _field(context, "type") != "mcpResource" or _field(context, "server") != KERNEL_SERVER:
            return None
        name = str(_field(context, "name") or "")
        notebook = _field(context, "notebook")
        if not _NAME.fullmatch(name) or not isinstance(notebook, str) or not notebook.endswith(".ipynb"):
            raise KernelError(f"'{name}' does not name a kernel variable of a notebook")
        try:
            answer = await probe(self.kernels, Path(notebook), {"op": "describe", "name": name}, timeout=READ_TIMEOUT)
        except TimeoutError:
            raise KernelBusy() from None
        if not answer.get("found"):
            raise KernelError(f"no variable '{name}' in the kernel of {Path(notebook).name}")
        return ("Kernel variable mentioned with @ (live value from the user's Jupyter kernel):\n\n"
                + str(answer.get("text") or ""))
