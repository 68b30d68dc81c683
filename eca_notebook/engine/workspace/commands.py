"""Chat commands: the built-ins, custom prompt commands from markdown files, parsing ``/name args`` and ranking.

Commands reach the server as ordinary ``chat/prompt`` messages (``/name args``), and ``chat/queryCommands`` lists
them for the client's completion popup. This module is pure (no engine state) so the same rules serve every door.

Custom commands mirror the reference server: ``<folder>/.eca/commands/*.md`` and the global
``<config dir>/commands/*.md``; the command name is the lower-cased file stem, the body is a prompt template with
``$ARGS``/``$ARGUMENTS`` (all the text after the name), ``$1``…``$9`` or ``$ARG1``…``$ARG9`` (positional, split
like a shell so quotes group words), or named ``{{name}}`` placeholders (filled by position in order of first
appearance). Optional front matter gives a ``description`` and ``arguments`` metadata (``name``, ``description``,
``required``). Positional and named placeholders cannot be mixed; such files are skipped, as in the reference.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._fuzzy import is_subsequence
from ...plugins import Command, CommandArgument
from ...protocol import ChatCommand, ChatCommandArgument
from ._front_matter import FrontMatterError, parse_front_matter
from ._rules import outside_root

__all__ = [
    "BUILTINS",
    "CODE_PROMPTS",
    "Command",
    "CommandArgument",
    "chat_command",
    "command_prompt",
    "find_command",
    "load_custom_commands",
    "parse_command",
    "query_commands",
    "render_template",
    "wire_type",
]

log = logging.getLogger(__name__)

_MAX_COMMAND_BYTES = 256 * 1024


BUILTINS: list[Command] = [
    Command("doctor", "Check the server's setup: version, config sources, workspaces, models and credentials.",
            "native"),
    Command("costs", "Tokens used and total cost of the current chat.", "native"),
    Command("prompt-show", "Show the system prompt sent to the model.", "native"),
    Command("repo-map-show", "Show the repository map of the workspace sent to the model.", "native"),
    Command("compact", "Summarize the chat so far and replace its history with the summary to free context.",
            "native", [CommandArgument("instructions", "What the summary should keep or focus on", False)]),
    Command("resume", "Resume a saved chat: without an argument lists them, with a number or chat id opens one.",
            "native", [CommandArgument("chat", "Number from the list or chat id", False)]),
    Command("hooks", "List the configured hooks (config key `hooks`) by event.", "native"),
    Command("trust", "Trust this workspace: start the MCP servers and run the hooks its own .eca/config.json "
            "defines (`/trust off` takes it back).", "native", [CommandArgument("off", "`off` revokes", False)]),
    Command("skills", "List the available skills (SKILL.md folders) and where each comes from.", "native"),
    Command("subagents", "List the subagents this chat's agent may spawn: description, model, max steps, tools.",
            "native"),
    Command("rules", "List the rules (AGENTS.md, .eca/rules) that go into the system prompt.", "native"),
    Command("config", "Show the resolved configuration, secrets masked.", "native"),
    Command("context", "Estimate the tokens the next request sends: system prompt, rules, skills, tools, history.",
            "native"),
    Command("init", "Create or update the workspace's AGENTS.md: the model explores the project and writes it (an "
            "approved file change).", "native"),
    Command("model", "List the models, or switch this chat's model (Ex: /model openai/gpt-4.1).", "native",
            [CommandArgument("model", "provider/model to switch to", False)]),
    Command("fork", "Fork this chat into a new chat with the same history and settings.", "native"),
    Command("export", "Export this chat to a .json (importable) or .md file in the workspace (Ex: /export chat.json).",
            "native", [CommandArgument("path", "File or folder in the workspace; a JSON file at its root by default",
                                       False)]),
    Command("import", "Import a chat exported as JSON into a new chat (Ex: /import chat.json).", "native",
            [CommandArgument("path", "The exported .json file", True)]),
    Command("fix", "Find and fix the bug in the selected code (or the attached file), using the diagnostics and "
            "terminal output the editor sent.", "native", [CommandArgument("problem", "What is wrong", False)]),
    Command("test", "Write tests for the selected code (or the attached file) in the project's test style, and run "
            "them.", "native", [CommandArgument("focus", "What the tests should cover", False)]),
    Command("explain", "Explain what the selected code (or the attached file) does and why, without changing it.",
            "native", [CommandArgument("question", "What to explain in particular", False)]),
    Command("refactor", "Refactor the selected code (or the attached file) without changing its behaviour, updating "
            "its callers.", "native", [CommandArgument("goal", "What the refactoring should achieve", False)]),
]

_ABOUT_CONTEXT = """The code in question is what the user's editor attached to this message: the selected lines of \
the active editor when there is a selection, else the attached file or the visible part of it (the "Editor context" \
block says which file, which lines and the language). If nothing is attached and the request does not say which code \
is meant, ask the user instead of guessing.
"""

#: The prompts of the built-in code commands (``/fix``, ``/test``, ``/explain``, ``/refactor``: the session stream's
#: slash commands of ``http-websocket-api.md``), sent to the model in the user's place. ``$ARGS`` is what the user
#: wrote after the command; :func:`command_prompt` drops the request line when they wrote nothing.
CODE_PROMPTS: dict[str, str] = {
    "fix": f"""Fix the bug in the attached code.

{_ABOUT_CONTEXT}
The user's description of the problem: $ARGS

1. Find the cause before changing anything. Use the diagnostics, the terminal output (a failing command and its \
error) and the git state from the editor context when they are there, and read the surrounding code, the callers and \
the definitions it relies on as far as you need.
2. Fix the cause, not the symptom, with the smallest change that does it, in the file's own style, using the file \
tools (the user reviews the diff). Do not reformat or refactor unrelated code.
3. If you can run commands and there is a test or a command that shows the failure, run it to check the fix.
4. Answer briefly: what was wrong, what you changed and why that fixes it. If the code is in fact correct, say so \
and change nothing.
""",
    "test": f"""Write tests for the attached code.

{_ABOUT_CONTEXT}
What the user wants covered: $ARGS

1. Find how this project tests: read an existing test file near the code (its framework, fixtures, file naming and \
location) and follow those conventions. Only introduce a test framework when the project has none, and say so.
2. Cover the normal behaviour, the edge cases (empty, boundary and unusual inputs) and the error paths. Each test \
asserts observable behaviour, not implementation details, and has a name that says what it checks. Prefer real \
objects to mocks.
3. Create or extend the test file with the file tools (the user reviews the diff). Do not change the code under \
test; if a test reveals a bug, report it instead of hiding it.
4. If you can run commands, run the new tests and fix the tests until they pass (or show the bug they found).
5. Answer briefly with what the tests cover and how to run them.
""",
    "explain": f"""Explain the attached code.

{_ABOUT_CONTEXT}
The user's question: $ARGS

Explain what the code does and how: its purpose, its inputs, outputs and side effects, the steps it takes, and why \
it is written this way where that is not obvious. Point out anything surprising, fragile or wrong (edge cases, error \
handling, performance). Read the definitions it uses when that is needed to be accurate, and refer to lines and \
names so the user can follow. Start with a one-paragraph summary, then the details; keep it as short as the code \
allows. Do not change any file.
""",
    "refactor": f"""Refactor the attached code.

{_ABOUT_CONTEXT}
The goal of the refactoring: $ARGS

1. Read the code, its imports and its callers (search the workspace for its uses) before changing anything.
2. Improve its structure without changing its behaviour: clearer names, smaller functions, less duplication, simpler \
control flow, the project's idioms. When no goal is given, pick the changes that help readability and maintenance \
the most, and keep them proportionate.
3. Keep the public interface, or update every caller in the same change. Make the changes with the file tools (the \
user reviews each diff), in the file's own style.
4. If the project has tests and you can run commands, run them to show the behaviour is unchanged.
5. Answer briefly: what you changed and why the behaviour is the same.
""",
}


def command_prompt(name: str, argument: str) -> str | None:
    """The prompt of the built-in code command *name* (``fix``, ``test``, ``explain``, ``refactor``) with what the
    user wrote after it; None for any other name."""
    template = CODE_PROMPTS.get(name.lower())
    if template is None:
        return None
    if not argument.strip():  # nothing more said: the request line goes, the attached code says it all
        kept = [line for line in template.splitlines() if not line.endswith("$ARGS")]
        template = "\n".join(kept).replace("\n\n\n", "\n\n") + "\n"
    return render_template(template, argument)


# ---------------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------------

_COMMAND = re.compile(r"\s*/(?P<name>[^\s/]+)(?:\s+(?P<rest>.*))?\s*\Z", re.DOTALL)


def parse_command(message: str) -> tuple[str, str] | None:
    """``"/name rest"`` → ``("name", "rest")``; None when the message is not a command.

    Leading whitespace is tolerated. The rest keeps its inner line breaks (a multi-line instruction for
    ``/compact``) and loses surrounding whitespace. A name with a slash is not a command, so a message that starts
    with a path (``/usr/bin/python is broken``) is sent to the model as it is. The name is returned as typed; use
    :func:`find_command` to look it up.
    """
    m = _COMMAND.match(message)
    if m is None:
        return None
    return m.group("name"), (m.group("rest") or "").strip()


def find_command(name: str, commands: Sequence[Command]) -> Command | None:
    """The command called *name*: exact match first, else case-insensitive (custom names are lower-cased)."""
    for command in commands:
        if command.name == name:
            return command
    lowered = name.lower()
    for command in commands:
        if command.name.lower() == lowered:
            return command
    return None


# ---------------------------------------------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------------------------------------------

_POSITIONAL = r"\$(?:(?P<all>ARGUMENTS|ARGS)|ARG(?P<argn>[1-9])|(?P<n>[1-9]))(?![A-Za-z0-9_])"
_NAMED = r"\{\{\s*(?P<named>[A-Za-z_][A-Za-z0-9_-]*)\s*\}\}"
_PLACEHOLDER = re.compile(f"{_POSITIONAL}|{_NAMED}")


def _split_args(text: str) -> list[str]:
    """Shell-like words (quotes group), falling back to whitespace words when the quotes don't balance."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _named_order(template: str) -> list[str]:
    order: list[str] = []
    for m in _PLACEHOLDER.finditer(template):
        name = m.group("named")
        if name is not None and name not in order:
            order.append(name)
    return order


def render_template(template: str, args_text: str) -> str:
    """Fill a command template in one pass (so text inside an argument is never expanded again).

    ``$ARGS``/``$ARGUMENTS`` → the whole argument text; ``$1``…``$9`` / ``$ARG1``…``$ARG9`` → that word (empty
    when not given); ``{{name}}`` → the word at the position of the name's first appearance. Any other ``$NAME``
    is left alone.
    """
    whole = args_text.strip()
    words = _split_args(whole)
    named = {name: i for i, name in enumerate(_named_order(template))}

    def word(index: int) -> str:
        return words[index] if 0 <= index < len(words) else ""

    def replace(m: re.Match[str]) -> str:
        if m.group("all"):
            return whole
        if m.group("named") is not None:
            return word(named[m.group("named")])
        return word(int(m.group("argn") or m.group("n")) - 1)

    return _PLACEHOLDER.sub(replace, template)


# ---------------------------------------------------------------------------------------------------------------
# Custom commands from files
# ---------------------------------------------------------------------------------------------------------------


def _declared_arguments(value: Any) -> list[dict[str, str]]:
    """The front matter's ``arguments``: a list of maps (``- name: x``) or of bare names, values as text."""
    if not isinstance(value, list):
        return []
    items: list[dict[str, str]] = []
    for item in value:
        if isinstance(item, dict):
            items.append({str(k): str(v) for k, v in item.items() if v is not None})
        elif item is not None:
            items.append({"name": str(item)})
    return items


def _truthy(value: Any, default: bool) -> bool:
    if value is None:
        return default
    return str(value).strip().lower() in ("true", "yes", "on", "1")


def _infer_arguments(body: str, declared: list[dict[str, str]]) -> list[CommandArgument] | None:
    """Arguments from the placeholders, with front-matter metadata; None when positional and named are mixed."""
    positional = 0
    has_all = False
    for m in _PLACEHOLDER.finditer(body):
        if m.group("all"):
            has_all = True
        elif m.group("argn") or m.group("n"):
            positional = max(positional, int(m.group("argn") or m.group("n")))
    named = _named_order(body)
    if named and (positional or has_all):
        return None

    def meta(index: int) -> dict[str, str]:
        return declared[index] if index < len(declared) else {}

    if named:
        by_name = {d.get("name"): d for d in declared}
        return [CommandArgument(n, by_name.get(n, {}).get("description") or None,
                                _truthy(by_name.get(n, {}).get("required"), True)) for n in named]
    if positional:
        return [CommandArgument(meta(i).get("name") or f"arg{i + 1}", meta(i).get("description") or None,
                                _truthy(meta(i).get("required"), True)) for i in range(positional)]
    if has_all:
        return [CommandArgument(meta(0).get("name") or "args", meta(0).get("description") or None,
                                _truthy(meta(0).get("required"), False))]
    return [CommandArgument(d["name"], d.get("description") or None, _truthy(d.get("required"), False))
            for d in declared if d.get("name")]


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= 120 else line[:119] + "…"
    return ""


def _load_command(path: Path, root: Path) -> Command | None:
    name = path.stem.lower()
    if not name or any(c.isspace() for c in name) or "/" in name:
        log.warning("custom command %s skipped: its name cannot be typed as /name", path)
        return None
    refused = outside_root(path, root)
    if refused:  # a repository's command symlinked to ~/.netrc would send it to the model when run
        log.warning("custom command %s skipped: %s", path, refused)
        return None
    try:
        if path.stat().st_size > _MAX_COMMAND_BYTES:
            log.warning("custom command %s skipped: larger than %d KB", path, _MAX_COMMAND_BYTES // 1024)
            return None
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("custom command %s skipped: cannot read (%s)", path, type(exc).__name__)
        return None
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        log.warning("custom command %s skipped: %s", path, exc)
        return None
    declared = meta.get("arguments")
    arguments = _infer_arguments(body, _declared_arguments(declared))
    if arguments is None:
        log.warning("custom command %s skipped: it mixes positional ($1, $ARGS) and named ({{name}}) placeholders",
                    path)
        return None
    description = meta.get("description")
    description = (description.strip() if isinstance(description, str) else "") or _first_line(body) or (
        f"Custom command from {path}")
    return Command(name=name, description=description, type="custom-prompt", arguments=arguments, template=body,
                   path=path)


def _md_files(folder: Path) -> list[Path]:
    try:
        files = [p for p in folder.iterdir() if p.suffix.lower() == ".md" and p.is_file()]
    except OSError:
        return []
    return sorted(files, key=lambda p: (p.name.lower(), p.name))


def load_custom_commands(workspace_folders: Sequence[Path], global_config_dir: Path) -> list[Command]:
    """``<folder>/.eca/commands/*.md`` for each folder, then ``<global_config_dir>/commands/*.md``.

    A name defined twice keeps its first definition (the project's wins over the global one), with a log line.
    Files that cannot be read are skipped; loading never raises.
    """
    folders = [(Path(f) / ".eca" / "commands", Path(f)) for f in workspace_folders] + [
        (Path(global_config_dir) / "commands", Path(global_config_dir))]
    commands: list[Command] = []
    seen: dict[str, Path] = {}
    for folder, root in folders:
        for path in _md_files(folder):
            command = _load_command(path, root)
            if command is None:
                continue
            if command.name in seen:
                log.info("custom command %s ignored: /%s is already defined by %s", path, command.name,
                         seen[command.name])
                continue
            seen[command.name] = path
            commands.append(command)
    return commands


# ---------------------------------------------------------------------------------------------------------------
# Query and wire shape
# ---------------------------------------------------------------------------------------------------------------


def query_commands(query: str, commands: Sequence[Command]) -> list[Command]:
    """Blank query → all; else name matches (case-insensitive, a leading ``/`` ignored): prefix matches first, then
    substring, then fuzzy subsequence (``rms`` → ``repo-map-show``); each group keeps the input order."""
    q = query.strip().lstrip("/").lower()
    if not q:
        return list(commands)
    prefix, substring, fuzzy = [], [], []
    for command in commands:
        name = command.name.lower()
        if name.startswith(q):
            prefix.append(command)
        elif q in name:
            substring.append(command)
        elif is_subsequence(q, name):
            fuzzy.append(command)
    return prefix + substring + fuzzy


def chat_command(command: Command) -> ChatCommand:
    """The command as ``chat/queryCommands`` lists it, its type in the reference's spelling (:func:`wire_type`);
    ``.dump()`` is ``{name, description, type, arguments: [{name, description?, required}]}``. Raises pydantic's
    ``ValidationError`` for a command whose fields are not what they claim (a plug-in's, an MCP server's)."""
    return ChatCommand(name=command.name, description=command.description, type=wire_type(command.type),
                       arguments=[ChatCommandArgument(name=a.name, description=a.description, required=a.required)
                                  for a in command.arguments])


#: The reference server's names for command types (``chat/queryCommands``). The engine and plug-ins say
#: ``mcp-prompt`` / ``custom-prompt``; a :class:`Command` made with either spelling is read as the engine's.
_WIRE_TYPES = {"mcp-prompt": "mcpPrompt", "custom-prompt": "customPrompt"}


def wire_type(command_type: str) -> str:
    """The type a client sees: ``mcpPrompt`` / ``customPrompt`` (reference ``docs/protocol.md``), others unchanged."""
    return _WIRE_TYPES.get(command_type, command_type)
