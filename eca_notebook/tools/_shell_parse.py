"""What a shell command line does, as far as can be told without running it: a real parse with tree-sitter-bash.

Why tree-sitter-bash rather than ``bashlex`` or ``shlex``: ``shlex`` only splits words (no ``&&``, ``;``, pipes,
subshells, ``$(...)`` or redirections); ``bashlex`` handles those but has had no release since 2023 and raises on
constructs it does not know (``case``, ``[[ ]]``, arithmetic), while tree-sitter's grammar is maintained with the
editors that use it, covers the whole of bash, ships as small binary wheels, and recovers from errors with explicit
``ERROR`` nodes — so "could not be parsed" is a fact we can act on (ask the user), not an exception.

Two layers, so later policies (risk levels) can reuse the first:

* :func:`parse` — syntax only: every simple command in execution order (including those inside ``$(...)``,
  ``<(...)``, subshells, loops, functions, here-documents, ``eval`` strings and ``sh -c`` scripts), with its words,
  assignments and redirections; ``for`` loops as assignments; ``problems`` for what the parser could not follow.
* :func:`analyse_paths` — the paths a command line names, resolved from the directory it runs in, following ``cd``
  (every directory the shell may be in after each ``cd`` is kept: a superset, never a guess), variables assigned in
  the line or present in the environment the command gets, ``~``, globs (expanded now, against the real tree) and
  ``--opt=PATH`` / ``-IPATH`` spellings. It reports the paths outside the workspace, the ``cd``s that leave it and
  the words it cannot know (``$(...)`` output, variables set by ``read``…).

It cannot be airtight and does not pretend to be: a script or an interpreter (``python -c``, ``make``, ``npm``)
opens whatever it likes, an environment variable may point anywhere, a program may ``chdir`` itself.
"""

from __future__ import annotations

import codecs
import glob as _glob
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

__all__ = [
    "Command",
    "Part",
    "PathReport",
    "Redirect",
    "ShellParse",
    "Word",
    "analyse_paths",
    "looks_like_path",
    "parse",
]

MAX_SOURCE = 64 * 1024  # longer command lines are not analysed (they ask)
_MAX_NESTING = 4  # eval / sh -c inside eval / sh -c ...
_MAX_VALUES = 64  # combinations of variable values one word may take
_MAX_CWDS = 16  # directories the shell may be in
_MAX_GLOB = 1000  # matches checked per glob

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
_CD = frozenset({"cd", "pushd", "chdir"})
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "nice", "env", "sudo", "doas", "xargs",
                       "timeout", "stdbuf", "ionice", "chrt", "taskset", "setsid", "unbuffer"})
_WRAPPER_ARG = re.compile(r"^(-.*|[A-Za-z_][A-Za-z0-9_]*=.*|\d+(\.\d+)?[smhd]?)$")
_READERS = frozenset({"read", "mapfile", "readarray", "getopts"})
_GLOB_CHARS = re.compile(r"[*?\[]")
_FILE_URL = re.compile(r"^file:(?://[^/]*)?(/[^?#]*)", re.IGNORECASE)
_BRACES = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
# Devices every program writes to or reads from; naming them is not "touching a file outside the workspace".
_HARMLESS = frozenset({"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout",
                       "/dev/stderr", "/dev/tty", "/dev/full"})
_HARMLESS_PREFIXES = ("/dev/fd/", "/proc/self/fd/")

# Statement-level node types the walker knows; anything else is reported as a problem (the call then asks).
_CONTAINERS = frozenset({
    "program", "list", "pipeline", "compound_statement", "subshell", "do_group", "if_statement", "elif_clause",
    "else_clause", "while_statement", "negated_command", "redirected_statement", "case_statement", "case_item",
    "function_definition", "for_statement", "c_style_for_statement", "test_command",
})
_WORDISH = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation", "simple_expansion",
    "expansion", "command_substitution", "process_substitution", "arithmetic_expansion", "number",
    "brace_expression", "variable_name", "special_variable_name", "extglob_pattern", "regex", "test_operator",
})


# ---------------------------------------------------------------------------------------------------------------
# Syntax


@dataclass(frozen=True)
class Part:
    """One piece of a word. ``kind``: ``literal`` (text, quotes removed), ``var`` (a parameter name), ``tilde``
    (``~`` or ``~user``, at the start of an unquoted word), ``dynamic`` (only known when it runs: ``$(...)``,
    ``${x:-y}``…; `value` says what)."""

    kind: str
    value: str
    quoted: bool = False


@dataclass(frozen=True)
class Word:
    text: str  # as written
    parts: tuple[Part, ...]

    @property
    def static(self) -> str | None:
        """The word's value when it has no expansion at all (``~`` aside)."""
        if all(p.kind == "literal" for p in self.parts):
            return "".join(p.value for p in self.parts)
        return None

    @property
    def dynamic(self) -> list[str]:
        return [p.value for p in self.parts if p.kind == "dynamic"]

    def values(self, lookup: Callable[[str], set[str] | None], home: str | None) -> list[tuple[str, bool]] | None:
        """Every value the word may take: ``(value, has_unquoted_expansion)``; None when one part is unknown."""
        combos: list[tuple[str, bool]] = [("", False)]
        for part in self.parts:
            if part.kind == "literal":
                options: Iterable[str] = (part.value,)
            elif part.kind == "tilde":
                if part.value == "~":
                    options = (home,) if home is not None else ("~",)
                else:
                    expanded = os.path.expanduser(part.value)
                    options = (expanded,)
            elif part.kind == "var":
                found = lookup(part.value)
                if found is None:
                    return None
                options = found
            else:
                return None
            unquoted_var = part.kind == "var" and not part.quoted
            combos = [(a + b, flag or unquoted_var) for a, flag in combos for b in options]
            if len(combos) > _MAX_VALUES:
                return None
        return combos


@dataclass(frozen=True)
class Redirect:
    op: str  # ">", ">>", "<", "&>", ">|", "<>", ">&", "<&", "<<", "<<<"…
    target: Word | None  # None for here-documents and fd duplications (2>&1)
    fd: str | None = None


@dataclass
class Command:
    """One simple command (or a bare assignment: `name` None)."""

    name: Word | None
    args: list[Word] = field(default_factory=list)
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    in_loop: bool = False  # inside a loop or a function body: may run more than once
    via: str | None = None  # "eval" / "sh -c" when it came from a string run by another command

    @property
    def program(self) -> str | None:
        return self.name.static if self.name is not None else None


@dataclass
class ShellParse:
    source: str
    commands: list[Command] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)  # all of them, including those on compound statements
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def words(self) -> list[Word]:
        out: list[Word] = []
        for c in self.commands:
            if c.name is not None:
                out.append(c.name)
            out += c.args
            out += [w for _, w in c.assignments]
        out += [r.target for r in self.redirects if r.target is not None]
        return out

    @property
    def cd_targets(self) -> list[Word | None]:
        """The argument of every ``cd``/``pushd`` (None: no argument, i.e. ``$HOME``)."""
        out: list[Word | None] = []
        for c in self.commands:
            target = _cd_target(c)
            if target is not False:
                out.append(target)  # type: ignore[arg-type]
        return out

    @property
    def path_like(self) -> list[Word]:
        """Arguments and redirection targets spelled like paths (``/x``, ``~/x``, ``./x``, ``a/b``, ``..``)."""
        args = [w for c in self.commands for w in c.args] + [r.target for r in self.redirects if r.target]
        return [w for w in args if looks_like_path(w.text)]


def looks_like_path(text: str) -> bool:
    return text.startswith(("/", "~", "./", "../")) or "/" in text or text in (".", "..") or "$HOME" in text


@lru_cache(maxsize=1)
def _parser():  # type: ignore[no-untyped-def]
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse(source: str) -> ShellParse:
    """Parse a command line (see the module docstring). Never raises; problems are listed in the result."""
    result = ShellParse(source)
    _parse_into(source, result, in_loop=False, via=None, depth=0)
    return result


def _parse_into(source: str, result: ShellParse, *, in_loop: bool, via: str | None, depth: int) -> None:
    if len(source) > MAX_SOURCE:
        result.problems.append(f"the command line is longer than {MAX_SOURCE} characters")
        return
    if "\0" in source:
        result.problems.append("the command line contains a NUL byte")
        return
    tree = _parser().parse(source.encode("utf-8", errors="replace"))
    if tree.root_node.has_error:  # ERROR or MISSING nodes anywhere, even where the walker does not look
        result.problems.append("the shell syntax could not be parsed")
    try:
        _Walker(result, via, depth).statement(tree.root_node, in_loop)
    except RecursionError:
        result.problems.append("the command line is nested too deeply to analyse")


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", errors="replace"))


def _unescape_unquoted(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)


def _unescape_double(text: str) -> str:
    return re.sub(r'\\([$`"\\])', r"\1", text.replace("\\\n", ""))


class _Walker:
    def __init__(self, result: ShellParse, via: str | None, depth: int) -> None:
        self.result = result
        self.via = via
        self.depth = depth

    def problem(self, message: str) -> None:
        if message not in self.result.problems:
            self.result.problems.append(message)

    # -- statements ----------------------------------------------------------------------------------------------

    def statement(self, node, in_loop: bool) -> None:  # type: ignore[no-untyped-def]
        kind = node.type
        if node.is_missing or kind == "ERROR":
            self.problem(f"the shell syntax could not be parsed near {_text(node)[:40]!r}")
            return
        if kind == "comment" or not node.is_named:
            return
        if kind == "command":
            self.command(node, in_loop)
        elif kind == "variable_assignment":
            self.add(Command(None, assignments=[self.assignment(node)], in_loop=in_loop))
        elif kind == "variable_assignments":
            self.add(Command(None, assignments=[self.assignment(c) for c in node.named_children
                                                if c.type == "variable_assignment"], in_loop=in_loop))
        elif kind == "declaration_command":
            self.declaration(node, in_loop)
        elif kind == "unset_command":
            return  # variables only ever accumulate values here (a superset)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node, None, in_loop)
        elif kind == "for_statement":
            self.for_loop(node)
        elif kind == "test_command":
            args = [self.word(w, in_loop) for w in _descendants(node, _WORDISH - {"test_operator"})]
            self.add(Command(Word("[", (Part("literal", "["),)), args, in_loop=in_loop))
        elif kind == "case_statement":
            for child in node.named_children:
                if child.type == "case_item":
                    for sub in child.named_children:
                        if sub.type not in _WORDISH:  # the patterns are not paths
                            self.statement(sub, in_loop)
                elif child.type in _WORDISH:
                    self.word(child, in_loop)  # registers $(...) inside
        elif kind in ("while_statement", "function_definition", "c_style_for_statement"):
            for child in node.named_children:
                self.child(child, True)
        elif kind in _CONTAINERS:
            for child in node.named_children:
                self.child(child, in_loop)
        elif kind in ("arithmetic_expansion", "compound_assignment"):
            for sub in _descendants(node, {"command_substitution", "process_substitution"}):
                self.word(sub, in_loop)
        else:
            self.problem(f"unsupported shell construct: {kind}")

    def child(self, node, in_loop: bool) -> None:  # type: ignore[no-untyped-def]
        if node.type in ("word", "variable_name") and node.parent is not None and \
                node.parent.type == "function_definition":
            return  # the function's name
        if node.type in _WORDISH:
            if node.type in ("command_substitution", "process_substitution"):
                self.word(node, in_loop)
            elif node.parent is not None and node.parent.type in ("c_style_for_statement",):
                return
            else:
                self.add(Command(None, [self.word(node, in_loop)], in_loop=in_loop))
            return
        if node.type in ("binary_expression", "unary_expression", "parenthesized_expression", "ternary_expression",
                         "postfix_expression"):
            for sub in _descendants(node, {"command_substitution", "process_substitution"}):
                self.word(sub, in_loop)
            return
        self.statement(node, in_loop)

    def add(self, command: Command) -> None:
        command.via = command.via or self.via
        self.result.commands.append(command)
        self.result.redirects += command.redirects

    def command(self, node, in_loop: bool) -> None:  # type: ignore[no-untyped-def]
        cmd = Command(None, in_loop=in_loop)
        for child in node.named_children:
            if child.type == "variable_assignment":
                cmd.assignments.append(self.assignment(child))
            elif child.type == "command_name":
                inner = child.named_children[0] if child.named_children else child
                cmd.name = self.word(inner, in_loop)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.redirect(child, cmd, in_loop)
            elif child.type in _WORDISH:
                cmd.args.append(self.word(child, in_loop))
            elif child.type == "comment":
                continue
            else:
                self.problem(f"unsupported shell construct in a command: {child.type}")
        self.add(cmd)
        self.nested(cmd, in_loop)

    def nested(self, cmd: Command, in_loop: bool) -> None:
        """Strings that are themselves shell code: ``eval ARGS`` and ``sh -c SCRIPT`` (after wrappers)."""
        words = ([cmd.name] if cmd.name is not None else []) + cmd.args
        i = 0
        while i < len(words) and (words[i].static or "") in _WRAPPERS:
            i += 1  # then its options, VAR=value pairs (env) and durations (timeout)
            while i < len(words) and _WRAPPER_ARG.match(words[i].static or ""):
                i += 1
        if i >= len(words):
            return
        program = os.path.basename(words[i].static or "")
        if program == "eval":
            code = [w.static for w in words[i + 1:]]
            if any(c is None for c in code):
                self.problem("eval of a value only known when it runs")
                return
            self.sub_parse(" ".join(code), in_loop, "eval")  # type: ignore[arg-type]
        elif program in _SHELLS:
            rest = words[i + 1:]
            for j, w in enumerate(rest):
                text = w.static
                if text is not None and text.startswith("-") and "c" in text.lstrip("-") and not text.startswith("--"):
                    if j + 1 >= len(rest):
                        return
                    script = rest[j + 1].static
                    if script is None:
                        self.problem(f"{program} -c with a script only known when it runs")
                        return
                    self.sub_parse(script, in_loop, f"{program} -c")
                    return

    def sub_parse(self, source: str, in_loop: bool, via: str) -> None:
        if self.depth >= _MAX_NESTING:
            self.problem("shell code nested too deeply (eval / sh -c)")
            return
        before = len(self.result.commands)
        _parse_into(source, self.result, in_loop=in_loop, via=via, depth=self.depth + 1)
        for c in self.result.commands[before:]:
            c.via = via

    def declaration(self, node, in_loop: bool) -> None:  # type: ignore[no-untyped-def]
        keyword = node.children[0].type if node.children else "declare"
        cmd = Command(Word(keyword, (Part("literal", keyword),)), in_loop=in_loop)
        for child in node.named_children:
            if child.type == "variable_assignment":
                cmd.assignments.append(self.assignment(child))
            elif child.type in _WORDISH and child.type != "variable_name":
                cmd.args.append(self.word(child, in_loop))
        self.add(cmd)

    def assignment(self, node) -> tuple[str, Word]:  # type: ignore[no-untyped-def]
        name_node = node.child_by_field_name("name") or node.named_children[0]
        value_node = node.child_by_field_name("value")
        name = _text(name_node)
        if name_node.type == "subscript":  # a[i]=v
            name = _text(name_node.named_children[0]) if name_node.named_children else name
        if value_node is None:
            return name, Word("", (Part("literal", ""),))
        if value_node.type == "array":  # a=(x y): elements are checked; the variable itself is not followed
            for v in value_node.named_children:
                if v.type in _WORDISH:
                    self.add(Command(None, [self.word(v, False)]))
            return name, Word(_text(value_node), (Part("dynamic", "an array"),))
        return name, self.word(value_node, False)

    def for_loop(self, node) -> None:  # type: ignore[no-untyped-def]
        var = node.child_by_field_name("variable")
        values = [c for c in node.children_by_field_name("value")]
        name = _text(var) if var is not None else None
        if name is not None:
            if values:
                words = [self.word(v, True) for v in values]
                self.add(Command(None, assignments=[(name, w) for w in words], in_loop=True))
            else:
                self.add(Command(None, assignments=[(name, Word("$@", (Part("var", "@"),)))], in_loop=True))
        body = node.child_by_field_name("body")
        for child in node.named_children:
            if child is body or child.type in ("do_group", "compound_statement"):
                self.statement(child, True)

    def redirect(self, node, cmd: Command | None, in_loop: bool) -> None:  # type: ignore[no-untyped-def]
        if node.type == "heredoc_redirect":
            for child in node.named_children:
                if child.type in ("file_redirect", "herestring_redirect"):
                    self.redirect(child, cmd, in_loop)
                elif child.type == "heredoc_body":
                    for sub in _descendants(child, {"command_substitution"}):
                        self.word(sub, in_loop)  # commands in an unquoted here-document run
                elif child.type not in ("heredoc_start", "heredoc_end", "heredoc_content"):
                    self.child(child, in_loop)
            red = Redirect("<<", None)
        elif node.type == "herestring_redirect":
            for child in node.named_children:
                if child.type in _WORDISH:
                    self.word(child, in_loop)  # data, not a path; but $(...) inside runs
            red = Redirect("<<<", None)
        else:
            op = next((c.type for c in node.children if not c.is_named), ">")
            fd_node = node.child_by_field_name("descriptor")
            targets = [c for c in node.named_children if c.type in _WORDISH and c.type != "file_descriptor"]
            target_node = targets[-1] if targets else None
            target = self.word(target_node, in_loop) if target_node is not None else None
            static = target.static if target is not None else None
            if op in (">&", "<&") and static is not None and (static.rstrip("-").isdigit() or static == "-"):
                target = None  # 2>&1, <&-: a file descriptor, not a file
            red = Redirect(op, target, _text(fd_node) if fd_node is not None else None)
        if cmd is not None:
            cmd.redirects.append(red)
        else:
            self.result.redirects.append(red)

    # -- words ---------------------------------------------------------------------------------------------------

    def word(self, node, in_loop: bool) -> Word:  # type: ignore[no-untyped-def]
        parts: list[Part] = []
        self.parts(node, parts, quoted=False, in_loop=in_loop, first=True)
        unquoted = _text(node) if node.type == "word" else "".join(
            _text(c) for c in node.children if c.type == "word") if node.type == "concatenation" else ""
        if _BRACES.search(unquoted):  # bash's {a,b} / {1..3}; not dash's, but /bin/sh may be bash
            parts.append(Part("dynamic", "brace expansion"))
        merged: list[Part] = []
        for p in parts:
            if merged and p.kind == "literal" and merged[-1].kind == "literal":
                merged[-1] = Part("literal", merged[-1].value + p.value, merged[-1].quoted and p.quoted)
            else:
                merged.append(p)
        return Word(_text(node), tuple(merged) or (Part("literal", ""),))

    def parts(self, node, out: list[Part], *, quoted: bool, in_loop: bool,  # type: ignore[no-untyped-def]
              first: bool) -> None:
        kind = node.type
        if kind in ("word", "number", "test_operator", "variable_name", "special_variable_name", "regex",
                    "extglob_pattern", "file_descriptor"):
            text = _text(node)
            if not quoted and first and text.startswith("~"):
                head, sep, tail = text.partition("/")
                out.append(Part("tilde", head))
                text = sep + tail
            out.append(Part("literal", _unescape_unquoted(text) if not quoted else text, quoted))
        elif kind == "string" or kind == "translated_string":
            for child in node.children:
                if child.type == "string_content":
                    out.append(Part("literal", _unescape_double(_text(child)), True))
                elif child.is_named:
                    self.parts(child, out, quoted=True, in_loop=in_loop, first=False)
            if not node.named_children:
                out.append(Part("literal", "", True))
        elif kind == "raw_string":
            out.append(Part("literal", _text(node)[1:-1], True))
        elif kind == "ansi_c_string":
            raw = _text(node)[2:-1]
            try:
                value = codecs.decode(raw.encode("latin-1", "backslashreplace"), "unicode_escape")
            except (UnicodeDecodeError, ValueError):
                value = raw
            out.append(Part("literal", value, True))
        elif kind == "concatenation":
            for i, child in enumerate(node.children):
                self.parts(child, out, quoted=quoted, in_loop=in_loop, first=first and i == 0)
        elif kind == "simple_expansion":
            name = node.named_children[-1] if node.named_children else None
            out.append(Part("var", _text(name) if name is not None else _text(node)[1:], quoted))
        elif kind == "expansion":
            named = node.named_children
            inner = [c for c in node.children if c.type not in ("${", "}")]
            if len(inner) == 1 and named and named[0].type in ("variable_name", "special_variable_name"):
                out.append(Part("var", _text(named[0]), quoted))
            else:
                for sub in _descendants(node, {"command_substitution", "process_substitution"}):
                    self.word(sub, in_loop)
                out.append(Part("dynamic", _text(node)))
        elif kind == "command_substitution":
            for child in node.named_children:
                self.child(child, in_loop)
            out.append(Part("dynamic", _text(node)))
        elif kind == "process_substitution":
            for child in node.named_children:
                self.child(child, in_loop)
            out.append(Part("literal", "/dev/fd/63", quoted))
        elif kind == "arithmetic_expansion":
            for sub in _descendants(node, {"command_substitution"}):
                self.word(sub, in_loop)
            out.append(Part("literal", "0", quoted))  # a number, never a path
        elif kind == "brace_expression":
            out.append(Part("dynamic", _text(node)))
        elif not node.is_named:
            text = _text(node)
            if text in ('"', "'"):
                return
            out.append(Part("literal", text, quoted))
        else:
            self.problem(f"unsupported shell word: {kind}")
            out.append(Part("dynamic", _text(node)))


def _descendants(node, kinds: set[str] | frozenset[str]):  # type: ignore[no-untyped-def]
    """The outermost descendants of `node` whose type is in `kinds`."""
    out = []
    stack = list(reversed(node.named_children))
    while stack:
        n = stack.pop()
        if n.type in kinds:
            out.append(n)
        else:
            stack.extend(reversed(n.named_children))
    return out


def _short(text: str, limit: int = 60) -> str:
    """Words quoted in reasons (shown and logged) are cut: a command line may carry a token."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cd_target(cmd: Command) -> Word | None | bool:
    """The target word of a ``cd``-like command; None for a bare ``cd`` ($HOME); False when `cmd` is not one."""
    words = ([cmd.name] if cmd.name is not None else []) + cmd.args
    i = 0
    while i < len(words) and (words[i].static or "") in ("command", "builtin"):
        i += 1
    if i >= len(words) or (words[i].static or "") not in _CD:
        return False
    rest = words[i + 1:]
    for j, w in enumerate(rest):
        s = w.static
        if s == "--":
            return rest[j + 1] if j + 1 < len(rest) else None
        if s is not None and s.startswith("-") and s != "-" and len(s) > 1:
            continue
        return w
    return None


# ---------------------------------------------------------------------------------------------------------------
# Paths


@dataclass
class PathReport:
    outside: list[Path] = field(default_factory=list)  # resolved paths outside every workspace folder
    cd_outside: list[Path] = field(default_factory=list)  # directories a cd may leave the workspace for
    unknown: list[str] = field(default_factory=list)  # why some of it cannot be known before it runs

    @property
    def needs_asking(self) -> bool:
        return bool(self.outside or self.cd_outside or self.unknown)

    def reasons(self) -> list[str]:
        out = [f"names {p}, outside the workspace" for p in self.outside]
        out += [f"changes directory to {p}, outside the workspace" for p in self.cd_outside]
        return out + self.unknown


def analyse_paths(parsed: ShellParse, cwd: Path, folders: Iterable[Path], env: Mapping[str, str]) -> PathReport:
    """The paths `parsed` names, seen from `cwd` with environment `env` (see the module docstring)."""
    return _Analysis(parsed, cwd, list(folders), env).run()


class _Analysis:
    def __init__(self, parsed: ShellParse, cwd: Path, folders: list[Path], env: Mapping[str, str]) -> None:
        self.parsed = parsed
        self.folders = [Path(f).resolve(strict=False) for f in folders] or [Path(cwd).resolve(strict=False)]
        self.cwds: set[Path] = {Path(cwd).resolve(strict=False)}
        self.env = env
        self.home = env.get("HOME")
        self.vars: dict[str, set[str] | None] = {}
        self.report = PathReport()
        self.path_dirs = {os.path.realpath(d) for d in env.get("PATH", "").split(os.pathsep) if d}

    def unknown(self, message: str) -> None:
        if message not in self.report.unknown:
            self.report.unknown.append(message)

    def lookup(self, name: str) -> set[str] | None:
        if name in self.vars:
            return self.vars[name]
        if name in ("?", "#", "$", "!", "-"):
            return {"0"}
        if name == "0":
            return {"sh"}
        if name.isdigit() or name in ("@", "*"):
            return {""}
        if name == "PWD":  # the shell sets it to where it runs
            return {str(c) for c in self.cwds}
        if name == "OLDPWD":  # inherited, then where the last cd left from
            return {str(c) for c in self.cwds} | ({self.env["OLDPWD"]} if "OLDPWD" in self.env else set())
        return {self.env.get(name, "")}

    def run(self) -> PathReport:
        for problem in self.parsed.problems:
            self.unknown(problem)
        for cmd in self.parsed.commands:
            self.command(cmd)
        loop_cds = [c for c in self.parsed.commands if c.in_loop and _cd_target(c) is not False]
        for _ in range(4):  # a cd in a loop runs again from where the last one left
            before = set(self.cwds)
            for cmd in loop_cds:
                self.cd(cmd)
            if self.cwds == before:
                break
        else:
            self.unknown("a cd in a loop whose destinations cannot be bounded")
        for red in self.parsed.redirects:
            if red.target is not None:
                self.check_word(red.target, "redirection")
        return self.report

    def command(self, cmd: Command) -> None:
        for name, word in cmd.assignments:
            values = word.values(self.lookup, self.home)
            if values is None:
                self.vars[name] = None
                continue
            known = self.vars[name] if name in self.vars else self.lookup(name)  # the old value may remain
            if known is not None:
                self.vars[name] = known | {v for v, _ in values}
            for value, _ in values:
                if looks_like_path(value) or value.startswith("~"):
                    self.check_value(value, split=False)
        program = None
        if cmd.name is not None:
            values = cmd.name.values(self.lookup, self.home)
            if values is None:
                self.unknown(f"the program to run is only known when it runs ({_short(cmd.name.text)})")
            else:
                for value, _ in values:
                    program = value
                    expanded = self.expand_tilde(value)
                    if "/" not in expanded:
                        continue
                    if os.path.isabs(expanded) and os.path.realpath(os.path.dirname(expanded)) in self.path_dirs:
                        continue  # /usr/bin/git: a program from PATH, spelled out
                    self.check_value(value, split=False)
        if program is not None and os.path.basename(program) in _READERS:
            for w in cmd.args:
                if w.static and not w.static.startswith("-"):
                    self.vars[w.static] = None
            if os.path.basename(program) in ("mapfile", "readarray") and cmd.args:
                self.vars["MAPFILE"] = None
        if _cd_target(cmd) is not False:
            self.cd(cmd)  # its argument is a directory to go to, checked there
            return
        for word in cmd.args:
            self.check_word(word, "argument")
        if program is not None and os.path.basename(program) == "git":
            self.git_config_files(cmd.args)

    def git_config_files(self, args: list[Word]) -> None:
        """``git config --global`` / ``--system`` change (or read) a file outside the workspace without naming it:
        the user's ``~/.gitconfig`` (or ``$XDG_CONFIG_HOME/git/config``), the system's ``/etc/gitconfig``."""
        statics = [a.static or "" for a in args]
        i = 0
        while i < len(statics) and statics[i].startswith("-"):  # git's own options: -C dir, -c key=value …
            i += 2 if statics[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env") else 1
        if i >= len(statics) or statics[i] != "config":
            return
        flags = set(statics[i + 1:])
        files: list[str] = []
        if "--global" in flags:
            xdg = self.env.get("XDG_CONFIG_HOME") or (f"{self.home}/.config" if self.home else None)
            files += [f"{self.home or '~'}/.gitconfig"] + ([f"{xdg}/git/config"] if xdg else [])
        if "--system" in flags:
            files.append("/etc/gitconfig")
        for f in files:
            for base in sorted(self.cwds):
                self.check_path(base, f)

    def cd(self, cmd: Command) -> None:
        target = _cd_target(cmd)
        if target is None:
            values: list[tuple[str, bool]] | None = [(self.home or "/", False)]
        else:
            values = target.values(self.lookup, self.home)  # type: ignore[union-attr]
        if values is None:
            self.unknown("cd to a directory only known when it runs")
            return
        cdpath = self.lookup("CDPATH")
        if cdpath is None:
            self.unknown("cd with a CDPATH only known when it runs")
            return
        new: set[Path] = set()
        for value, _ in values:
            if value == "-":
                self.unknown("cd - (the previous directory is not known here)")
                continue
            value = self.expand_tilde(value)
            for base in self.cwds:
                new.add((base / value).resolve(strict=False))
                if not value.startswith(("/", "./", "../")) and value not in (".", ".."):
                    for entry in (e for v in cdpath for e in v.split(":") if e):  # cd NAME searches $CDPATH
                        new.add((base / self.expand_tilde(entry) / value).resolve(strict=False))
        for d in new:
            if not self.inside(d) and d not in self.report.cd_outside:
                self.report.cd_outside.append(d)
        self.cwds |= new
        if len(self.cwds) > _MAX_CWDS:
            self.unknown("too many possible working directories to follow")
            self.cwds = set(sorted(self.cwds)[:_MAX_CWDS])

    def check_word(self, word: Word, what: str) -> None:
        values = word.values(self.lookup, self.home)
        if values is None:
            self.unknown(f"the {what} {_short(word.text)!r} is only known when it runs")
            return
        for value, unquoted_var in values:
            self.check_value(value, split=unquoted_var)

    def expand_tilde(self, value: str) -> str:
        if value == "~" or value.startswith("~/"):
            return (self.home or "~") + value[1:]
        if value.startswith("~"):
            return os.path.expanduser(value)
        return value

    def check_value(self, value: str, *, split: bool) -> None:
        candidates = {value}
        if split:
            candidates |= set(value.split())
        for c in list(candidates):
            if "=" in c:
                candidates.add(c.split("=", 1)[1])
            if c.startswith("-") and not c.startswith("--") and len(c) > 2 and c[2] in "/~.":
                candidates.add(c[2:])
            if ":" in c and not re.match(r"^[a-z][a-z0-9+.-]*://", c):
                candidates |= {piece for piece in c.split(":") if piece.startswith(("/", "~", ".."))}
            url = _FILE_URL.match(c)
            if url:  # curl file:///etc/passwd, git clone file:///x: a URL that is a path on this machine
                candidates.add(unquote(url.group(1)))
        for c in candidates:
            if not c:
                continue
            c = self.expand_tilde(c)
            if c in _HARMLESS or c.startswith(_HARMLESS_PREFIXES):
                continue
            for base in sorted(self.cwds):
                self.check_path(base, c)

    def check_path(self, base: Path, value: str) -> None:
        paths = [base / value]
        if _GLOB_CHARS.search(value):
            head = re.split(r"[*?\[]", value, maxsplit=1)[0]
            paths.append(base / (head.rsplit("/", 1)[0] if "/" in head else "."))
            try:
                matches = _glob.glob(value if os.path.isabs(value) else str(base / value))
            except (OSError, ValueError, re.error):
                matches = []
            if len(matches) > _MAX_GLOB:
                self.unknown(f"the pattern {_short(value)!r} matches too many files to check")
                matches = matches[:_MAX_GLOB]
            paths += [Path(m) for m in matches]
        for p in paths:
            try:
                resolved = p.resolve(strict=False)
            except (OSError, RuntimeError, ValueError):
                self.unknown(f"{_short(value)!r} cannot be resolved")
                continue
            if str(resolved) in _HARMLESS:
                continue
            if not self.inside(resolved) and resolved not in self.report.outside:
                self.report.outside.append(resolved)

    def inside(self, path: Path) -> bool:
        return any(path == f or path.is_relative_to(f) for f in self.folders)
