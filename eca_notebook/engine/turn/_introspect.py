"""Read-only commands that show what the engine would send or uses: ``/rules``, ``/config``, ``/context``.

Each returns the text the chat shows (the engine wraps it like every built-in command, see ``_builtins.py``); none
calls the model or changes anything. ``/config`` prints the resolved configuration, which holds keys: every value
under a credential-like name is shown masked (as ``/doctor`` shows keys), and the whole text then goes through the
same redaction as everything else that leaves the process, so a secret elsewhere (a URL's userinfo, an MCP server's
``env``) is replaced too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._redact import credential_name, redact
from ..chats import Chat
from ..config import mask_secret
from ..workspace import engine_skills, load_rules, render_rules, render_skills
from ._host import ReportHost
from ._window import CHARS_PER_TOKEN, SMALL_MODEL_CHARS_PER_TOKEN, estimate_messages, estimate_text

__all__ = ["config_show", "context_show", "rules_show"]

_TOOL_TOKENS = 8  # per tool offered besides its definition (as the context window's estimate counts it)
_PREVIEW_LINES = 3


def rules_show(workspace_folders: Sequence[Path], global_config_dir: Path) -> str:
    """``/rules``: each rule file in the system prompt, in prompt order, with its size and first lines."""
    rules = load_rules(workspace_folders, global_config_dir)
    if not rules:
        return ("No rules. Rules are AGENTS.md and .eca/rules/*.md in a workspace folder, and "
                f"{global_config_dir / 'rules'}/*.md; their full text goes into the system prompt.")
    lines = [f"Rules in the system prompt ({len(rules)}, in order; /prompt-show shows them in full):"]
    for rule in rules:
        if rule.skipped:
            lines += ["", f"{rule.name} — {rule.path}: not read", f"  {rule.skipped}"]
            continue
        text = rule.content.strip()
        lines += ["", f"{rule.name} — {rule.path} (~{estimate_text(text):,} tokens)"]
        preview = [line for line in text.splitlines() if line.strip()][:_PREVIEW_LINES]
        lines += [f"  {line}" for line in preview]
    return "\n".join(lines)


def _masked(value: Any) -> Any:
    """*value* with every string under a credential-like key (``key``, ``apiKey``, ``*TOKEN*``…) masked."""
    if isinstance(value, dict):
        return {k: (mask_secret(v) if isinstance(v, str) and isinstance(k, str) and _secret_key(k) else _masked(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _secret_key(name: str) -> bool:
    return name.lower() in ("key", "apikey", "api_key", "token", "password", "authorization") or credential_name(name)


def config_show(engine: ReportHost) -> str:
    """``/config``: the merged configuration in effect (every layer applied), with its sources; secrets masked."""
    sources = [f"{s.name}{f' ({s.path})' if s.path else ''}" for s in engine.loaded.sources if s.applied]
    body = json.dumps(_masked(engine.loaded.raw), indent=2, sort_keys=True, default=str, ensure_ascii=False)
    head = "Resolved configuration (secrets masked). Applied layers, later wins: " + (", ".join(sources) or "none")
    problems = engine.problems
    agents = "\n\nAgents (built-in, markdown and config, inherit resolved):\n" + "\n".join(
        f"- {line}" for line in engine.agents.describe())
    tail = ("\n\nProblems:\n" + "\n".join(f"- {p}" for p in problems)) if problems else ""
    return redact(f"{head}\n\n```json\n{body}\n```{agents}{tail}")


def context_show(engine: ReportHost, chat: Chat) -> str:
    """``/context``: an estimate of what the next request of this chat would send, part by part, against the model's
    context window."""
    behavior = chat.behavior or engine.selected_behavior
    model_id = chat.model or engine.selected_model or engine.registry.default_model() or ""
    info = engine.registry.model_infos().get(model_id)
    compact = info is not None and info.compact
    per_token = SMALL_MODEL_CHARS_PER_TOKEN if compact else CHARS_PER_TOKEN
    toolbox = engine.toolbox
    offered = toolbox.offered_tools(behavior)
    system = (toolbox.compact_system_prompt(behavior, tools=bool(offered), info=info) if compact
              else toolbox.system_prompt(behavior))
    rules = render_rules(load_rules(engine.workspace_folders, engine.global_config_dir))
    skills = engine_skills(engine)
    skills_text = render_skills(skills) if any(t.name == "skill" for t in offered.values()) else ""
    rules_tokens = estimate_text(rules, per_token) if rules and rules.strip() in system else 0
    skills_tokens = estimate_text(skills_text, per_token) if skills_text else 0
    system_tokens = max(0, estimate_text(system, per_token) - rules_tokens - skills_tokens)
    # a small model is offered only the tools its prompt asks for (_small_model.py): count those of a plain prompt
    sent = toolbox.tools_for_turn(behavior, info, "", False) if compact and info is not None else offered
    tool_tokens = sum(estimate_text(json.dumps({"name": key, "description": t.description,
                                                "parameters": t.parameters}), per_token) + _TOOL_TOKENS
                      for key, t in sent.items())
    history_tokens = estimate_messages(chat.messages, per_token)
    rows = [
        ("System prompt", system_tokens, f"agent {behavior}"),
        ("Rules", rules_tokens, f"{len(load_rules(engine.workspace_folders, engine.global_config_dir))} files"),
        ("Skills", skills_tokens, f"{len(skills.skills)} listed by name and description" if skills_tokens else "none"),
        ("Tools", tool_tokens, f"{len(sent)} of {len(offered)} definitions: a small model gets only the tools its "
                               "prompt asks for" if compact else f"{len(offered)} definitions"),
        ("History", history_tokens, f"{len(chat.messages)} messages, attached contexts included"),
    ]
    total = sum(tokens for _, tokens, _ in rows)
    width = max(len(name) for name, _, _ in rows)
    lines = [f"Context of the next request — {model_id or '(no model)'}, estimated at "
             f"~{per_token:g} characters a token:", ""]
    lines += [f"  {name.ljust(width)}  {tokens:>9,} tokens  ({note})" for name, tokens, note in rows]
    limit = info.context_limit if info is not None else None
    share = f" of {limit:,} ({100 * total / limit:.1f}% of the context window)" if limit else ""
    lines += ["", f"  {'Total'.ljust(width)}  {total:>9,} tokens{share}"]
    return "\n".join(lines)
