"""The plug-in contract: extra tools, commands and contexts handed to the engine from outside its core.

MCP servers (one plug-in managing all configured servers), the notebook kernel (``list_variables``, ``run_python``,
…) and an ACP client's resources extend the engine through this one small contract instead of reaching into it.
It lives below both the engine and :mod:`eca_notebook.mcp` (layer 3), so imports only go down: plug-ins know the
engine only as a :class:`PluginHost`, and the engine is handed plug-ins (``Engine.add_plugin``) rather than
importing them. Every method has a cheap default in :class:`BasePlugin`, so a plug-in implements only what it
offers.

Plug-ins report their own status (e.g. MCP's per-server ``tool/serverUpdated``) with ``host.broadcast`` and call
``host.tools_changed()`` when their tool list changes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .tools.base import Tool

__all__ = ["BasePlugin", "Command", "CommandArgument", "Plugin", "PluginHost", "TextContexts"]


@dataclass
class CommandArgument:
    """One argument of a chat command, as ``chat/queryCommands`` lists it."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass
class Command:
    """A chat command (``/name args``): a built-in, a custom prompt from a markdown file, or an MCP prompt."""

    name: str
    description: str
    type: str  # "native" | "custom-prompt" | "mcp-prompt" | "skill"
    arguments: list[CommandArgument] = field(default_factory=list)
    template: str | None = None  # custom-prompt: the body with placeholders
    path: Path | None = None  # custom-prompt: where it was loaded from
    server: str | None = None  # mcp-prompt: the MCP server offering it

    def __post_init__(self) -> None:
        # the reference server's spellings (``mcpPrompt``, ``customPrompt``), as a newer plug-in or client may send
        # them back, mean the engine's own
        self.type = {"mcpPrompt": "mcp-prompt", "customPrompt": "custom-prompt"}.get(self.type, self.type)


class PluginHost(Protocol):
    """What a plug-in sees of the engine it is attached to."""

    selected_behavior: str

    def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every connected client."""

    def tools_changed(self) -> None:
        """The plug-in's tool list changed: tell the clients."""

    def offered_tools(self, behavior: str) -> Mapping[str, Tool]:
        """The tools the model is offered under ``behavior``, by name."""

    def reserved_command_names(self) -> frozenset[str]:
        """Lower-cased names of the engine's own commands, which a plug-in's commands must not shadow."""


class Plugin(Protocol):
    """The hooks the engine calls; see :class:`BasePlugin` for the defaults."""

    name: str

    def attach(self, host: PluginHost) -> None: ...

    async def start(self) -> None: ...  # after `initialized`, in the background: never delays the handshake

    async def aclose(self) -> None: ...

    def tools(self) -> Sequence[Tool]: ...

    def commands(self) -> Sequence[Command]: ...

    async def render_command(self, command: Command, args_text: str) -> str: ...  # → the prompt text to send

    # wire-shaped contexts (mcpResource…); *contexts*: those the client attached already (the panel's active notebook)
    async def query_contexts(self, query: str, contexts: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    async def read_context(self, context: Any) -> str | None: ...  # text for an attached context it owns, else None


class BasePlugin:
    """Defaults for every hook: offers nothing."""

    name = "plugin"
    engine: PluginHost | None = None

    def attach(self, host: PluginHost) -> None:
        """Remember the host; called once by ``Engine.add_plugin``."""
        self.engine = host

    async def start(self) -> None:
        """Start background work (servers, watchers); the default has none."""
        return None

    async def aclose(self) -> None:
        """Stop what :meth:`start` started."""
        return None

    def tools(self) -> Sequence[Tool]:
        """Tools this plug-in offers the model."""
        return ()

    def commands(self) -> Sequence[Command]:
        """Chat commands this plug-in offers."""
        return ()

    async def render_command(self, command: Command, args_text: str) -> str:
        """The prompt text for one of :meth:`commands` run with ``args_text``."""
        raise NotImplementedError(command.name)

    async def query_contexts(self, query: str, contexts: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Contexts matching ``query`` for the client's ``@`` completion (*contexts*: what is attached already, e.g.
        the notebook whose kernel variables to offer)."""
        return []

    async def read_context(self, context: Any) -> str | None:
        """The text of an attached context this plug-in owns, else None."""
        return None


class TextContexts(BasePlugin):
    """Texts a door attaches to one prompt as contexts: each becomes an ``mcpResource`` context of the pseudo-server
    *server* (not an MCP server), which the engine's context renderer reads back through :meth:`read_context` — so a
    door's own material (an ACP prompt's embedded resources, the session stream's editor context) is shown, budgeted
    and recorded like any attached context, with no special case in the engine. The door drops its texts when the
    turn is over."""

    def __init__(self, name: str, server: str) -> None:
        self.name = name
        self.server = server
        self._texts: dict[str, str] = {}
        self._ids = itertools.count(1)

    def put(self, text: str) -> str:
        """Keep *text*; the token that names it."""
        token = f"t{next(self._ids)}"
        self._texts[token] = text
        return token

    def context(self, token: str, uri: str, name: str) -> dict[str, Any]:
        """The ``mcpResource`` context (ECA wire form) that shows the text of *token* as *name*."""
        return {"type": "mcpResource", "uri": uri, "name": name, "server": self.server, "textToken": token}

    def drop(self, tokens: list[str]) -> None:
        for token in tokens:
            self._texts.pop(token, None)

    async def read_context(self, context: Any) -> str | None:
        if getattr(context, "server", None) != self.server:
            return None
        token = (getattr(context, "model_extra", None) or {}).get("textToken")
        return self._texts.get(token) if isinstance(token, str) else None
