"""Tool-call approval: decide allow / ask / deny from ``toolCall.approval`` and what the user approved this session.

Precedence, first match wins (as the reference server documents it, plus our ``risk`` map):

1. a ``deny`` rule matches → deny (nothing overrides a deny, not even an approval remembered this session);
2. ``risk`` says ``deny`` for the call's risk level → deny;
3. the call touches a path outside every workspace folder → ask, even if an ``allow`` rule, ``byDefault: "allow"``
   or ``risk: {level: "allow"}`` would apply (for ``shell_command``: a path named in the command line, or a ``cd``
   out of the workspace);
4. the call is covered by an approval remembered this session → allow; when ``risk`` says ``ask`` for its level,
   only an approval of this very call counts (the exact command line; for other tools, the tool) — so approving
   ``git push`` for the session does not let ``git push --force`` through by prefix;
5. the tool says the call must be asked (``must_ask``: a shell command whose paths cannot be known before it
   runs) → ask, even under an ``allow`` rule or ``byDefault: "allow"`` — but after step 4, so the exact command
   approved for the session still runs;
6. ``risk`` says ``ask`` for the call's level → ask, even where an ``allow`` rule or ``byDefault: "allow"`` would
   let it run ("always ask for high risk");
7. an ``ask`` rule matches → ask;
8. an ``allow`` rule matches → allow;
9. ``risk`` says ``allow`` for the call's level → allow ("auto-allow low risk": below every rule the user wrote, so
   an ``ask`` rule still asks);
10. ``byDefault``.

``risk`` is our key (``toolCall.approval.risk``, e.g. ``{"low": "allow", "high": "ask"}``); a level it leaves out,
and a call without a level, go through the other steps unchanged — by default it is empty and the level only
informs (engine/turn/_risk.py computes it).

Deliberately more conservative than the reference in two places:

- A session-remembered approval does **not** cover an outside-workspace call. "Remember" is given while looking at
  one concrete call inside the project; it should not silently extend to writing ``~/.bashrc`` later.
- Broken regexes fail *closed*: in a ``deny``/``ask`` rule a pattern that does not compile counts as a match, in an
  ``allow`` rule as no match (config validation normally rejects them earlier; this is only a guard). ``deny`` and
  ``ask`` patterns also use ``re.DOTALL`` so ``.*\\brm\\b.*`` still catches ``ls\\nrm -rf x``, while ``allow``
  patterns keep ``.`` away from newlines so ``git status.*`` never allows ``git status\\nrm -rf x``.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from ...protocol import JsonObject, ToolCallRisk
from ..config import ApprovalConfig, ArgsRule

__all__ = [
    "NATIVE_SERVER",
    "ApprovalRequest",
    "Decision",
    "SessionApprovals",
    "Verdict",
    "decide",
    "hidden_tools",
    "selector_matches",
]

log = logging.getLogger(__name__)

NATIVE_SERVER = "eca"
_SHELL_TOOL = "shell_command"

Decision = Literal["allow", "ask", "deny"]


@dataclass
class ApprovalRequest:
    """One tool call as the approval policy sees it (arguments already validated/normalised by the tool)."""

    tool: str  # "read_file" (native, no prefix) or the MCP tool's own name
    server: str  # "eca" for native tools, else the MCP server name
    args: JsonObject
    outside_workspace: bool = False
    must_ask: str | None = None  # the tool's reason this call must be asked (see Prepared.must_ask)
    risk: ToolCallRisk | None = None  # the engine's assessment (engine/turn/_risk.py); None: not assessed


@dataclass
class Verdict:
    decision: Decision
    reason: str  # for logs and rejection text, e.g. 'deny rule "eca__shell_command"'


# ---------------------------------------------------------------------------------------------------------------
# Selectors and rules
# ---------------------------------------------------------------------------------------------------------------


def selector_matches(selector: str, server: str, tool: str) -> bool:
    """Whether an approval-rule key selects the tool ``tool`` of ``server``.

    Keys are exact names, never patterns: ``<server>__<tool>`` (``eca__read_file``, ``my-mcp__query``), a server name
    (``my-mcp``, ``eca``: all its tools) and, for native tools only, the bare name (``read_file``) or the older
    single-underscore spelling (``eca_read_file``). A bare MCP tool name is read as a server name, as the reference
    does, so it selects nothing unless a server has that name.
    """
    if selector == server or selector == f"{server}__{tool}":
        return True
    if server == NATIVE_SERVER:
        return selector == tool or selector == f"eca_{tool}"
    return False


@lru_cache(maxsize=512)
def _compile(pattern: str, dotall: bool) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.DOTALL if dotall else 0)
    except re.error:
        return None


def _arg_text(value: Any) -> str:
    """The string a matcher sees: strings as they are, anything else as compact JSON (``true``, ``3``, ``["a"]``)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def _rule_matches(rule: ArgsRule, args: JsonObject, *, fail_closed: bool) -> tuple[bool, str | None]:
    """(matches, detail). ``{}`` matches every call; otherwise EVERY listed argument must be present and fully match
    ANY of its regexes. A ``None`` argument counts as missing. ``detail`` names what matched, for logs."""
    if not rule.args_matchers:
        return True, None
    details = []
    for arg, patterns in rule.args_matchers.items():
        value = args.get(arg)
        if value is None:
            return False, None
        text = _arg_text(value)
        hit = None
        for pattern in patterns:
            compiled = _compile(pattern, fail_closed)
            if compiled is None:
                log.warning("approval rule: invalid regular expression for argument %r ignored (%s)", arg,
                            "treated as a match" if fail_closed else "treated as no match")
                if fail_closed:
                    hit = pattern
                    break
                continue
            if compiled.fullmatch(text):
                hit = pattern
                break
        if hit is None:
            return False, None
        details.append(f"{arg} ~ {hit!r}")
    return True, ", ".join(details)


def _first_match(
    rules: dict[str, ArgsRule], request: ApprovalRequest, *, fail_closed: bool
) -> tuple[str, str | None] | None:
    for selector, rule in rules.items():
        if rule is None or not selector_matches(selector, request.server, request.tool):
            continue
        matched, detail = _rule_matches(rule, request.args, fail_closed=fail_closed)
        if matched:
            return selector, detail
    return None


# ---------------------------------------------------------------------------------------------------------------
# Session approvals
# ---------------------------------------------------------------------------------------------------------------

# Anything that lets one command line run more than one program, or run something the user never saw: chaining,
# pipes, substitution, redirection, subshells, brace groups, line breaks.
_SHELL_META = re.compile(r"[;&|$`<>(){}\n\r]")

# Programs whose first word is a subcommand (``git status``). Only for these is "program + subcommand" remembered:
# for anything else the second word is an operand (``rm x``), and remembering ``rm x`` as a prefix would also
# approve ``rm x /``.
_SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "pipenv", "conda", "mamba", "micromamba",
    "cargo", "go", "docker", "podman", "kubectl", "helm", "gh", "jupyter", "dotnet", "mvn", "gradle", "terraform",
    "hatch", "pdm", "rustup", "brew", "systemctl", "pre-commit", "tox", "nox",
})

# Words that make a command run something given as a further argument (``uv run rm -rf /``, ``docker compose exec``,
# ``git rebase --exec 'rm -rf x'``), write where the user did not look (``git diff --output=~/.bashrc``) or change
# what later commands run (``git config core.pager …``, ``git config alias.x '!sh'``). A command
# line containing one anywhere after the program is never remembered or covered by prefix — only an exact earlier
# approval covers it — since approving ``uv run pytest`` must not approve ``uv run anything``.
_RUNNER_WORDS = frozenset({
    "run", "exec", "x", "dlx", "shell", "eval", "execute", "debug", "env", "alias", "script", "sh", "bash",
    "-x", "--exec", "-c", "--command", "--upload-pack", "--receive-pack", "--ext-diff", "--output", "-o",
    "config", "--config", "--eval", "--execute", "--init-command",
})

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9._:-]*")


def _shell_prefix(command: str) -> tuple[str, str] | None:
    """``("git", "status")`` for ``git status --short``; None when no prefix may be remembered or matched."""
    if _SHELL_META.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 2:
        return None
    program, sub = words[0], words[1]
    if program not in _SUBCOMMAND_PROGRAMS or not _WORD.fullmatch(sub):
        return None
    if any(w.split("=", 1)[0] in _RUNNER_WORDS for w in words[1:]):
        return None
    return program, sub


@dataclass
class SessionApprovals:
    """What the user approved with ``save: "session"`` (``chat/toolCallApprove``); in memory only.

    For most tools remembering approves the tool (server + name) for the rest of the session. ``shell_command`` is
    granular, because "remember" for a shell tool would otherwise approve *any* command: it remembers the exact
    command line, plus the prefix "program + subcommand" (``git status``) when the command is a single plain command
    (no ``;&|$`<>(){}`` or line breaks) of a known subcommand-style program. So approving ``git status`` also covers
    ``git status --short``, but never ``git status; rm -rf /`` (metacharacters: only an exact earlier approval
    covers it) nor ``rm -rf x`` (a different program, and ``rm`` takes operands, not subcommands). Command lines
    with a runner word (``uv run …``, ``docker compose exec …``, ``git rebase --exec …``) are remembered and
    covered exactly only, since their arguments are themselves programs.

    A remembered approval never covers a call that touches a path outside the workspace: :func:`decide` asks for
    those regardless (the user approved a call inside the project).
    """

    tools: set[tuple[str, str]] = field(default_factory=set)
    shell_commands: set[str] = field(default_factory=set)
    shell_prefixes: set[tuple[str, str]] = field(default_factory=set)

    @staticmethod
    def _is_shell(request: ApprovalRequest) -> bool:
        return request.server == NATIVE_SERVER and request.tool == _SHELL_TOOL

    def remember(self, request: ApprovalRequest) -> None:
        """"Allow for this session": the tool (or the shell command's program) is not asked again in this chat."""
        if not self._is_shell(request):
            self.tools.add((request.server, request.tool))
            return
        command = request.args.get("command")
        if not isinstance(command, str) or not command.strip():
            return  # nothing concrete was approved; never widen to the whole shell tool
        command = command.strip()
        self.shell_commands.add(command)
        prefix = _shell_prefix(command)
        if prefix is not None:
            self.shell_prefixes.add(prefix)

    def covers(self, request: ApprovalRequest, *, exactly: bool = False) -> bool:
        """Whether an approval remembered this session covers `request`; `exactly`: only the same command line for
        ``shell_command`` (no prefix), for calls the ``risk`` config wants asked."""
        if not self._is_shell(request):
            return (request.server, request.tool) in self.tools
        command = request.args.get("command")
        if not isinstance(command, str) or not command.strip():
            return False
        command = command.strip()
        if command in self.shell_commands:
            return True
        if exactly:
            return False
        prefix = _shell_prefix(command)
        return prefix is not None and prefix in self.shell_prefixes

    def describe_shell(self, request: ApprovalRequest, details: JsonObject) -> None:
        """Fill a shell call's ``ShellCommandDetails`` with what "approve & remember" would remember: the
        ``approvalKey`` ("program subcommand") of a line that is one plain command of a subcommand-style program
        (see the class doc) and whether it is ``remembered``. Any other line is remembered only exactly, so its
        commands carry no key."""
        command = request.args.get("command")
        prefix = _shell_prefix(command.strip()) if isinstance(command, str) else None
        commands = details.get("commands")
        if prefix is None or not isinstance(commands, list) or len(commands) != 1 or not isinstance(commands[0], dict):
            return
        commands[0]["approvalKey"] = " ".join(prefix)
        commands[0]["remembered"] = prefix in self.shell_prefixes

    def clear(self) -> None:
        """Forget every session approval (a new session, or the user taking them back)."""
        self.tools.clear()
        self.shell_commands.clear()
        self.shell_prefixes.clear()


# ---------------------------------------------------------------------------------------------------------------
# Decision
# ---------------------------------------------------------------------------------------------------------------


def _rule_reason(kind: str, selector: str, detail: str | None) -> str:
    reason = f'{kind} rule "{selector}"'
    return f"{reason} ({detail})" if detail else reason


_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def decide(request: ApprovalRequest, approval: ApprovalConfig, session: SessionApprovals) -> Verdict:
    """The verdict for one call; see the module docstring for the precedence and why it is shaped so.

    While an untrusted workspace's approvals are held (``approval.floor``, workspace/_trust.py) the verdict is the
    stricter of the merged config's and the user's own: the workspace's ``ask``/``deny`` rules still apply, its
    ``allow`` rules, ``byDefault: "allow"`` or removed rules do not."""
    verdict = _decide(request, approval, session)
    floor = approval.floor
    if floor is not None:
        held = _decide(request, floor, session)
        if _STRICTNESS[held.decision] > _STRICTNESS[verdict.decision]:
            verdict = Verdict(held.decision, f"{held.reason}; the workspace config's looser approval waits for "
                                             "/trust")
    log.debug("tool call approval decision for %s__%s: %s (%s)", request.server, request.tool, verdict.decision,
              verdict.reason)
    return verdict


def _decide(request: ApprovalRequest, approval: ApprovalConfig, session: SessionApprovals) -> Verdict:
    hit = _first_match(approval.deny, request, fail_closed=True)
    if hit is not None:
        return Verdict("deny", _rule_reason("deny", *hit))
    by_risk = approval.risk.get(request.risk.level) if request.risk is not None else None
    risk_reason = f'risk "{request.risk.level}" is set to {by_risk} ({request.risk.reason})' \
        if request.risk is not None else ""
    if by_risk == "deny":
        return Verdict("deny", risk_reason)
    if request.outside_workspace:
        return Verdict("ask", "the call touches a path outside the workspace")
    if session.covers(request, exactly=by_risk == "ask"):
        return Verdict("allow", "approved earlier in this session")
    if request.must_ask:
        return Verdict("ask", request.must_ask)
    if by_risk == "ask":
        return Verdict("ask", risk_reason)
    hit = _first_match(approval.ask, request, fail_closed=True)
    if hit is not None:
        return Verdict("ask", _rule_reason("ask", *hit))
    hit = _first_match(approval.allow, request, fail_closed=False)
    if hit is not None:
        return Verdict("allow", _rule_reason("allow", *hit))
    if by_risk == "allow":
        return Verdict("allow", risk_reason)
    return Verdict(approval.by_default, f'byDefault "{approval.by_default}"')


def hidden_tools(approval: ApprovalConfig, tools: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ``(server, tool)`` pairs a ``deny`` rule without ``argsMatchers`` removes from what the LLM sees.

    A deny rule *with* matchers keeps the tool visible: only matching calls are rejected.
    """
    unconditional = [s for s, rule in approval.deny.items() if rule is not None and not rule.args_matchers]
    if approval.floor is not None:  # an untrusted workspace cannot unhide what the user's own config hides
        unconditional += [s for s, rule in approval.floor.deny.items() if rule is not None and not rule.args_matchers]
    return {(server, tool) for server, tool in tools if any(selector_matches(s, server, tool) for s in unconditional)}
