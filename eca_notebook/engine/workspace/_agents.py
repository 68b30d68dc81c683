"""Agents, as the reference server has them: the built-in ``code`` and ``plan`` (primary, selectable in a chat) and
``explorer`` and ``general`` (subagents a chat may spawn), custom agents from config (``agent.<id>``, the deprecated
``behavior.<id>``) and from markdown files with YAML front matter (``<workspace>/.eca/agents/*.md``,
``~/.config/eca/agents/*.md``), each possibly ``inherit``-ing another's settings.

Why a registry of its own: the config alone no longer says which agents exist (markdown files do too, and an agent's
settings depend on the one it inherits), and every door, the prompt pipeline and the subagent tool must agree on the
same resolved list. ``Agents`` is that list; the engine rebuilds it when the config or an agent file changes.

Order of the layers for one id, later wins (deep merge): built-in → user-dir markdown → workspace markdown → config.
Then ``inherit`` merges the agent over its (resolved) parent. Nothing here raises for a user's mistake: a broken file,
an unknown parent or an inheritance cycle becomes a problem in words (shown by ``/doctor``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..._merge import deep_merge
from ...protocol import JsonObject, JsonValue
from ..config import (
    PLAN_DENIED_SHELL,
    BehaviorConfig,
    Config,
    DynamicSource,
    ToolCallConfig,
    expand,
    trusted_by_user,
    workspace_of,
)
from ._front_matter import FrontMatterError, parse_front_matter
from ._rules import outside_root

__all__ = [
    "BUILTIN_AGENTS",
    "DEPRECATED_AGENT_IDS",
    "EXPLORER_SYSTEM_PROMPT",
    "MODES",
    "AgentSpec",
    "Agents",
    "build_agents",
    "parse_agent_markdown",
]

MODES = ("primary", "subagent")
#: Built-in agent ids, primary ones first (the order a selector shows them).
BUILTIN_AGENTS = ("code", "plan", "explorer", "general")
#: Old ids still accepted everywhere an agent is named (chat/prompt, selectedBehaviorChanged, saved chats, config).
DEPRECATED_AGENT_IDS = {"agent": "code"}

EXPLORER_SYSTEM_PROMPT = """You are a subagent that handles file and codebase search tasks for another agent.

Locate relevant files, symbols, references, and logic paths in the codebase using the provided tools.

Constraints:
- Do not create or modify files.
- Use grep (or search_text / search_symbols) for pattern or content search.
- Use read_file only when inspection is necessary.
- Prefer direct, minimal search steps.
- Avoid unnecessary exploration.
- Be concise.
- Return absolute file paths, concrete evidence, and brief findings.
- Do not use emojis.
- Do not speculate when evidence is missing.

Output expectations:
- Identify the most relevant files or code paths.
- Show the evidence supporting each finding.
- Summarize the result clearly and briefly."""

_EDIT_TOOLS = ["edit_file", "write_file", "move_file", "delete_file", "notebook_edit_cell", "notebook_insert_cell",
               "notebook_delete_cell", "notebook_move_cell", "notebook_run_cells"]

# The built-ins' own settings, under whatever the config layers say about the same ids (plan's disabled tools and
# shell denials live in the config defaults, engine/config/_layers.py, so /config shows them).
_BUILTIN: dict[str, JsonObject] = {
    "code": {"mode": "primary",
             "description": "Default, generic agent used to do most tasks; has access to all tools by default."},
    "plan": {"mode": "primary", "readOnly": True,
             "description": "Builds a plan before the user switches to the code agent to carry out a complex task. "
                            "Has no edit tools, only previews changes."},
    "explorer": {"mode": "subagent", "readOnly": True,
                 "description": "Codebase search specialist. Focuses on finding and reading file contents without "
                                "modifying the system. Read-only, no edit tools.",
                 "systemPrompt": EXPLORER_SYSTEM_PROMPT,
                 "disabledTools": [*_EDIT_TOOLS],
                 # (shell commands that write are denied as in plan)
                 "toolCall": {"approval": {"deny": {"eca__shell_command": {
                     "argsMatchers": {"command": [*PLAN_DENIED_SHELL]}}}}}},
    "general": {"mode": "subagent",
                "description": "General-purpose agent for researching complex questions and executing multi-step "
                               "tasks. Use this agent to execute multiple units of work in parallel.",
                "disabledTools": ["spawn_agent"]},
}


@dataclass(frozen=True)
class AgentSpec:
    """One resolved agent. ``tool_call`` is the agent's own ``toolCall`` (merged over the global one by
    :meth:`Agents.tool_call_for`); ``disabled_tools`` its own selectors (added to the global ones). ``source`` says
    where it came from (``built-in``, ``config``, a markdown file's path), for ``/config`` and error messages."""

    id: str
    modes: frozenset[str]
    description: str | None = None
    system_prompt: str | None = None
    default_model: str | None = None
    variant: str | None = None  # the default model variant (engine/config/_variants.py)
    tool_call: ToolCallConfig | None = None
    disabled_tools: tuple[str, ...] = ()
    max_steps: int | None = None
    spawnable_by: tuple[str, ...] = ()
    source: str = "built-in"
    inherits: tuple[str, ...] = ()  # the chain of agents it inherits from, nearest first
    read_only: bool = False  # hides every tool that changes files or notebooks (``mutates``)

    @property
    def primary(self) -> bool:
        return "primary" in self.modes

    @property
    def subagent(self) -> bool:
        return "subagent" in self.modes

    def is_or_inherits(self, agent_id: str) -> bool:
        """Whether this agent is ``agent_id`` or built on it (``my-plan`` inheriting ``plan`` plans too)."""
        return self.id == agent_id or agent_id in self.inherits


class Agents:
    """The resolved agents of a configuration (see the module docstring). ``problems``: what was wrong, in words."""

    def __init__(self, specs: Mapping[str, AgentSpec], config: Config, problems: Sequence[str] = ()) -> None:
        self._specs = dict(specs)
        self._config = config
        self.problems: list[str] = list(problems)
        #: set by the engine: the agents of the user's own config while an untrusted workspace's looser approvals
        #: are held (engine/workspace/_trust.py), else None; :meth:`tool_call_for` holds every approval to theirs
        self.approval_floor: Callable[[], Agents | None] | None = None

    def canonical(self, agent_id: str | None) -> str | None:
        """The id an agent is known by (``agent`` → ``code``); None when no such agent exists."""
        if agent_id is None:
            return None
        if agent_id in self._specs:
            return agent_id
        alias = DEPRECATED_AGENT_IDS.get(agent_id)
        return alias if alias in self._specs else None

    def get(self, agent_id: str | None) -> AgentSpec | None:
        """The agent of that id (the deprecated ``agent`` is ``code``), or None."""
        canonical = self.canonical(agent_id)
        return self._specs[canonical] if canonical is not None else None

    def ids(self) -> list[str]:
        """Every agent's id, built-ins first."""
        return list(self._specs)

    def primary(self) -> list[str]:
        """The agents a chat may select, built-ins first."""
        return [s.id for s in self._specs.values() if s.primary]

    def subagents(self, parent: str | None) -> list[AgentSpec]:
        """The agents ``parent`` may spawn: mode includes ``subagent`` and ``spawnableBy`` is empty or names it."""
        parent_id = self.canonical(parent) or parent
        return [s for s in self._specs.values()
                if s.subagent and s.id != parent_id and (not s.spawnable_by or parent_id in s.spawnable_by)]

    def tool_call_for(self, agent_id: str | None) -> ToolCallConfig:
        """The global ``toolCall`` with the agent's own deep-merged over it (only the keys the agent sets); while a
        workspace is untrusted its approval is never looser than the user's own config's (workspace/_trust.py)."""
        spec = self.get(agent_id)
        if spec is None or spec.tool_call is None:
            tool_call = self._config.tool_call
        else:
            base = self._config.tool_call.model_dump(by_alias=True)
            override = spec.tool_call.model_dump(by_alias=True, exclude_unset=True)
            tool_call = ToolCallConfig.model_validate(deep_merge(base, override))
        floor = self.approval_floor() if self.approval_floor is not None else None
        if floor is None:
            return tool_call
        held = floor.tool_call_for(agent_id if floor.get(agent_id) is not None else None).approval
        return tool_call.model_copy(update={"approval": tool_call.approval.held_to(held)})

    def disabled_tools_for(self, agent_id: str | None) -> list[str]:
        """The global ``disabledTools`` plus the agent's own."""
        spec = self.get(agent_id)
        extra = list(spec.disabled_tools) if spec is not None else []
        return list(dict.fromkeys([*self._config.disabled_tools, *extra]))

    def describe(self) -> list[str]:
        """One line per agent (id, modes, source, description), for ``/config`` and ``/doctor``."""
        lines = []
        for s in self._specs.values():
            modes = "+".join(m for m in MODES if m in s.modes)
            extra = f", spawnable by {', '.join(s.spawnable_by)}" if s.spawnable_by else ""
            lines.append(f"{s.id} ({modes}; {s.source}{extra})" + (f": {s.description}" if s.description else ""))
        return lines


# -- markdown agents ---------------------------------------------------------------------------------------------

_MAX_AGENT_BYTES = 256 * 1024


def _names(value: Any) -> list[str] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    return [str(v).strip() for v in items if str(v).strip()]


def _md_tools(tools: Any) -> JsonObject | None:
    """Markdown ``tools``: ``{byDefault, allow, ask, deny}`` with lists of tool names, or a flat list (Claude Code's
    shape: ask by default, allow those)."""
    if tools is None:
        return None
    if isinstance(tools, list):
        tools = {"byDefault": "ask", "allow": tools}
    if not isinstance(tools, Mapping):
        raise ValueError("'tools' must be a map (byDefault, allow, ask, deny) or a list of tool names")
    approval: JsonObject = {}
    if tools.get("byDefault") is not None:
        approval["byDefault"] = tools["byDefault"]
    for key in ("allow", "ask", "deny"):
        names = _names(tools.get(key))
        if names:
            approval[key] = {name.split("(", 1)[0]: {} for name in names}  # (argument patterns are not kept)
    return {"approval": approval}


def parse_agent_markdown(path: Path, dynamic: DynamicSource | None = None,
                         problems: list[str] | None = None) -> tuple[str, JsonObject] | str:
    """(agent id, its settings in config spelling) from a markdown agent file, or a problem in words.

    The id is the front matter's ``name`` or the file name without extensions, trimmed and lowercased; the body is
    the system prompt. Keys as in config, plus the reference's markdown spellings ``model`` and ``steps``. With
    *dynamic*, ``${env:}``/``${file:}``/``${cmd:}``… in the front matter values and the body are resolved as in
    config files (engine/config/_syntax.py), their problems appended to *problems*."""
    try:
        data = path.read_bytes()[:_MAX_AGENT_BYTES]
        text = data.decode("utf-8-sig")
    except OSError as exc:
        return f"agent file {path}: cannot read ({exc.strerror or type(exc).__name__})"
    except UnicodeDecodeError:
        return f"agent file {path}: not valid UTF-8"
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        return f"agent file {path}: {exc}"
    if dynamic is not None:
        meta, body = expand(meta, dynamic, problems), expand(body, dynamic, problems)
    agent_id = str(meta.get("name") or path.name.split(".", 1)[0]).strip().lower()
    if not agent_id or any(c.isspace() for c in agent_id):
        return f"agent file {path}: the agent id '{agent_id}' is empty or has spaces"
    settings: JsonObject = {}
    try:
        for key in ("inherit", "description", "defaultModel", "variant", "maxSteps", "toolCall", "prompts",
                    "systemPrompt"):
            if meta.get(key) is not None:
                settings[key] = meta[key]
        if meta.get("model") is not None and "defaultModel" not in settings:
            settings["defaultModel"] = str(meta["model"])
        if meta.get("steps") is not None and "maxSteps" not in settings:
            settings["maxSteps"] = meta["steps"]
        if meta.get("mode") is not None:
            mode = meta["mode"]
            settings["mode"] = [str(m).strip() for m in mode] if isinstance(mode, list) else str(mode).strip()
        disabled = _names(meta.get("disabledTools"))
        if disabled is not None:
            settings["disabledTools"] = [*disabled]
        spawnable = _names(meta.get("spawnableBy"))
        if spawnable is not None:
            lowered: list[JsonValue] = [s.lower() for s in spawnable]
            settings["spawnableBy"] = lowered
        tools = _md_tools(meta.get("tools"))
        if tools is not None and "toolCall" not in settings:
            settings["toolCall"] = tools
        if body.strip():
            settings["systemPrompt"] = body.strip()
        BehaviorConfig.model_validate(settings)
    except (ValueError, TypeError) as exc:  # (pydantic's ValidationError is a ValueError)
        return f"agent file {path}: {_brief(exc)}"
    return agent_id, settings


def _brief(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors(include_url=False, include_input=False, include_context=False):
            loc = ".".join(str(p) for p in err["loc"])
            parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}" if loc else err["msg"])
        return "; ".join(parts)
    return str(exc)


def agent_dirs(workspace_folders: Iterable[Path], global_config_dir: Path) -> list[Path]:
    """Where markdown agents live, lowest precedence first: the user config dir's ``agents/``, then each
    workspace folder's ``.eca/agents/``."""
    return [Path(global_config_dir) / "agents", *(Path(f) / ".eca" / "agents" for f in workspace_folders)]


def agent_files(workspace_folders: Iterable[Path], global_config_dir: Path) -> list[Path]:
    """The markdown agent files, lowest precedence first (sorted by name within a folder) — but not a workspace's
    file linking out of its workspace (:func:`linked_out_agent_files`)."""
    folders = list(workspace_folders)
    out = {path for path, _ in linked_out_agent_files(folders)}
    files: list[Path] = []
    for folder in agent_dirs(folders, global_config_dir):
        try:
            files += sorted(p for p in folder.glob("*.md") if p.is_file() and p not in out)
        except OSError:
            continue
    return files


def linked_out_agent_files(workspace_folders: Iterable[Path]) -> list[tuple[Path, str]]:
    """A workspace's ``.eca/agents/*.md`` that resolve outside its folder, with why: a repository's ``code.md`` →
    ``~/notes.txt`` made that file the default agent's system prompt (sent to the model at every prompt), read as
    the user's own file — as a rule or a command linking out, it is not loaded."""
    found: list[tuple[Path, str]] = []
    for folder in workspace_folders:
        agents = Path(folder) / ".eca" / "agents"
        try:
            paths = sorted(agents.glob("*.md"))
        except OSError:
            continue
        for path in paths:
            why = outside_root(path, Path(folder), "the workspace")
            if why is not None:
                found.append((path, why))
    return found


def files_signature(workspace_folders: Iterable[Path], global_config_dir: Path) -> tuple[Any, ...]:
    """Changes when an agent file is added, removed or edited (the engine rebuilds its agents then)."""
    sig: list[Any] = []
    for path in agent_files(workspace_folders, global_config_dir):
        try:
            st = path.stat()
        except OSError:
            continue
        sig.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(sig)


# -- resolution --------------------------------------------------------------------------------------------------


def _modes(agent_id: str, value: Any, problems: list[str]) -> frozenset[str]:
    if value is None or value == []:
        return frozenset(MODES)
    items = value if isinstance(value, list) else [value]
    modes = {str(m) for m in items}
    unknown = sorted(modes - set(MODES))
    if unknown:
        problems.append(f"agent '{agent_id}': unknown mode {', '.join(repr(m) for m in unknown)} "
                        f"(use 'primary', 'subagent' or both)")
    return frozenset(modes & set(MODES)) or frozenset(MODES)


def build_agents(config: Config, workspace_folders: Sequence[Path], global_config_dir: Path,
                 env: Mapping[str, str] | None = None, held: Collection[Path] = ()) -> Agents:
    """Resolve the agents of ``config`` plus the markdown files (see the module docstring). Dynamic strings in the
    markdown files are resolved here (once per build): a workspace's file runs ``${cmd:}`` only when the user's
    ``trustedWorkspaces`` lists the folder, and reads ``${file:}`` only inside it — and nothing of
    ``${env:}``/``${netrc:}`` while its folder is *held* (resolved folders the user has not trusted yet)."""
    problems: list[str] = []
    env = os.environ if env is None else env
    trusted = (config.model_extra or {}).get("trustedWorkspaces")
    netrc_file = (config.model_extra or {}).get("netrcFile")
    cmd_cache: dict[str, str | None] = {}
    layers: dict[str, JsonObject] = {k: dict(v) for k, v in _BUILTIN.items()}
    sources: dict[str, str] = dict.fromkeys(_BUILTIN, "built-in")
    if not config.pure_config:
        problems += [f"agent file {path} skipped: {why}" for path, why in linked_out_agent_files(workspace_folders)]
        for path in agent_files(workspace_folders, global_config_dir):
            workspace = workspace_of(path, workspace_folders)
            dynamic = DynamicSource(label=f"agent file {path}", env=env, base_dir=path.parent, workspace=workspace,
                                    cmd_allowed=workspace is None or trusted_by_user(workspace, trusted),
                                    netrc_file=netrc_file if isinstance(netrc_file, str) else None,
                                    cmd_cache=cmd_cache,
                                    secrets_allowed=workspace is None or Path(workspace).resolve() not in held)
            parsed = parse_agent_markdown(path, dynamic, problems)
            if isinstance(parsed, str):
                problems.append(parsed)
                continue
            agent_id, settings = parsed
            agent_id = DEPRECATED_AGENT_IDS.get(agent_id, agent_id)
            layers[agent_id] = deep_merge(layers.get(agent_id, {}), settings)
            sources[agent_id] = str(path)
    for agent_id, entry in config.behavior.items():
        own = entry.model_dump(by_alias=True, exclude_unset=True)
        layers[agent_id] = deep_merge(layers.get(agent_id, {}), own)
        sources.setdefault(agent_id, "config")

    resolved: dict[str, tuple[JsonObject, tuple[str, ...]]] = {}

    def resolve(agent_id: str, chain: tuple[str, ...]) -> tuple[JsonObject, tuple[str, ...]]:
        if agent_id in resolved:
            return resolved[agent_id]
        own = dict(layers[agent_id])
        inherit = own.pop("inherit", None)
        parent = str(inherit) if inherit else None
        result: tuple[JsonObject, tuple[str, ...]] = (own, ())
        if parent:
            parent = DEPRECATED_AGENT_IDS.get(parent, parent) if parent not in layers else parent
            if parent in (*chain, agent_id):
                loop = chain[chain.index(parent):] if parent in chain else ()
                cycle = " → ".join([*loop, agent_id, parent])
                problems.append(f"agent '{agent_id}': inherit cycle ({cycle}); its own settings are used alone")
            elif parent not in layers:
                problems.append(f"agent '{agent_id}': inherits unknown agent '{parent}'; its own settings are used "
                                f"alone")
            else:
                base, base_chain = resolve(parent, (*chain, agent_id))
                result = (deep_merge(base, own), (parent, *base_chain))
        resolved[agent_id] = result
        return result

    order = [*BUILTIN_AGENTS, *(k for k in layers if k not in BUILTIN_AGENTS)]
    specs: dict[str, AgentSpec] = {}
    for agent_id in order:
        settings, chain = resolve(agent_id, ())
        try:
            model = BehaviorConfig.model_validate(settings)
        except ValidationError as exc:
            problems.append(f"agent '{agent_id}' ({sources[agent_id]}): {_brief(exc)}")
            continue
        prompt = model.system_prompt
        prompts = (model.model_extra or {}).get("prompts")
        if prompt is None and isinstance(prompts, Mapping) and isinstance(prompts.get("chat"), str):
            prompt = prompts["chat"]
        spawnable = _names(model.spawnable_by) or []
        specs[agent_id] = AgentSpec(
            id=agent_id,
            modes=_modes(agent_id, model.mode, problems),
            description=" ".join(model.description.split()) if model.description else None,
            system_prompt=prompt,
            default_model=model.default_model,
            variant=model.variant,
            tool_call=model.tool_call,
            disabled_tools=tuple(model.disabled_tools or ()),
            max_steps=model.max_steps,
            spawnable_by=tuple(spawnable),
            read_only=bool(model.read_only),
            source=sources[agent_id],
            inherits=chain,
        )
    for spec in specs.values():
        if spec.subagent and not spec.primary and not spec.description:
            problems.append(f"agent '{spec.id}' ({spec.source}): a subagent needs a 'description' (the parent "
                            f"agent reads it to decide when to delegate)")
    return Agents(specs, config, problems)

