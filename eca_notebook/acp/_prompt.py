"""ACP prompt blocks → the engine's prompt: the message text, the contexts, and the embedded resources' texts.

ECA contents going the other way (engine → ``session/update``) are :mod:`._updates`' job. Here:

* text blocks join into the message (a space between two that would otherwise run together);
* resource links are cited in the message as ``[name](uri)`` and become ``file`` / ``web`` contexts, so the
  engine attaches what they point at;
* embedded resources become ``mcpResource`` contexts of the pseudo-server :data:`RESOURCE_SERVER`, whose texts
  :class:`EmbeddedResources` (a plug-in of the workspace's engine) serves to the context renderer for the length
  of the turn: they reach the model like any attached context without being echoed as the user's text;
* image blocks (``promptCapabilities.image``) become ``image`` contexts (``{type, mediaType, base64}``): the engine
  checks them like any image coming in (size, media type sniffed, bombs) and shows a model that cannot see a note;
* audio is refused (the agent advertises ``promptCapabilities`` without it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .._text import is_host_guidance
from ..plugins import TextContexts
from ..protocol import JsonObject
from ..protocol.errors import INVALID_PARAMS, RpcError
from ._schema import BlobResource, MediaBlock, ResourceBlock, ResourceLinkBlock, TextBlock

__all__ = ["RESOURCE_SERVER", "EmbeddedResources", "PromptInput", "prompt_input"]

RESOURCE_SERVER = "acp:embedded"  # the "server" of embedded-resource contexts; not an MCP server name one picks
EMPTY_MESSAGE = "See the attached context."


class EmbeddedResources(TextContexts):
    """Serves the texts of a prompt's embedded resources to the engine's context renderer (``mcpResource``
    contexts with ``server: "acp:embedded"``), so they are rendered like any attached context."""

    def __init__(self) -> None:
        super().__init__("acp-resources", RESOURCE_SERVER)


@dataclass
class PromptInput:
    """One ``session/prompt`` as the engine takes it; *tokens* are dropped from the resources after the turn."""

    message: str
    contexts: list[JsonObject] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)


def prompt_input(blocks: list[Any], resources: EmbeddedResources) -> PromptInput:
    """Translate a prompt's content blocks. Raises ``-32602`` for audio blocks (their resources already dropped)."""
    pieces: list[str] = []
    guidance_first = False
    result = PromptInput(message="")
    for block in blocks:
        if isinstance(block, TextBlock):
            pieces.append(block.text)
            # a host's guidance as the first block, the user's words after it
            guidance_first = guidance_first or (len(pieces) == 1 and is_host_guidance(block.text))
        elif isinstance(block, ResourceLinkBlock):
            name = block.title or block.name or block.uri
            pieces.append(f"[{name}]({block.uri})")
            parsed = urlparse(block.uri)
            if parsed.scheme == "file":
                result.contexts.append({"type": "file", "path": unquote(parsed.path)})
            elif parsed.scheme in ("http", "https"):
                result.contexts.append({"type": "web", "url": block.uri})
        elif isinstance(block, ResourceBlock):
            resource = block.resource
            if isinstance(resource, BlobResource):
                text = (f"(binary content, {resource.mime_type or 'unknown type'}, about "
                        f"{len(resource.blob) * 3 // 4} bytes: not shown)")
            else:
                text = resource.text
            token = resources.put(text)
            result.tokens.append(token)
            name = Path(unquote(urlparse(resource.uri).path)).name or resource.uri
            result.contexts.append(resources.context(token, resource.uri, name))
        elif isinstance(block, MediaBlock) and block.type == "image":
            # the engine checks and names it (a bad image is a note in the chat, the prompt goes on)
            result.contexts.append({"type": "image", "mediaType": block.mime_type, "base64": block.data,
                                    "name": Path(unquote(urlparse(block.uri).path)).name if block.uri else "image"})
        elif isinstance(block, MediaBlock):
            resources.drop(result.tokens)
            raise RpcError(INVALID_PARAMS, f"{block.type} content is not supported (promptCapabilities."
                                           f"{block.type} is false)", {"type": block.type})
    message = ""
    for index, piece in enumerate(pieces):
        if index == 1 and guidance_first and message and piece and not message.endswith("\n\n"):
            message = message.rstrip() + "\n\n"  # the host's guidance stays a paragraph of its own (chat titles)
        elif message and piece and not message[-1].isspace() and not piece[0].isspace():
            message += " "
        message += piece
    result.message = message if message.strip() else EMPTY_MESSAGE
    return result
