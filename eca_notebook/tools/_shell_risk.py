"""How risky a shell command line is — ``low`` / ``medium`` / ``high`` and one line saying why — from a real parse.

Why: "Run ``rm -rf build``?" and "Run ``ls``?" look the same in an approval prompt, and a user who approves forty
harmless calls an hour stops reading the forty-first. A level and a reason that names the decisive thing ("deletes
recursively: build", "pipes a download into a shell") let the eye stop where it matters, and let the config
auto-allow the harmless (``toolCall.approval.risk``).

Built on :mod:`._shell_parse` (tree-sitter-bash): every simple command of the line — including those inside
``$(...)``, pipes, subshells, and the strings ``sh -c``, ``eval``, ``trap`` and ``find -exec`` run — is classified on
its own, redirections and the paths the line names are looked at once, and the line gets the worst of them. Levels:

* **low** — only reads: ``ls``, ``cat x``, ``grep``, ``git status`` / ``log`` / ``diff``, ``python --version``.
* **medium** — changes the workspace or reaches out: writes (``cp``, ``mv``, ``> out.txt``, ``sed -i``), plain
  deletes (``rm x``), runs code whose effect cannot be read off the line (``python x.py``, ``pytest``, ``make``, an
  unknown program), the network (``curl``, ``git pull``, ``pip install``, ``npm install``), reads outside the
  workspace by a read-only command (``cat /etc/hosts``), and anything that cannot be parsed or only known when it
  runs (``$(...)`` arguments, syntax errors) — never less than medium.
* **high** — hard to undo or reaching beyond the project: recursive or forced deletes (``rm -rf``, ``find
  -delete``, ``git clean``), privileges (``sudo``, ``doas``, ``su``, ``chmod``/``chown`` outside the workspace),
  a download piped into a shell (``curl … | sh``, ``bash -c "$(curl …)"``), history rewriting and discarded work
  (``git push --force``, ``git reset --hard``, ``git rebase``, ``git commit --amend``, ``git checkout -- .``),
  a remote command (``ssh host cmd``), writes or unknown effects on paths outside the workspace, devices and
  system administration (``dd of=/dev/sda``, ``mkfs``, ``shutdown``, ``apt install``); and, on any command, what
  makes it run a program it names: an option (``rg --pre``, ``git grep -O``, ``sort --compress-program``, ``tar
  --to-command``, ``git -c core.pager=…``: :data:`RUNS_PROGRAM_OPTIONS`), a variable (``PAGER=``,
  ``GIT_SSH_COMMAND=``: :data:`PROGRAM_ENV`), a script (``awk`` ``system()``, ``sed`` ``e``), or a write under
  ``.git/`` (hooks and config run as code on the next git command).

Network access is medium, not high: downloads and pushes are everyday work, and what makes them dangerous (running
what was downloaded, pushing with force) is classified high on its own. Reading outside the workspace is medium
when every command of the line only reads; otherwise a path outside the workspace makes the line high.

It is a guide for a person, not a sandbox: a script can do anything, so "runs code" is medium because the line
cannot say more, and a lower level never lets a call skip the checks the approval policy makes anyway.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._shell_parse import Command, ShellParse, Word, analyse_paths, parse
from ._shell_tables import (
    DELETE,
    DELETE_HARD,
    DESTROY,
    DESTROYERS,
    DOWNLOADERS,
    GIT_INTERNALS,
    INSTALL_SUBS,
    INTERPRETERS,
    MAX_NESTING,
    NET,
    NETWORK,
    OUTSIDE,
    OVERWRITE,
    PACKAGE_MANAGERS,
    PACKAGE_RUNNERS,
    PERMISSIONS,
    PIPE_TO_SHELL,
    PRIVILEGE,
    PRIVILEGED,
    READ_ONLY,
    READ_PACKAGE_SUBS,
    READ_SYSTEM_SUBS,
    REMOTE,
    RUNNERS,
    RUNS_CODE,
    RUNS_PROGRAM,
    RUNS_PROGRAM_OPTIONS,
    SHELLS,
    SSH_PROGRAM_SETTINGS,
    SUDO_OPTS_WITH_VALUE,
    SYSTEM,
    UNKNOWN,
    UNKNOWN_PROGRAM,
    VERSION_FLAGS,
    WRAPPER_ARG,
    WRAPPER_OPTS_WITH_VALUE,
    WRAPPERS,
    WRITE,
    WRITERS,
    Finding,
    Level,
    first_operand,
    git_finding,
    git_program_key,
    high_risk,
    join_some,
    low_risk,
    medium_risk,
    option_value,
    program_env,
    sed_effect,
    short,
    shown_word,
    split_options,
)

__all__ = ["Level", "ShellRisk", "classify_shell"]


@dataclass(frozen=True)
class ShellRisk:
    """The verdict for one command line."""

    level: Level
    reason: str


# ---------------------------------------------------------------------------------------------------------------
# Entry point


def classify_shell(command: str, cwd: Path, folders: Sequence[Path], env: Mapping[str, str]) -> ShellRisk:
    """The risk of running `command` in `cwd` (inside the workspace `folders`) with environment `env`."""
    parsed = parse(command)
    return _Classifier(parsed, Path(cwd), [Path(f) for f in folders] or [Path(cwd)], env).run()


@dataclass
class _Line:
    """What one command line showed, across its commands (for the findings that need more than one command)."""

    downloads: bool = False
    downloaded_files: set[str] = field(default_factory=set)
    stdin_runner: str | None = None  # a shell or interpreter that runs its input: "sh"
    dynamic_runner: str | None = None  # sh -c / eval / source of a script only known when it runs
    scripts: list[str] = field(default_factory=list)  # script files shells and interpreters run


class _Classifier:
    def __init__(self, parsed: ShellParse, cwd: Path, folders: list[Path], env: Mapping[str, str],
                 depth: int = 0) -> None:
        self.parsed = parsed
        self.cwd = cwd.resolve(strict=False)
        self.folders = [f.resolve(strict=False) for f in folders]
        self.env = env
        self.depth = depth
        self.line = _Line()
        self.findings: list[Finding] = []

    def script(self, code: str, via: str) -> list[Finding]:
        """Findings for shell code a command runs from a string (``sh -c``, ``eval``, ``trap``, ``find -exec sh
        -c``): the parse follows some of these itself, not all (``find -exec``, ``trap``), so each is classified here
        — a command counted twice changes nothing, one never counted would."""
        if self.depth >= MAX_NESTING:
            return [medium_risk(UNKNOWN, f"shell code nested too deeply to analyse ({via})")]
        inner = _Classifier(parse(code), self.cwd, self.folders, self.env, self.depth + 1)
        inner.line = self.line
        found = [f for cmd in inner.parsed.commands for f in inner.command(cmd)]
        found += inner.redirects()
        if inner.parsed.problems:
            found.append(medium_risk(UNKNOWN, f"cannot be fully analysed: {inner.parsed.problems[0]} ({via})"))
        return found

    def run(self) -> ShellRisk:
        for cmd in self.parsed.commands:
            self.findings += self.command(cmd)
        self.findings += self.redirects()
        self.findings += self.line_findings()
        report = analyse_paths(self.parsed, self.cwd, self.folders, self.env)
        only_reads = all(f.level == "low" for f in self.findings)
        outside = [*report.outside, *report.cd_outside]
        if outside:
            shown = join_some([str(p) for p in outside])
            self.findings.append(medium_risk(OUTSIDE, f"reads outside the workspace: {shown}") if only_reads
                                 else high_risk(OUTSIDE, f"touches a path outside the workspace: {shown}"))
        if report.unknown:
            self.findings.append(medium_risk(UNKNOWN, f"cannot be fully analysed: {report.unknown[0]}"))
        if not self.findings:
            return ShellRisk("low", "runs nothing")
        top = max(self.findings, key=lambda f: f.key)
        if top.level == "low":
            programs = list(dict.fromkeys(f.reason for f in self.findings))
            return ShellRisk("low", f"only reads: {join_some(programs)}")
        return ShellRisk(top.level, top.reason)

    # -- one simple command ----------------------------------------------------------------------------------------

    def command(self, cmd: Command) -> list[Finding]:
        found = [f for name, _ in cmd.assignments if (f := self.assignment(name)) is not None]
        if cmd.name is None:
            return found
        words = [cmd.name, *cmd.args]
        return found + self.words(words, from_input=False)

    def assignment(self, name: str) -> Finding | None:
        """``PAGER=./x git log``, ``export GIT_SSH_COMMAND=…``: a variable that picks the program later commands
        run turns a reader into a runner."""
        if program_env(name):
            return high_risk(RUNS_PROGRAM, f"sets {name}, which names a program the commands after it run")
        if name == "PATH":
            return medium_risk(RUNS_CODE, "changes which programs run (PATH)")
        return None

    def program_options(self, program: str, args: list[Word]) -> list[Finding]:
        """Options that make `program` run another program (``rg --pre``, ``sort --compress-program``, ``tar
        --to-command``, ``man -P``, ``ssh -o ProxyCommand=…``, ``vim -c``): high, whatever the program does besides."""
        statics = [a.static or "" for a in args]
        option = option_value(statics, RUNS_PROGRAM_OPTIONS.get(program, ()))
        if option == "--checkpoint-action" and not any("exec" in s for s in statics):
            option = None
        if option is None and program in ("ssh", "scp", "sftp", "rsync", "autossh"):
            for i, s in enumerate(statics):
                value = statics[i + 1] if s == "-o" and i + 1 < len(statics) else s[2:] if s.startswith("-o") \
                    and not s.startswith("--") else ""
                if re.split(r"[=\s]", value.strip(), maxsplit=1)[0].lower() in SSH_PROGRAM_SETTINGS:
                    option = f"-o {short(value, 30)}"
                    break
        if option is None and program in ("vim", "vi", "nvim", "view", "ex", "gvim") and any(
                s.startswith("+") and not re.fullmatch(r"\+\d*", s) for s in statics):
            option = "+command"
        if option is None:
            return []
        return [high_risk(RUNS_PROGRAM, f"runs a program or commands named in an option ({program} {option})")]

    def words(self, words: list[Word], *, from_input: bool) -> list[Finding]:
        """Findings for a command given as words (the parse's, or those after ``find -exec``)."""
        found: list[Finding] = []
        i = 0
        while i < len(words):  # wrappers first: sudo / env / xargs / timeout … then the program they run
            name = os.path.basename(words[i].static or "")
            if name in PRIVILEGED:
                found.append(high_risk(PRIVILEGE, f"runs with elevated privileges ({name})"))
                if name == "su":
                    return found
                i += 1
                while i < len(words) and (words[i].static or "").startswith("-"):
                    i += 2 if words[i].static in SUDO_OPTS_WITH_VALUE else 1
            elif name in ("command", "type") and i + 1 < len(words) and words[i + 1].static in ("-v", "-V"):
                return [*found, low_risk(f"{name} {words[i + 1].static}")]  # only says what a name is
            elif name in WRAPPERS:
                from_input = from_input or name == "xargs"
                i += 1
                options: list[str] = []
                while i < len(words) and WRAPPER_ARG.match(words[i].static or ""):
                    option = words[i].static or ""
                    options.append(option)
                    if name == "env" and "=" in option and not option.startswith("-"):
                        finding = self.assignment(option.split("=", 1)[0])
                        found += [finding] if finding is not None else []
                    if name == "env" and (option in ("-S", "--split-string") or option.startswith(
                            ("--split-string=", "-S"))):  # env -S 'prog args': one string split into a command
                        value = option.split("=", 1)[1] if "=" in option else option[2:] if option != "-S" and \
                            not option.startswith("--") else (words[i + 1].static if i + 1 < len(words) else "")
                        if value is None:
                            return [*found, medium_risk(UNKNOWN, "env -S runs a command only known when it runs")]
                        return found + self.script(value, "env -S")
                    i += 2 if words[i].static in WRAPPER_OPTS_WITH_VALUE else 1
                if name == "watch" and i < len(words) and not {"-x", "--exec"} & set(options):
                    code = [w.static for w in words[i:]]  # watch joins its arguments into one line for sh -c
                    if any(c is None for c in code):
                        return [*found, medium_risk(UNKNOWN, "watch runs a command only known when it runs")]
                    return found + self.script(" ".join(c or "" for c in code), "watch")
            else:
                break
        if i >= len(words):
            return found or [low_risk(os.path.basename(words[0].static or "") if words else "nothing")]
        program_word, args = words[i], words[i + 1:]
        if program_word.static is None:
            return [*found, medium_risk(UNKNOWN, f"runs a program only known when it runs: {shown_word(program_word)}")]
        program = os.path.basename(program_word.static)
        found += self.program_options(program, args)
        found += self.git_internals(program, args)
        handler = _HANDLERS.get(program)
        if handler is not None:
            return found + handler(self, program, args, from_input)
        if program in READ_ONLY:
            return found + self.read_only(program, args)
        if program == "tar" and args and re.fullmatch(r"-?[A-Za-z]*t[A-Za-z]*|--list", args[0].static or ""):
            return [*found, low_risk("tar --list")]
        if program in WRITERS:
            return [*found, medium_risk(WRITE, f"{WRITERS[program]}: {self.operands(args, from_input)}")]
        if program in DESTROYERS or program.startswith("mkfs."):
            return [*found, high_risk(DESTROY, f"destroys data ({program}): {self.operands(args, from_input)}")]
        if program in SYSTEM:
            return found + self.system(program, args)
        if program in DOWNLOADERS:
            return found + self.download(program, args)
        if program in NET:
            return [*found, medium_risk(NETWORK, f"{NET[program]} ({program})")]
        if program in SHELLS:
            return found + self.shell(program, args)
        if INTERPRETERS.match(program):
            return found + self.interpreter(program, args)
        if program in PACKAGE_RUNNERS:
            return [*found, medium_risk(NETWORK, f"downloads and runs a package ({program})")]
        if program in PACKAGE_MANAGERS:
            return found + self.package(program, args)
        if program in READ_SYSTEM_SUBS:
            return found + self.system(program, args)
        if program in RUNNERS:
            return found + self.runner(program, args)
        if "/" in program_word.static:
            return [*found, medium_risk(RUNS_CODE, f"runs a program: {shown_word(program_word)}")]
        return [*found, medium_risk(UNKNOWN_PROGRAM, f"runs {program}, which is not a known command")]

    # -- kinds of programs -----------------------------------------------------------------------------------------

    def read_only(self, program: str, args: list[Word]) -> list[Finding]:
        statics = [a.static or "" for a in args]
        if program == "find":
            return self.find(args)
        if program in ("sed", "gsed"):
            effect = sed_effect(args)
            if effect == "runs":
                return [high_risk(RUNS_PROGRAM, f"{program} script that runs shell commands (e) or is only known "
                                                "when it runs")]
            if effect == "writes":
                return [medium_risk(WRITE, f"{program} script that writes files (w)")]
        if program == "tree" and any(s == "-o" for s in statics):
            return [medium_risk(WRITE, "writes a file (tree -o)")]
        if program == "uniq" and len(split_options(args)[1]) >= 2:
            return [medium_risk(WRITE, f"writes: {shown_word(split_options(args)[1][1])}")]
        if program in ("sed", "gsed") and any(s == "-i" or s.startswith(("-i", "--in-place")) or
                                             (s.startswith("-") and not s.startswith("--") and "i" in s)
                                             for s in statics):
            _, operands = split_options(args)
            files = operands if any(s in ("-e", "--expression", "-f", "--file") for s in statics) else operands[1:]
            return [medium_risk(WRITE, f"edits in place: {self.operands(files, False, already_split=True)}")]
        if program == "sort" and any(s == "-o" or s.startswith(("-o", "--output")) for s in statics):
            return [medium_risk(WRITE, "writes the sorted output to a file (sort -o)")]
        if program in ("awk", "gawk", "mawk", "nawk"):
            return self.awk(program, args)
        return [low_risk(program)]

    def awk(self, program: str, args: list[Word]) -> list[Finding]:
        """An awk program runs shell commands with ``system()``, ``print | "cmd"`` and ``"cmd" | getline``."""
        script: Word | None = None
        from_file = False
        i = 0
        while i < len(args):
            s = args[i].static
            if s in ("-F", "-v", "--field-separator", "--assign"):
                i += 2
                continue
            if s in ("-f", "--file", "-E", "--exec") or (s or "").startswith(("-f", "--file=")):
                from_file = True
            elif s is None or not s.startswith("-"):
                script = args[i]
                break
            i += 1
        if from_file:
            return [medium_risk(RUNS_CODE, f"runs an {program} program from a file")]
        text = script.static if script is not None else ""
        if text is None:
            return [medium_risk(UNKNOWN, f"runs an {program} program only known when it runs")]
        if re.search(r"system\s*\(|(?<!\|)\|(?!\|)\s*(\"|getline|[A-Za-z_$])|\|&", text):
            return [high_risk(RUNS_PROGRAM, f"runs an {program} program that runs shell commands (system, pipes)")]
        if re.search(r"print[^;]*>|getline|-i\s*inplace", text) or \
                any(a.static in ("-i", "inplace") for a in args):
            return [medium_risk(RUNS_CODE, f"runs an {program} program that may write files")]
        return [low_risk(program)]

    def find(self, args: list[Word]) -> list[Finding]:
        statics = [a.static or "" for a in args]
        start = next((a for a in args if not (a.static or "-").startswith(("-", "(", "!"))), None)
        where = shown_word(start) if start is not None else "."
        found: list[Finding] = []
        if "-delete" in statics:
            found.append(high_risk(DELETE_HARD, f"deletes the files find matches under {where}"))
        for flag in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            if flag in statics:
                found.append(medium_risk(WRITE, f"writes a file ({flag})"))
        i = 0
        while i < len(args):
            if statics[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and statics[j] not in (";", "+"):
                    j += 1
                if i + 1 < j and statics[i + 1] == "{}":  # the program is the file found
                    found.append(medium_risk(RUNS_CODE, f"runs each file find matches ({statics[i]} {{}})"))
                inner = [a for a in args[i + 1:j] if a.static != "{}"]
                found += self.words(inner, from_input=True)
                i = j
            i += 1
        return found or [low_risk("find")]

    def delete(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        flags, operands = split_options(args)
        recursive = any(f in ("--recursive", "-r", "-R") or (not f.startswith("--") and ("r" in f or "R" in f))
                        for f in flags) and program == "rm"
        forced = any(f == "--force" or (not f.startswith("--") and "f" in f) for f in flags) and program == "rm"
        what = self.operands(operands, from_input, already_split=True)
        if program == "truncate":
            sized = [a for i, a in enumerate(args) if i == 0 or args[i - 1].static not in ("-s", "--size", "-r",
                                                                                          "--reference")]
            return [medium_risk(DELETE, f"truncates: {self.operands(sized, from_input)}")]
        if recursive:
            return [high_risk(DELETE_HARD, f"deletes recursively: {what}")]
        if forced:
            return [high_risk(DELETE_HARD, f"force-deletes: {what}")]
        return [medium_risk(DELETE, f"deletes: {what}")]

    def permissions(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        _, operands = split_options(args)  # the mode or owner comes first, then the files
        outside = [w for w in operands[1:] if w.static is None or not self.inside(self.resolve(w.static))]
        if outside:
            return [high_risk(PRIVILEGE, f"changes permissions or owner outside the workspace: "
                                      f"{join_some(shown_word(w) for w in outside)}")]
        return [medium_risk(WRITE, f"changes permissions or owner: {self.operands(operands[1:], from_input, True)}")]

    def dd(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        for a in args:
            value = a.static
            if value is not None and value.startswith("of="):
                target = value[3:]
                if target.startswith("/dev/") and target not in ("/dev/null", "/dev/zero", "/dev/stdout"):
                    return [high_risk(DESTROY, f"writes to a device: {target}")]
                return [medium_risk(WRITE, f"writes: {short(target)}")]
            if value is None:
                return [medium_risk(UNKNOWN, f"dd with an argument only known when it runs: {shown_word(a)}")]
        return [low_risk("dd")]

    def system(self, program: str, args: list[Word]) -> list[Finding]:
        sub = first_operand(args)
        if sub is not None and sub in READ_SYSTEM_SUBS.get(program, ()):
            return [low_risk(f"{program} {sub}")]
        if program in ("apt", "apt-get", "aptitude", "dnf", "yum", "pacman", "apk", "zypper", "snap", "flatpak",
                       "dpkg", "rpm"):
            return [high_risk(PRIVILEGE, f"changes system packages ({program}{' ' + sub if sub else ''})")]
        if program == "crontab":
            return [high_risk(PRIVILEGE, "changes scheduled jobs (crontab)")]
        return [high_risk(PRIVILEGE, f"changes the system ({program}{' ' + sub if sub else ''})")]

    def download(self, program: str, args: list[Word]) -> list[Finding]:
        self.line.downloads = True
        statics = [a.static or "" for a in args]
        for i, s in enumerate(statics):
            if s in ("-o", "-O", "--output", "--output-document") and i + 1 < len(statics) and statics[i + 1]:
                self.line.downloaded_files.add(os.path.basename(statics[i + 1]))
            elif s.startswith(("--output=", "--output-document=")):
                self.line.downloaded_files.add(os.path.basename(s.split("=", 1)[1]))
        if "-O" in statics and program == "curl" or "--remote-name" in statics:
            for s in statics:
                if "://" in s:
                    self.line.downloaded_files.add(s.rstrip("/").rsplit("/", 1)[-1])
        if program == "wget" and not any(s in ("-O", "--output-document") or s.startswith("--output-document=")
                                         for s in statics):
            for s in statics:
                if "://" in s:
                    self.line.downloaded_files.add(s.rstrip("/").rsplit("/", 1)[-1])
        sends = any(s in ("-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-F", "--form", "-T",
                          "--upload-file", "--post-data", "--post-file", "--json") or
                    s.startswith(("--data", "--post-", "--form", "--json", "--upload-file")) for s in statics)
        method = next((statics[i + 1] for i, s in enumerate(statics[:-1]) if s in ("-X", "--request", "--method")),
                      None)
        if sends or (method is not None and method.upper() not in ("GET", "HEAD", "OPTIONS")):
            return [medium_risk(NETWORK, f"sends data over the network ({program})")]
        return [medium_risk(NETWORK, f"downloads from the network ({program})")]

    def ssh(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        takes_value = set("BbcDEeFIiJLlmOopQRSWw")
        i = 0
        while i < len(args):
            s = args[i].static or ""
            if s.startswith("-") and len(s) >= 2:
                i += 2 if s[-1] in takes_value and len(s) == 2 else 1
                continue
            break
        if i + 1 < len(args):  # a host, then a command for it
            return [high_risk(REMOTE, f"runs a command on another machine ({program})")]
        return [medium_risk(NETWORK, f"connects to another machine ({program})")]

    def shell(self, program: str, args: list[Word]) -> list[Finding]:
        for j, w in enumerate(args):
            s = w.static
            if s is not None and s.startswith("-") and not s.startswith("--") and "c" in s[1:]:
                script = args[j + 1] if j + 1 < len(args) else None
                if script is not None and script.static is None:
                    self.line.dynamic_runner = program
                    return [medium_risk(UNKNOWN, f"{program} -c runs a script only known when it runs")]
                if script is None or script.static is None:
                    return []
                return self.script(script.static, f"{program} -c")
        script_word = next((w for w in args if not (w.static or "x").startswith("-")), None)
        if script_word is None or script_word.static in ("-", "/dev/stdin") or \
                (script_word.static or "").startswith(("/dev/fd/", "/proc/self/fd/")):
            self.line.stdin_runner = program
            return [medium_risk(RUNS_CODE, f"{program} runs the commands it reads from its input")]
        if script_word.static is None:
            self.line.dynamic_runner = program
            return [medium_risk(UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script_word.static))
        return [medium_risk(RUNS_CODE, f"runs a shell script: {shown_word(script_word)}")]

    def interpreter(self, program: str, args: list[Word]) -> list[Finding]:
        statics = [a.static for a in args]
        if statics and all(s in VERSION_FLAGS for s in statics):
            return [low_risk(f"{program} {statics[0]}")]
        if len(statics) >= 3 and statics[0] == "-m" and statics[1] in ("pip", "pip3"):
            return self.package("pip", args[2:])
        if len(statics) >= 2 and statics[0] == "-m":
            module = statics[1] or "?"
            if module in ("http.server", "SimpleHTTPServer"):
                return [medium_risk(NETWORK, f"serves files over the network ({program} -m {module})")]
            return [medium_risk(RUNS_CODE, f"runs code ({program} -m {module})")]
        if program.startswith("perl") and any(s and s.startswith("-") and not s.startswith("--") and "i" in s[1:]
                                              for s in statics):
            return [medium_risk(WRITE, "edits files in place (perl -i)")]
        for j, s in enumerate(statics):
            if s in ("-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--command"):
                code = args[j + 1] if j + 1 < len(args) else None
                if code is not None and code.static is None:
                    self.line.dynamic_runner = program
                return [medium_risk(RUNS_CODE, f"runs code ({program} {s})")]
        script = next((a for a in args if not (a.static or "x").startswith("-")), None)
        if script is None or script.static in ("-", "/dev/stdin") or \
                (script.static or "").startswith(("/dev/fd/", "/proc/self/fd/")):
            self.line.stdin_runner = program
            return [medium_risk(RUNS_CODE, f"{program} runs the code it reads from its input")]
        if script.static is None:
            self.line.dynamic_runner = program
            return [medium_risk(UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script.static))
        return [medium_risk(RUNS_CODE, f"runs code: {program} {shown_word(script)}")]

    def eval_(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        if any(a.static is None for a in args):
            self.line.dynamic_runner = program
            return [medium_risk(UNKNOWN, f"{program} runs code only known when it runs")]
        return self.script(" ".join(a.static or "" for a in args), program)

    def trap(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        """``trap CODE SIGNAL…``: CODE runs later, when the signal (or EXIT) comes."""
        _, operands = split_options(args)
        if len(operands) < 2 or operands[0].static in ("-", ""):
            return [low_risk("trap")]
        if operands[0].static is None:
            return [medium_risk(UNKNOWN, "trap runs code only known when it runs")]
        return self.script(operands[0].static, "trap")

    def source(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        script = args[0] if args else None
        if script is None:
            return [medium_risk(UNKNOWN, f"{program} without a file")]
        if script.static is None or script.static.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/stdin")):
            self.line.dynamic_runner = program
            return [medium_risk(UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script.static))
        return [medium_risk(RUNS_CODE, f"runs a shell script in this shell: {shown_word(script)}")]

    def package(self, program: str, args: list[Word]) -> list[Finding]:
        statics = [a.static or "" for a in args]
        sub = first_operand(args)
        if program == "uv" and sub == "pip":
            return self.package("pip", args[statics.index("pip") + 1:])
        if program in ("uv", "poetry", "pdm", "hatch", "rye", "pixi", "npm", "pnpm", "yarn", "bun", "cargo", "go",
                       "pipx", "conda", "mamba", "micromamba") and sub in ("run", "exec", "x", "dlx", "test",
                                                                           "start", "build", "shell", "tool"):
            if program in ("uv", "pipx") and sub == "tool" and "install" in statics:
                return [medium_risk(NETWORK, f"installs packages from the network ({program} tool install)")]
            return [medium_risk(RUNS_CODE, f"runs project code ({program} {sub})")]
        if sub == "publish" or sub == "upload":
            return [high_risk(REMOTE, f"publishes a package ({program} {sub})")]
        if sub in INSTALL_SUBS or (program in ("yarn", "bun", "bundle") and sub is None):
            verb = "uninstalls packages" if sub in ("uninstall", "remove", "rm", "un") else \
                "installs packages from the network"
            return [medium_risk(NETWORK, f"{verb} ({program} {sub or 'install'})")]
        if sub is None or sub in READ_PACKAGE_SUBS or all(s in VERSION_FLAGS for s in statics):
            return [low_risk(f"{program} {sub or ''}".strip())]
        return [medium_risk(RUNS_CODE, f"runs {program} {sub}")]

    def runner(self, program: str, args: list[Word]) -> list[Finding]:
        statics = [a.static or "" for a in args]
        if statics and all(s in VERSION_FLAGS for s in statics):
            return [low_risk(f"{program} {statics[0]}")]
        sub = first_operand(args)
        if program in ("kill", "pkill", "killall"):
            return [medium_risk(RUNS_CODE, f"stops processes ({program})")]
        if program == "ruff" and sub in ("check", None) and not any(s.startswith("--fix") for s in statics):
            return [low_risk("ruff check")]
        if program in ("docker", "podman") and sub in ("ps", "images", "logs", "inspect", "version", "info"):
            return [low_risk(f"{program} {sub}")]
        if program in ("docker", "podman") and sub in ("rm", "rmi", "prune", "system", "volume", "kill"):
            return [high_risk(DELETE_HARD, f"removes containers or data ({program} {sub})")]
        if program == "kubectl" and sub in ("get", "describe", "logs", "version", "explain", "top"):
            return [low_risk(f"kubectl {sub}")]
        if program == "kubectl" and sub in ("delete", "drain", "replace"):
            return [high_risk(DELETE_HARD, f"changes a cluster ({program} {sub})")]
        if program == "gh":
            if "delete" in statics:
                return [high_risk(REMOTE, f"deletes on GitHub (gh {sub} delete)")]
            return [medium_risk(NETWORK, f"uses GitHub (gh {sub or ''})".replace(" )", ")"))]
        if program == "systemctl" or program == "crontab":
            return self.system(program, args)
        if program in ("cargo", "go") and sub in ("install", "get"):
            return [medium_risk(NETWORK, f"installs packages from the network ({program} {sub})")]
        if program == "terraform" and sub in ("apply", "destroy"):
            return [high_risk(REMOTE, f"changes infrastructure (terraform {sub})")]
        return [medium_risk(RUNS_CODE, f"runs code ({program}{' ' + sub if sub else ''})")]

    def git(self, program: str, args: list[Word], from_input: bool) -> list[Finding]:
        statics = [a.static for a in args]
        i = 0
        while i < len(statics):  # git's own options: -C dir, -c key=value, --git-dir=…, --no-pager
            s = statics[i] or ""
            if s.startswith("--exec-path="):
                return [high_risk(RUNS_PROGRAM, "runs git's programs from another directory (--exec-path)")]
            if s in ("-c", "--config-env") or s.startswith("--config-env="):  # a setting may name a program to run
                setting = s.split("=", 1)[1] if "=" in s else (statics[i + 1] if i + 1 < len(statics) else "")
                key = (setting or "").split("=", 1)[0]
                if setting is None or git_program_key(key):
                    return [high_risk(RUNS_PROGRAM, f"git runs a program set on its command line "
                                                    f"({s.split('=', 1)[0]} {short(key or '…', 30)})")]
                return [medium_risk(RUNS_CODE, f"git with its configuration set on the command line ({s})")]
            if s in ("-C", "--git-dir", "--work-tree", "--namespace"):
                i += 2
            elif s.startswith("-"):
                i += 1
            else:
                break
        if i >= len(statics):
            return [low_risk("git")]
        sub = statics[i]
        if sub is None:
            return [medium_risk(UNKNOWN, "git with a subcommand only known when it runs")]
        rest = [s or "" for s in statics[i + 1:]]
        if sub == "submodule" and "foreach" in rest:  # runs its command line in every submodule, through sh
            code = [w.static for w in args[i + 2 + rest.index("foreach"):] if not (w.static or "").startswith("--")]
            if any(c is None for c in code):
                return [medium_risk(UNKNOWN, "git submodule foreach runs a command only known when it runs")]
            return self.script(" ".join(c or "" for c in code), "git submodule foreach") or [low_risk("git")]
        if sub == "bisect" and rest[:1] == ["run"]:  # runs the command after it at each step
            return [medium_risk(WRITE, "changes the repository (git bisect)"),
                    *self.words(args[i + 2:], from_input=False)]
        return [git_finding(sub, rest)]

    def git_internals(self, program: str, args: list[Word]) -> list[Finding]:
        """A command that writes under ``.git/`` (``cp x .git/hooks/pre-commit``, ``sed -i … .git/config``,
        ``chmod +x .git/hooks/x``): hooks and config there run as code on the next git command, anyone's."""
        if program not in WRITERS and program not in PERMISSIONS and program not in ("sed", "gsed", "perl", "dd"):
            return []
        flags, operands = split_options(args)
        values = [w.static for w in operands if w.static is not None]
        values += [f.split("=", 1)[1] for f in flags if "=" in f]  # --target-directory=…, of=…
        values += [s[3:] for a in args if program == "dd" and (s := a.static or "").startswith("of=")]
        if program in ("cp", "ln", "install") and len(values) > 1 and not any(
                f in ("-t", "--target-directory") or f.startswith("--target-directory=") for f in flags):
            values = values[-1:]  # the destination; the sources are only read
        if program in ("sed", "gsed", "perl") and not any(f.startswith(("-i", "--in-place")) or (
                not f.startswith("--") and "i" in f) for f in flags):
            return []
        hit = next((v for v in values if self.in_git_dir(v)), None)
        if hit is None:
            return []
        return [high_risk(GIT_INTERNALS, f"writes git's internals: {short(hit)} (runs as code on the next git "
                                         "command)")]

    def in_git_dir(self, value: str) -> bool:
        return ".git" in self.resolve(value).parts

    # -- the line as a whole ---------------------------------------------------------------------------------------

    def redirects(self) -> list[Finding]:
        found: list[Finding] = []
        for red in self.parsed.redirects:
            if red.target is None or red.op.startswith("<") and red.op != "<>":
                continue
            target = red.target.static
            if target is None:
                found.append(medium_risk(UNKNOWN,
                                         f"writes to a file only known when it runs: {shown_word(red.target)}"))
                continue
            if target in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or target.startswith("/dev/fd/"):
                continue
            if red.op in (">&", "&>", ">", ">|") and target.isdigit():
                continue
            path = self.resolve(target)
            if str(path).startswith("/dev/"):
                found.append(high_risk(DESTROY, f"writes to a device: {target}"))
            elif ".git" in path.parts:
                found.append(high_risk(GIT_INTERNALS, f"writes git's internals: {short(target)} (runs as code on the "
                                                      "next git command)"))
            elif not self.inside(path):
                found.append(high_risk(OUTSIDE, f"writes outside the workspace: {path}"))
            elif red.op in (">", ">|", "&>") and path.is_file():
                found.append(medium_risk(OVERWRITE, f"overwrites: {short(target)}"))
            else:
                found.append(medium_risk(WRITE, f"writes: {short(target)}"))
        return found

    def line_findings(self) -> list[Finding]:
        line = self.line
        if not line.downloads:
            return []
        if line.stdin_runner is not None:
            return [high_risk(PIPE_TO_SHELL, f"pipes a download into a shell ({line.stdin_runner})")]
        if line.dynamic_runner is not None:
            return [high_risk(PIPE_TO_SHELL, f"runs a downloaded script ({line.dynamic_runner})")]
        ran = [s for s in line.scripts if s in line.downloaded_files]
        if ran:
            return [high_risk(PIPE_TO_SHELL, f"runs a downloaded script: {ran[0]}")]
        return []

    # -- helpers ---------------------------------------------------------------------------------------------------

    def resolve(self, value: str) -> Path:
        if value == "~" or value.startswith("~/"):
            value = (self.env.get("HOME") or "~") + value[1:]
        return (self.cwd / value).resolve(strict=False)

    def inside(self, path: Path) -> bool:
        return any(path == f or path.is_relative_to(f) for f in self.folders)

    def operands(self, args: Iterable[Word], from_input: bool, already_split: bool = False) -> str:
        words = list(args) if already_split else split_options(list(args))[1]
        if not words:
            return "the files named by its input" if from_input else "(no operands)"
        return join_some(shown_word(w) for w in words)


Handler = Callable[[_Classifier, str, list[Word], bool], list[Finding]]

_HANDLERS: dict[str, Handler] = {
    "rm": _Classifier.delete, "rmdir": _Classifier.delete, "unlink": _Classifier.delete,
    "truncate": _Classifier.delete,
    **{p: _Classifier.permissions for p in PERMISSIONS},
    "dd": _Classifier.dd,
    "ssh": _Classifier.ssh,
    "eval": _Classifier.eval_,
    "source": _Classifier.source, ".": _Classifier.source,
    "trap": _Classifier.trap,
    "git": _Classifier.git,
}
