"""Workspace trust: a workspace's own ``.eca/config.json`` may run code (MCP server commands, hook commands), so what
it defines is held back until the user trusts that workspace folder.

Why: opening a cloned repository must not run its ``mcpServers`` commands or its ``hooks`` before anyone looked at
them. What counts as code from a workspace layer: its ``mcpServers`` entries (a stdio server is a command; a remote
one is held too, it receives our calls and the chat's data), its ``hooks`` and its ``customTools`` (commands the
model would run, tools/custom.py: not offered until trusted). Its ``commands``, agents, rules and
skills are prompts the user sees run, not programs, so they are not held. A server or hook *named* in the workspace
layer is held even when a user layer defines the same name: the workspace may have changed its command.

Held the same way — engine/config/_hold.py: the engine then uses the config built without them, so the user's own
layers apply — what could send data out or take a secret without running anything: its providers' URLs, keys and
headers (the user's provider pointed elsewhere, or one of its own), every ``${env:}``/``${netrc:}`` in its config
file, agent files and skill files, the user's own hooks it removes or replaces, and skill folders it names outside
itself. While any folder is held the config without these parts applies (:meth:`WorkspaceTrust.effective_config`;
one answer trusts every held folder). The user's own MCP servers and hooks start in their configured ``cwd``, else
the workspace once trusted — a folder that defines nothing is trusted with ``/trust`` — else the home directory
(:meth:`WorkspaceTrust.process_cwd`): ``python3 -m some_server`` must not import the repository's ``some_server.py``.

Held the same way: approvals the workspace layer *loosens* (``toolCall.approval`` or an agent's ``toolCall`` in the
workspace file: ``allow`` rules, ``byDefault: "allow"``, ``risk`` levels set to ``allow``, an ``ask``/``deny`` rule
of the user's removed or replaced) — they would let file-changing and shell tools run unasked. Until the workspace
is trusted each tool call's verdict is the stricter of the merged config's and the user's own layers'
(:attr:`ApprovalConfig.floor`, applied by engine/turn/_approval.py), so the workspace's own ``ask``/``deny`` rules still
apply; the agents give every approval that floor (``Agents.approval_floor``), re-read at each prompt, so trusting
applies without a restart.

Deciding, per workspace folder (first match wins):

1. the folder defines no code → nothing to decide;
2. the user's config lists it (or a folder above it) in ``trustedWorkspaces`` → trusted. Only the user's own layers
   count: the config loader drops ``trustedWorkspaces`` from every workspace file (a repository never trusts itself);
3. the state file records "trusted" for the folder with the same digest of its code → trusted. The key is the
   resolved folder path and the value keeps a SHA-256 of the workspace layer's ``mcpServers`` + ``hooks`` (with
   the content of each hook script inside the folder — an action's ``file``, or a file its ``shell`` line names:
   the config names it, the file is the code) and of what else is held, so an edited server command, hook, hook
   script, provider or secret reference asks again;
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict

from ..._fileio import atomic_write
from ..._text import visible
from ...protocol import (
    ChatAskQuestionOption,
    ChatAskQuestionParams,
    ConfigUpdatedChat,
    ConfigUpdatedParams,
    JsonObject,
    MetadataContent,
    TextContent,
)
from ...tools.custom import CONFIG_KEY as CUSTOM_TOOLS_KEY
from ...tools.question import QUESTION_TIMEOUT
from ...tools.shell import files_named
from ..config import (
    ArgsRule,
    Config,
    LoadedConfig,
    ensure_private_dir,
    global_config_path,
    held_providers,
    hook_changes,
    outside_skills,
    provider_items,
    ref_items,
    secret_refs,
    secret_words,
    trusted_by_user,
    xdg_cache_home,
)
from ._agents import Agents, build_agents, files_signature, parse_agent_markdown
from ._front_matter import split_front_matter

if TYPE_CHECKING:
    from ..._tasks import BackgroundTasks
    from ...mcp import McpManager
    from ...protocol import ChatAskQuestionResult, WireContent
    from ..chats import Chat, ChatHost
    from ._hooks import Hooks

__all__ = ["TRUST_ANSWER", "TRUST_CONFIG_KEY", "HeldWorkspace", "QuestionAsker", "TrustHost", "WorkspaceTrust",
           "file_secrets", "folder_code", "held_code", "hook_files", "state_path", "update_chat",
           "with_markdown_agents", "workspace_code"]

log = logging.getLogger(__name__)

#: The user-config key listing trusted folders (a folder trusts everything under it).
TRUST_CONFIG_KEY = "trustedWorkspaces"
TRUST_ANSWER = "Trust this workspace"
_NOT_NOW = "Not now"
_MCP_KEYS = ("mcpServers", "mcp_servers")
_MAX_SCRIPT = 4 * 1024 * 1024  # of a hook script hashed for the digest (a bigger one: its first 4 MB)
_MAX_SCAN = 256 * 1024  # of a markdown agent or skill scanned for secrets (as much as is read when loading it)
_MAX_WORDS = 64  # words of one hook command looked up as files


def state_path(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/eca-notebook/trusted-workspaces.json`` (next to ``chats/``)."""
    return xdg_cache_home(env) / "eca-notebook" / "trusted-workspaces.json"


class WorkspaceCode(TypedDict):
    """What a workspace folder's config may run, loosen, send out or read (:func:`workspace_code`,
    :func:`folder_code`): the user trusts exactly this, by its digest. A key other than the first two is there only
    when it has something, so a digest saved before one existed stays the same."""

    mcpServers: JsonObject
    hooks: JsonObject
    customTools: NotRequired[JsonObject]
    approvals: NotRequired[JsonObject]
    providers: NotRequired[dict[str, JsonObject]]
    secrets: NotRequired[list[str]]
    hookChanges: NotRequired[list[str]]
    hookFiles: NotRequired[dict[str, str | None]]
    fileSecrets: NotRequired[list[str]]
    outsideSkills: NotRequired[list[str]]


def workspace_code(layer: Mapping[str, Any], below: Agents | None = None, written: Mapping[str, Any] | None = None,
                   user_raw: Mapping[str, Any] | None = None) -> WorkspaceCode:
    """The code-running part of a workspace layer: its non-null ``mcpServers`` and ``hooks`` entries, plus (only
    when it loosens any, so other digests stay as they were) its approvals: ``toolCall`` and each agent's — and,
    each only when present, what could send data out or take a secret (engine/config/_hold.py): its providers'
    connection fields (``providers``), the ``${env:}``/``${netrc:}`` it reads (``secrets``) and the user's own
    hooks it removes or replaces (``hookChanges``). *written*: the layer before its dynamic strings were resolved
    (default *layer*); *user_raw*: the user's own layers merged (their providers and hooks)."""
    servers: JsonObject = {}
    for key in _MCP_KEYS:
        value = layer.get(key)
        if isinstance(value, Mapping):
            servers.update({str(k): v for k, v in value.items() if v is not None})
    hooks = layer.get("hooks")
    hooks = {str(k): v for k, v in hooks.items() if v is not None} if isinstance(hooks, Mapping) else {}
    code: WorkspaceCode = {"mcpServers": servers, "hooks": hooks}
    tools = _custom_tools(layer if written is None else written)
    if tools:  # (only when present: the digests of folders without any stay as they were)
        code["customTools"] = tools
    if approval_loosening(layer, below):
        code["approvals"] = {scope: approval for scope, approval in _approvals(layer).items()}
    written = layer if written is None else written
    mine = user_raw or {}
    providers = held_providers(written, mine)
    if providers:
        code["providers"] = providers
    secrets = sorted({f"{where} {kind}:{name}" for where, kind, name in secret_refs(written)})
    if secrets:
        code["secrets"] = secrets
    changes = hook_changes(written, mine)
    if changes:
        code["hookChanges"] = changes
    return code


def _custom_tools(layer: Mapping[str, Any]) -> JsonObject:
    """The layer's non-null ``customTools`` entries, as written (the whole entry: its command, and its description
    and schema, which tell the model how to call it)."""
    tools = layer.get(CUSTOM_TOOLS_KEY)
    return {str(k): v for k, v in tools.items() if v is not None} if isinstance(tools, Mapping) else {}


def file_secrets(folder: Path) -> list[tuple[str, str, str]]:
    """The ``${env:}``/``${netrc:}`` in the folder's own markdown agents and skills: (what reads it, kind, name),
    e.g. ("the prompt of agent 'x'", "env", "OPENAI_API_KEY"). They are resolved when the agent or skill is read,
    and then sent to the model: held like the config file's."""
    found: list[tuple[str, str, str]] = []
    files = [("agent", p) for p in sorted((folder / ".eca" / "agents").glob("*.md"))]
    for root in (folder / ".eca" / "skills", folder / ".agents" / "skills"):
        files += [("skill", p) for p in sorted(root.glob("*/SKILL.md"))[:200]]
    for kind, path in files:
        try:
            text = path.read_bytes()[:_MAX_SCAN].decode("utf-8", errors="replace")
        except OSError:
            continue
        if "${" not in text:
            continue
        split = split_front_matter(text)
        meta, body = split if split is not None else ("", text)
        name = path.name.split(".", 1)[0].lower() if kind == "agent" else path.parent.name
        for where, part in ((f"{kind} '{name}' ({path.relative_to(folder)})", meta),
                            (f"the prompt of agent '{name}'" if kind == "agent" else
                             f"skill '{name}' ({path.relative_to(folder)})", body)):
            found += [(where, k, n) for _, k, n in secret_refs(part)]
    return found


def with_markdown_agents(folder: Path, layer: Mapping[str, Any]) -> Mapping[str, Any]:
    """*layer* with the approvals of the folder's ``.eca/agents/*.md`` files as its ``agent`` entries: a markdown
    agent's ``tools:`` (``allow`` lists, ``byDefault: allow``) loosens approvals just as the config file can — and a
    workspace file may make that agent the default. The config file's own entry for an id wins, as when loading."""
    found: JsonObject = {}
    for path in sorted((folder / ".eca" / "agents").glob("*.md")):
        parsed = parse_agent_markdown(path)
        if isinstance(parsed, tuple) and isinstance(parsed[1].get("toolCall"), Mapping):
            found[parsed[0]] = {"toolCall": parsed[1]["toolCall"]}
    if not found:
        return layer
    configured = layer.get("agent")
    return {**layer, "agent": {**found, **(configured if isinstance(configured, Mapping) else {})}}


def _approvals(layer: Mapping[str, Any]) -> JsonObject:
    """Scope (``""`` for the global ``toolCall``, else the agent id) → that scope's ``toolCall.approval`` as written
    in *layer* (the reference's ``agent`` map and our older ``behavior`` map alike)."""
    found: JsonObject = {}
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
    """The hook scripts inside *folder* — each ``actions[].file``, and each workspace file a ``shell`` string names
    (``python3 scripts/check.py``, ``bash ./x.sh``, ``python3 -m checks``: found with the shell parser) —: resolved
    path → SHA-256 of the content (None when unreadable). Part of the trust digest, so an edited script asks again;
    a script outside the workspace is not the repository's to change."""
    root = _resolve(folder)
    found: dict[str, str | None] = {}

    def add(name: str, *, must_exist: bool = False) -> None:
        path = Path(name).expanduser()
        try:
            path = (path if path.is_absolute() else root / path).resolve()
        except (OSError, RuntimeError, ValueError):
            return
        if path == root or root not in path.parents or str(path) in found:
            return
        if must_exist and not path.is_file():
            return
        try:
            with path.open("rb") as f:
                found[str(path)] = hashlib.sha256(f.read(_MAX_SCRIPT)).hexdigest()
        except OSError:
            found[str(path)] = None

    for entry in hooks.values():
        actions = entry.get("actions") if isinstance(entry, Mapping) else None
        for action in actions if isinstance(actions, list) else []:
            if not isinstance(action, Mapping):
                continue
            file, shell = action.get("file"), action.get("shell")
            if isinstance(file, str) and file.strip():
                add(file)
            elif isinstance(shell, str) and shell.strip():
                for name in files_named(shell)[:_MAX_WORDS]:
                    add(name, must_exist=True)
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


def _describe_tool(entry: Any) -> str:
    command = entry.get("command") if isinstance(entry, Mapping) else None
    return str(command) if isinstance(command, str) else "(invalid entry)"


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
    tools: dict[str, str] = field(default_factory=dict)  # custom tool name → its command template
    approvals: list[str] = field(default_factory=list)  # what its approvals let run unasked (approval_loosening)
    #: what it would send out, read or switch off, in words ("sends your openai key and your chats to http://…",
    #: "reads environment variable X into the prompt of agent 'y'", "removes your hook 'guard'")
    items: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One item a line, plain text: every door shows questions and system messages as they are (no markdown)."""
        head = f"Workspace {self.folder} has its own config that"
        what = []
        if self.servers or self.hooks or self.tools:
            what.append("runs commands on this machine")
        if self.approvals:
            what.append("lets tools run without asking")
        if self.items:
            what.append("sends data out, reads your secrets or changes your own settings")
        head += " " + ", ".join(what[:-1]) + (" and " if len(what) > 1 else "") + what[-1] + ":" if what else ":"
        lines = [visible(head)]  # (every item is the repository's text: a newline or a bidi override must show)
        lines += [f"  • MCP server {visible(name)}: {visible(what)}" for name, what in self.servers.items()]
        lines += [f"  • hook {visible(name)}: {visible(what)}" for name, what in self.hooks.items()]
        lines += [f"  • custom tool {visible(name)} (the model may call it): {visible(what)}"
                  for name, what in self.tools.items()]
        lines += [f"  • allows without asking: {visible(what)}" for what in self.approvals]
        lines += [f"  • {visible(item)}" for item in self.items]
        return "\n".join(lines)


def folder_code(folder: str | Path, layer: Mapping[str, Any], below: Agents | None = None,
                written: Mapping[str, Any] | None = None, user_raw: Mapping[str, Any] | None = None
                ) -> tuple[WorkspaceCode, str]:
    """(the folder's code as :func:`workspace_code` has it, plus its hook scripts and the secrets its markdown
    agents and skills read; the digest of it all). A key is added only when present, so a digest saved before
    stays the same."""
    path = _resolve(folder)
    code = workspace_code(layer, below, written, user_raw)
    scripts = hook_files(path, code["hooks"])
    files = sorted({f"{where} {kind}:{name}" for where, kind, name in file_secrets(path)})
    skills = outside_skills(layer if written is None else written, Path(folder))
    full = code.copy()
    if scripts:
        full["hookFiles"] = scripts
    if files:
        full["fileSecrets"] = files
    if skills:
        full["outsideSkills"] = skills
    return full, _digest(full)


def held_code(workspace_layers: Mapping[str, Mapping[str, Any]], trusted_folders: Sequence[str | Path],
              state: Mapping[str, Any], session: Mapping[str, str], below: Agents | None = None, *,
              written: Mapping[str, Mapping[str, Any]] | None = None, user_raw: Mapping[str, Any] | None = None,
              env: Mapping[str, str] | None = None) -> list[HeldWorkspace]:
    """The workspace folders still held: those defining code (or loosening approvals, judged against *below*, the
    user's own agents; or sending data out or reading secrets: :func:`workspace_code`) that neither the user config
    (*trusted_folders*), the state file (*state*: folder → ``{"digest": …}``) nor this session (*session*: folder →
    digest) trusts. *written*: each folder's layer as written; *user_raw*: the user's own layers merged; *env*: the
    environment (whose keys the question names)."""
    roots = [_resolve(p) for p in trusted_folders]
    held = []
    for folder, layer in workspace_layers.items():
        as_written = (written or {}).get(folder)
        code, digest = folder_code(folder, layer, below, as_written, user_raw)
        if not any(code.get(k) for k in ("mcpServers", "hooks", "customTools", "approvals", "providers", "secrets",
                                         "hookChanges", "fileSecrets", "outsideSkills")):
            continue
        path = _resolve(folder)
        if any(path == root or root in path.parents for root in roots):
            continue
        saved = state.get(str(path))
        if (isinstance(saved, Mapping) and saved.get("digest") == digest) or session.get(str(path)) == digest:
            continue
        source = layer if as_written is None else as_written
        mine = user_raw or {}
        items = [*provider_items(source, mine, env or {}), *ref_items(source, mine), *hook_changes(source, mine)]
        items += [f"reads {secret_words(k, n)} into {w}" for w, k, n in file_secrets(path)]
        items += [f"loads skills from {where} (outside the workspace: the model may read that folder without "
                  "asking)" for where in code.get("outsideSkills", [])]
        held.append(HeldWorkspace(path, digest, {n: _describe_server(e) for n, e in code["mcpServers"].items()},
                                  {n: _describe_hook(e) for n, e in code["hooks"].items()},
                                  approvals=approval_loosening(layer, below) if code.get("approvals") else [],
                                  items=list(dict.fromkeys(items)),
                                  tools={n: _describe_tool(e) for n, e in code.get("customTools", {}).items()}))
    return held


class QuestionAsker(Protocol):
    """Who asks the user (the engine's client requests: the first client that can answer ``chat/askQuestion``)."""

    def questions(self) -> Callable[[ChatAskQuestionParams], Awaitable[ChatAskQuestionResult]] | None: ...


class TrustHost(Protocol):
    """What the trust reads and drives of its owner (the engine): the config as loaded, the folders and environment
    it judges; the MCP servers it holds, releases and moves; the hooks it starts once a workspace is trusted (in the
    background, once the engine started); who asks the user, and the chat the answer is shown in."""

    @property
    def loaded(self) -> LoadedConfig: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def mcp(self) -> McpManager | None: ...
    @property
    def client_requests(self) -> QuestionAsker: ...
    @property
    def hooks(self) -> Hooks: ...
    @property
    def background(self) -> BackgroundTasks: ...
    @property
    def started(self) -> bool: ...
    def emit_content(self, chat: Chat, role: str, content: WireContent) -> None: ...


class WorkspaceTrust:
    """The engine's trust decisions: what is held now, asking once per session, ``/trust`` and ``/trust off``.

    *use_config* makes a config the engine's when it is not already (a new model registry, the clients told): the
    owner's business, called after trusting or revoking."""

    def __init__(self, host: TrustHost, use_config: Callable[[Config], Awaitable[None]]) -> None:
        self.host = host
        self.use_config = use_config
        self.path = state_path(host.env)
        self._session: dict[str, str] = {}  # folder → digest trusted this session (when the state file can't be saved)
        self._declined: set[str] = set()  # digests answered "Not now" this session
        self._asking: asyncio.Lock | None = None
        self._user_agents: tuple[Any, Agents] | None = None

    # -- state ---------------------------------------------------------------------------------------------------

    def _read_state(self) -> JsonObject:
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
        chat = self.host.loaded.raw.get("chat")
        if not isinstance(chat, Mapping) or chat.get("defaultTrust") is not True:
            return False
        layers = getattr(self.host.loaded, "workspace_layers", None) or {}
        return not any(isinstance(layer.get("chat"), Mapping) and "defaultTrust" in layer["chat"]
                       for layer in layers.values())

    def _trusted_folders(self) -> list[str]:
        value = self.host.loaded.raw.get(TRUST_CONFIG_KEY)
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []

    # -- what is held --------------------------------------------------------------------------------------------

    def held(self) -> list[HeldWorkspace]:
        """The folders whose code is held now (the config as loaded now, the state file as it is now)."""
        layers = self._layers()
        if not layers:
            return []
        loaded = self.host.loaded
        return held_code(layers, self._trusted_folders(), self._read_state(), self._session, self.user_agents(),
                         written=getattr(loaded, "workspace_written", None),
                         user_raw=getattr(loaded, "user_raw", None), env=self.host.env)

    def _layers(self) -> dict[str, Mapping[str, Any]]:
        """Each workspace folder's own layer (with its markdown agents' approvals), an empty one for a folder without
        a config file (its agent and skill files may still read secrets)."""
        layers: dict[str, Mapping[str, Any]] = dict(getattr(self.host.loaded, "workspace_layers", None) or {})
        for folder in self.host.workspace_folders:
            layers[str(folder)] = with_markdown_agents(Path(folder), layers.get(str(folder), {}))
        return layers

    def held_folders(self) -> frozenset[Path]:
        """The resolved folders held now (their agent and skill files read no secret: engine/workspace/_agents.py)."""
        return frozenset(w.folder for w in self.held())

    def effective_config(self) -> Config:
        """The config that applies now: the whole of it, or — while a workspace folder is held — the config without
        each workspace layer's held parts (engine/config/_hold.py: its hooks, providers' URLs and keys, secrets it
        reads), where the user's own layers apply."""
        loaded = self.host.loaded
        held_config: Config | None = getattr(loaded, "held_config", None)
        if held_config is not None and self.held():
            return held_config
        return loaded.config

    def trusted_folder(self, folder: str | Path) -> bool:
        """Whether *folder* is trusted now: listed in the user's ``trustedWorkspaces`` (or under a listed folder), or
        trusted by the user (``/trust``, the question) with the digest its code has now — also a folder that defines
        nothing (it may hold files a command of the user's would run: a ``some_server.py`` beside ``python3 -m
        some_server``)."""
        path = _resolve(folder)
        if trusted_by_user(path, self._trusted_folders()):
            return True
        key = next((k for k in self._layers() if _resolve(k) == path), None)
        if key is None:
            return False
        if any(w.folder == path for w in self.held()):
            return False
        saved = self._read_state().get(str(path))  # a file: {"digest": …} per folder, as it was written
        return self._digest_of(key) in (self._session.get(str(path)),
                                        saved.get("digest") if isinstance(saved, dict) else None)

    def _digest_of(self, key: str) -> str:
        loaded = self.host.loaded
        written = (getattr(loaded, "workspace_written", None) or {}).get(key)
        return folder_code(key, self._layers()[key], self.user_agents(), written,
                           getattr(loaded, "user_raw", None))[1]

    def home(self) -> Path:
        """The user's home directory (the engine's ``HOME``), else ``/``: never this process's own directory, which
        is often the workspace (``jupyter lab`` started in the repository)."""
        home = Path(self.host.env.get("HOME") or Path.home())
        return home if home.is_dir() else Path(home.anchor or "/")

    def process_cwd(self, configured: Any = None) -> Path | None:
        """Where the user's own MCP servers and hooks run: their configured ``cwd`` if any (``~`` and relative paths
        from the home directory), else the first workspace folder when it is trusted, else the home directory — so
        a program they start (``python3 -m some_server``, ``npx …``) never picks up an untrusted repository's files.
        None without a workspace folder (this process's own directory, as before)."""
        home = self.home()
        if isinstance(configured, str) and configured.strip():
            text = configured.strip()
            text = str(home) + text[1:] if text == "~" or text.startswith("~/") else text
            path = Path(text)
            return path if path.is_absolute() else home / path
        folders = self.host.workspace_folders
        if not folders:
            return None
        return Path(folders[0]) if self.trusted_folder(folders[0]) else home

    def server_cwd(self, name: str, config: Any) -> Path | None:
        """:meth:`process_cwd` for an MCP server (its config's ``cwd``, an extra key)."""
        extra = getattr(config, "model_extra", None) or {}
        return self.process_cwd(extra.get("cwd"))

    def user_agents(self) -> Agents | None:
        """The agents as the user's own layers define them (no workspace file, no workspace agent file)."""
        user_config = getattr(self.host.loaded, "user_config", None)
        if user_config is None:
            return None
        config_dir = global_config_path(self.host.env).parent
        key = (id(user_config), files_signature([], config_dir))
        if self._user_agents is None or self._user_agents[0] != key:
            self._user_agents = (key, build_agents(user_config, [], config_dir, self.host.env))
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

    # -- deciding ------------------------------------------------------------------------------------------------

    async def trust(self) -> list[HeldWorkspace]:
        """``/trust`` (or "Trust this workspace"): remember every held folder as trusted — and every other folder of
        this session not trusted yet (the user's own servers and hooks then run in it) —, apply the workspace's
        config, start its servers."""
        held = self.held()
        plain = {str(_resolve(k)): self._digest_of(k) for k in self._layers() if not self.trusted_folder(k)}
        if not held and not plain:
            return []
        state = self._read_state()
        for folder, digest in [*plain.items(), *((str(w.folder), w.digest) for w in held)]:
            state[folder] = {"digest": digest, "trusted": True}
            self._session[folder] = digest  # even if the file cannot be written
        self._write_state(state)
        await self.apply()
        await self._release([name for workspace in held for name in workspace.servers])
        self._start_session_hooks({name for workspace in held for name in workspace.hooks})
        return held

    async def apply(self) -> None:
        """After trusting or revoking: the config that applies now (:meth:`effective_config`) — a new model
        registry when it changed, the clients told —, and the user's own MCP servers moved to where they run now."""
        await self.use_config(self.effective_config())
        mcp = self.host.mcp
        if mcp is not None and hasattr(mcp, "relocate"):
            await mcp.relocate()

    def _start_session_hooks(self, names: set[str]) -> None:
        """The trusted workspaces' ``sessionStart`` hooks, held when the session started: run them now (in the
        background, as at start), each once per session. Before the engine started, its start runs them."""
        host = self.host
        if not host.started:
            return
        hooks = host.hooks
        names = {name for name, hook in hooks.configured().items()
                 if name in names and name not in hooks.session_started and hook.get("type") == "sessionStart"}
        if names:
            hooks.session_started |= names  # (now: a second /trust before this run starts runs none)
            host.background.spawn(hooks.run("sessionStart", names=names), "eca-hook-sessionStart")

    def trusted_now(self) -> set[str]:
        """This engine's folders that are not held (trusted, or defining no code), for :meth:`keep_trusted`."""
        held = {str(w.folder) for w in self.held()}
        folders = getattr(self.host.loaded, "workspace_layers", None) or {}
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
        folders = {str(_resolve(f)) for f in self._layers()}
        state = self._read_state()
        revoked = sorted(f for f in folders if f in state or f in self._session)
        for folder in folders:
            state.pop(folder, None)
            self._session.pop(folder, None)
        if revoked:
            self._write_state(state)
        mcp = self.host.mcp
        held = self.held_servers()
        if mcp is not None and hasattr(mcp, "hold"):
            await mcp.hold(held)
        await self.apply()
        return revoked

    async def _release(self, names: list[str]) -> None:
        mcp = self.host.mcp
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
            ask = self.host.client_requests.questions()
            summary = "\n\n".join(w.describe() for w in held) + self._own_note()
            if ask is None:
                self.host.emit_content(chat, "system", _text(
                    f"{summary}\n\nThey are held back (servers not started, hooks not run, custom tools not offered, "
                    "tools still asked, providers and secrets not used) until you trust the workspace: send /trust to "
                    "trust it (/trust off takes it back)."))
                return
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
                self.host.emit_content(chat, "system", _text(
                    "Workspace trusted: its MCP servers, hooks, custom tools, providers, secrets and approvals "
                    "apply."))
            else:
                self.host.emit_content(chat, "system", _text(
                    "Workspace not trusted: its MCP servers, hooks, custom tools, providers, secrets and looser "
                    "approvals stay held. Send /trust to trust it."))

    def _own_note(self) -> str:
        """Where the user's own MCP servers and hooks run until the workspace is trusted, when they have any."""
        user = getattr(self.host.loaded, "user_config", None)
        if user is None:
            return ""
        servers = [name for name, server in user.mcp_servers.items() if server.command is not None]
        hooks = (user.model_extra or {}).get("hooks")
        hooks = [name for name, hook in hooks.items() if hook is not None] if isinstance(hooks, Mapping) else []
        if not servers and not hooks:
            return ""
        what = " and ".join(p for p in (f"MCP servers ({', '.join(servers)})" if servers else "",
                                       f"hooks ({', '.join(hooks)})" if hooks else "") if p)
        return (f"\n\nUntil then your own {what} run in your home directory (or the cwd you gave them), not in "
                "this folder; trusting it runs them here.")

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
            if all(self.trusted_folder(folder) for folder in self._layers()):
                return ("Nothing to trust: no workspace config of this session defines MCP servers, hooks or looser "
                        "approvals held back.")
            await self.trust()
            return "Workspace trusted: your own MCP servers and hooks run in it from now on."
        await self.trust()
        names = [n for w in held for n in w.servers]
        hooks = [n for w in held for n in w.hooks]
        tools = [n for w in held for n in w.tools]
        approvals = [a for w in held for a in w.approvals]
        parts = [f"MCP servers started: {', '.join(names)}." if names else "",
                 f"Hooks enabled: {', '.join(hooks)}." if hooks else "",
                 f"Custom tools offered: {', '.join(tools)}." if tools else "",
                 f"Allowed without asking: {', '.join(approvals)}." if approvals else ""]
        return " ".join(["Workspace trusted.", *[p for p in parts if p]])


def update_chat(engine: ChatHost, chat_id: str, *, title: str | None = None, trust: bool | None = None) -> bool:
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
