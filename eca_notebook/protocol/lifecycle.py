"""``initialize`` and its parts: who the client is, what it can do, which folders it works in.

The newer revision answers ``initialize`` with ``{}``; the early one expected models and behaviours there. An empty
object is a valid prefix of the early answer, so we send the early fields filled and newer clients ignore them.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from ._base import EcaModel, JsonObject, NoneAsEmptyList
from .question import ChatCapabilities

__all__ = [
    "ClientCapabilities",
    "ClientInfo",
    "CodeAssistantCapabilities",
    "DidChangeWorkspaceFoldersParams",
    "EditorCapabilities",
    "InitializeParams",
    "InitializeResult",
    "WorkspaceFolder",
    "WorkspaceFoldersChangeEvent",
]


class WorkspaceFolder(EcaModel):
    """A folder of the client's workspace, as a ``file://`` URI."""

    uri: str
    name: str = ""


class ClientInfo(EcaModel):
    """The client's name and version."""

    name: str
    version: str | None = None


class EditorCapabilities(EcaModel):
    """The editor features the client supports (e.g. answering ``editor/getDiagnostics``)."""

    #: The client answers ``editor/getDiagnostics``.
    diagnostics: bool | None = None
    #: The client answers ``notebook/getCells``, ``notebook/applyEdit`` and ``notebook/runCells`` for the notebooks
    #: it has open (so the engine's notebook tools change the live document, not the file).
    notebooks: bool | None = None
    #: The client answers ``editor/getDefinition`` (the ``editor_definition`` tool asks its language server).
    definition: bool | None = None
    #: The client answers ``editor/getReferences`` (the ``editor_references`` tool).
    references: bool | None = None


class CodeAssistantCapabilities(EcaModel):
    """The code-assistant features the client supports."""

    chat: bool | None = None
    editor: EditorCapabilities | None = None
    #: Chat features beyond ``chat`` (``askQuestion``: the client answers ``chat/askQuestion``).
    chat_capabilities: ChatCapabilities | None = None
    # Early revision only.
    doc: bool | None = None
    edit: bool | None = None
    fix: bool | None = None


class ClientCapabilities(EcaModel):
    """What the client can do: its editor and code-assistant capabilities."""

    code_assistant: CodeAssistantCapabilities | None = None


class InitializeParams(EcaModel):
    """``initialize``: the client introduces itself and its workspace folders."""

    process_id: int | None = None
    client_info: ClientInfo | None = None
    #: Arbitrary user config (``chatBehavior``, ``chatAgent: null``, provider settings…): the engine treats it as a
    #: config layer, so it is kept as a plain dict. May hold secrets — never log it.
    initialization_options: JsonObject | None = None
    capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    workspace_folders: Annotated[list[WorkspaceFolder], NoneAsEmptyList] = Field(default_factory=list)
    #: LSP-style single root some clients send instead of (or besides) ``workspaceFolders``.
    root_uri: str | None = None

    @field_validator("capabilities", mode="before")
    @classmethod
    def _null_capabilities(cls, value: Any) -> Any:
        return {} if value is None else value


class InitializeResult(EcaModel):
    """Early-revision fields; the newer revision's ``{}`` is this with every field left out."""

    models: list[str] | None = None
    chat_default_model: str | None = None
    chat_behaviors: list[str] | None = None
    chat_default_behavior: str | None = None
    chat_welcome_message: str | None = None


class WorkspaceFoldersChangeEvent(EcaModel):
    """The folders a client added to and removed from its workspace (LSP's shape)."""

    added: Annotated[list[WorkspaceFolder], NoneAsEmptyList] = Field(default_factory=list)
    removed: Annotated[list[WorkspaceFolder], NoneAsEmptyList] = Field(default_factory=list)


class DidChangeWorkspaceFoldersParams(EcaModel):
    """``workspace/didChangeWorkspaceFolders`` (reference server, e.g. a git worktree opened): the workspace roots
    change; a newly added folder's own config is held until the user trusts it, as at start."""

    event: WorkspaceFoldersChangeEvent
