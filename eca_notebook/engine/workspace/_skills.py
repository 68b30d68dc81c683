"""Skills: ``SKILL.md`` folders that teach the model a task, found where the reference ECA server looks for them.

A skill is a folder holding a ``SKILL.md`` whose front matter has a ``name`` and a ``description`` (the
agentskills.io format), plus whatever else it needs (``scripts/``, ``references/``…). Where they come from, first
found wins for a name (the project's over the user's, as for custom commands):

1. every workspace folder's ``.eca/skills/`` and ``.agents/skills/``;
2. the global ``<config dir>/skills/`` (``$XDG_CONFIG_HOME/eca/skills``, else ``~/.config/eca/skills``);
3. the config's ``skills: [{"path": …}]`` entries (a skill folder or a folder of them; relative to each workspace
   folder unless absolute).

Why on demand: only each skill's name and description go into the system prompt (a few tokens each); the model
loads a body with the ``skill`` tool (``eca__skill``, the reference's name, so approval rules written for the
reference — ``"eca__skill": {"argsMatchers": {"name": [...]}}`` — keep working) when a task matches. The tool also
lists the folder's other files, which ``read_file`` may then read without asking even outside the workspace
(:func:`read_roots`), because the user installed that folder for the model to use.

Discovery never fails: a ``SKILL.md`` without front matter, without a name or a description, unreadable or not
UTF-8 is skipped and reported (``/skills`` shows why, the log says so) — one broken skill must not cost the others.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...plugins import BasePlugin
from ...tools.base import Tool
from ...tools.skill import Scope, Skill, SkillTool, skill_text
from ..config import DynamicSource, LoadedConfig, expand, trusted_by_user
from ._front_matter import FrontMatterError, parse_front_matter, split_front_matter
from .commands import render_template

if TYPE_CHECKING:
    from ._trust import WorkspaceTrust

__all__ = [
    "MAX_SKILL_BYTES",
    "SkillSet",
    "SkillsHost",
    "SkillsPlugin",
    "discover_skills",
    "engine_skills",
    "list_skills",
    "read_roots",
    "render_skills",
    "skill_prompt",
]

log = logging.getLogger(__name__)

MAX_SKILL_BYTES = 256 * 1024  # a body beyond this is cut: it would crowd out the chat on every later request
_MAX_DEPTH = 4  # how deep below a skills folder a SKILL.md is looked for
_MAX_SKILLS = 200  # per skills folder: a mistaken path (``/``) must not walk the whole disk

@dataclass
class SkillSet:
    """What discovery found: the usable skills, and why the other ``SKILL.md`` files were skipped."""

    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


# (path) -> ((mtime_ns, size), Skill | problem): a turn asks for the skills several times; re-parse only on change
_parsed: dict[Path, tuple[tuple[int, int, bool, bool], Skill | str]] = {}
# (path) -> problems of its dynamic strings (engine/config/_syntax.py) at its last parse, shown with the skill problems
_dynamic_problems: dict[Path, list[str]] = {}


def _parse(path: Path, scope: Scope, trusted: Any = None, held: Collection[Path] = ()) -> Skill | str:
    try:
        stat = path.stat()
    except OSError as exc:
        return f"{path}: cannot read ({exc.strerror or type(exc).__name__})"
    workspace = _workspace_root(path) if scope == "workspace" else None
    cmd_allowed = workspace is None or trusted_by_user(workspace, trusted)
    secrets_allowed = workspace is None or workspace.resolve() not in held  # (an untrusted workspace: _trust.py)
    key = (stat.st_mtime_ns, stat.st_size, cmd_allowed, secrets_allowed)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == key:
        found = cached[1]
        return Skill(found.name, found.description, found.path, found.body, scope) if isinstance(found, Skill) \
            else found
    result = _read(path, scope, cmd_allowed, secrets_allowed)
    _parsed[path] = (key, result)
    return result


def _read(path: Path, scope: Scope, cmd_allowed: bool = True, secrets_allowed: bool = True) -> Skill | str:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SKILL_BYTES + 1)
        text = data[:MAX_SKILL_BYTES].decode("utf-8-sig", errors="strict" if len(data) <= MAX_SKILL_BYTES
                                              else "ignore")
    except OSError as exc:
        return f"{path}: cannot read ({exc.strerror or type(exc).__name__})"
    except UnicodeDecodeError:
        return f"{path}: not valid UTF-8"
    if not text.lstrip("\ufeff").startswith("---"):
        return f"{path}: no front matter (it must start with a '---' block giving name and description)"
    if split_front_matter(text) is None:
        return f"{path}: the front matter is not closed (a second '---' line is missing)"
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        return f"{path}: {exc}"
    # Dynamic strings as in config files, once per parse (a file change parses again). A workspace's skill is the
    # repository's, not the user's: its ${cmd:} runs only when the user's trustedWorkspaces lists the folder, and its
    # ${file:} reads only inside that workspace.
    workspace = _workspace_root(path) if scope == "workspace" else None
    dynamic = DynamicSource(label=f"skill {path}", base_dir=path.parent, workspace=workspace,
                            cmd_allowed=workspace is None or cmd_allowed,
                            secrets_allowed=workspace is None or secrets_allowed)
    problems: list[str] = []
    meta, body = expand(meta, dynamic, problems), expand(body, dynamic, problems)
    _dynamic_problems[path] = problems
    missing = [key for key in ("name", "description")
               if not isinstance(meta.get(key), str) or not str(meta.get(key)).strip()]
    if missing:
        return f"{path}: the front matter has no {' and no '.join(missing)}"
    name = str(meta["name"]).strip()
    if any(c.isspace() for c in name):
        return f"{path}: the name '{name}' has spaces (use letters, digits and hyphens)"
    if len(data) > MAX_SKILL_BYTES:
        body = body.rstrip() + f"\n\n[Skill truncated: {path.name} is larger than {MAX_SKILL_BYTES // 1024} KB.]"
    return Skill(name=name, description=" ".join(str(meta["description"]).split()), path=path, body=body,
                 scope=scope)


def _workspace_root(path: Path) -> Path:
    """The workspace folder of a skill found in ``<folder>/.eca/skills`` or ``<folder>/.agents/skills``."""
    for parent in path.parents:
        if parent.name in (".eca", ".agents"):
            return parent.parent
    return path.parent


def _skill_files(root: Path) -> list[Path]:
    """Every ``SKILL.md`` at or below *root* (a skill folder, a folder of them, or the file itself), sorted."""
    if root.is_file():
        return [root] if root.name == "SKILL.md" else []
    if not root.is_dir():
        return []
    found: list[Path] = []
    base = len(root.parts)
    for folder, dirs, files in os.walk(root, followlinks=True):
        depth = len(Path(folder).parts) - base
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < _MAX_DEPTH else []
        if "SKILL.md" in files:
            found.append(Path(folder) / "SKILL.md")
            if len(found) >= _MAX_SKILLS:
                log.warning("skills folder %s: more than %d skills, the rest ignored", root, _MAX_SKILLS)
                break
    return sorted(found)


def _config_roots(entries: Any, workspace_folders: Sequence[Path]) -> list[Path]:
    roots: list[Path] = []
    for entry in entries if isinstance(entries, list) else []:
        raw = entry.get("path") if isinstance(entry, dict) else entry if isinstance(entry, str) else None
        if not isinstance(raw, str) or not raw.strip():
            continue
        path = Path(os.path.expanduser(raw.strip()))
        roots += [path] if path.is_absolute() else [Path(f) / path for f in workspace_folders]
    return roots


def discover_skills(workspace_folders: Sequence[Path], global_config_dir: Path, config_paths: Any = None,
                    trusted: Any = None, held: Collection[Path] = ()) -> SkillSet:
    """Every skill, in the order above; a name defined twice keeps its first definition (the later one is noted).
    *trusted*: the user's ``trustedWorkspaces`` (a workspace skill's ``${cmd:}`` runs only in those); *held*: the
    resolved workspace folders not trusted yet (their skills read no ``${env:}``/``${netrc:}``)."""
    sources: list[tuple[Path, Scope]] = []
    homes: dict[Path, Path] = {}  # a workspace skills root -> its workspace folder, resolved
    for folder in workspace_folders:
        for root in (Path(folder) / ".eca" / "skills", Path(folder) / ".agents" / "skills"):
            sources.append((root, "workspace"))
            homes[root] = Path(folder).resolve(strict=False)
    sources.append((Path(global_config_dir) / "skills", "global"))
    sources += [(root, "config") for root in _config_roots(config_paths, workspace_folders)]
    result = SkillSet()
    seen_files: set[Path] = set()
    for root, scope in sources:
        for path in _skill_files(root):
            try:
                key = path.resolve()
            except OSError:
                key = path
            if key in seen_files:
                continue
            home = homes.get(root)
            if home is not None and not key.parent.is_relative_to(home):
                # a repository's .eca/skills/x linking out (to ~/other-project/skills) would make that folder one
                # read_file reads without asking: not loaded, as a rule or a command linking out is not
                problem = f"{path}: skill skipped: symlink points outside the workspace ({key.parent})"
                log.warning("%s", problem)
                result.problems.append(problem)
                continue
            seen_files.add(key)
            parsed = _parse(path, scope, trusted, held)
            result.problems += _dynamic_problems.get(path, [])
            if isinstance(parsed, str):
                log.warning("skill skipped: %s", parsed)
                result.problems.append(parsed)
                continue
            first = result.get(parsed.name)
            if first is not None:
                result.problems.append(f"{path}: skill '{parsed.name}' is already defined by {first.path}; ignored")
                continue
            result.skills.append(parsed)
    return result


class SkillsHost(Protocol):
    """Where the skills are found: the workspace folders, the global config dir, the config as loaded (its
    ``trustedWorkspaces``) and the trust (the ``skills`` entries that apply, the folders held)."""

    @property
    def loaded(self) -> LoadedConfig: ...
    @property
    def workspace_folders(self) -> Sequence[Path]: ...
    @property
    def global_config_dir(self) -> Path: ...
    @property
    def trust(self) -> WorkspaceTrust: ...


def engine_skills(engine: SkillsHost) -> SkillSet:
    """The skills of this engine's workspace folders, global config dir and ``skills`` config entries."""
    raw = engine.loaded.raw
    # an untrusted workspace's skills read no secret, and its skill folders outside it wait (_trust.py)
    trust = engine.trust
    config = trust.effective_config()
    return discover_skills(engine.workspace_folders, engine.global_config_dir, (config.model_extra or {}).get("skills"),
                           raw.get("trustedWorkspaces"), trust.held_folders())


def read_roots(skills: SkillSet, workspace_folders: Iterable[Path]) -> tuple[Path, ...]:
    """The skill folders outside the workspace: ``read_file`` reads below them without asking."""
    folders = [Path(f).resolve(strict=False) for f in workspace_folders]
    roots: list[Path] = []
    for skill in skills.skills:
        folder = skill.folder.resolve(strict=False)
        if not any(folder == f or folder.is_relative_to(f) for f in folders):
            roots.append(folder)
    return tuple(roots)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def render_skills(skills: SkillSet, tool_name: str = "eca__skill") -> str:
    """The system prompt's compact catalogue ("" without skills): a name and a description per skill, as the
    reference server sends it."""
    if not skills.skills:
        return ""
    lines = ["# Skills", "", f'<skills description="Available skills; load with {tool_name} when relevant.">']
    lines += [f'<skill name="{_attr(s.name)}" description="{_attr(s.description)}"/>' for s in skills.skills]
    lines.append("</skills>")
    return "\n".join(lines) + "\n"


def list_skills(skills: SkillSet, shadowed: Mapping[str, str] | None = None) -> str:
    """``/skills``: each skill with its description and where it comes from; then the files that were skipped.

    Each skill is also the command ``/<name>``, except where ``shadowed`` (skill name → the command that wins, e.g.
    ``"the built-in command /doctor"``) says another command has its name: the line says so."""
    shadowed = shadowed or {}
    if not skills.skills:
        text = ("No skills found. A skill is a folder with a SKILL.md (front matter: name, description) under "
                ".eca/skills/ or .agents/skills/ of a workspace folder, or ~/.config/eca/skills/.")
    else:
        rows = [f"- {s.name}: {s.description} ({s.scope}, {s.folder})"
                + (f" — not a command: /{s.name} is {shadowed[s.name]}, which wins" if s.name in shadowed else "")
                for s in skills.skills]
        text = ("Skills available (each is also a command: /<name> your request loads it into the prompt):\n\n"
                + "\n".join(rows))
    if skills.problems:
        text += "\n\nSkipped:\n" + "\n".join(f"- {p}" for p in skills.problems)
    return text


def skill_prompt(skill: Skill, argument: str) -> str:
    """The prompt of the command ``/<skill name> <words>``, as the reference runs a skill command: the skill is
    loaded into the prompt (no tool round needed), its ``$ARGUMENTS``/``$1``/``{{name}}`` placeholders filled
    from the words as a custom command's are; words no placeholder took are the request itself."""
    words = argument.strip()
    body = render_template(skill.body, words)
    lines = [f"Load skill: {skill.name}", "", skill_text(skill, body)]
    if words and body == skill.body:
        lines += ["", f"Request: {words}"]
    elif not words:
        lines += ["", "Follow the skill's instructions."]
    return "\n".join(lines)


class SkillsPlugin(BasePlugin):
    """Offers the ``skill`` tool while there is at least one skill (as the reference's tool is enabled only then),
    so users without skills see no change in the tool list."""

    name = "skills"

    def __init__(self, skills: Callable[[], SkillSet]) -> None:
        self._skills = skills
        self._tool = SkillTool(lambda: skills().skills)

    def tools(self) -> Sequence[Tool]:
        """The ``skill`` tool when the workspace has skills, else nothing."""
        return [self._tool] if self._skills().skills else []
