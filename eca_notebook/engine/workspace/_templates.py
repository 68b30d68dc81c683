"""Templates in custom agent prompts and rules, as the reference renders them with Selmer.

Why: a user's prompt or rule written for the reference adapts to the chat — ``{% if isSubagent %}…{% else %}…
{% endif %}``, ``{% if toolEnabled_eca__shell_command %}…{% endif %}``, ``{{ workspaceRoots }}`` — and sending those
tags to the model verbatim would give it contradicting instructions. Selmer's tags used there (``if``/``else``/
``endif``, ``{{ var }}``, ``for``) are Jinja2's, so Jinja2 renders them.

Safety and robustness: a workspace's rules are the repository's text, so they render in Jinja2's
:class:`~jinja2.sandbox.SandboxedEnvironment` (no attribute access to Python internals); an unknown variable renders
empty (as in Selmer); a broken template keeps its raw text (the reference does the same) and is reported as a config
problem — a prompt is never lost and a turn never fails for it. Text without ``{%`` or ``{{`` is returned untouched,
so prompts that merely mention braces are not disturbed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import TemplateError, nodes
from jinja2.sandbox import SandboxedEnvironment

from ...protocol import JsonObject

__all__ = ["is_template", "render_prompt_template", "template_variables"]

log = logging.getLogger(__name__)

_env = SandboxedEnvironment(keep_trailing_newline=True, autoescape=False)
_MAX_RANGE = 1000
_env.globals["range"] = lambda *args: range(*args)[:_MAX_RANGE]

# Bounded work: the sandbox keeps a repository's rule away from Python internals, not from the CPU or the memory —
# two nested loops over range(100000) ran for hours, "x" * 10**10 took 20 GB, a macro calling itself twice doubles per
# level, at every prompt. So a template may use what the reference's prompts use (if/elif/else, {{ var }}, one
# level of for, and/or/not/comparisons, a few filters that cannot grow text) and what it renders is capped.
_MAX_OUTPUT = 256 * 1024  # characters (a rule is read up to 64 KB)
_SAFE_FILTERS = frozenset({"capitalize", "default", "d", "e", "escape", "first", "last", "length", "count", "lower",
                           "upper", "title", "trim", "string", "int", "float", "join", "list", "sort", "unique",
                           "reverse", "striptags", "safe"})
_UNBOUNDED = (nodes.Macro, nodes.CallBlock, nodes.Mul, nodes.Pow, nodes.Mod, nodes.FloorDiv, nodes.Div,
              nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends, nodes.Block, nodes.FilterBlock,
              nodes.With, nodes.Scope, nodes.ScopedEvalContextModifier, nodes.ExprStmt)


class _Unbounded(Exception):
    """A template using what could make rendering it take unbounded time or memory (see above)."""


def _check_bounded(tree: nodes.Template) -> None:
    for node in tree.find_all(_UNBOUNDED):
        raise _Unbounded(f"{type(node).__name__.lower()} is not allowed in a prompt template")
    for loop in tree.find_all(nodes.For):
        if loop.recursive or any(True for _ in loop.find_all(nodes.For)):
            raise _Unbounded("nested or recursive loops are not allowed in a prompt template")
        if any(True for part in loop.body for _ in part.find_all(nodes.Call)):
            raise _Unbounded("calls inside a loop are not allowed in a prompt template")
    for node in tree.find_all(nodes.Filter):
        if node.name not in _SAFE_FILTERS:
            raise _Unbounded(f"filter {node.name!r} is not allowed in a prompt template")
    for call in tree.find_all(nodes.Call):
        if not (isinstance(call.node, nodes.Name) and call.node.name == "range"):
            raise _Unbounded("only range() may be called in a prompt template")


def _render_bounded(text: str, variables: Mapping[str, Any]) -> str:
    _check_bounded(_env.parse(text))
    out: list[str] = []
    size = 0
    for chunk in _env.from_string(text).generate(dict(variables)):
        size += len(chunk)
        if size > _MAX_OUTPUT:
            raise _Unbounded(f"renders more than {_MAX_OUTPUT} characters")
        out.append(chunk)
    return "".join(out)


def is_template(text: str) -> bool:
    """Whether *text* has template tags at all (only then is it rendered)."""
    return "{%" in text or "{{" in text


def template_variables(*, subagent: bool, workspace_folders: Sequence[Path],
                       tool_names: Iterable[str]) -> JsonObject:
    """The reference's variables: ``isSubagent``, ``workspaceRoots`` (the folders, comma-separated),
    ``toolEnabled_<full tool name>`` for each tool offered, plus its ``osName``, ``shell``, ``userName``,
    ``homeDir``."""
    variables: JsonObject = {
        "isSubagent": subagent,
        "workspaceRoots": ", ".join(str(f) for f in workspace_folders),
        "osName": f"{os.uname().sysname} {os.uname().release}" if hasattr(os, "uname") else os.name,
        "shell": os.environ.get("SHELL") or os.environ.get("ComSpec") or "",
        "userName": _user_name(),
        "homeDir": str(Path.home()),
    }
    for name in tool_names:
        variables[f"toolEnabled_{name}"] = True
    return variables


def _user_name() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:  # no user name in this environment (containers): an empty name is fine in a prompt
        return ""


def render_prompt_template(text: str, variables: Mapping[str, Any], label: str,
                           problems: list[str] | None = None) -> str:
    """*text* rendered with *variables*; on a template error the raw text, and a problem naming *label*."""
    if not is_template(text):
        return text
    try:
        return _render_bounded(text, variables)
    except _Unbounded as exc:
        message = f"{label}: template not rendered ({exc}); its text is used as written"
    except TemplateError as exc:
        message = f"{label}: template error ({type(exc).__name__}: {exc}); its text is used as written"
    except Exception as exc:  # a sandbox violation or a filter failing on a value: same treatment
        message = f"{label}: template error ({type(exc).__name__}); its text is used as written"
    if problems is None or message not in problems:  # (once, not at every request)
        log.warning("%s", message)
        if problems is not None:
            problems.append(message)
    return text
