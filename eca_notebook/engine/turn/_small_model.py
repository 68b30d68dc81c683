"""How the engine talks to a small model (the embedded SmolLM2-135M and any model marked ``compact``).

Why a profile of its own: measured on the embedded model, a plain question ("Write a Python function that adds two
numbers.") is answered correctly when sent alone, but the engine's full path — a long system prompt, every tool's
schema and a reply constrained to JSON — made the same model stream ``1.1.2.1.1…`` until the token cap, or call
``read_file("file.txt")`` again and again. A tiny model cannot both follow a tool protocol and answer well, so:

* **Tools only when the prompt needs them** (:func:`tools_for_prompt`). With ``localModel.tools = "auto"`` (the
  default) a turn offers tools only when the user asks to act on the workspace — an imperative *read / change / run*
  verb together with something to act on (a path, a workspace file name, "file", "folder"; never an attached
  context, whose text is in the prompt), or names the workspace itself — and then only the tools that kind of
  request needs. Everything else is
  a plain chat request: streamed text, no constrained JSON. ``"always"`` offers the whole tool set, ``"never"``
  none.
* **A compact system prompt** (:func:`compact_system_prompt`): about 60 tokens, plus the user's rules (AGENTS.md,
  ``.eca/rules``) cut to a budget, so a plain turn sends well under 250 tokens before the user's message.
* **Smaller context budgets** (:data:`CONTEXT_BYTES`, :data:`PER_CONTEXT_BYTES`): attached files are clipped, and a
  whole notebook is shown as the cells the question is about (``_notebook_focus``); every request then keeps to
  ``_context_window.SMALL_MODEL_PROMPT_TOKENS``, counted by the model's tokenizer, never compacted.
* **It says what it is** (:data:`DEMO_NOTICE`, once per chat on the embedded model): a newcomer meets a 135M demo
  model, and must learn that — and where a real model is connected — before judging the answers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from ..._workspace_paths import is_inside, resolved_folders
from ...protocol import JsonObject
from ...providers.local import PROVIDER_ID as LOCAL_PROVIDER_ID
from ._notebooks import named_notebooks

__all__ = [
    "CONTEXT_BYTES",
    "DEMO_NOTICE",
    "DEMO_NOTICE_MARK",
    "LATER_CONTEXT_BYTES",
    "PER_CONTEXT_BYTES",
    "RULES_CHARS",
    "TOOL_ROUNDS",
    "ToolMode",
    "compact_system_prompt",
    "demo_notice_due",
    "first_round_extra",
    "prompt_intents",
    "tool_rounds",
    "tools_for_prompt",
    "workspace_paths",
]

ToolMode = Literal["auto", "always", "never"]
T = TypeVar("T")

CONTEXT_BYTES = 12_000  # all attached contexts together (≈ 3k tokens of the 8k window)
PER_CONTEXT_BYTES = 6_000  # one attached file / notebook
# every attached context after the first (the panel puts the user's @ picks first, its automatic active-notebook
# context last). Measured with "Explain @Circle briefly." given the class, then notebook 08 (8.7 KB), 12 asks each:
# the 135M model answered about the class 0/12 times when the notebook could take 6,000 bytes, 3/12 at 1,500, 9/12
# at 1,000, 7/12 at 600 — otherwise it answered about the notebook, or invented links
LATER_CONTEXT_BYTES = 1_000
RULES_CHARS = 1_200  # AGENTS.md and .eca/rules together (≈ 300 tokens)
TOOL_ROUNDS = 3  # rounds with tool calls before the model is asked to answer without tools (1 for reading only)

COMPACT_PROMPT = (
    "You are eca-notebook, a coding assistant in Jupyter. Answer the user's question directly and briefly. "
    "Put code in fenced Markdown blocks."
)
COMPACT_PLAN = " Plan mode: explain what to do; change no file."
COMPACT_TOOLS = (
    " You may use a tool when the user asks you to read, change or run something in the workspace; "
    "paths are relative to the workspace. If a tool fails, do not repeat the same call."
)

# Said once per chat, as a system text, when the chat's model is the embedded one: every door shows it (the panel
# adds a "Connect a model" button to the text that has DEMO_NOTICE_MARK). Nothing else told a newcomer why the
# answers were poor, nor where a real model is configured (issue #30).
DEMO_NOTICE_MARK = "small offline demo model"
DEMO_NOTICE = (
    f"You are using SmolLM2-135M, a {DEMO_NOTICE_MARK} that runs on this machine: expect short, limited and often "
    "wrong answers. It reads only the part of an attached notebook your question is about, and uses tools only when "
    "you name a file or a tool. For real work connect a model: \"Connect a model\" in the ECA panel, or an "
    "OPENAI_API_KEY or ANTHROPIC_API_KEY in the environment, or a provider in ~/.config/eca/config.json "
    "(README: Configuration)."
)

# -- the rule ------------------------------------------------------------------------------------------------------

_READ_VERBS = r"read|open|show|list|look|view|check|inspect|find|search|grep|summari[sz]e|explain|review|describe|cat"
_CHANGE_VERBS = (r"edit|change|modify|fix|update|rename|move|delete|remove|create|write|add|save|refactor|replace"
                 r"|append|insert|put|make")
_RUN_VERBS = r"run|execute|exec"
# A verb counts only as a request to the assistant: at the start of a clause, optionally after a polite lead-in.
# "Write a function that reads a file" has "reads" in a subordinate clause, which is not a request to read a file.
_LEAD = (r"(?:^|[.!?;:]\s+|\n\s*|\b(?:and|then|also|now|first|next)\s+)"
         r"(?:(?:please|kindly|pls)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?|go\s+ahead\s+and\s+"
         r"|i\s+(?:want|need|would\s+like|'d\s+like)\s+you\s+to\s+|help\s+me\s+|let's\s+)?")
_VERB = {
    "read": re.compile(_LEAD + rf"(?:{_READ_VERBS})\b", re.IGNORECASE),
    "change": re.compile(_LEAD + rf"(?:{_CHANGE_VERBS})\b", re.IGNORECASE),
    "run": re.compile(_LEAD + rf"(?:{_RUN_VERBS})\b", re.IGNORECASE),
}
# Things a read/change request acts on. "file" alone is enough together with an imperative verb. Not "notebook" or
# "cell": the notebook in play is attached (the panel's active notebook, the cell of `%eca fix`) and its cells are
# in the prompt — given tools for "My last cell raises an error. Explain it and fix it.", the 135M model called
# read_file("README.md") three times and answered "How to fix a tool error" (issue #30).
_OBJECT = re.compile(r"\b(?:files?|folders?|director(?:y|ies)|workspace|project|repo(?:sitory)?|codebase|readme)\b",
                     re.IGNORECASE)
# Naming the workspace itself asks about its contents ("What does this project do?").
_WORKSPACE = re.compile(r"\b(?:this|the|my|our)\s+(?:workspace|project|repo(?:sitory)?|codebase|folder|directory)\b",
                        re.IGNORECASE)
_PATH = re.compile(r"(?<![\w@])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.(?:py|ipynb|md|txt|json|ya?ml|toml|csv|tsv"
                   r"|js|ts|tsx|jsx|html?|css|sh|cfg|ini|rst|sql|r|jl|c|h|cpp|hpp|go|rs|java|xml|log|lock|parquet)\b",
                   re.IGNORECASE)
_SLASHED = re.compile(r"(?<![\w@:/])(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)+/?")
_WORD = re.compile(r"[\w.-]{3,}")
_PHRASE_END = re.compile(r"[.!?;:\n]|\b(?:that|which|who|whose|where|when|to|so|for|using|if)\b", re.IGNORECASE)
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)

_READ_TOOLS = ("read_file", "directory_tree", "grep", "list_variables", "inspect_variable")
_CHANGE_TOOLS = ("read_file", "write_file", "edit_file", "move_file", "insert_cell", "replace_cell")
_RUN_TOOLS = ("read_file", "shell_command", "run_python")
_TOOLS_BY_INTENT = {"read": _READ_TOOLS, "change": _CHANGE_TOOLS, "run": _RUN_TOOLS}
# only when the request is about a notebook: a small model given them for "create hello.py" would use them
_NOTEBOOK_TOOLS_BY_INTENT = {"read": ("notebook_read",), "change": ("notebook_read", "notebook_edit_cell",
                                                                  "notebook_insert_cell"),
                             "run": ("notebook_read", "notebook_run_cells")}
_NOTEBOOK_WORDS = re.compile(r"(?i)\bnotebooks?\b|\.ipynb\b|\bcells?\b")
# Making a file that does not exist yet needs write_file alone: given read_file too, the 135M model read the missing
# file again and again and then looped in its answer (measured in Jupyter AI: "Create a file hello.py that prints
# hello"); given edit_file, it "edited" nothing.
_CREATE_VERB = re.compile(_LEAD + r"(?:create|write|make|save|generate)\b", re.IGNORECASE)
_CREATE_TOOLS = ("write_file",)


def prompt_intents(message: str, *, has_contexts: bool = False, folders: Sequence[Path] = ()) -> set[str]:
    """What the user asks the assistant to do to the workspace: a subset of ``{"read", "change", "run"}``.

    * ``run``: an imperative run/execute ("Run the tests", "please execute `ls`").
    * ``read`` / ``change``: an imperative verb of that kind *and* something to act on — a path-like word
      (``utils.py``, ``src/app``, an existing ``Makefile``) or a word such as "file" or "folder" as the verb's own
      object (before any "that …" clause). An attached context never counts (``has_contexts`` is ignored): its
      text is in the prompt already, and the panel attaches the active notebook to every prompt — "Write a Python
      function is_prime(n)" with it attached was offered write_file, and the 135M model wrote the function into
      the tool call's JSON until its token limit (issue #30); given read tools for "Explain briefly." about an
      attached class, it called directory_tree on an invented name.
    * ``read`` also when the message names the workspace itself ("this project", "the repo").
    """
    message = _FENCED.sub(" ", message)  # code the user pasted is not a request ("f.read()", "open('x.txt')")
    intents: set[str] = set()
    if _VERB["run"].search(message):
        intents.add("run")
    named = _names_a_path(message, folders)
    for kind in ("read", "change"):
        for verb in _VERB[kind].finditer(message):
            # "file" must be the verb's own object: "Create a file …" yes, "Write a function that reads a file" no.
            phrase = _PHRASE_END.split(message[verb.end():], maxsplit=1)[0]
            if named or _OBJECT.search(phrase):
                intents.add(kind)
                break
    if _WORKSPACE.search(message):
        intents.add("read")
    return intents


def _names_a_path(message: str, folders: Sequence[Path]) -> bool:
    if _PATH.search(message):
        return True
    for match in _SLASHED.finditer(message):
        first = match.group(0).lstrip("./").split("/", 1)[0]
        if first and any((folder / first).exists() for folder in folders):
            return True
    # A bare name counts only when it can't be an ordinary word: it exists at the top of a workspace folder *and* is
    # written with a capital or a dot (``Makefile``, ``README``, ``.env``) — "write tests" must not match ``tests/``.
    words = {w for w in _WORD.findall(message) if w != w.lower() or w.startswith(".")}
    return any(any((folder / word).exists() for folder in folders) for word in words)


def tools_for_prompt(
    available: Mapping[str, T],
    names: Mapping[str, str],
    message: str,
    *,
    mode: ToolMode = "auto",
    has_contexts: bool = False,
    folders: Sequence[Path] = (),
) -> dict[str, T]:
    """The tools to offer a small model for this prompt: a subset of ``available`` (keyed as the engine keys them;
    ``names`` maps each key to the tool's own name, e.g. ``eca__read_file`` → ``read_file``).

    ``always``: everything; ``never``: nothing; ``auto``: the tools of the intents :func:`prompt_intents` finds —
    only built-in and kernel tools — plus any tool the message names (an MCP server's tools otherwise come only
    with ``always``).
    """
    if mode == "always":
        return dict(available)
    if mode == "never":
        return {}
    wanted: set[str] = set()
    about_notebook = bool(_NOTEBOOK_WORDS.search(message))
    # a request that names a notebook gets only the notebook tools: given read_file too, the 135M model reads
    # README.md instead (measured in `make lab`: "Read fixme.ipynb and fix the cell that raises")
    only_notebook = bool(named_notebooks(message))
    intents = prompt_intents(message, has_contexts=has_contexts, folders=folders)
    creating = intents == {"change"} and not has_contexts and _creates_new_file(message, folders)
    for intent in intents:
        if not only_notebook:
            wanted.update(_CREATE_TOOLS if creating else _TOOLS_BY_INTENT[intent])
        if about_notebook:
            wanted.update(_NOTEBOOK_TOOLS_BY_INTENT[intent])
    # a tool the user names ("use read_file to …") is offered whatever the wording
    named = {key for key, name in names.items()
             if any(re.search(rf"\b{re.escape(word)}\b", message) for word in (key, name))}
    return {key: tool for key, tool in available.items() if names.get(key) in wanted or key in named}


def _creates_new_file(message: str, folders: Sequence[Path]) -> bool:
    """Whether `message` asks to create files (an imperative create/write/make…) that all do not exist yet (and
    are not notebooks, which have tools of their own)."""
    if not _CREATE_VERB.search(_FENCED.sub(" ", message)):
        return False
    paths = [m.group(0) for m in _PATH.finditer(message)]
    return bool(paths) and not any(p.lower().endswith(".ipynb") or any((f / p).exists() for f in folders)
                                   for p in paths)


def tool_rounds(offered_names: Sequence[str]) -> int:
    """Rounds with tool calls a small model gets before it must answer: one when it may only read (read, then
    answer — measured: given more, the 135M model goes on reading other files) or only create a file (write, then
    answer: given more, it wrote the file again), :data:`TOOL_ROUNDS` otherwise."""
    names = set(offered_names)
    return 1 if names <= set(_READ_TOOLS) or names <= set(_CREATE_TOOLS) else TOOL_ROUNDS


def first_round_extra(provider: str, tools_offered: bool) -> JsonObject:
    """The embedded model must call a tool in the first round of a turn that offers tools: the user asked it to
    act, and given the choice the 135M model tends to answer with an invented file's content instead. (Sent as
    OpenAI's ``tool_choice``, which the ``local`` provider turns into its constrained-JSON schema.)"""
    return {"tool_choice": "required"} if tools_offered and provider == LOCAL_PROVIDER_ID else {}


# A relative path: "." or a name not starting with "/", "~", "..", a backslash or a blank. Plain groups only (the
# runtime's pattern-to-grammar converter has no "(?:" or lookarounds), and never a quote or backslash: the pattern
# becomes the JSON string's grammar as it is, so `[^\n]*` let the model close the string early and the runtime
# failed the reply ("does not match the expected peg-native format").
WORKSPACE_PATH_PATTERN = r'^(\.|\.?[^./~"\\ \t\n][^"\\\n]*)$'
# A message that itself names a place outside the workspace: an absolute, home or parent path, or a drive.
_OUTSIDE = re.compile(r"(?:^|[\s\"'`(\[<])(?:/[\w.~-]|~|\.\.[/\\]|[A-Za-z]:\\)")


def workspace_paths(parameters: JsonObject, path_args: Sequence[str], message: str | None, *,
                    folders: Sequence[Path] = (), tool: str = "") -> JsonObject:
    """A tool's parameters with its path arguments held inside the workspace, unless the user's message names a
    place outside it. Why: asked "Read the file notes.txt", the 135M model named an invented absolute path
    ("/n/d/a-1/a-2.txt") in 8 chats of 100, each then waiting for the user to approve reading outside the
    workspace, and "Notes.txt" or "note.txt" in 12 more, which failed (measured in 100 chats each way).

    When every file the message names exists in the workspace, ``read_file`` and ``edit_file`` may name only
    those (an ``enum``: the files the user asked about); otherwise a path must be relative
    (:data:`WORKSPACE_PATH_PATTERN`). The reply's grammar then makes anything else impossible. A path outside
    still asks for approval when the user names one. A copy: the tool's own schema is left alone."""
    properties = parameters.get("properties")
    if not path_args or not isinstance(properties, dict) or (message is not None and _OUTSIDE.search(message)):
        return parameters
    named = _existing_files(message or "", folders) if tool in _NAMED_FILE_TOOLS else []
    rule: JsonObject = {"enum": [*named]} if named else {"pattern": WORKSPACE_PATH_PATTERN}
    held: JsonObject = {name: {**spec, **rule}
            for name, spec in properties.items()
            if name in path_args and isinstance(spec, dict) and spec.get("type") == "string"
            and not {"pattern", "enum", "const"} & spec.keys()}
    return {**parameters, "properties": {**properties, **held}} if held else parameters


_NAMED_FILE_TOOLS = ("read_file", "edit_file")


def _existing_files(message: str, folders: Sequence[Path]) -> list[str]:
    """The paths the message names, as written, if each is a regular file inside a workspace folder (else none)."""
    names = list(dict.fromkeys(m.group(0) for m in _PATH.finditer(_FENCED.sub(" ", message))))
    roots = resolved_folders(folders)

    def inside(name: str) -> bool:
        # lexically inside first ("a/../../x.txt" is never looked at), then the real path (a link out is not)
        written = [(root, Path(os.path.normpath(root / name))) for root in roots]
        return any(path.is_relative_to(root) and is_inside(path, [root]) and path.is_file() for root, path in written)

    return names if names and all(inside(name) for name in names) else []


# -- the prompt ----------------------------------------------------------------------------------------------------


def compact_system_prompt(*, plan: bool, tools: bool, rules: str = "", custom: str | None = None,
                          base: str | None = None) -> str:
    """The small model's system prompt: a custom behaviour's own prompt, or ``base`` (the model's own, e.g. the one
    the embedded model was trained with) or the compact default; the tool hint only when tools are offered; the
    user's rules clipped to :data:`RULES_CHARS` (with a note saying so)."""
    prompt = custom or base or COMPACT_PROMPT  # the model's own prompt verbatim: it was trained on those exact words
    additions = (COMPACT_PLAN if plan and custom is None else "") + (COMPACT_TOOLS if tools else "")
    if additions:
        prompt = (prompt if prompt.endswith((".", "!", "?")) else prompt + ".") + additions
    rules = rules.strip()
    if rules:
        if len(rules) > RULES_CHARS:
            cut = rules[:RULES_CHARS]
            newline = cut.rfind("\n")
            rules = (cut[:newline] if newline > RULES_CHARS // 2 else cut).rstrip() + "\n[rules shortened]"
        prompt += "\n\n" + rules
    return prompt


def demo_notice_due(provider: str, contents: Sequence[Mapping[str, object]]) -> bool:
    """Whether a prompt of a chat with these ``contents`` (what its clients were shown, saved with it) on
    ``provider`` should say :data:`DEMO_NOTICE` first: on the embedded model, once per chat — also once after a
    chat moved to it from another model, and never again after a reload."""
    if provider != LOCAL_PROVIDER_ID:
        return False
    for item in contents:
        content = item.get("content")
        if item.get("role") == "system" and isinstance(content, Mapping) and DEMO_NOTICE_MARK in str(
                content.get("text") or ""):
            return False
    return True
