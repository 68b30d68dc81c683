"""Parsing ``%eca`` / ``%%eca``: leading options, subcommands, and the prompt kept exactly as typed.

Options come first (``%eca -m openai/gpt-4.1 --new explain @df``) and end at the first word that is not one, or
at ``--``. The prompt itself is never shell-split — apostrophes and quotes in questions must survive — only the
option values may be quoted. A line that is exactly a subcommand (``new``, ``chats``, ``model [id]``, …) is one;
anything longer is a prompt, so "model this data as a time series" still goes to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FORMATS", "SUBCOMMANDS", "USAGE", "MagicRequest", "UsageError", "parse_magic"]

FORMATS = ("markdown", "code", "text")
SUBCOMMANDS = ("new", "chats", "model", "agent", "behavior", "stop", "steer", "jobs", "undo", "config", "mcp", "fix",
               "rewrite", "help")

USAGE = """\
%eca [options] <prompt>          ask in the current chat (streams into a widget; the kernel stays free)
%%eca [options]                  the cell body is the prompt
  -m, --model ID                 model for this prompt (see %eca model)
  -v, --variant NAME             the model's variant, e.g. low | medium | high reasoning effort (kept by the chat)
  -a, --agent NAME               code | plan | a custom agent (-b, --behavior: the old name)
  -n, --new                      start a new chat
  -c, --chat NAME                use (and switch to) the chat called NAME (saved: survives restarts)
  -f, --file PATH                attach a file as context (repeatable)
  -d, --dir PATH                 attach a directory as context (repeatable)
  -o, --format FORMAT            markdown (default) | code (the answer's code goes into the next cell) | text
  -w, --wait                     keep the cell running until the answer is complete
  -y, --yes                      approve every tool call of this prompt without asking
In the prompt: {expr} inserts a value (name, attribute, In[n], Out[n]); @name attaches a kernel variable
(type, shape, dtypes, head); @In[n] / @Out[n] attach a cell's source / result; /command args runs an ECA command.
Subcommands: %eca new | chats | model [id] | agent [code|plan|…] | stop | undo | config | mcp | fix [note] | help
%eca steer <text>                guide the running prompt: joins the model's input after the current tool calls
%eca jobs [kill ID | output ID]  background jobs (shell_command with background): list, kill one, its last output
%eca mcp add [--workspace] <name> <command> [args…] | <url>
                                 add an MCP server (global config unless --workspace)
%eca mcp remove|enable|disable <name>
                                 manage an MCP server (written to its config file)
%eca rewrite <cell> <instruction>
                                 rewrite a cell (In[n] | prev | #<cell-id>) and propose it as a diff"""


class UsageError(ValueError):
    """A malformed ``%eca`` line; the message is shown with the usage."""


@dataclass
class MagicRequest:
    command: str = "prompt"  # "prompt" or one of SUBCOMMANDS
    prompt: str = ""
    argument: str = ""  # a subcommand's argument
    model: str | None = None
    variant: str | None = None
    behavior: str | None = None
    chat: str | None = None
    new: bool = False
    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    format: str = "markdown"
    wait: bool = False
    yes: bool = False


_VALUE_OPTIONS = {"-m": "model", "--model": "model", "-v": "variant", "--variant": "variant",
                  "-a": "behavior", "--agent": "behavior", "-b": "behavior",
                  "--behavior": "behavior", "-c": "chat",
                  "--chat": "chat", "-f": "files", "--file": "files", "-d": "dirs", "--dir": "dirs",
                  "-o": "format", "--format": "format"}
_FLAG_OPTIONS = {"-n": "new", "--new": "new", "-w": "wait", "--wait": "wait", "-y": "yes", "--yes": "yes"}
_LOOKS_LIKE_OPTION = re.compile(r"--?[A-Za-z][\w-]*(=|\s|$)")
_TOKEN = re.compile(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|(\S+)")
_REWRITE_TARGET = re.compile(r"In\[\d+\]|prev|previous|#[A-Za-z0-9_-]{1,64}")  # %eca rewrite's cell (_rewrite.py)


def _read_value(text: str, pos: int, option: str) -> tuple[str, int]:
    match = _TOKEN.match(text, pos)
    if match is None:
        raise UsageError(f"option {option} needs a value")
    value = next(g for g in match.groups() if g is not None)
    if match.group(1) is not None:
        value = re.sub(r"\\(.)", r"\1", value)
    return value, match.end()


def _apply(request: MagicRequest, key: str, value: str) -> None:
    if key in ("files", "dirs"):
        getattr(request, key).append(value)
    elif key == "format":
        if value not in FORMATS:
            raise UsageError(f"unknown format '{value}': use one of {', '.join(FORMATS)}")
        request.format = value
    else:
        setattr(request, key, value)


def _parse_options(text: str, request: MagicRequest) -> str:
    """Consume leading options into ``request``; return the rest of the text verbatim."""
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if text.startswith("--", pos) and (pos + 2 == len(text) or text[pos + 2] in " \t\n"):
            return text[pos + 2:].lstrip(" \t")
        if not _LOOKS_LIKE_OPTION.match(text, pos):
            return text[pos:]
        match = re.compile(r"(--?[A-Za-z][\w-]*)(?:=(\S*))?").match(text, pos)
        assert match is not None
        option, inline = match.group(1), match.group(2)
        pos = match.end()
        if option in _FLAG_OPTIONS:
            if inline is not None:
                raise UsageError(f"option {option} takes no value")
            setattr(request, _FLAG_OPTIONS[option], True)
        elif option in _VALUE_OPTIONS:
            if inline is None:
                while pos < len(text) and text[pos] in " \t":
                    pos += 1
                if pos >= len(text) or text[pos] == "\n":
                    raise UsageError(f"option {option} needs a value")
                inline, pos = _read_value(text, pos, option)
            _apply(request, _VALUE_OPTIONS[option], inline)
        else:
            raise UsageError(f"unknown option {option} (put -- before a prompt that starts with '-')")


def _subcommand(text: str) -> tuple[str, str] | None:
    words = text.split()
    if not words or words[0] not in SUBCOMMANDS:
        return None
    name, rest = words[0], words[1:]
    if name in ("new", "chats", "stop", "undo", "config", "mcp", "help") and not rest:
        return name, ""
    if name == "steer" and rest:
        return name, text.strip()[len("steer"):].strip()
    if name == "jobs" and (not rest or (rest[0] in ("kill", "output") and len(rest) == 2)):
        return name, " ".join(rest)
    if name in ("model", "agent", "behavior") and len(rest) <= 1:
        return ("behavior" if name == "agent" else name), rest[0] if rest else ""  # (`behavior`: the old name)
    if name == "fix":
        return name, text.strip()[len("fix"):].strip()
    if name == "mcp" and rest[0] in ("add", "remove", "enable", "disable"):  # (rest is not empty here)
        return name, text.strip()[len("mcp"):].strip()
    if name == "rewrite" and rest and _REWRITE_TARGET.fullmatch(rest[0]):  # else a prompt starting "rewrite …"
        return name, text.strip()[len("rewrite"):].strip()
    return None


def parse_magic(line: str, cell: str | None = None) -> MagicRequest:
    """Parse a line magic (``cell is None``) or a cell magic (``line`` is its first line)."""
    request = MagicRequest()
    rest = _parse_options(line.strip(), request)
    body = (cell or "").strip("\n")
    if not body.strip():
        sub = _subcommand(rest)
        if sub is not None:
            request.command, request.argument = sub
            return request
    elif rest.strip().split()[:1] == ["fix"]:  # %%eca fix + a note in the body
        request.command = "fix"
        request.argument = (rest.strip()[3:].strip() + "\n" + body).strip()
        return request
    elif rest.strip().split()[:1] == ["rewrite"] and _subcommand(rest.strip().split("\n")[0]) is not None:
        request.command = "rewrite"  # %%eca rewrite In[3] + the instruction in the body
        request.argument = (rest.strip()[len("rewrite"):].strip() + "\n" + body).strip()
        return request
    prompt = rest.strip()
    if body.strip():
        prompt = f"{prompt}\n{body}" if prompt else body
    request.prompt = prompt
    return request
