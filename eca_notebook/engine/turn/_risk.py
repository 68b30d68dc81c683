"""The risk level of one prepared tool call — ``low`` / ``medium`` / ``high`` and a one-line reason.

Why the engine computes it, for every call after ``prepare``: the level rides on every content of the call
(``toolCallRun`` … ``toolCalled``), so every door can show it next to the approval buttons and in the history, and
the approval policy can act on it (``toolCall.approval.risk``, see :mod:`._approval`). A level that depends on the
door would mean a call auto-allowed in one client and asked in another.

Where the level comes from, most specific first:

1. the tool says it itself: an ``assess_risk(prepared, ctx)`` method returning a :class:`ToolCallRisk` (the shell
   tool, which parses the command line: see ``tools/_shell_risk.py``);
2. MCP tools: the server's annotations — ``readOnlyHint`` → low, ``destructiveHint`` → high, ``openWorldHint`` →
   at least medium; a tool without annotations is medium. The hints are only as honest as the server, which is
   why nothing reads "low" unless the server said read-only;
3. the native file and notebook tools, by what the prepared call touches: reading is low (medium outside the
   workspace — the content goes to the model), creating a new file in the workspace is low (nothing is lost),
   editing or overwriting a file, moving, deleting a notebook cell and running code are medium, and any change
   outside the workspace is high — so is a write under ``.git/`` (a hook or the config runs as code on the next git
   command, whoever runs it). Deleting a file git tracks is medium (the repository can give it back, and the call is
   undoable); deleting an untracked file is high (undo is then the only way back, and only while this server
   runs), as is any deletion outside the workspace or under ``.git/``;
4. anything else: low when the tool declares itself harmless (``mutates`` False and ``default_approval`` allow),
   else medium.

Assessing never fails a call: a bug here gives "medium: the risk could not be assessed".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...protocol import ToolCallRisk
from ...tools.base import Prepared, Tool, ToolContext, tool_origin, tool_server

__all__ = ["assess_risk"]

log = logging.getLogger(__name__)

_NATIVE = "eca"
_READERS = frozenset({"read_file", "grep", "directory_tree", "editor_diagnostics", "notebook_read",
                      "list_variables", "inspect_variable", "search_symbols", "search_text", "vector_search",
                      "editor_definition", "editor_references"})


def assess_risk(tool: Tool, prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    """The risk of running `prepared` (see the module docstring). Never raises."""
    try:
        own = getattr(tool, "assess_risk", None)
        if callable(own):
            risk = own(prepared, context)
            if isinstance(risk, ToolCallRisk):
                return risk
        if tool_origin(tool) == "mcp":
            return _mcp(getattr(tool, "annotations", None))
        if tool_server(tool) == _NATIVE:
            assess = _NATIVE_TOOLS.get(tool.name)
            if assess is not None:
                return assess(prepared, context)
        return _declared(tool)
    except Exception:  # a classifier bug must not fail the call: it is asked about as an unknown
        log.exception("risk assessment failed for %s", getattr(tool, "name", tool))
        return ToolCallRisk(level="medium", reason="the risk could not be assessed")


# ---------------------------------------------------------------------------------------------------------------
# MCP


def _mcp(annotations: Any) -> ToolCallRisk:
    """From the MCP ``ToolAnnotations`` (2025-03-26 spec) a server gave, or the lack of them."""
    if not isinstance(annotations, dict) or not any(
            k in annotations for k in ("readOnlyHint", "destructiveHint", "openWorldHint")):
        return ToolCallRisk(level="medium", reason="MCP tool without annotations")
    read_only = annotations.get("readOnlyHint") is True
    open_world = annotations.get("openWorldHint") is True
    if not read_only and annotations.get("destructiveHint") is True:
        return ToolCallRisk(level="high", reason="MCP tool marked destructive (destructiveHint)")
    if read_only and not open_world:
        return ToolCallRisk(level="low", reason="MCP tool marked read-only (readOnlyHint)")
    if read_only:
        return ToolCallRisk(level="medium", reason="read-only MCP tool that reaches outside (openWorldHint)")
    if open_world:
        return ToolCallRisk(level="medium", reason="MCP tool that changes things and reaches outside (openWorldHint)")
    return ToolCallRisk(level="medium", reason="MCP tool that changes things (not read-only)")


# ---------------------------------------------------------------------------------------------------------------
# Native tools


def _shown(path: Path, context: ToolContext) -> str:
    """A path as the user knows it: relative to its workspace folder, absolute outside."""
    for folder in context.workspace_folders:
        try:
            return str(path.relative_to(folder.resolve(strict=False)))
        except ValueError:
            continue
    return str(path)


def _outside(prepared: Prepared, context: ToolContext) -> Path | None:
    """The first path of the call outside every workspace folder (None when it stays inside)."""
    if not prepared.outside_workspace:
        return None
    folders = [f.resolve(strict=False) for f in context.workspace_folders]
    for path in prepared.paths:
        resolved = path.resolve(strict=False)
        if not any(resolved == f or resolved.is_relative_to(f) for f in folders):
            return resolved
    return prepared.paths[0] if prepared.paths else Path("?")


def _in_git_dir(path: Path) -> bool:
    """Whether `path` is under a ``.git`` directory: hooks and config there run as code on the next git command."""
    return ".git" in path.resolve(strict=False).parts


def _reader(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    outside = _outside(prepared, context)
    if outside is not None:
        return ToolCallRisk(level="medium", reason=f"reads outside the workspace: {outside}")
    return ToolCallRisk(level="low", reason="only reads")


def _plan(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    return ToolCallRisk(level="low", reason="updates the plan")


def _write(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    """write_file and edit_file: a new file loses nothing; an existing one is changed (the diff is shown)."""
    outside = _outside(prepared, context)
    if outside is not None:
        return ToolCallRisk(level="high", reason=f"writes outside the workspace: {outside}")
    path = prepared.paths[0]
    shown = _shown(path, context)
    if _in_git_dir(path):
        return ToolCallRisk(level="high", reason=f"writes git's internals: {shown} (runs as code on the next git "
                                                 "command)")
    state = prepared.state if isinstance(prepared.state, dict) else {}
    new = not path.exists() and not state.get("via_client")
    if new:
        return ToolCallRisk(level="low", reason=f"creates a new file: {shown}")
    verb = "overwrites" if prepared.args.get("content") is not None else "edits"
    return ToolCallRisk(level="medium", reason=f"{verb} {shown}")


def _move(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    outside = _outside(prepared, context)
    if outside is not None:
        return ToolCallRisk(level="high", reason=f"moves a file outside the workspace: {outside}")
    src, dst = (prepared.paths + [Path("?"), Path("?")])[:2]
    if _in_git_dir(src) or _in_git_dir(dst):
        inside = dst if _in_git_dir(dst) else src
        return ToolCallRisk(level="high", reason=f"writes git's internals: {_shown(inside, context)} (runs as code "
                                                 "on the next git command)")
    return ToolCallRisk(level="medium", reason=f"moves {_shown(src, context)} to {_shown(dst, context)}")


def _delete(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
    """delete_file: medium for a file git tracks, high for anything git cannot give back (see the module docstring)."""
    outside = _outside(prepared, context)
    if outside is not None:
        return ToolCallRisk(level="high", reason=f"deletes a file outside the workspace: {outside}")
    path = prepared.paths[0]
    shown = _shown(path, context)
    if _in_git_dir(path):
        return ToolCallRisk(level="high", reason=f"deletes git's internals: {shown}")
    state = prepared.state if isinstance(prepared.state, dict) else {}
    if state.get("tracked"):
        return ToolCallRisk(level="medium", reason=f"deletes {shown} (tracked by git: the repository has it)")
    return ToolCallRisk(level="high", reason=f"deletes {shown}, which git does not track (only undo brings it back)")


def _notebook(level: str, what: str) -> Callable[[Prepared, ToolContext], ToolCallRisk]:
    """A notebook tool: `what` it does at `level`, high whatever it is when the notebook is outside the workspace."""
    def assess(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
        outside = _outside(prepared, context)
        if outside is not None:
            return ToolCallRisk(level="high", reason=f"{what} in a notebook outside the workspace: {outside}")
        where = f" of {_shown(prepared.paths[0], context)}" if prepared.paths else ""
        return ToolCallRisk.model_validate({"level": level, "reason": f"{what}{where}"})
    return assess


def _kernel(level: str, what: str) -> Callable[[Prepared, ToolContext], ToolCallRisk]:
    """The live kernel's tools (a notebook session): no path; `what` it does at `level`."""
    def assess(prepared: Prepared, context: ToolContext) -> ToolCallRisk:
        return ToolCallRisk.model_validate({"level": level, "reason": what})
    return assess


_NATIVE_TOOLS: dict[str, Callable[[Prepared, ToolContext], ToolCallRisk]] = {
    **{name: _reader for name in _READERS},
    "update_plan": _plan,
    "write_file": _write,
    "edit_file": _write,
    "move_file": _move,
    "delete_file": _delete,
    "notebook_insert_cell": _notebook("low", "adds a cell"),
    "notebook_move_cell": _notebook("low", "moves a cell"),
    "notebook_edit_cell": _notebook("medium", "edits a cell"),
    "notebook_delete_cell": _notebook("medium", "deletes a cell"),
    "notebook_run_cells": _notebook("medium", "runs code in cells"),
    # the kernel tools of a %eca session (notebook/_kernel_tools.py)
    "run_python": _kernel("medium", "runs Python code in the kernel"),
    "insert_cell": _kernel("low", "adds a cell"),
    "replace_cell": _kernel("medium", "replaces a cell's source"),
}


def _declared(tool: Tool) -> ToolCallRisk:
    """A tool we know nothing about (a plug-in's): what it declares about itself."""
    if not getattr(tool, "mutates", True) and getattr(tool, "default_approval", "ask") == "allow":
        return ToolCallRisk(level="low", reason="a tool that declares it changes nothing")
    return ToolCallRisk(level="medium", reason=f"no risk profile for {tool.name}")
