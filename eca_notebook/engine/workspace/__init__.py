"""What a workspace declares and whether it is trusted: rules, commands, skills, agents, hooks, templates — and
**trust**, which holds everything a workspace could use against its user until the user says yes.

``_trust`` asks the trust question and keeps the digest of what was trusted; ``_rules``, ``commands``, ``_skills``
and ``_agents`` read their markdown files (only regular files inside their folder); ``_hooks`` and
``_chat_status`` run the configured hooks; ``_templates`` renders prompt templates safely; ``_provenance`` signs what
the engine writes into notebooks; ``_front_matter`` parses the files' YAML headers. Below it: ``chats``, ``models``,
``config``.
"""

from __future__ import annotations

from ._agents import Agents, agent_dirs, agent_files, build_agents, files_signature
from ._hooks import HookOutcome, Hooks
from ._provenance import provenance_key
from ._rules import Rule, load_rules, render_rules
from ._skills import SkillsPlugin, engine_skills, list_skills, read_roots, render_skills, skill_prompt
from ._templates import render_prompt_template, template_variables
from ._trust import WorkspaceTrust, update_chat

__all__ = [
    "Agents",
    "HookOutcome",
    "Hooks",
    "Rule",
    "SkillsPlugin",
    "WorkspaceTrust",
    "agent_dirs",
    "agent_files",
    "build_agents",
    "engine_skills",
    "files_signature",
    "list_skills",
    "load_rules",
    "provenance_key",
    "read_roots",
    "render_prompt_template",
    "render_rules",
    "render_skills",
    "skill_prompt",
    "template_variables",
    "update_chat",
]
