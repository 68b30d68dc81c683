"""Engine plug-ins: extra tools, commands and contexts from outside the engine core.

MCP servers (one plug-in managing all configured servers) and the notebook kernel (``list_variables``,
``run_python``, …) extend the engine through this one small contract instead of reaching into it. Every method has a
cheap default in :class:`BasePlugin`, so a plug-in implements only what it offers.

Plug-ins see the engine only through ``attach(engine)``; they report their own status (e.g. MCP's per-server
``tool/serverUpdated``) with ``engine.broadcast`` and call ``engine.tools_changed()`` when their tool list changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ..tools.base import Tool
from .commands import Command

if TYPE_CHECKING:
    from .engine import Engine


class Plugin(Protocol):
    name: str

    def attach(self, engine: Engine) -> None: ...

    async def start(self) -> None: ...  # after `initialized`, in the background: never delays the handshake

    async def aclose(self) -> None: ...

    def tools(self) -> Sequence[Tool]: ...

    def commands(self) -> Sequence[Command]: ...

    async def render_command(self, command: Command, args_text: str) -> str: ...  # → the prompt text to send

    async def query_contexts(self, query: str) -> list[dict[str, Any]]: ...  # wire-shaped contexts (mcpResource…)

    async def read_context(self, context: Any) -> str | None: ...  # text for an attached context it owns, else None


class BasePlugin:
    """Defaults for every hook: offers nothing."""

    name = "plugin"
    engine: Engine | None = None

    def attach(self, engine: Engine) -> None:
        self.engine = engine

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    def tools(self) -> Sequence[Tool]:
        return ()

    def commands(self) -> Sequence[Command]:
        return ()

    async def render_command(self, command: Command, args_text: str) -> str:
        raise NotImplementedError(command.name)

    async def query_contexts(self, query: str) -> list[dict[str, Any]]:
        return []

    async def read_context(self, context: Any) -> str | None:
        return None
