"""What a turn's parts receive of the engine: small views named for their role, which the engine satisfies.

A prompt, a subagent's task and a user-proposed tool call (``%eca rewrite``) all start a turn in a chat the same
way — the agent's tool rules, the approvals waiting and given, the undo log, the chat's door, the chat book that runs
it — so they share :class:`TurnHost`; the chat book's part of it is :class:`ChatRunner`. Each is read at its use, not
kept: a config reload replaces the config, the registry and the agents, and a door sets a chat's delegate any time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ...protocol import JsonObject, WireContent
from ...tools.base import ChatDelegate
from ..chats import Chat
from ..chats.store import ChatStore
from ..config import LoadedConfig
from ..models import ModelChoice
from ..workspace import Agents, Hooks, WorkspaceTrust

if TYPE_CHECKING:
    from ...mcp import McpManager
    from ._approval import SessionApprovals
    from ._notebooks import UndoLog
    from ._toolbox import Toolbox
    from ._toolcall import PendingApproval
    from ._turn import Turn

__all__ = ["ChatRunner", "Listener", "ReportHost", "TurnHost"]


class Listener(Protocol):
    """A connected client. ``send`` must not block: doors queue the message and write it in order.

    A listener that can answer ``editor/getDiagnostics`` also has ``supports_diagnostics = True`` and
    ``async def request(method, params, timeout)``; the engine asks the first such listener. Likewise
    ``supports_questions`` for ``chat/askQuestion`` (the ``ask_user`` tool), ``supports_definition`` and
    ``supports_references`` for ``editor/getDefinition`` / ``editor/getReferences`` (the navigation tools).
    """

    def send(self, method: str, params: JsonObject) -> None:
        """Queue one notification for the client."""
        ...


class ChatRunner(Protocol):
    """The chat book as a turn's starter sees it: find or make the chat, run the turn in its task, save it."""

    def open_for_prompt(self, chat_id: str | None) -> Chat:
        """The chat to prompt (made when new or unknown)."""
        ...

    def start(self, chat: Chat, turn: Turn) -> None:
        """Run the turn in the chat's task."""
        ...

    def save(self, chat: Chat) -> None:
        """Queue a save of the chat."""
        ...

    async def stop(self, chat_id: str) -> bool:
        """Stop the chat's running turn; False when none runs."""
        ...


class AgentChoice(ModelChoice, Protocol):
    """The model choice and the agent choice: which agents exist, which one new prompts use, and the tools each is
    offered. What a turn and the built-in reports both read."""

    @property
    def agents(self) -> Agents:
        """The resolved agents: the chat's agent decides the tools, prompts and approvals of its turns."""
        ...

    @property
    def selected_behavior(self) -> str:
        """The agent of new prompts, for a chat that has none of its own."""
        ...

    @property
    def toolbox(self) -> Toolbox:
        """The tools an agent is offered and the system prompts that tell the model about them."""
        ...


class TurnHost(AgentChoice, Protocol):
    """What starting a turn in a chat needs: the model choice, the agents, the tools, the approval state, the
    chat's door, and where the turn's contents go."""

    @property
    def chat_book(self) -> ChatRunner:
        """The chats as a turn sees them: open, start, save, stop."""
        ...

    @property
    def hooks(self) -> Hooks:
        """The configured hooks, run before and after prompts and tool calls."""
        ...

    @property
    def chat_delegates(self) -> Mapping[str, ChatDelegate]:
        """Per chat, a door that applies its file changes or runs its commands itself."""
        ...

    @property
    def default_notebook(self) -> Path | None:
        """The notebook tools' default path (a ``%eca`` session's notebook)."""
        ...

    @property
    def session_approvals(self) -> SessionApprovals:
        """What the user allowed "for this session", per chat."""
        ...

    @property
    def pending_approvals(self) -> dict[tuple[str, str], PendingApproval]:
        """The calls waiting for the user, by (chat id, call id): the runner adds and removes them."""
        ...

    @property
    def undo_log(self) -> UndoLog:
        """The undos of finished calls' notebook edits."""
        ...

    def emit_content(self, chat: Chat, role: str, content: WireContent) -> None:
        """Redact, record and send one content of the chat."""
        ...


class ReportHost(AgentChoice, Protocol):
    """What the built-in reports read (``/doctor``, ``/config``, ``/context``, ``/prompt-show``): the config as
    loaded and its problems, the model choice, the agents and the tools they are offered, the rules' and skills'
    places (the trust decides which apply), the MCP servers and where chats are saved. Nothing here is changed."""

    @property
    def loaded(self) -> LoadedConfig:
        """Every config layer as read (sources, the merged raw config, problems)."""
        ...

    @property
    def problems(self) -> list[str]:
        """What is wrong with the configuration, in words for the user."""
        ...

    @property
    def workspace_folders(self) -> Sequence[Path]:
        """The workspace folders the reports name (rules, skills, config files)."""
        ...

    @property
    def global_config_dir(self) -> Path:
        """The user's own config folder (their rules, skills and agents)."""
        ...

    @property
    def trust(self) -> WorkspaceTrust:
        """Which workspace files apply: the reports say what waits for trust."""
        ...

    @property
    def mcp(self) -> McpManager | None:
        """The MCP servers, when any is configured."""
        ...

    @property
    def store(self) -> ChatStore | None:
        """Where chats are saved (None with ``pureConfig``)."""
        ...
