"""ACP sessions: one per engine chat (same id), with the mode, model and config options ACP shows for it.

A session is an engine chat seen through ACP: its mode is the engine's behavior, its model one of the workspace's
models, and ``configOptions`` present both as selects. This module answers what a ``session/new`` /
``session/load`` / ``session/list`` result says about sessions; the connection decides when.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..engine.engine import Engine
from ..protocol.errors import INVALID_PARAMS, RpcError
from ._limits import SessionLimits, UpdateOutbox
from ._schema import AvailableCommand, ConfigOption, ModeState, SessionInfo, SessionMode, SessionPage, SessionState
from ._terminal import TerminalRunner
from ._updates import SessionUpdates
from ._workspaces import Workspace

__all__ = ["MODE_ALIASES", "MODE_DESCRIPTIONS", "SESSION_PAGE", "Session", "Turn", "available_commands", "session_page"]

MODE_DESCRIPTIONS = {
    "code": "Reads and changes your files; every change is shown as a diff for your approval.",
    "plan": "Analyses and proposes a plan; never changes a file.",
}
_OTHER_MODE = "An agent from your configuration."
#: The mode names acp-messages.md's examples use (opencode's: ``build`` in session/new, ``architect`` in
#: session/set_mode) → ours, so a client that sends them gets the spec's ``{}`` instead of "unknown mode". An agent
#: of the configuration with one of these names is itself.
MODE_ALIASES = {"build": "code", "architect": "plan"}


def _describe(engine: Engine, agent_id: str) -> str:
    """A mode's description: ours for the built-ins, else the agent's own ``description``."""
    spec = engine.agents.get(agent_id)
    return MODE_DESCRIPTIONS.get(agent_id) or (spec.description if spec is not None else None) or _OTHER_MODE
SESSION_PAGE = 100


@dataclass
class Turn:
    """The prompt running in a session."""

    cancelled: bool = False


@dataclass
class Session:
    id: str
    workspace: Workspace
    updates: SessionUpdates
    mode: str
    model: str | None
    turn: Turn | None = None
    rejected_always: set[tuple[str, str]] = field(default_factory=set)
    #: acp-messages.md's per-session rate limits (from the workspace config's ``acp`` key)
    limits: SessionLimits = field(default_factory=SessionLimits)
    #: this session's ``session/update``\\ s, kept under their limit (set by the connection)
    outbox: UpdateOutbox | None = None
    #: runs shell_command in the client's terminal, when the client offers ``terminal`` (set by the connection)
    terminal: TerminalRunner | None = None
    #: ends the session's subscription to its chat's typed contents (``Engine.subscribe``; set by the connection)
    unsubscribe: Callable[[], None] | None = None

    @property
    def engine(self) -> Engine:
        return self.workspace.engine

    # -- modes and models ----------------------------------------------------------------------------------------

    def current_model(self) -> str | None:
        engine = self.engine
        model = self.model or engine.selected_model or engine.registry.default_model()
        return model if model in engine.registry.models() else None

    def state(self) -> SessionState:
        """The modes / models / configOptions block of a session/new or session/load answer."""
        engine = self.engine
        modes: list[SessionMode] = [{"id": b, "name": b.capitalize(), "description": _describe(engine, b)}
                                    for b in engine.behaviors()]
        mode_state: ModeState = {"currentModeId": self.mode, "availableModes": modes}
        models = engine.registry.models()
        current = self.current_model()
        if models and current is not None:
            return {"modes": mode_state,
                    "models": {"currentModelId": current,
                               "availableModels": [{"modelId": m, "name": m} for m in models]},
                    "configOptions": self.config_options()}
        return {"modes": mode_state, "configOptions": self.config_options()}

    def config_options(self) -> list[ConfigOption]:
        engine = self.engine
        options: list[ConfigOption] = [{
            "id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": self.mode,
            "options": [{"value": b, "name": b.capitalize(), "description": _describe(engine, b)}
                        for b in engine.behaviors()],
        }]
        current = self.current_model()
        if current is not None:
            options.append({"id": "model", "name": "Model", "category": "model", "type": "select",
                            "currentValue": current,
                            "options": [{"value": m, "name": m} for m in engine.registry.models()]})
        return options

    def apply_mode(self, mode: str) -> None:
        behaviors = self.engine.behaviors()
        mode = self.engine.agents.canonical(mode) or mode  # (the deprecated ``agent`` is ``code``)
        if mode not in behaviors and MODE_ALIASES.get(mode) in behaviors:
            mode = MODE_ALIASES[mode]
        if mode not in behaviors:
            raise RpcError(INVALID_PARAMS, f"unknown mode '{mode}'; available: {', '.join(behaviors)}",
                           {"modeId": mode})
        self.mode = mode

    def apply_model(self, model: str) -> None:
        models = self.engine.registry.models()
        if model not in models:
            raise RpcError(INVALID_PARAMS, f"unknown model '{model}'; available: {', '.join(models) or 'none'}",
                           {"modelId": model})
        self.model = model

    def apply_option(self, config_id: str, value: Any) -> None:
        if not isinstance(value, str):
            raise RpcError(INVALID_PARAMS, f"'{config_id}' takes one of its listed values, not a boolean",
                           {"configId": config_id})
        if config_id == "mode":
            self.apply_mode(value)
        elif config_id == "model":
            self.apply_model(value)
        else:
            raise RpcError(INVALID_PARAMS, f"unknown config option '{config_id}'; available: mode, model",
                           {"configId": config_id})

    # -- the end of a turn ---------------------------------------------------------------------------------------

    def stop_reason(self, turn: Turn) -> str:
        if turn.cancelled:
            return "cancelled"
        if self.updates.round_cap_hit:
            return "max_turn_requests"
        chat = self.engine.chats.get(self.id)
        # The engine does not record the provider's stop reason yet; when it does (``last_stop_reason``), a
        # length-limited answer is reported as such.
        if getattr(chat, "last_stop_reason", None) == "max_tokens":
            return "max_tokens"
        return "end_turn"


def available_commands(engine: Engine) -> list[AvailableCommand]:
    """The engine's commands as an ``available_commands_update`` lists them."""
    commands = []
    for command in engine.query_commands(""):
        entry: AvailableCommand = {"name": command.name, "description": command.description}
        if command.arguments:
            entry["input"] = {"hint": " ".join(f"<{a.name}>" if a.required else f"[{a.name}]"
                                               for a in command.arguments)}
        commands.append(entry)
    return commands


def _iso(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def session_page(workspaces: Iterable[Workspace], cursor: str | None) -> SessionPage:
    """A ``session/list`` answer: the saved chats of *workspaces*, most recently updated first, one page from
    *cursor* (an offset, as we hand them out in ``nextCursor``)."""
    infos: list[SessionInfo] = []
    for workspace in workspaces:
        for chat in workspace.engine.list_chats():
            info: SessionInfo = {"sessionId": chat.id, "cwd": str(workspace.cwd)}
            if chat.title:
                info["title"] = chat.title
            updated = _iso(chat.updated_at)
            if updated:
                info["updatedAt"] = updated
            infos.append(info)
    infos.sort(key=lambda i: i.get("updatedAt") or "", reverse=True)
    try:
        start = int(cursor) if cursor else 0
    except ValueError:
        raise RpcError(INVALID_PARAMS, "invalid cursor", {"cursor": cursor}) from None
    result: SessionPage = {"sessions": infos[start:start + SESSION_PAGE]}
    if start + SESSION_PAGE < len(infos):
        result["nextCursor"] = str(start + SESSION_PAGE)
    return result
