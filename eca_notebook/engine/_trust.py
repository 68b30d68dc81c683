"""Workspace trust: a workspace's own ``.eca/config.json`` may run code (MCP server commands, hook commands), so what
it defines is held back until the user trusts that workspace folder.

Why: opening a cloned repository must not run its ``mcpServers`` commands or its ``hooks`` before anyone looked at
them. What counts as code from a workspace layer: its ``mcpServers`` entries (a stdio server is a command; a remote
one is held too, it receives our calls and the chat's data) and its ``hooks``. Its ``commands``, agents, rules and
skills are prompts the user sees run, not programs, so they are not held. A server or hook *named* in the workspace
layer is held even when a user layer defines the same name: the workspace may have changed its command.

Held the same way: approvals the workspace layer *loosens* (``toolCall.approval`` or an agent's ``toolCall`` in the
workspace file: ``allow`` rules, ``byDefault: "allow"``, ``risk`` levels set to ``allow``, an ``ask``/``deny`` rule
of the user's removed or replaced) — they would let file-changing and shell tools run unasked. Until the workspace
is trusted each tool call's verdict is the stricter of the merged config's and the user's own layers'
(:attr:`ApprovalConfig.floor`, applied by engine/_approval.py), so the workspace's own ``ask``/``deny`` rules still
apply; the agents give every approval that floor (``Agents.approval_floor``), re-read at each prompt, so trusting
applies without a restart.

Deciding, per workspace folder (first match wins):

1. the folder defines no code → nothing to decide;
2. the user's config lists it (or a folder above it) in ``trustedWorkspaces`` → trusted. Only the user's own layers
   count: the config loader drops ``trustedWorkspaces`` from every workspace file (a repository never trusts itself);
3. the state file records "trusted" for the folder with the same digest of its code → trusted. The key is the
   resolved folder path and the value keeps a SHA-256 of the workspace layer's ``mcpServers`` + ``hooks`` (with
   the content of each hook script ``file`` inside the folder: the config names it, the file is the code), so an
   edited server command, hook or hook script asks again;
4. otherwise held: the first prompt of the session asks once (``chat/askQuestion``), or says how to decide
   (``/trust``) to a client that cannot answer questions. "Not now" holds for the rest of this session only.

The state file is ``$XDG_CACHE_HOME/eca-notebook/trusted-workspaces.json``, beside the saved chats, written whole
and atomically.

Trusting mid-session: the servers start at once, and the workspace's ``sessionStart`` hooks — held when the session
started — run then, once per session (a later ``/trust off`` and ``/trust`` does not run them again).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fileio import atomic_write
from ..protocol import (
    ChatAskQuestionOption,
    ChatAskQuestionParams,
    ConfigUpdatedChat,
    ConfigUpdatedParams,
    MetadataContent,
    TextContent,
)
from ..tools.question import QUESTION_TIMEOUT
from ._agents import Agents, build_agents, files_signature, parse_agent_markdown
from ._config_layers import global_config_path
from ._config_schema import ArgsRule
from ._paths import ensure_private_dir, xdg_cache_home

if TYPE_CHECKING:
    from ._chat import Chat
    from .engine import Engine

__all__ = ["TRUST_ANSWER", "TRUST_CONFIG_KEY", "HeldWorkspace", "WorkspaceTrust", "held_code", "state_path",
           "update_chat", "with_markdown_agents", "workspace_code"]

log = logging.getLogger(__name__)

#: The user-config key listing trusted folders (a folder trusts everything under it).
TRUST_CONFIG_KEY = "trustedWorkspaces"
TRUST_ANSWER = "Trust this workspace"
_NOT_NOW = "Not now"
_MCP_KEYS = ("mcpServers", "mcp_servers")


def state_path(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/eca-notebook/trusted-workspaces.json`` (next to ``chats/``)."""
    return xdg_cache_home(env) / "eca-notebook" / "trusted-workspaces.json"


def workspace_code(layer: Mapping[str, Any], below: Agents | None = None) -> dict[str, dict[str, Any]]:
    """The code-running part of a workspace layer: its non-null ``mcpServers`` and ``hooks`` entries, plus (only
    when it loosens any, so other digests stay as they were) its approvals: ``toolCall`` and each agent's."""
    servers: dict[str, Any] = {}
    for key in _MCP_KEYS:
        value = layer.get(key)
        if isinstance(value, Mapping):
            servers.update({str(k): v for k, v in value.items() if v is not None})
    hooks = layer.get("hooks")
    hooks = {str(k): v for k, v in hooks.items() if v is not None} if isinstance(hooks, Mapping) else {}
    code: dict[str, dict[str, Any]] = {"mcpServers": servers, "hooks": hooks}
    if approval_loosening(layer, below):
        code["approvals"] = {scope: approval for scope, approval in _approvals(layer).items()}
    return code


def with_markdown_agents(folder: Path, layer: Mapping[str, Any]) -> Mapping[str, Any]:
    """*layer* with the approvals of the folder's ``.eca/agents/*.md`` files as its ``agent`` entries: a markdown
    agent's ``tools:`` (``allow`` lists, ``byDefault: allow``) loosens approvals just as the config file can — and a
    workspace file may make that agent the default. The config file's own entry for an id wins, as when loading."""
    found: dict[str, Any] = {}
    for path in sorted((folder / ".eca" / "agents").glob("*.md")):
        parsed = parse_agent_markdown(path)
        if isinstance(parsed, tuple) and isinstance(parsed[1].get("toolCall"), Mapping):
            found[parsed[0]] = {"toolCall": parsed[1]["toolCall"]}
    if not found:
        return layer
    configured = layer.get("agent")
    return {**layer, "agent": {**found, **(configured if isinstance(configured, Mapping) else {})}}


def _approvals(layer: Mapping[str, Any]) -> dict[str, Any]:
    """Scope (``""`` for the global ``toolCall``, else the agent id) → that scope's ``toolCall.approval`` as written
    in *layer* (the reference's ``agent`` map and our older ``behavior`` map alike)."""
    found: dict[str, Any] = {}
    tool_call = layer.get("toolCall")
    if isinstance(tool_call, Mapping) and tool_call.get("approval") is not None:
        found[""] = tool_call["approval"]
    for key in ("behavior", "agent"):
        agents = layer.get(key)
        if not isinstance(agents, Mapping):
            continue
        for agent_id, entry in agents.items():
            tool_call = entry.get("toolCall") if isinstance(entry, Mapping) else None
            if isinstance(tool_call, Mapping) and tool_call.get("approval") is not None:
                found["code" if agent_id == "agent" else str(agent_id)] = tool_call["approval"]
    return found


def _same_rule(value: Any, rule: ArgsRule | None) -> bool:
    try:
        return rule is not None and ArgsRule.model_validate(value).args_matchers == rule.args_matchers
    except ValueError:
        return False


def approval_loosening(layer: Mapping[str, Any], below: Agents | None = None) -> list[str]:
    """What the approvals of a workspace *layer* let run without asking, in words ("eca__write_file", "any tool no
    rule names (byDefault allow)", "eca__shell_command (removes the deny rule)"), for the trust question. *below*:
    the agents of the user's own config, to tell a replaced ``ask``/``deny`` rule from a new one (without it only a
    removed rule counts)."""
    out: list[str] = []
    for scope, approval in _approvals(layer).items():
        if not isinstance(approval, Mapping):
            continue
        where = f" (agent {scope})" if scope else ""
        if approval.get("byDefault") == "allow":
            out.append(f"any tool without a rule (byDefault allow){where}")
        allow = approval.get("allow")
        if isinstance(allow, Mapping):
            out += [f"{name}{where}" for name, rule in allow.items() if rule is not None]
        risk = approval.get("risk")
        if isinstance(risk, Mapping):
            out += [f"{level}-risk calls (risk {level}: allow){where}" for level, v in risk.items() if v == "allow"]
        mine = below.tool_call_for(scope or None).approval if below is not None else None
        for kind in ("ask", "deny"):
            rules = approval.get(kind)
            if not isinstance(rules, Mapping):
                continue
            existing: Mapping[str, ArgsRule] = getattr(mine, kind) if mine is not None else {}
            for name, rule in rules.items():
                if rule is None and (mine is None or name in existing):
                    out.append(f"{name} (removes the {kind} rule){where}")
                elif rule is not None and name in existing and not _same_rule(rule, existing[name]):
                    out.append(f"{name} (replaces the {kind} rule){where}")
    return out


def hook_files(folder: Path, hooks: Mapping[str, Any]) -> dict[str, str | None]:
    """The hook scripts (``actions[].file``) inside *folder*: resolved path → SHA-256 of the content (None when
    unreadable). Part of the trust digest, so an edited script asks again; a script outside the workspace is not
    the repository's to change."""
    root = _resolve(folder)
    found: dict[str, str | None] = {}
    for entry in hooks.values():
        actions = entry.get("actions") if isinstance(entry, Mapping) else None
        for action in actions if isinstance(actions, list) else []:
            file = action.get("file") if isinstance(action, Mapping) else None
            if not isinstance(file, str) or not file.strip():
                continue
            path = Path(file).expanduser()
            path = (path if path.is_absolute() else root / path).resolve()
            if path != root and root not in path.parents:
                continue
            try:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                found[str(path)] = None
    return found


def _digest(code: Mapping[str, Any]) -> str:
    text = json.dumps(code, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _resolve(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def _describe_server(entry: Any) -> str:
    if not isinstance(entry, Mapping):
        return "(invalid entry)"
    if entry.get("command") is not None:
        return " ".join(str(p) for p in [entry.get("command"), *(entry.get("args") or [])])
    return str(entry.get("url") or "(no command)")


def _describe_hook(entry: Any) -> str:
    if not isinstance(entry, Mapping):
        return "(invalid entry)"
    actions = entry.get("actions")
    runs = [str(a.get("shell") or a.get("file") or "?") for a in (actions if isinstance(actions, list) else [])
            if isinstance(a, Mapping)]
    return f"{entry.get('type', '?')}: " + "; ".join(runs)


@dataclass
class HeldWorkspace:
    """One workspace folder whose code waits for the user's trust."""

    folder: Path
    digest: str
    servers: dict[str, str] = field(default_factory=dict)  # name → command line (or URL)
    hooks: dict[str, str] = field(default_factory=dict)  # name → "event: command"
    approvals: list[str] = field(default_factory=list)  # what its approvals let run unasked (approval_loosening)

    def describe(self) -> str:
        """One item a line, plain text: every door shows questions and system messages as they are (no markdown)."""
        head = f"Workspace {self.folder} has its own config that"
        if self.servers or self.hooks:
            head += " runs commands on this machine" + (" and" if self.approvals else ":")
        if self.approvals:
            head += " lets tools run without asking:"
        lines = [head]
        lines += [f"  • MCP server {name}: {what}" for name, what in self.servers.items()]
        lines += [f"  • hook {name}: {what}" for name, what in self.hooks.items()]
        lines += [f"  • allows without asking: {what}" for what in self.approvals]
        return "\n".join(lines)


def held_code(workspace_layers: Mapping[str, Mapping[str, Any]], trusted_folders: Sequence[str | Path],
              state: Mapping[str, Any], session: Mapping[str, str], below: Agents | None = None) -> list[HeldWorkspace]:
    """The workspace folders still held: those defining code (or loosening approvals, judged against *below*, the
    user's own agents) that neither the user config (*trusted_folders*), the state file (*state*: folder →
    ``{"digest": …}``) nor this session (*session*: folder → digest) trusts."""
    roots = [_resolve(p) for p in trusted_folders]
    held = []
    for folder, layer in workspace_layers.items():
        code = workspace_code(layer, below)
        if not code["mcpServers"] and not code["hooks"] and not code.get("approvals"):
            continue
        path = _resolve(folder)
        scripts = hook_files(path, code["hooks"])
        digest = _digest({**code, "hookFiles": scripts} if scripts else code)  # (no scripts: the digest as before)
        if any(path == root or root in path.parents for root in roots):
            continue
        saved = state.get(str(path))
        if (isinstance(saved, Mapping) and saved.get("digest") == digest) or session.get(str(path)) == digest:
            continue
        held.append(HeldWorkspace(path, digest, {n: _describe_server(e) for n, e in code["mcpServers"].items()},
                                  {n: _describe_hook(e) for n, e in code["hooks"].items()},
                                  approval_loosening(layer, below) if code.get("approvals") else []))
    return held


class WorkspaceTrust:
    """The engine's trust decisions: what is held now, asking once per session, ``/trust`` and ``/trust off``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.path = state_path(engine.env)
        self._session: dict[str, str] = {}  # folder → digest trusted this session (when the state file can't be saved)
        self._declined: set[str] = set()  # digests answered "Not now" this session
        self._asking: asyncio.Lock | None = None
        self._user_agents: tuple[Any, Agents] | None = None

    # -- state ---------------------------------------------------------------------------------------------------

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("cannot read %s (%s): every workspace counts as untrusted", self.path, type(exc).__name__)
            return {}
        folders = data.get("workspaces") if isinstance(data, Mapping) else None
        return dict(folders) if isinstance(folders, Mapping) else {}

    def _write_state(self, folders: Mapping[str, Any]) -> bool:
        try:
            ensure_private_dir(self.path.parent)
            atomic_write(self.path, json.dumps({"workspaces": folders}, indent=2, sort_keys=True) + "\n",
                         private=True)
        except OSError as exc:
            log.warning("cannot save workspace trust to %s: %s", self.path, exc.strerror or type(exc).__name__)
            return False
        return True

    def default_chat_trust(self) -> bool:
        """``chat.defaultTrust`` (the reference's): new chats start in trust mode. Only the user's own layers count:
        when a workspace file sets it, it is ignored (a repository must not switch off the approvals itself)."""
        chat = self.engine.loaded.raw.get("chat")
        if not isinstance(chat, Mapping) or chat.get("defaultTrust") is not True:
            return False
        layers = getattr(self.engine.loaded, "workspace_layers", None) or {}
        return not any(isinstance(layer.get("chat"), Mapping) and "defaultTrust" in layer["chat"]
                       for layer in layers.values())

    def _trusted_folders(self) -> list[str]:
        value = self.engine.loaded.raw.get(TRUST_CONFIG_KEY)
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []

    # -- what is held --------------------------------------------------------------------------------------------

    def held(self) -> list[HeldWorkspace]:
        """The folders whose code is held now (the config as loaded now, the state file as it is now)."""
        layers = dict(getattr(self.engine.loaded, "workspace_layers", None) or {})
        for folder in self.engine.workspace_folders:
            layer = with_markdown_agents(Path(folder), layers.get(str(folder), {}))
            if layer:
                layers[str(folder)] = layer
        if not layers:
            return []
        return held_code(layers, self._trusted_folders(), self._read_state(), self._session, self.user_agents())

    def user_agents(self) -> Agents | None:
        """The agents as the user's own layers define them (no workspace file, no workspace agent file)."""
        user_config = getattr(self.engine.loaded, "user_config", None)
        if user_config is None:
            return None
        config_dir = getattr(self.engine, "global_config_dir", None) or global_config_path(self.engine.env).parent
        key = (id(user_config), files_signature([], config_dir))
        if self._user_agents is None or self._user_agents[0] != key:
            self._user_agents = (key, build_agents(user_config, [], config_dir, self.engine.env))
        return self._user_agents[1]

    def approval_floor(self) -> Agents | None:
        """The user's own agents while a held workspace loosens approvals (each approval is held to theirs, see
        ``Agents.tool_call_for``), else None. Read at each use, so trusting applies at once."""
        if not any(w.approvals for w in self.held()):
            return None
        return self.user_agents()

    def held_servers(self) -> dict[str, str]:
        """MCP server name → why it does not start (for ``tool/serverUpdated``)."""
        out: dict[str, str] = {}
        for workspace in self.held():
            for name in workspace.servers:
                out[name] = f"pending-trust: defined by workspace {workspace.folder}; trust it with /trust"
        return out

    def held_hooks(self) -> set[str]:
        return {name for workspace in self.held() for name in workspace.hooks}

    # -- deciding ------------------------------------------------------------------------------------------------

    async def trust(self) -> list[HeldWorkspace]:
        """``/trust`` (or "Trust this workspace"): remember every held folder as trusted, start its servers."""
        held = self.held()
        if not held:
            return []
        state = self._read_state()
        for workspace in held:
            state[str(workspace.folder)] = {"digest": workspace.digest, "trusted": True}
            self._session[str(workspace.folder)] = workspace.digest  # even if the file cannot be written
        self._write_state(state)
        await self._release([name for workspace in held for name in workspace.servers])
        self._start_session_hooks({name for workspace in held for name in workspace.hooks})
        return held

    def _start_session_hooks(self, names: set[str]) -> None:
        """The trusted workspaces' ``sessionStart`` hooks, held when the session started: run them now (in the
        background, as at start), each once per session. Before the engine started, its start runs them."""
        engine = self.engine
        if not engine.started:
            return
        hooks = engine.hooks
        names = {name for name, hook in hooks.configured().items()
                 if name in names and name not in hooks.session_started and hook.get("type") == "sessionStart"}
        if names:
            hooks.session_started |= names  # (now: a second /trust before this run starts runs none)
            engine.background.spawn(hooks.run("sessionStart", names=names), "eca-hook-sessionStart")

    def trusted_now(self) -> set[str]:
        """This engine's folders that are not held (trusted, or defining no code), for :meth:`keep_trusted`."""
        held = {str(w.folder) for w in self.held()}
        folders = getattr(self.engine.loaded, "workspace_layers", None) or {}
        return {str(_resolve(f)) for f in folders} - held

    def keep_trusted(self, folders: set[str]) -> None:
        """After the user's own edit of a workspace config (``mcp/addServer`` and friends, once the config is
        reloaded): a folder in *folders* (from :meth:`trusted_now` before the edit) stays trusted with its new
        digest — the user's own change must not hold back what was already trusted."""
        changed = [w for w in self.held() if str(w.folder) in folders]
        if not changed:
            return
        state = self._read_state()
        for workspace in changed:
            state[str(workspace.folder)] = {"digest": workspace.digest, "trusted": True}
            self._session[str(workspace.folder)] = workspace.digest
        self._write_state(state)

    async def revoke(self) -> list[str]:
        """``/trust off``: forget this engine's folders; their servers stop and their hooks stop running."""
        folders = {str(_resolve(f)) for f in (getattr(self.engine.loaded, "workspace_layers", None) or {})}
        state = self._read_state()
        revoked = sorted(f for f in folders if f in state or f in self._session)
        for folder in folders:
            state.pop(folder, None)
            self._session.pop(folder, None)
        if revoked:
            self._write_state(state)
        mcp = self.engine.mcp
        held = self.held_servers()
        if mcp is not None and hasattr(mcp, "hold"):
            await mcp.hold(held)
        return revoked

    async def _release(self, names: list[str]) -> None:
        mcp = self.engine.mcp
        if mcp is not None and hasattr(mcp, "release"):
            await mcp.release(names)

    async def ask_if_needed(self, chat: Chat) -> None:
        """On a prompt: when something is held and this session did not ask yet, ask once (or say how to decide)."""
        held = [w for w in self.held() if w.digest not in self._declined]
        if not held:
            return
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:  # two chats prompting at once: one question
            held = [w for w in self.held() if w.digest not in self._declined]
            if not held:
                return
            for workspace in held:
                self._declined.add(workspace.digest)  # asked (or told) once per session, whatever the answer
            ask = self.engine.toolbox.questions()
            if ask is None:
                summary = "\n\n".join(w.describe() for w in held)
                self.engine.emit_content(chat, "system", _text(
                    f"{summary}\n\nThey are held back (servers not started, hooks not run, tools still asked) "
                    "until you trust the workspace: send /trust to trust it (/trust off takes it back)."))
                return
            summary = "\n\n".join(w.describe() for w in held)
            params = ChatAskQuestionParams(
                chat_id=chat.id, question=f"{summary}\n\nTrust this workspace?",
                options=[ChatAskQuestionOption(label=TRUST_ANSWER,
                                               description="Apply it all (remembered until it changes)"),
                         ChatAskQuestionOption(label=_NOT_NOW, description="Hold it this session (/trust later)")],
                allow_freeform=False)
            try:
                result = await asyncio.wait_for(ask(params), QUESTION_TIMEOUT)
            except Exception as exc:  # noqa: BLE001 - no answer (an error, a timeout) leaves things held
                log.info("workspace trust question failed: %s", exc)
                return
            if not result.cancelled and (result.answer or "").strip() == TRUST_ANSWER:
                await self.trust()
                self.engine.emit_content(chat, "system", _text(
                    "Workspace trusted: its MCP servers, hooks and approvals apply."))
            else:
                self.engine.emit_content(chat, "system", _text(
                    "Workspace not trusted: its MCP servers, hooks and looser approvals stay held. Send /trust "
                    "to trust it."))

    async def command(self, argument: str) -> str:
        """``/trust`` and ``/trust off``: the answer shown in the chat."""
        if argument.strip().lower() in ("off", "revoke", "no"):
            revoked = await self.revoke()
            if not revoked:
                return "No trusted workspace to revoke for this session's folders."
            return ("Workspace trust revoked: its MCP servers are stopped, its hooks no longer run and its "
                    "looser approvals are held again.")
        held = self.held()
        if not held:
            return ("Nothing to trust: no workspace config of this session defines MCP servers, hooks or looser "
                    "approvals held back.")
        await self.trust()
        names = [n for w in held for n in w.servers]
        hooks = [n for w in held for n in w.hooks]
        approvals = [a for w in held for a in w.approvals]
        parts = [f"MCP servers started: {', '.join(names)}." if names else "",
                 f"Hooks enabled: {', '.join(hooks)}." if hooks else "",
                 f"Allowed without asking: {', '.join(approvals)}." if approvals else ""]
        return " ".join(["Workspace trusted.", *[p for p in parts if p]])


def update_chat(engine: Engine, chat_id: str, *, title: str | None = None, trust: bool | None = None) -> bool:
    """``chat/update``: a new title and/or trust mode (read at each tool call, so a running prompt follows it at
    once); the clients get the title as metadata and the trust as a chat-scoped ``config/updated`` ``selectTrust``.
    False for an unknown chat."""
    chat = engine.get_chat(chat_id)
    if chat is None:
        return False
    if title is not None and title.strip():
        chat.title = title.strip()
        engine.emit_content(chat, "system", MetadataContent(title=chat.title))
    if trust is not None:
        chat.trust = trust
        engine.broadcast("config/updated", ConfigUpdatedParams(
            chat_id=chat.id, chat=ConfigUpdatedChat(select_trust=trust)).dump())
    engine.chat_book.save(chat)
    return True


def _text(text: str) -> TextContent:
    return TextContent(text=text)
