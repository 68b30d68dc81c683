"""``skill``: the model loads a skill's instructions (its ``SKILL.md`` body) when a task matches its description.

The skills themselves are found by the engine (``engine/workspace/_skills.py``: ``.eca/skills``, ``.agents/skills``,
``~/.config/eca/skills``); this tool only reads what it is given, so it needs no config of its own. It changes
nothing, so it runs without asking — unless the user's approval rules say otherwise: its name and argument match the
reference server's (``eca__skill`` with ``name``), so rules such as ``"eca__skill": {"argsMatchers": {"name":
["my-skill"]}}`` work unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from ._args import ToolArgs
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["Scope", "Skill", "SkillArgs", "SkillTool", "skill_text"]

_MAX_LISTED_FILES = 100  # the files the tool lists of one skill folder

Scope = Literal["workspace", "global", "config"]


@dataclass(frozen=True)
class Skill:
    """One ``SKILL.md``: what the system prompt lists (name, description) and what the tool returns (body)."""

    name: str
    description: str
    path: Path  # the SKILL.md
    body: str  # the markdown after the front matter
    scope: Scope

    @property
    def folder(self) -> Path:
        return self.path.parent


def _folder_files(folder: Path) -> tuple[list[str], bool]:
    """The skill folder's files but SKILL.md (relative, sorted; hidden ones left out), and whether the list was cut."""
    files: list[str] = []
    for current, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(current) / name
            if name.startswith(".") or path == folder / "SKILL.md":
                continue
            files.append(path.relative_to(folder).as_posix())
            if len(files) >= _MAX_LISTED_FILES:
                return files, True
    return files, False


class SkillArgs(ToolArgs):
    name: str = Field(min_length=1,
                      description="The skill identifier from available skills to load (e.g. review-pr)")


class SkillTool(NativeTool[SkillArgs]):
    name = "skill"
    description = (
        "Load a skill to get detailed instructions for a specific task. Skills provide specialized knowledge and "
        "step-by-step guidance. Use this when a task matches an available skill's description. After loading, "
        "resolve any file paths, scripts, or relative references mentioned in the skill content against the "
        "provided base directory (read its files with read_file)."
    )
    Args = SkillArgs
    generic_summary = "Loading skill"

    def __init__(self, skills: Callable[[], Sequence[Skill]]) -> None:
        super().__init__()
        self._skills = skills

    def _prepare(self, args: SkillArgs, ctx: ToolContext) -> Prepared:
        return Prepared(args=args.model_dump(), summary=f"Loading skill '{args.name}'")

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        wanted = SkillArgs.model_validate(prepared.args).name.strip()
        skills = self._skills()
        skill = next((s for s in skills if s.name == wanted), None)
        if skill is None:
            names = ", ".join(s.name for s in skills) or "none"
            raise self.fail(f"no skill named '{wanted}'. Available skills: {names}")
        return ToolResult(output=skill_text(skill))


def skill_text(skill: Skill, body: str | None = None) -> str:
    """What the model reads of a loaded skill — by this tool, or in the prompt of a ``/skill-name`` command: its
    name, folder, body (``body``: the command's, its arguments filled in) and the folder's other files."""
    files, cut = _folder_files(skill.folder)
    parts = [f"**Skill**: {skill.name}", f"**Base directory**: {skill.folder}", "",
             (skill.body if body is None else body).strip()]
    if files:
        parts += ["", f"Other files in {skill.folder} (read them with read_file when the skill needs them):"]
        parts += [f"- {f}" for f in files]
        if cut:
            parts.append(f"- … (only the first {_MAX_LISTED_FILES} are listed)")
    return "\n".join(parts)
