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
from typing import Any, Literal, NotRequired, Protocol, TypedDict, TypeVar

from pydantic import Field

from ..protocol import McpResourceContext
from ._args import ToolArgs
from ._tool import NativeTool, ToolError
from .base import Prepared, ToolContext, ToolResult

__all__ = [
    "BUSY_MESSAGE",
    "KERNEL_SERVER",
    "CodeArgs",
    "InspectVariableArgs",
    "InspectVariableTool",
    "KernelBusy",
    "KernelError",
    "ListVariablesArgs",
    "ListVariablesTool",
    "LiveKernelPlugin",
    "NoKernel",
    "NotebookKernels",
    "ProbeListing",
    "ProbeRequest",
    "ProbeVariable",
    "RunPythonArgs",
    "RunPythonTool",
    "check_code",
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
A = TypeVar("A", bound=ToolArgs)
_NO_NOTEBOOK = ("no notebook is attached to this prompt: make the notebook the active tab in JupyterLab (its chip "
                "on in the panel) and ask again")


class ProbeRequest(TypedDict):
    """What the probe is asked (``_kernel_probe._eca_main``): list the variables matching ``query`` (at most
    ``limit``), describe ``name`` (at most ``max_chars``), or run ``code``."""

    op: Literal["list", "describe", "run"]
    query: NotRequired[str]
    limit: NotRequired[int]
    name: NotRequired[str]
    max_chars: NotRequired[int]
    code: NotRequired[str]


class ProbeVariable(TypedDict):
    """One variable of the probe's listing (``type``: the qualified class name; ``summary``: shape, length…)."""

    name: str
    type: str
    summary: str


class ProbeListing(TypedDict):
    """The probe's answer to ``list`` as the probe makes it (read back from the kernel it is untrusted JSON):
    the first ``limit`` variables, and how many more matched."""

    variables: list[ProbeVariable]
    more: int


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
def _probe_sources() -> tuple[str, str]:
    """The probe's source and that of the helpers it shares with ``%eca`` (``eca_notebook/_kernel_values.py``)."""
    here = Path(__file__).parent
    return ((here.parent / "_kernel_values.py").read_text(encoding="utf-8"),
            (here / "_kernel_probe.py").read_text(encoding="utf-8"))


def probe_expression(args: ProbeRequest) -> str:
    """The ``user_expressions`` entry that runs the probe with *args* (str/int values: their repr is a literal) in a
    dictionary of its own, handed the user's namespace, and evaluates to its JSON answer."""
    helpers, source = _probe_sources()
    return ("(lambda g: (exec(g['_eca_lib'], g), exec(g['_eca_src'], g), "
            "g['_eca_main'](g['_eca_ns'], g['_eca_args']))[2])("
            f"{{'__builtins__': __builtins__, '__name__': '_eca_probe', '_eca_lib': {helpers!r}, "
            f"'_eca_src': {source!r}, '_eca_ns': globals(), '_eca_args': {args!r}}})")


async def probe(kernels: NotebookKernels, notebook: Path, args: ProbeRequest, *, timeout: float) -> dict[str, Any]:
    """Run the probe in the notebook's kernel; its answer. The kernel's text is untrusted: parsed as a literal only,
    size-capped, and read by the caller as any JSON object (whatever the kernel's code made of it). Past *timeout*
    the kernel is interrupted: it was idle when the probe was sent, so what still runs there is the probe, stuck in
    a value's ``shape``, ``__len__`` or ``__repr__`` — left running, every cell the user runs next would wait."""
    try:
        reply = await kernels.evaluate(notebook, probe_expression(args), timeout=timeout)
    except TimeoutError:
        await asyncio.shield(kernels.interrupt(notebook))
        raise
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


class ListVariablesArgs(ToolArgs):
    """``list_variables``' arguments (the ``%eca`` session's tool takes the same)."""

    filter: str | None = Field(None, description="Only names containing this text (optional).")


class InspectVariableArgs(ToolArgs):
    """``inspect_variable``'s arguments (the ``%eca`` session's tool takes the same)."""

    name: str = Field(description="Variable name, dotted path, or In[n]/Out[n].")
    max_chars: int = Field(4000, ge=100, description="Longest description to return (default 4000).")


class CodeArgs(ToolArgs):
    """The code ``run_python`` runs (all the ``%eca`` session's tool takes: it runs on the kernel's own thread)."""

    code: str = Field(description="The Python code to run.")


class RunPythonArgs(CodeArgs):
    """The panel's ``run_python``: the kernel is another process, so a run can be timed out (and interrupted)."""

    timeout_seconds: int | None = Field(None, ge=1, description="Stop (interrupt) the run after this long (120).")


def check_code(code: str) -> tuple[ast.Module, str]:
    """``run_python``'s code, parsed, and the call's summary; :class:`ToolError` when it is empty or does not parse
    (the model reads why, nothing runs)."""
    if not code.strip():
        raise ToolError("argument 'code' must not be empty")
    try:
        tree = ast.parse(code, "<run_python>", "exec")
    except SyntaxError as exc:
        raise ToolError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    first = code.strip().splitlines()[0]
    return tree, f"Running Python: {first[:60]}" + ("…" if len(first) > 60 or "\n" in code.strip() else "")


class _LiveTool(NativeTool[A]):
    server = "eca"
    origin = "native"

    def __init__(self, kernels: NotebookKernels) -> None:
        super().__init__()
        self.kernels = kernels

    async def _probe(self, ctx: ToolContext, args: ProbeRequest, timeout: float) -> dict[str, Any] | ToolResult:
        notebook = ctx.default_notebook
        if notebook is None:
            return ToolResult(output=f"{self.name}: {_NO_NOTEBOOK}", error=True)
        try:
            return await probe(self.kernels, notebook, args, timeout=timeout)
        except (KernelBusy, NoKernel, KernelError, TimeoutError) as exc:
            return ToolResult(output=f"{self.name}: {_failure(exc, timeout)}", error=True)


class ListVariablesTool(_LiveTool[ListVariablesArgs]):
    name = "list_variables"
    description = ("List the variables defined in the kernel of the user's notebook: name, type and a short summary "
                   "(shape of arrays and DataFrames, length of containers, value of scalars).")
    Args = ListVariablesArgs
    generic_summary = "Listing kernel variables"

    def _prepare(self, args: ListVariablesArgs, ctx: ToolContext) -> Prepared:
        return Prepared(args={"filter": args.filter} if args.filter else {}, summary=self.generic_summary)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
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


class InspectVariableTool(_LiveTool[InspectVariableArgs]):
    name = "inspect_variable"
    description = ("Describe one variable of the kernel of the user's notebook: type, shape, dtypes and the first rows "
                   "of a DataFrame or array, or a size-capped repr. Accepts a name, a dotted attribute path "
                   "(results.best) or In[n]/Out[n].")
    Args = InspectVariableArgs
    generic_summary = "Inspecting a kernel variable"

    def _prepare(self, args: InspectVariableArgs, ctx: ToolContext) -> Prepared:
        name = args.name.strip()
        if not _NAME.fullmatch(name):
            raise self.fail("argument 'name' must be a variable name, a dotted path or In[n]/Out[n]")
        return Prepared(args={"name": name, "max_chars": min(args.max_chars, 50_000)}, summary=f"Inspecting {name}")

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        name = prepared.args["name"]
        answer = await self._probe(ctx, {"op": "describe", "name": name, "max_chars": prepared.args["max_chars"]},
                                   READ_TIMEOUT)
        if isinstance(answer, ToolResult):
            return answer
        if not answer.get("found"):
            return ToolResult(output=f"{self.name}: no variable '{name}' in the kernel (call list_variables to see "
                                     "what exists)", error=True)
        return ToolResult(output=str(answer.get("text") or ""))


class RunPythonTool(_LiveTool[RunPythonArgs]):
    name = "run_python"
    description = ("Run Python code in the kernel of the user's notebook, in the user's namespace (variables persist, "
                   "the user's data is available). Returns what it printed and the value of the last expression. "
                   "The user approves each call.")
    Args = RunPythonArgs
    generic_summary = "Running Python in the kernel"
    mutates = True
    default_approval = "ask"

    def _prepare(self, args: RunPythonArgs, ctx: ToolContext) -> Prepared:
        _, summary = check_code(args.code)
        timeout = args.timeout_seconds or RUN_TIMEOUT
        return Prepared(args={"code": args.code, "timeout_seconds": timeout}, summary=summary)

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        notebook = ctx.default_notebook
        if notebook is None:
            return ToolResult(output=f"{self.name}: {_NO_NOTEBOOK}", error=True)
        timeout = float(prepared.args["timeout_seconds"])
        try:
            answer = await probe(self.kernels, notebook, {"op": "run", "code": prepared.args["code"]},
                                 timeout=timeout)
        except TimeoutError:  # probe interrupted the kernel: it was idle when we sent, what ran was our code
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
            context = McpResourceContext(server=KERNEL_SERVER, uri=f"kernel:{row['name']}", name=str(row["name"]),
                                         description=f"{kind} {summary}".strip()[:200], mime_type="text/plain")
            found.append({**context.dump(), "notebook": str(notebook)})  # whose kernel: read_context asks it
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
