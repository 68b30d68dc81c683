"""Custom tools: command-line programs the user declares in config as tools (the reference's ``customTools``).

The reference's shape, kept as written (its ``docs/config/tools.md``)::

    {"customTools": {"web-search": {
        "description": "Fetches the content of a URL and returns it in Markdown format.",
        "command": "trafilatura --output-format=markdown -u {{url}}",
        "schema": {"properties": {"url": {"type": "string", "description": "The URL to fetch content from."}},
                   "required": ["url"]}}}}

Each entry becomes a native tool (``eca__web-search``) whose parameters are the ``schema``. Where the reference
pastes the model's values into the command text, here each ``{{name}}`` is a positional parameter of the shell
(:mod:`._command_template`): a value is never read as shell code, whatever it holds. The command runs like
``shell_command`` (the same runner: ``/bin/sh`` in the first workspace folder, stdin closed, its own process group
killed on timeout or stop, output capped; the engine redacts it and strips terminal escapes as for every tool), with
``shell_command``'s default timeout.

Safety, beside the engine's: a call asks by default like any tool without an ``allow`` rule (the user's own
``toolCall.approval`` may allow it: ``{"allow": {"eca__web-search": {}}}``); its risk is the shell tool's reading of
the command line with the values written in, and never less than medium (a program the model drives); a value
naming a path outside the workspace makes the call ask like any outside call. A custom tool named like a built-in
tool is refused (it would replace that tool). What a workspace's own config declares waits for the user's trust
(engine/workspace/_trust.py, engine/config/_hold.py).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._text import visible
from ..protocol import JsonObject, ToolCallRisk
from ._command_template import CommandTemplate, TemplateError, compile_template
from .base import Approval, Origin, Prepared, ToolContext, ToolResult

__all__ = ["CONFIG_KEY", "CustomTool", "CustomToolSpec", "custom_tools"]

log = logging.getLogger(__name__)

#: The config key, as in the reference.
CONFIG_KEY = "customTools"
_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                            "boolean": (bool,), "array": (list,), "object": (dict,)}
_SUMMARY_CHARS = 80
_LEVELS = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class CustomToolSpec:
    """One ``customTools`` entry, validated."""

    name: str
    description: str
    command: str
    properties: dict[str, JsonObject]
    required: list[str]


def _spec(name: str, entry: Any) -> CustomToolSpec:
    if not isinstance(entry, Mapping):
        raise ValueError("must be an object with description, command and schema")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ValueError("'command' must be a non-empty string")
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise ValueError("'description' must be a string")
    schema = entry.get("schema") or {}
    if not isinstance(schema, Mapping):
        raise ValueError("'schema' must be an object with 'properties' and 'required'")
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping) or not all(isinstance(v, Mapping) for v in properties.values()):
        raise ValueError("'schema.properties' must map each argument name to an object ({type, description})")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) and r in properties for r in required):
        raise ValueError("'schema.required' must list names of 'schema.properties'")
    return CustomToolSpec(name, description or f"Runs {command.split()[0]}.", command,
                          {str(k): dict(v) for k, v in properties.items()}, list(required))


def custom_tools(entries: Any, reserved: frozenset[str] = frozenset()) -> tuple[list[CustomTool], list[str]]:
    """The tools of a ``customTools`` value, and a problem (in words) for each entry that cannot be one. *reserved*:
    the built-in tools' names, which a custom tool may not take."""
    if entries is None:
        return [], []
    if not isinstance(entries, Mapping):
        return [], [f"{CONFIG_KEY}: must be an object mapping tool names to their definitions"]
    tools: list[CustomTool] = []
    problems: list[str] = []
    for name, entry in entries.items():
        if entry is None:
            continue  # a layer's null removes the tool
        name = str(name)
        shown = visible(name)
        if shown != name:  # a card, the panel's list and the approval show the name as it is: it must read as it is
            problems.append(f"{CONFIG_KEY}.{shown}: the name holds control or invisible characters; choose another")
            continue
        if not name.strip() or name in reserved:
            problems.append(f"{CONFIG_KEY}.{name}: the name of a built-in tool; choose another")
            continue
        try:
            tools.append(CustomTool(_spec(name, entry)))
        except (ValueError, TemplateError) as exc:
            problems.append(f"{CONFIG_KEY}.{name}: {visible(str(exc))}")
    for problem in problems:
        log.warning("custom tool skipped: %s", problem)
    return tools, problems


def _as_text(value: Any) -> str:
    """An argument as the program gets it: text as it is, a flag as ``true``/``false``, numbers as written, lists and
    objects as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False)


class CustomTool:
    """A ``customTools`` entry as a native tool (``eca__<name>``): it runs its command template through the shell
    tool's runner with the model's arguments as positional parameters."""

    server = "eca"
    origin: Origin = "native"
    default_approval: Approval = "ask"

    def __init__(self, spec: CustomToolSpec) -> None:
        from .shell import ShellCommandTool

        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.template: CommandTemplate = compile_template(spec.command, spec.properties)
        self.parameters: JsonObject = {"type": "object", "properties": {**spec.properties},
                                     "required": [*spec.required]}
        self._shell = ShellCommandTool()
        self._mutates: bool | None = None

    def __repr__(self) -> str:
        return f"<CustomTool {self.name}: {self.spec.command!r}>"

    @property
    def mutates(self) -> bool:
        """Whether it may change files: unless the command line reads only (the shell tool's reading of it with
        plain words for the placeholders), it is hidden from read-only agents (``plan``, ``explorer``) as a write
        tool would be — its program's effect is the user's to know, not ours."""
        if self._mutates is None:
            try:
                from pathlib import Path

                from ._shell_risk import classify_shell

                text = self.template.display({name: "x" for name in self.template.names})
                self._mutates = classify_shell(text, Path.cwd(), [Path.cwd()], {}).level != "low"
            except Exception:  # noqa: BLE001 - no parser: assume it may change things
                self._mutates = True
        return self._mutates

    def _values(self, args: JsonObject) -> dict[str, str]:
        """The declared arguments as text, after checking them (raises ValueError with a message for the model)."""
        missing = [name for name in self.spec.required if args.get(name) is None]
        if missing:
            raise ValueError(f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
        values: dict[str, str] = {}
        for name, prop in self.spec.properties.items():
            value = args.get(name)
            if value is None:
                continue
            kind = prop.get("type")
            allowed = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
            wrong = allowed is not None and not isinstance(value, allowed)
            if wrong or (kind in ("integer", "number") and isinstance(value, bool)):
                raise ValueError(f"argument {name!r} must be of type {kind}")
            text = _as_text(value)
            if "\0" in text:
                raise ValueError(f"argument {name!r} contains a NUL character, which no program argument can hold")
            values[name] = text
        return values

    def prepare(self, args: JsonObject, ctx: ToolContext) -> Prepared:
        raw = args if isinstance(args, dict) else {}
        try:
            values = self._values(raw)
        except ValueError as exc:
            return Prepared(args=dict(raw), summary=f"Running {self.name}", error=f"{self.name}: {exc}")
        shown = {name: raw[name] for name in self.spec.properties if raw.get(name) is not None}
        cwd = ctx.root
        line = self.template.display(values)
        outside: list[Any] = []
        try:
            from ._shell_parse import analyse_paths, parse

            report = analyse_paths(parse(line), cwd, ctx.workspace_folders or [ctx.root], self._shell._env())
            outside = [*report.outside, *report.cd_outside]
        except Exception:  # noqa: BLE001 - no parser: the paths cannot be checked; the call asks anyway by default
            log.debug("cannot analyse the command line of custom tool %s", self.name, exc_info=True)
        one_line = visible(re.sub(r"[ \t]+", " ", line.strip(" \t\n")))
        if len(one_line) > _SUMMARY_CHARS:
            one_line = one_line[: _SUMMARY_CHARS - 3] + "..."
        return Prepared(args=shown, summary=f"{self.name}: $ {one_line}", paths=[cwd, *outside],
                        outside_workspace=bool(outside), must_ask=self._riskier(line, ctx),
                        state={"values": values, "line": line})

    def _riskier(self, line: str, ctx: ToolContext) -> str | None:
        """Why the call must be asked whatever the rules allow: a value is one literal argument, but an argument can
        be an option — ``find {{directory}} -name …`` with the directory ``-delete`` deletes the workspace, ``rg
        {{pattern}}`` with ``--pre=sh`` runs a program. An allow rule is the user's word for what the template
        does with plain values: a filled line the shell reading finds riskier than that is not covered by it."""
        try:
            from ._shell_risk import classify_shell

            folders, env = ctx.workspace_folders or [ctx.root], self._shell._env()
            plain = classify_shell(self.template.display({name: "x" for name in self.template.names}), ctx.root,
                                   folders, env)
        except Exception:  # noqa: BLE001 - no parser, or a template it cannot read: nothing to compare with
            return None
        try:
            filled = classify_shell(line, ctx.root, folders, env)
        except Exception:  # noqa: BLE001
            return "its arguments make the command line impossible to analyse"
        if _LEVELS[filled.level] <= _LEVELS[plain.level]:
            return None
        return f"its arguments make it {filled.level} risk ({filled.reason})"

    def assess_risk(self, prepared: Prepared, ctx: ToolContext) -> ToolCallRisk:
        """The shell tool's reading of the command line with the values in it, never below medium: the model chose
        the values of a program the config names, whose effect no reading of the line can bound."""
        line = prepared.state["line"] if isinstance(prepared.state, dict) else self.spec.command
        try:
            from ._shell_risk import classify_shell

            risk = classify_shell(line, prepared.paths[0], ctx.workspace_folders or [ctx.root], self._shell._env())
            level, reason = risk.level, risk.reason
        except Exception:  # noqa: BLE001
            level, reason = "medium", "the command line could not be analysed"
        if _LEVELS[level] < _LEVELS["medium"]:
            level, reason = "medium", f"custom tool: a program from config run with the model's arguments ({reason})"
        else:
            reason = f"custom tool: {reason}"
        return ToolCallRisk.model_validate({"level": level, "reason": reason})

    async def run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        if prepared.error:
            return ToolResult(output=prepared.error, error=True)
        state = prepared.state if isinstance(prepared.state, dict) else {}
        values: dict[str, str] = state.get("values") or {}
        from .shell import DEFAULT_TIMEOUT_MS

        shell_call = Prepared(args={"command": self.template.script(), "timeout": DEFAULT_TIMEOUT_MS},
                              summary=prepared.summary, paths=[prepared.paths[0]],
                              state={"argv": [f"eca-{self.name}", *self.template.argv(values)]})
        # always here, never in an editor's terminal (ACP ``terminal/create`` takes one command line, not arguments)
        return await self._shell.run(shell_call, replace(ctx, run_command=None))
