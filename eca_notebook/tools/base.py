"""The tool contract: what the agent loop needs from any tool (native now, MCP later).

A tool call goes through two steps so the user can see exactly what will happen *before* approving it:

1. ``prepare(args, ctx)`` — validate the arguments, resolve paths, compute a summary and (for file-changing tools)
   the unified diff. No side effects. A validation problem comes back as ``Prepared.error`` and the call ends as a
   ``toolCalled`` error the LLM can act on, without asking the user anything.
2. ``run(prepared, ctx)`` — do it, after approval. Cancelling the task that awaits it must stop the work (the shell
   tool kills its process group).
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from .._images import ImagePart
from ..protocol import JsonObject
from ..protocol.content import ContentModel
from ..protocol.navigation import (
    EditorGetDefinitionParams,
    EditorGetDefinitionResult,
    EditorGetReferencesParams,
    EditorGetReferencesResult,
)
from ..protocol.question import ChatAskQuestionParams, ChatAskQuestionResult
from ._names import provider_tool_name

__all__ = [
    "CURRENT_TOOL_CALL",
    "Approval",
    "ChatDelegate",
    "CommandOutcome",
    "CommandRequest",
    "FileAccess",
    "Origin",
    "Prepared",
    "RunCommand",
    "Tool",
    "ToolContext",
    "ToolResult",
    "llm_name",
    "provider_tool_name",
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


#: The id of the tool call running in this task (set by the engine around a call's prepare and run). A
#: :class:`FileAccess` reads it to name the call a write belongs to (a client applying patches ties its answer to it).
CURRENT_TOOL_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar("eca_tool_call", default=None)


@dataclass(frozen=True)
class CommandRequest:
    """A shell command the model wants run, handed to :attr:`ToolContext.run_command` (a door that runs commands
    elsewhere, e.g. in the user's own terminal). ``env`` holds only what the tool sets, never the server's
    environment; ``timeout`` is in seconds."""

    command: str
    cwd: str
    env: dict[str, str]
    reason: str | None
    timeout: float
    chat_id: str | None
    tool_call_id: str | None


@dataclass(frozen=True)
class CommandOutcome:
    """What running a :class:`CommandRequest` gave: the shell tool formats it for the model like a local run."""

    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int | None = None


#: Runs a command somewhere else than this process. Raises ``TimeoutError`` when no outcome came in time and
#: ``PermissionError`` (with the reason) when the command may not run at all.
RunCommand = Callable[[CommandRequest], Awaitable[CommandOutcome]]


@dataclass
class ToolContext:
    workspace_folders: list[Path]
    # `editor/getDiagnostics` round trip to the client; None when the client did not advertise the capability.
    request_diagnostics: Callable[[str | None], Awaitable[list[JsonObject]]] | None = None
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
    # Set when a host owns the notebooks (it offers its own notebook tools, e.g. Jupyter AI's MCP server, or refused
    # a raw .ipynb write): what to use instead. The file tools then refuse every .ipynb write with it.
    notebook_hint: str | None = None
    # The call being run (set per call by the engine): provenance for what the tool writes.
    chat_id: str | None = None
    tool_call_id: str | None = None
    # Optional: where shell commands run instead of a local process (see RunCommand); None runs them here.
    run_command: RunCommand | None = None
    # Optional: the workspace's content index (``retrieval.CodeIndex``) for the code-search tools; None without a
    # workspace folder or with ``index.content`` off.
    code_index: Any = None
    # Optional (set per call by the engine): shows a line of progress while a call runs ("Indexing 1,234 of 5,000
    # files…") where the door shows the turn's progress.
    progress: Callable[[str], None] | None = None
    # Optional: asks the user a question (``chat/askQuestion`` to a client that declared it can answer); None when
    # no connected client can, and the ``ask_user`` tool puts the question in the chat instead.
    ask_question: Callable[[ChatAskQuestionParams], Awaitable[ChatAskQuestionResult]] | None = None
    # Optional: ``editor/getDefinition`` / ``editor/getReferences`` to a client that declared it answers them (its
    # language server); None when none can, and the navigation tools answer from ``code_index`` instead.
    request_definition: Callable[[EditorGetDefinitionParams], Awaitable[EditorGetDefinitionResult]] | None = None
    request_references: Callable[[EditorGetReferencesParams], Awaitable[EditorGetReferencesResult]] | None = None
    # Folders outside the workspace that ``read_file`` reads without asking: the skill folders the user installed
    # (``~/.config/eca/skills/<name>``) for the model to read once it loaded that skill.
    read_roots: tuple[Path, ...] = ()
    # The engine's own key for what its tools write into files anyone can edit: the notebook tools sign the
    # provenance (``metadata.eca``) of the cells they write with it and believe only a signature that checks out.
    # None: nothing is signed, and no cell is said to be the assistant's.
    provenance_key: bytes | None = None
    # Optional: the engine's background jobs (``tools.jobs.JobRegistry``) for shell_command's ``background`` and
    # the bg_job tool; None where jobs cannot run (they are then refused with a reason).
    jobs: Any = None

    @property
    def root(self) -> Path:
        """Where relative paths resolve: the first workspace folder (or the current directory without one)."""
        return self.workspace_folders[0] if self.workspace_folders else Path.cwd()


@dataclass(frozen=True)
class ChatDelegate:
    """What one chat's tool calls use instead of the engine's defaults (``Engine.set_chat_delegate``): a door
    whose client applies the chat's file changes (``fs``) or runs its commands (``run_command``). Other chats on
    the same engine are untouched."""

    fs: FileAccess | None = None
    run_command: RunCommand | None = None
    #: Asked before each model request of the chat's turns: a note for the system prompt (e.g. what changed in the
    #: user's editor since the prompt); None or "" adds nothing.
    system_note: Callable[[], str | None] | None = None

    def apply(self, ctx: ToolContext) -> ToolContext:
        """*ctx* with this delegate's parts in place of the engine's (fields left None keep the engine's)."""
        if self.fs is None and self.run_command is None:
            return ctx
        return dataclasses.replace(ctx, fs=self.fs if self.fs is not None else ctx.fs,
                                   run_command=self.run_command if self.run_command is not None else ctx.run_command)


@dataclass
class Prepared:
    """A validated call, ready for approval and running."""

    args: dict[str, Any]  # validated and normalised (defaults filled)
    summary: str  # e.g. 'Reading file "src/app.py"'
    details: JsonObject | None = None  # {"type": "fileChange", "path", "diff", "linesAdded", "linesRemoved"}
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
    details: JsonObject | None = None
    # Reverts what the call changed (``chat/toolCallUndo``): returns a sentence for the user, raises ``ValueError``
    # with the reason when it cannot (the change was changed since). The engine keeps it for the chat.
    undo: Callable[[], Awaitable[str]] | None = None
    # Chat contents the call publishes besides its ``toolCalled`` (e.g. ``update_plan``'s ``plan``): the engine
    # sends them, as the assistant's, right after it — only for a call that succeeded.
    contents: list[ContentModel] = field(default_factory=list)
    # Images for the model with ``output`` (a notebook's plots, an image file, an MCP tool's images), already checked
    # (eca_notebook._images). The engine fits them to the model's provider, or describes them to a model that cannot
    # see (engine/models/_vision.py).
    images: list[ImagePart] = field(default_factory=list)


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
    def parameters(self) -> JsonObject:
        """JSON Schema (an object) of the arguments."""

    @property
    def mutates(self) -> bool:
        """Changes files or notebooks: hidden from read-only agents (``plan``, ``explorer``, ``readOnly: true``)."""

    @property
    def default_approval(self) -> Approval:
        """``allow`` or ``ask`` when no ``toolCall.approval`` rule matches."""

    def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared: ...

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult: ...


def tool_server(tool: Any) -> str:
    return getattr(tool, "server", None) or "eca"


def tool_origin(tool: Any) -> Origin:
    return getattr(tool, "origin", None) or "native"


def llm_name(tool: Any) -> str:
    """The name the model sees: ``eca__read_file``, ``github__create_issue``; made valid for every provider when the
    server's or the tool's own name is not (``Jupyter MCP Server`` → ``Jupyter_MCP_Server_<hash>__insert_cell``, see
    ``_names.py``). The engine keys its tools by it, so a call maps back exactly."""
    return provider_tool_name(tool_server(tool), tool.name)
