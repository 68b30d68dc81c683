"""Chat contexts: what a client attaches to ``chat/prompt`` (files, directories, URLs, cursor, MCP resources, git).

``ChatContext`` is discriminated on ``type``. A context type we don't know (a newer client, an editor-specific
extension) becomes :class:`UnknownContext` instead of failing validation: one exotic attachment must not make the
whole prompt invalid. The engine simply ignores contexts it cannot resolve.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Tag

from ._base import EcaModel

__all__ = [
    "CONTEXT_TYPES",
    "ChatContext",
    "CursorContext",
    "DirectoryContext",
    "FileContext",
    "GitContext",
    "ImageContext",
    "LinesRange",
    "McpResourceContext",
    "Position",
    "Range",
    "RepoMapContext",
    "TextContext",
    "UnknownContext",
    "WebContext",
]


class LinesRange(EcaModel):
    """A range of lines of a file, 1-based and inclusive."""

    start: int
    end: int


class Position(EcaModel):
    """A position in a text document: 0-based line and character (LSP)."""

    line: int
    character: int


class Range(EcaModel):
    """A range in a text document, from ``start`` to ``end`` (LSP)."""

    start: Position
    end: Position


class FileContext(EcaModel):
    """A file attached to a prompt, optionally only some of its lines.

    ``description`` (an extension of the spec, optional) is only a label: the server fills it in
    ``chat/queryContext`` answers that offer a code symbol's definition (``"class Circle"``, with ``linesRange``
    its lines) and ignores it when rendering."""

    type: Literal["file"] = "file"
    path: str
    lines_range: LinesRange | None = None
    description: str | None = None


class DirectoryContext(EcaModel):
    """A folder attached to a prompt."""

    type: Literal["directory"] = "directory"
    path: str


class WebContext(EcaModel):
    """A web page attached to a prompt."""

    type: Literal["web"] = "web"
    url: str


class RepoMapContext(EcaModel):
    """Deprecated by the spec (replaced by the directory-tree tool) but still sent by older clients."""

    type: Literal["repoMap"] = "repoMap"


class CursorContext(EcaModel):
    """The editor's cursor or selection in a file."""

    type: Literal["cursor"] = "cursor"
    path: str
    position: Range


class McpResourceContext(EcaModel):
    """A resource of an MCP server attached to a prompt."""

    type: Literal["mcpResource"] = "mcpResource"
    uri: str
    name: str = ""
    description: str = ""
    mime_type: str = ""
    server: str = ""


class GitContext(EcaModel):
    """The workspace's git state (an extension of the spec's context types, ``@git`` in the composer): the branch,
    staged, modified and untracked files, recent commits and the working diff, gathered when the prompt is sent.

    ``part`` narrows it to one of ``"status"`` (branch and changed files), ``"diff"`` (staged and unstaged changes)
    or ``"log"`` (recent commits); None is all of them. A plain string rather than a closed set so a newer client's
    part is a user-facing problem at render time, not an invalid prompt. ``description`` is only a label: the server
    fills it in ``chat/queryContext`` answers (e.g. "main · 2 staged, 1 modified") and ignores it when rendering.
    """

    type: Literal["git"] = "git"
    part: str | None = None
    description: str | None = None


class ImageContext(EcaModel):
    """An image attached inline (the reference's ``ImageContext``): a pasted screenshot, a notebook output. For a
    client that can name a file, a ``file`` context of a ``.png/.jpg/.jpeg/.gif/.webp`` is the same.

    ``base64`` is the raw bytes, no ``data:`` prefix. ``name`` (an extension, optional) labels it in notes and in the
    description a model that cannot see gets (``screenshot.png``, ``Out[3]``)."""

    type: Literal["image"] = "image"
    media_type: str
    base64: str
    name: str | None = None


class TextContext(EcaModel):
    """Inline text the client attaches (the reference's ``TextContext``): a buffer with no file the server can read
    — compile or terminal output, an untitled document, pasted text. It joins the user message (as
    ``<text label="…">``), not the system prompt, so a client sends it fresh with each prompt."""

    type: Literal["text"] = "text"
    #: A display name (a buffer's or terminal's name).
    label: str
    content: str


class UnknownContext(EcaModel):
    """Any context whose ``type`` is not one of :data:`CONTEXT_TYPES`; its other keys are kept as extras."""

    type: str


#: The context tags this revision of the protocol defines.
CONTEXT_TYPES: frozenset[str] = frozenset({"file", "directory", "web", "repoMap", "cursor", "mcpResource", "git",
                                          "image", "text"})


def _context_tag(value: Any) -> str | None:
    # Called with a dict when validating and with a model instance when serialising.
    if isinstance(value, UnknownContext):
        return "unknown"
    tag = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if isinstance(tag, str) and tag in CONTEXT_TYPES:
        return tag
    # Anything object-shaped falls back; non-objects (a bare string, a number) stay an error.
    return "unknown" if isinstance(value, (dict, BaseModel)) else None


ChatContext = Annotated[
    Annotated[FileContext, Tag("file")]
    | Annotated[DirectoryContext, Tag("directory")]
    | Annotated[WebContext, Tag("web")]
    | Annotated[RepoMapContext, Tag("repoMap")]
    | Annotated[CursorContext, Tag("cursor")]
    | Annotated[McpResourceContext, Tag("mcpResource")]
    | Annotated[GitContext, Tag("git")]
    | Annotated[ImageContext, Tag("image")]
    | Annotated[TextContext, Tag("text")]
    | Annotated[UnknownContext, Tag("unknown")],
    Discriminator(_context_tag),
]
