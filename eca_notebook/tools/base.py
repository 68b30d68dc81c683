"""The tool contract: what the agent loop needs from any tool (native now, MCP later).

A tool call goes through two steps so the user can see exactly what will happen *before* approving it:

1. ``prepare(args, ctx)`` — validate the arguments, resolve paths, compute a summary and (for file-changing tools)
   the unified diff. No side effects. A validation problem comes back as ``Prepared.error`` and the call ends as a
   ``toolCalled`` error the LLM can act on, without asking the user anything.
2. ``run(prepared, ctx)`` — do it, after approval. Cancelling the task that awaits it must stop the work (the shell
   tool kills its process group).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ..protocol.content import ContentModel

__all__ = [
    "Approval",
    "FileAccess",
    "Origin",
    "Prepared",
    "Tool",
    "ToolContext",
    "ToolResult",
    "llm_name",
    "tool_origin",
    "tool_server",
]

Approval = Literal["allow", "ask"]
Origin = Literal["native", "mcp"]


class FileAccess(Protocol):
    """Where file tools read and write. The default is the disk; a door may substitute the client's view (ACP
    ``fs/read_text_file`` / ``fs/write_text_file``: unsaved editor buffers). ``None`` from ``read_text`` means "not
    handled here, use the disk"."""

    async def read_text(self, path: Path) -> str | None: ...

    async def write_text(self, path: Path, content: str) -> bool: ...


@dataclass
class ToolContext:
    workspace_folders: list[Path]
    # `editor/getDiagnostics` round trip to the client; None when the client did not advertise the capability.
    request_diagnostics: Callable[[str | None], Awaitable[list[dict[str, Any]]]] | None = None
    # Limits for what goes back to the LLM (reference defaults: 2000 lines / 50 KB).
    max_output_lines: int = 2000
    max_output_bytes: int = 50 * 1024
    # Optional: the client's view of files (see FileAccess); tools fall back to the disk when None.
    fs: FileAccess | None = None
    # Optional: the front end that has notebooks open (``tools.notebook.NotebookAccess``); the notebook tools fall
    # back to the ``.ipynb`` file for a notebook it does not have open.
    notebooks: Any = None
    # The notebook the session works in (a ``%eca`` in a notebook): the notebook tools' default ``path``.
    default_notebook: Path | None = None
    # Optional: runs a notebook's cells when no front end has it open (``tools.notebook.CellRunner``).
    cell_runner: Any = None
    # The call being run (set per call by the engine): provenance for what the tool writes.
    chat_id: str | None = None
    tool_call_id: str | None = None

    @property
    def root(self) -> Path:
        """Where relative paths resolve: the first workspace folder (or the current directory without one)."""
        return self.workspace_folders[0] if self.workspace_folders else Path.cwd()


@dataclass
class Prepared:
    """A validated call, ready for approval and running."""

    args: dict[str, Any]  # validated and normalised (defaults filled)
    summary: str  # e.g. 'Reading file "src/app.py"'
    details: dict[str, Any] | None = None  # {"type": "fileChange", "path", "diff", "linesAdded", "linesRemoved"}
    paths: list[Path] = field(default_factory=list)  # every resolved path the call touches (symlinks resolved)
    outside_workspace: bool = False  # any of `paths` is outside every workspace folder
    # Why this call must be asked even where an allow rule or ``byDefault: "allow"`` would let it run (e.g. a shell
    # command whose paths cannot be known before it runs); only an identical approval remembered this session
    # covers it. None: the usual rules apply.
    must_ask: str | None = None
    error: str | None = None  # invalid call: message for the LLM; the call is not run
    state: Any = None  # tool-private data computed in prepare (e.g. the new file content) for run()


@dataclass
class ToolResult:
    output: str  # already truncated for the LLM, with a note when it was
    error: bool = False
    details: dict[str, Any] | None = None
    # Reverts what the call changed (``chat/toolCallUndo``): returns a sentence for the user, raises ``ValueError``
    # with the reason when it cannot (the change was changed since). The engine keeps it for the chat.
    undo: Callable[[], Awaitable[str]] | None = None
    # Chat contents the call publishes besides its ``toolCalled`` (e.g. ``update_plan``'s ``plan``): the engine
    # sends them, as the assistant's, right after it — only for a call that succeeded.
    contents: list[ContentModel] = field(default_factory=list)


class Tool(Protocol):
    """A tool. Native tools are ``server = "eca"``, ``origin = "native"`` (the defaults when the attributes are absent)
    and are offered to the model as ``eca__<name>``; others (MCP servers, the notebook kernel's tools) set their own
    ``server``/``origin`` and are offered as ``<server>__<name>``.

    ``prepare`` may be a coroutine function (tools that must ask a client, e.g. through ``ctx.fs``)."""

    # Read-only members: a tool may define them as class attributes (NativeTool) or per instance (MCP tools).
    @property
    def name(self) -> str:
        """Without the server prefix, e.g. ``read_file``."""

    @property
    def description(self) -> str:
        """What the model is told the tool does."""

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema (an object) of the arguments."""

    @property
    def mutates(self) -> bool:
        """Changes files: hidden in the ``plan`` behavior."""

    @property
    def default_approval(self) -> Approval:
        """``allow`` or ``ask`` when no ``toolCall.approval`` rule matches."""

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> Prepared: ...

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult: ...


def tool_server(tool: Any) -> str:
    return getattr(tool, "server", None) or "eca"


def tool_origin(tool: Any) -> Origin:
    return getattr(tool, "origin", None) or "native"


def llm_name(tool: Any) -> str:
    """The name the model sees: ``eca__read_file``, ``github__create_issue``."""
    return f"{tool_server(tool)}__{tool.name}"
