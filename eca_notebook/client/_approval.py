"""Approval policies for unattended runs: who answers a tool call that asks for approval when no human is watching.

The engine decides *whether* a call needs approval (``toolCall.approval`` config: by default writes, edits, moves and
shell commands ask, and so does anything touching a path outside the workspace). When it does, the engine sends a
``toolCallRun`` content with ``manualApproval: true`` and waits — forever, on purpose. A script or a batch job has
nobody to click *Approve*, so the client answers with a policy:

* a callable ``policy(content) -> True | "session" | False`` (sync or async), called with the ``toolCallRun``
  content dict exactly as it arrived (``name``, ``server``, ``origin``, ``arguments``, ``summary``, ``details``);
* :class:`ApprovalRules` — allow/deny lists of tool names;
* :data:`MANUAL` — do not answer: someone else (a widget, your own code) calls ``approve``/``reject``;
* :data:`DEFAULT_UNATTENDED_POLICY` (used when nothing is given) — reject anything that changes files or runs code.
"""

from __future__ import annotations

import fnmatch
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol import JsonObject

__all__ = [
    "DEFAULT_UNATTENDED_POLICY",
    "MANUAL",
    "ApprovalAnswer",
    "ApprovalPolicy",
    "ApprovalRules",
    "UnattendedPolicy",
    "decide",
    "tool_names",
]

log = logging.getLogger(__name__)

NATIVE_SERVER = "eca"

ApprovalAnswer = bool | str
#: Do not answer approvals automatically: they stay pending until ``approve``/``reject`` is called.
MANUAL: Literal["manual"] = "manual"


def tool_names(content: JsonObject) -> list[str]:
    """Every name a rule may use for the call: ``read_file`` and ``eca__read_file`` for a native tool,
    ``github__search`` for an MCP tool (the bare MCP tool name is *not* one of them: it could collide with a native
    tool of the same name)."""
    name = str(content.get("name") or "")
    server = str(content.get("server") or NATIVE_SERVER)
    names = [f"{server}__{name}"]
    if server == NATIVE_SERVER:
        names += [name, f"eca_{name}"]
    return names


@dataclass
class ApprovalRules:
    """A simple rule set for unattended runs, matched on tool names.

    A pattern is a tool name — ``write_file`` or ``eca__write_file`` for a native tool, ``server__tool`` for an MCP
    tool — a server name (``github``: all its tools), or a shell-style glob over those (``github__*``,
    ``eca__*_file``). ``deny`` wins over ``allow``; a call matching neither gets ``default`` (reject, unless you say
    otherwise: ``True`` approves, ``"session"`` approves and remembers, or any other policy decides).
    """

    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    default: Any = False

    @staticmethod
    def _matches(patterns: list[str], content: JsonObject) -> bool:
        names = tool_names(content)
        server = str(content.get("server") or NATIVE_SERVER)
        for pattern in patterns:
            if pattern == server:
                return True
            if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                return True
        return False

    def __call__(self, content: JsonObject) -> ApprovalAnswer | Awaitable[ApprovalAnswer]:
        if self._matches(self.deny, content):
            return False
        if self._matches(self.allow, content):
            return True
        default = self.default
        answer: ApprovalAnswer | Awaitable[ApprovalAnswer] = default(content) if callable(default) else default
        return answer


#: Native and notebook tools that change files, the notebook or run code.
CHANGING_TOOLS = frozenset({
    "write_file", "edit_file", "move_file", "delete_file", "shell_command",
    "run_python", "insert_cell", "replace_cell",
})
#: Read-only tools. The engine only asks approval for these when they touch a path outside the workspace.
READING_TOOLS = frozenset({"read_file", "directory_tree", "grep"})


class UnattendedPolicy:
    """The default policy of the Python client, safe for unattended runs.

    Rejects every call that changes files or runs code: ``write_file``, ``edit_file``, ``move_file``, ``delete_file``,
    ``shell_command``, the notebook's ``run_python``/``insert_cell``/``replace_cell``, any call carrying a
    ``fileChange`` diff, and any MCP tool (its effects are unknown). With the default engine config the read-only
    tools (``read_file``, ``directory_tree``, ``grep``) only ask when they reach outside the workspace — those are
    rejected too. Anything else that asks (e.g. ``list_variables`` under a custom ``ask`` rule) is approved, once.

    To let an unattended run change files, pass your own policy, e.g. ``ApprovalRules(allow=["write_file"])``, or
    allow the tools in config (``toolCall.approval.allow``), which never reaches a policy at all.
    """

    def __call__(self, content: JsonObject) -> bool:
        name = str(content.get("name") or "")
        server = str(content.get("server") or NATIVE_SERVER)
        if content.get("origin") == "mcp" or server != NATIVE_SERVER:
            return False
        if name in CHANGING_TOOLS or name in READING_TOOLS:
            return False
        details = content.get("details")
        if isinstance(details, dict) and details.get("type") == "fileChange":
            return False
        return True

    def __repr__(self) -> str:
        return "DEFAULT_UNATTENDED_POLICY"


DEFAULT_UNATTENDED_POLICY = UnattendedPolicy()

ApprovalPolicy = (
    Callable[[JsonObject], ApprovalAnswer | Awaitable[ApprovalAnswer]] | ApprovalRules | Literal["manual"]
)


async def decide(policy: Any, content: JsonObject) -> tuple[bool, str | None]:
    """Run a policy: ``(approved, save)``. A policy that fails or answers something unexpected rejects (fail safe)."""
    try:
        answer = policy(content)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        log.exception("approval policy failed for tool %s: rejecting", content.get("name"))
        return False, None
    if answer is True:
        return True, None
    if isinstance(answer, str) and answer.lower() == "session":
        return True, "session"
    if answer is not False:
        log.warning("approval policy answered %r for tool %s: rejecting (expected True, 'session' or False)",
                    answer, content.get("name"))
    return False, None
