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
  system administration (``dd of=/dev/sda``, ``mkfs``, ``shutdown``, ``apt install``).

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
from typing import Literal

from ._shell_parse import Command, ShellParse, Word, analyse_paths, parse

__all__ = ["Level", "ShellRisk", "classify_shell"]

Level = Literal["low", "medium", "high"]
_RANK: dict[Level, int] = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class ShellRisk:
    """The verdict for one command line."""

    level: Level
    reason: str


# Among findings of the same level, the heavier one names the line: how decisive that kind of finding is for a person
# deciding whether to let it run ("pipes a download into a shell" says more than "uses the network").
_PIPE_TO_SHELL = 90
_PRIVILEGE = 80
_DESTROY = 75
_DELETE_HARD = 70
_HISTORY = 65
_REMOTE = 62
_OUTSIDE = 60
_DELETE = 50
_OVERWRITE = 45
_NETWORK = 40
_RUNS_CODE = 30
_UNKNOWN_PROGRAM = 25
_UNKNOWN = 22
_WRITE = 20
_READ = 0


@dataclass(frozen=True)
class _Finding:
    level: Level
    weight: int
    reason: str

    @property
    def key(self) -> tuple[int, int]:
        return _RANK[self.level], self.weight


def _low(what: str) -> _Finding:
    return _Finding("low", _READ, what)


def _medium(weight: int, reason: str) -> _Finding:
    return _Finding("medium", weight, reason)


def _high(weight: int, reason: str) -> _Finding:
    return _Finding("high", weight, reason)


# ---------------------------------------------------------------------------------------------------------------
# Program tables

_READ_ONLY = frozenset({
    "ls", "ll", "dir", "cat", "tac", "head", "tail", "less", "more", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "tree", "pwd", "echo", "printf", "true", "false", "test", "[", "[[", "which", "whereis", "type", "whoami", "id",
    "groups", "date", "cal", "uname", "hostname", "printenv", "stat", "file", "du", "df", "diff", "cmp", "comm",
    "uniq", "cut", "tr", "column", "jq", "yq", "basename", "dirname", "realpath", "readlink", "sha1sum", "sha256sum",
    "sha512sum", "md5sum", "cksum", "b2sum", "nl", "od", "hexdump", "xxd", "strings", "seq", "sleep", "ps", "free",
    "uptime", "locale", "tput", "expr", "cd", "pushd", "popd", "dirs", "export", "declare", "local", "readonly",
    "typeset", "unset", "alias", "unalias", "set", "shift", "read", "mapfile", "readarray", "getopts", ":", "wait",
    "history", "hash", "lsof", "nproc", "lscpu", "arch", "getconf", "fold", "fmt", "paste", "join", "expand",
    "unexpand", "rev", "look", "zcat", "bzcat", "xzcat", "zgrep", "numfmt", "factor", "env", "shellcheck", "mypy",
    "flake8", "pylint", "pyflakes", "pydoc", "man", "info", "help", "command", "builtin", "exit", "return", "break",
    "continue", "trap", "umask", "ulimit", "times", "logname", "tty", "stty", "w", "who", "last", "top", "htop",
    "pgrep", "pstree", "vmstat", "iostat", "sort", "awk", "gawk", "mawk", "nawk", "sed", "gsed", "find", "fd",
    "fdfind", "locate", "bat", "batcat", "exa", "eza", "lsd", "base64", "iconv", "nm", "objdump", "readelf", "ldd",
})
_WRITERS = {
    "cp": "copies", "mv": "moves", "ln": "links", "mkdir": "creates directories", "touch": "touches",
    "tee": "writes", "install": "installs files", "patch": "patches", "unzip": "extracts", "zip": "archives",
    "gzip": "compresses", "gunzip": "extracts", "bzip2": "compresses", "bunzip2": "extracts", "xz": "compresses",
    "unxz": "extracts", "7z": "archives", "split": "writes", "csplit": "writes", "mktemp": "creates a file",
    "mkfifo": "creates a fifo", "rename": "renames", "cpio": "archives", "ar": "archives",
    "tar": "archives or extracts",
}
_DELETERS = {"rm", "rmdir", "unlink", "truncate"}
_DESTROYERS = frozenset({"shred", "wipefs", "mkfs", "fdisk", "sfdisk", "cfdisk", "parted", "mkswap", "blkdiscard"})
_PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "runas", "sudoedit"})
_PERMISSIONS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
_SYSTEM = frozenset({
    "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "mount", "umount", "swapon", "swapoff", "iptables",
    "ip6tables", "nft", "ufw", "useradd", "userdel", "usermod", "groupadd", "groupdel", "passwd", "chpasswd",
    "visudo", "chroot", "insmod", "rmmod", "modprobe", "sysctl", "launchctl", "service", "update-rc.d",
    "apt", "apt-get", "aptitude", "dpkg", "dnf", "yum", "rpm", "pacman", "apk", "zypper", "snap", "flatpak",
})
_READ_SYSTEM_SUBS = {  # subcommands of system tools that only read
    "systemctl": {"status", "is-active", "is-enabled", "is-failed", "list-units", "list-unit-files", "show", "cat",
                  "list-timers", "list-sockets", "--version"},
    "apt": {"list", "search", "show", "policy", "--version"},
    "apt-cache": {"search", "show", "policy", "depends", "rdepends", "madison"},
    "dpkg": {"-l", "--list", "-L", "--listfiles", "-s", "--status", "-S", "--search", "--version"},
    "crontab": {"-l"},
}
_DOWNLOADERS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "fetch", "lwp-request"})
_NET = {"scp": "copies files over the network", "sftp": "transfers files over the network",
        "rsync": "copies files", "nc": "opens a network connection", "ncat": "opens a network connection",
        "netcat": "opens a network connection", "socat": "opens a network connection",
        "telnet": "opens a network connection", "ftp": "transfers files over the network",
        "ping": "uses the network", "dig": "uses the network", "nslookup": "uses the network",
        "host": "uses the network", "traceroute": "uses the network", "mosh": "connects to another machine"}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
_INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby|perl|php|lua[0-9.]*|Rscript|R|"
                           r"julia|irb|tclsh|osascript|pwsh|powershell)$")
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "nice", "env", "xargs", "timeout", "stdbuf",
                       "ionice", "chrt", "taskset", "setsid", "unbuffer", "watch", "caffeinate", "flock"})
_WRAPPER_ARG = re.compile(r"^(-.*|[A-Za-z_][A-Za-z0-9_]*=.*|\d+(\.\d+)?[smhd]?)$")
_WRAPPER_OPTS_WITH_VALUE = frozenset({"-I", "-L", "-P", "-d", "-E", "-s", "-a", "-u", "-k", "-C", "-S", "--unset",
                                      "--chdir", "--signal", "--kill-after", "--max-args", "--max-procs",
                                      "--delimiter", "--replace", "--arg-file"})
_SUDO_OPTS_WITH_VALUE = frozenset({"-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "--user", "--group"})
_MAX_NESTING = 4  # sh -c inside eval inside sh -c …
_VERSION_FLAGS = frozenset({"--version", "-V", "-v", "--help", "-h", "version", "help"})
_RUNNERS = frozenset({
    "make", "gmake", "cmake", "ninja", "meson", "bazel", "pytest", "py.test", "tox", "nox", "jest", "vitest",
    "mocha", "mvn", "gradle", "gradlew", "ant", "sbt", "tsc", "webpack", "vite", "rollup", "esbuild", "jupyter",
    "ipython", "black", "isort", "prettier", "eslint", "ruff", "cargo", "go", "rustc", "gcc", "g++", "cc", "clang",
    "clang++", "javac", "java", "dotnet", "swift", "kotlin", "scala", "hatch", "pdm", "poetry", "pipenv", "just",
    "task", "pre-commit", "coverage", "sphinx-build", "mkdocs", "uvicorn", "gunicorn", "flask", "django-admin",
    "manage.py", "docker", "podman", "kubectl", "helm", "terraform", "ansible", "ansible-playbook", "vagrant", "gh",
    "code", "open", "xdg-open", "kill", "pkill", "killall", "crontab", "systemctl", "at", "batch", "screen", "tmux",
})
_INSTALL_SUBS = frozenset({"install", "i", "ci", "add", "update", "upgrade", "up", "sync", "download", "get",
                           "uninstall", "remove", "rm", "un", "lock", "create", "self-update"})
_PACKAGE_MANAGERS = frozenset({"pip", "pip3", "uv", "npm", "pnpm", "yarn", "bun", "gem", "conda", "mamba",
                               "micromamba", "brew", "pipx", "poetry", "pdm", "cargo", "go", "composer", "bundle",
                               "pixi", "rye", "hatch"})
_PACKAGE_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx"})
_READ_PACKAGE_SUBS = frozenset({"list", "ls", "show", "freeze", "check", "info", "view", "outdated", "search",
                                "why", "tree", "audit", "config", "help", "--version", "-V", "version", "env",
                                "doctor", "which", "root", "prefix", "bin", "cache", "explain", "licenses"})


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
        self.findings: list[_Finding] = []

    def script(self, code: str, via: str) -> list[_Finding]:
        """Findings for shell code a command runs from a string (``sh -c``, ``eval``, ``trap``, ``find -exec sh
        -c``): the parse follows some of these itself, not all (``find -exec``, ``trap``), so each is classified here
        — a command counted twice changes nothing, one never counted would."""
        if self.depth >= _MAX_NESTING:
            return [_medium(_UNKNOWN, f"shell code nested too deeply to analyse ({via})")]
        inner = _Classifier(parse(code), self.cwd, self.folders, self.env, self.depth + 1)
        inner.line = self.line
        found = [f for cmd in inner.parsed.commands if cmd.name is not None for f in inner.command(cmd)]
        found += inner.redirects()
        if inner.parsed.problems:
            found.append(_medium(_UNKNOWN, f"cannot be fully analysed: {inner.parsed.problems[0]} ({via})"))
        return found

    def run(self) -> ShellRisk:
        for cmd in self.parsed.commands:
            if cmd.name is not None:
                self.findings += self.command(cmd)
        self.findings += self.redirects()
        self.findings += self.line_findings()
        report = analyse_paths(self.parsed, self.cwd, self.folders, self.env)
        only_reads = all(f.level == "low" for f in self.findings)
        outside = [*report.outside, *report.cd_outside]
        if outside:
            shown = _join([str(p) for p in outside])
            self.findings.append(_medium(_OUTSIDE, f"reads outside the workspace: {shown}") if only_reads
                                 else _high(_OUTSIDE, f"touches a path outside the workspace: {shown}"))
        if report.unknown:
            self.findings.append(_medium(_UNKNOWN, f"cannot be fully analysed: {report.unknown[0]}"))
        if not self.findings:
            return ShellRisk("low", "runs nothing")
        top = max(self.findings, key=lambda f: f.key)
        if top.level == "low":
            programs = list(dict.fromkeys(f.reason for f in self.findings))
            return ShellRisk("low", f"only reads: {_join(programs)}")
        return ShellRisk(top.level, top.reason)

    # -- one simple command ----------------------------------------------------------------------------------------

    def command(self, cmd: Command) -> list[_Finding]:
        words = ([cmd.name] if cmd.name is not None else []) + cmd.args
        return self.words(words, from_input=False)

    def words(self, words: list[Word], *, from_input: bool) -> list[_Finding]:
        """Findings for a command given as words (the parse's, or those after ``find -exec``)."""
        found: list[_Finding] = []
        i = 0
        while i < len(words):  # wrappers first: sudo / env / xargs / timeout … then the program they run
            name = os.path.basename(words[i].static or "")
            if name in _PRIVILEGED:
                found.append(_high(_PRIVILEGE, f"runs with elevated privileges ({name})"))
                if name == "su":
                    return found
                i += 1
                while i < len(words) and (words[i].static or "").startswith("-"):
                    i += 2 if words[i].static in _SUDO_OPTS_WITH_VALUE else 1
            elif name in ("command", "type") and i + 1 < len(words) and words[i + 1].static in ("-v", "-V"):
                return [*found, _low(f"{name} {words[i + 1].static}")]  # only says what a name is
            elif name in _WRAPPERS:
                from_input = from_input or name == "xargs"
                i += 1
                while i < len(words) and _WRAPPER_ARG.match(words[i].static or ""):
                    i += 2 if words[i].static in _WRAPPER_OPTS_WITH_VALUE else 1
            else:
                break
        if i >= len(words):
            return found or [_low(os.path.basename(words[0].static or "") if words else "nothing")]
        program_word, args = words[i], words[i + 1:]
        if program_word.static is None:
            return [*found, _medium(_UNKNOWN, f"runs a program only known when it runs: {_shown(program_word)}")]
        program = os.path.basename(program_word.static)
        handler = _HANDLERS.get(program)
        if handler is not None:
            return found + handler(self, program, args, from_input)
        if program in _READ_ONLY:
            return found + self.read_only(program, args)
        if program == "tar" and args and re.fullmatch(r"-?[A-Za-z]*t[A-Za-z]*|--list", args[0].static or ""):
            return [*found, _low("tar --list")]
        if program in _WRITERS:
            return [*found, _medium(_WRITE, f"{_WRITERS[program]}: {self.operands(args, from_input)}")]
        if program in _DESTROYERS or program.startswith("mkfs."):
            return [*found, _high(_DESTROY, f"destroys data ({program}): {self.operands(args, from_input)}")]
        if program in _SYSTEM:
            return found + self.system(program, args)
        if program in _DOWNLOADERS:
            return found + self.download(program, args)
        if program in _NET:
            return [*found, _medium(_NETWORK, f"{_NET[program]} ({program})")]
        if program in _SHELLS:
            return found + self.shell(program, args)
        if _INTERPRETERS.match(program):
            return found + self.interpreter(program, args)
        if program in _PACKAGE_RUNNERS:
            return [*found, _medium(_NETWORK, f"downloads and runs a package ({program})")]
        if program in _PACKAGE_MANAGERS:
            return found + self.package(program, args)
        if program in _READ_SYSTEM_SUBS:
            return found + self.system(program, args)
        if program in _RUNNERS:
            return found + self.runner(program, args)
        if "/" in program_word.static:
            return [*found, _medium(_RUNS_CODE, f"runs a program: {_shown(program_word)}")]
        return [*found, _medium(_UNKNOWN_PROGRAM, f"runs {program}, which is not a known command")]

    # -- kinds of programs -----------------------------------------------------------------------------------------

    def read_only(self, program: str, args: list[Word]) -> list[_Finding]:
        statics = [a.static or "" for a in args]
        if program == "find":
            return self.find(args)
        if program in ("sed", "gsed") and not _sed_reads_only(args):
            return [_medium(_RUNS_CODE, f"{program} script that may write files or run commands (w, e)")]
        if program == "tree" and any(s == "-o" for s in statics):
            return [_medium(_WRITE, "writes a file (tree -o)")]
        if program == "uniq" and len(_split_options(args)[1]) >= 2:
            return [_medium(_WRITE, f"writes: {_shown(_split_options(args)[1][1])}")]
        if program in ("sed", "gsed") and any(s == "-i" or s.startswith(("-i", "--in-place")) or
                                             (s.startswith("-") and not s.startswith("--") and "i" in s)
                                             for s in statics):
            _, operands = _split_options(args)
            files = operands if any(s in ("-e", "--expression", "-f", "--file") for s in statics) else operands[1:]
            return [_medium(_WRITE, f"edits in place: {self.operands(files, False, already_split=True)}")]
        if program == "sort" and any(s == "-o" or s.startswith(("-o", "--output")) for s in statics):
            return [_medium(_WRITE, "writes the sorted output to a file (sort -o)")]
        if program in ("awk", "gawk", "mawk", "nawk"):
            script = next((a for a in args if not (a.static or "").startswith("-")), None)
            text = script.static if script is not None else ""
            if text is None or re.search(r"system\s*\(|\|\s*\"|print[^;]*>|getline|-i\s*inplace", text) \
                    or any(s in ("-i", "inplace") for s in statics):
                return [_medium(_RUNS_CODE, f"runs an {program} program that may write files or run commands")]
        return [_low(program)]

    def find(self, args: list[Word]) -> list[_Finding]:
        statics = [a.static or "" for a in args]
        start = next((a for a in args if not (a.static or "-").startswith(("-", "(", "!"))), None)
        where = _shown(start) if start is not None else "."
        found: list[_Finding] = []
        if "-delete" in statics:
            found.append(_high(_DELETE_HARD, f"deletes the files find matches under {where}"))
        for flag in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            if flag in statics:
                found.append(_medium(_WRITE, f"writes a file ({flag})"))
        i = 0
        while i < len(args):
            if statics[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and statics[j] not in (";", "+"):
                    j += 1
                inner = [a for a in args[i + 1:j] if a.static != "{}"]
                found += self.words(inner, from_input=True)
                i = j
            i += 1
        return found or [_low("find")]

    def delete(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        flags, operands = _split_options(args)
        recursive = any(f in ("--recursive", "-r", "-R") or (not f.startswith("--") and ("r" in f or "R" in f))
                        for f in flags) and program == "rm"
        forced = any(f == "--force" or (not f.startswith("--") and "f" in f) for f in flags) and program == "rm"
        what = self.operands(operands, from_input, already_split=True)
        if program == "truncate":
            sized = [a for i, a in enumerate(args) if i == 0 or args[i - 1].static not in ("-s", "--size", "-r",
                                                                                          "--reference")]
            return [_medium(_DELETE, f"truncates: {self.operands(sized, from_input)}")]
        if recursive:
            return [_high(_DELETE_HARD, f"deletes recursively: {what}")]
        if forced:
            return [_high(_DELETE_HARD, f"force-deletes: {what}")]
        return [_medium(_DELETE, f"deletes: {what}")]

    def permissions(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        _, operands = _split_options(args)  # the mode or owner comes first, then the files
        outside = [w for w in operands[1:] if w.static is None or not self.inside(self.resolve(w.static))]
        if outside:
            return [_high(_PRIVILEGE, f"changes permissions or owner outside the workspace: "
                                      f"{_join(_shown(w) for w in outside)}")]
        return [_medium(_WRITE, f"changes permissions or owner: {self.operands(operands[1:], from_input, True)}")]

    def dd(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        for a in args:
            value = a.static
            if value is not None and value.startswith("of="):
                target = value[3:]
                if target.startswith("/dev/") and target not in ("/dev/null", "/dev/zero", "/dev/stdout"):
                    return [_high(_DESTROY, f"writes to a device: {target}")]
                return [_medium(_WRITE, f"writes: {_short(target)}")]
            if value is None:
                return [_medium(_UNKNOWN, f"dd with an argument only known when it runs: {_shown(a)}")]
        return [_low("dd")]

    def system(self, program: str, args: list[Word]) -> list[_Finding]:
        sub = _first_operand(args)
        if sub is not None and sub in _READ_SYSTEM_SUBS.get(program, ()):
            return [_low(f"{program} {sub}")]
        if program in ("apt", "apt-get", "aptitude", "dnf", "yum", "pacman", "apk", "zypper", "snap", "flatpak",
                       "dpkg", "rpm"):
            return [_high(_PRIVILEGE, f"changes system packages ({program}{' ' + sub if sub else ''})")]
        if program == "crontab":
            return [_high(_PRIVILEGE, "changes scheduled jobs (crontab)")]
        return [_high(_PRIVILEGE, f"changes the system ({program}{' ' + sub if sub else ''})")]

    def download(self, program: str, args: list[Word]) -> list[_Finding]:
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
            return [_medium(_NETWORK, f"sends data over the network ({program})")]
        return [_medium(_NETWORK, f"downloads from the network ({program})")]

    def ssh(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        takes_value = set("BbcDEeFIiJLlmOopQRSWw")
        i = 0
        while i < len(args):
            s = args[i].static or ""
            if s.startswith("-") and len(s) >= 2:
                i += 2 if s[-1] in takes_value and len(s) == 2 else 1
                continue
            break
        if i + 1 < len(args):  # a host, then a command for it
            return [_high(_REMOTE, f"runs a command on another machine ({program})")]
        return [_medium(_NETWORK, f"connects to another machine ({program})")]

    def shell(self, program: str, args: list[Word]) -> list[_Finding]:
        for j, w in enumerate(args):
            s = w.static
            if s is not None and s.startswith("-") and not s.startswith("--") and "c" in s[1:]:
                script = args[j + 1] if j + 1 < len(args) else None
                if script is not None and script.static is None:
                    self.line.dynamic_runner = program
                    return [_medium(_UNKNOWN, f"{program} -c runs a script only known when it runs")]
                if script is None or script.static is None:
                    return []
                return self.script(script.static, f"{program} -c")
        script_word = next((w for w in args if not (w.static or "x").startswith("-")), None)
        if script_word is None or script_word.static in ("-", "/dev/stdin") or \
                (script_word.static or "").startswith(("/dev/fd/", "/proc/self/fd/")):
            self.line.stdin_runner = program
            return [_medium(_RUNS_CODE, f"{program} runs the commands it reads from its input")]
        if script_word.static is None:
            self.line.dynamic_runner = program
            return [_medium(_UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script_word.static))
        return [_medium(_RUNS_CODE, f"runs a shell script: {_shown(script_word)}")]

    def interpreter(self, program: str, args: list[Word]) -> list[_Finding]:
        statics = [a.static for a in args]
        if statics and all(s in _VERSION_FLAGS for s in statics):
            return [_low(f"{program} {statics[0]}")]
        if len(statics) >= 3 and statics[0] == "-m" and statics[1] in ("pip", "pip3"):
            return self.package("pip", args[2:])
        if len(statics) >= 2 and statics[0] == "-m":
            module = statics[1] or "?"
            if module in ("http.server", "SimpleHTTPServer"):
                return [_medium(_NETWORK, f"serves files over the network ({program} -m {module})")]
            return [_medium(_RUNS_CODE, f"runs code ({program} -m {module})")]
        if program.startswith("perl") and any(s and s.startswith("-") and not s.startswith("--") and "i" in s[1:]
                                              for s in statics):
            return [_medium(_WRITE, "edits files in place (perl -i)")]
        for j, s in enumerate(statics):
            if s in ("-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--command"):
                code = args[j + 1] if j + 1 < len(args) else None
                if code is not None and code.static is None:
                    self.line.dynamic_runner = program
                return [_medium(_RUNS_CODE, f"runs code ({program} {s})")]
        script = next((a for a in args if not (a.static or "x").startswith("-")), None)
        if script is None or script.static in ("-", "/dev/stdin") or \
                (script.static or "").startswith(("/dev/fd/", "/proc/self/fd/")):
            self.line.stdin_runner = program
            return [_medium(_RUNS_CODE, f"{program} runs the code it reads from its input")]
        if script.static is None:
            self.line.dynamic_runner = program
            return [_medium(_UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script.static))
        return [_medium(_RUNS_CODE, f"runs code: {program} {_shown(script)}")]

    def eval_(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        if any(a.static is None for a in args):
            self.line.dynamic_runner = program
            return [_medium(_UNKNOWN, f"{program} runs code only known when it runs")]
        return self.script(" ".join(a.static or "" for a in args), program)

    def trap(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        """``trap CODE SIGNAL…``: CODE runs later, when the signal (or EXIT) comes."""
        _, operands = _split_options(args)
        if len(operands) < 2 or operands[0].static in ("-", ""):
            return [_low("trap")]
        if operands[0].static is None:
            return [_medium(_UNKNOWN, "trap runs code only known when it runs")]
        return self.script(operands[0].static, "trap")

    def source(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        script = args[0] if args else None
        if script is None:
            return [_medium(_UNKNOWN, f"{program} without a file")]
        if script.static is None or script.static.startswith(("/dev/fd/", "/proc/self/fd/", "/dev/stdin")):
            self.line.dynamic_runner = program
            return [_medium(_UNKNOWN, f"{program} runs a script only known when it runs")]
        self.line.scripts.append(os.path.basename(script.static))
        return [_medium(_RUNS_CODE, f"runs a shell script in this shell: {_shown(script)}")]

    def package(self, program: str, args: list[Word]) -> list[_Finding]:
        statics = [a.static or "" for a in args]
        sub = _first_operand(args)
        if program == "uv" and sub == "pip":
            return self.package("pip", args[statics.index("pip") + 1:])
        if program in ("uv", "poetry", "pdm", "hatch", "rye", "pixi", "npm", "pnpm", "yarn", "bun", "cargo", "go",
                       "pipx", "conda", "mamba", "micromamba") and sub in ("run", "exec", "x", "dlx", "test",
                                                                           "start", "build", "shell", "tool"):
            if program in ("uv", "pipx") and sub == "tool" and "install" in statics:
                return [_medium(_NETWORK, f"installs packages from the network ({program} tool install)")]
            return [_medium(_RUNS_CODE, f"runs project code ({program} {sub})")]
        if sub == "publish" or sub == "upload":
            return [_high(_REMOTE, f"publishes a package ({program} {sub})")]
        if sub in _INSTALL_SUBS or (program in ("yarn", "bun", "bundle") and sub is None):
            verb = "uninstalls packages" if sub in ("uninstall", "remove", "rm", "un") else \
                "installs packages from the network"
            return [_medium(_NETWORK, f"{verb} ({program} {sub or 'install'})")]
        if sub is None or sub in _READ_PACKAGE_SUBS or all(s in _VERSION_FLAGS for s in statics):
            return [_low(f"{program} {sub or ''}".strip())]
        return [_medium(_RUNS_CODE, f"runs {program} {sub}")]

    def runner(self, program: str, args: list[Word]) -> list[_Finding]:
        statics = [a.static or "" for a in args]
        if statics and all(s in _VERSION_FLAGS for s in statics):
            return [_low(f"{program} {statics[0]}")]
        sub = _first_operand(args)
        if program in ("kill", "pkill", "killall"):
            return [_medium(_RUNS_CODE, f"stops processes ({program})")]
        if program == "ruff" and sub in ("check", None) and not any(s.startswith("--fix") for s in statics):
            return [_low("ruff check")]
        if program in ("docker", "podman") and sub in ("ps", "images", "logs", "inspect", "version", "info"):
            return [_low(f"{program} {sub}")]
        if program in ("docker", "podman") and sub in ("rm", "rmi", "prune", "system", "volume", "kill"):
            return [_high(_DELETE_HARD, f"removes containers or data ({program} {sub})")]
        if program == "kubectl" and sub in ("get", "describe", "logs", "version", "explain", "top"):
            return [_low(f"kubectl {sub}")]
        if program == "kubectl" and sub in ("delete", "drain", "replace"):
            return [_high(_DELETE_HARD, f"changes a cluster ({program} {sub})")]
        if program == "gh":
            if "delete" in statics:
                return [_high(_REMOTE, f"deletes on GitHub (gh {sub} delete)")]
            return [_medium(_NETWORK, f"uses GitHub (gh {sub or ''})".replace(" )", ")"))]
        if program == "systemctl" or program == "crontab":
            return self.system(program, args)
        if program in ("cargo", "go") and sub in ("install", "get"):
            return [_medium(_NETWORK, f"installs packages from the network ({program} {sub})")]
        if program == "terraform" and sub in ("apply", "destroy"):
            return [_high(_REMOTE, f"changes infrastructure (terraform {sub})")]
        return [_medium(_RUNS_CODE, f"runs code ({program}{' ' + sub if sub else ''})")]

    def git(self, program: str, args: list[Word], from_input: bool) -> list[_Finding]:
        statics = [a.static for a in args]
        i = 0
        while i < len(statics):  # git's own options: -C dir, -c key=value, --git-dir=…, --no-pager
            s = statics[i] or ""
            if s in ("-c", "--config-env") or s.startswith("--exec-path="):  # a setting may name a program to run
                return [_medium(_RUNS_CODE, f"git with its configuration set on the command line ({s})")]
            if s in ("-C", "--git-dir", "--work-tree", "--namespace"):
                i += 2
            elif s.startswith("-"):
                i += 1
            else:
                break
        if i >= len(statics):
            return [_low("git")]
        sub = statics[i]
        if sub is None:
            return [_medium(_UNKNOWN, "git with a subcommand only known when it runs")]
        rest = [s or "" for s in statics[i + 1:]]
        return [_git_finding(sub, rest)]

    # -- the line as a whole ---------------------------------------------------------------------------------------

    def redirects(self) -> list[_Finding]:
        found: list[_Finding] = []
        for red in self.parsed.redirects:
            if red.target is None or red.op.startswith("<") and red.op != "<>":
                continue
            target = red.target.static
            if target is None:
                found.append(_medium(_UNKNOWN, f"writes to a file only known when it runs: {_shown(red.target)}"))
                continue
            if target in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty") or target.startswith("/dev/fd/"):
                continue
            if red.op in (">&", "&>", ">", ">|") and target.isdigit():
                continue
            path = self.resolve(target)
            if str(path).startswith("/dev/"):
                found.append(_high(_DESTROY, f"writes to a device: {target}"))
            elif not self.inside(path):
                found.append(_high(_OUTSIDE, f"writes outside the workspace: {path}"))
            elif red.op in (">", ">|", "&>") and path.is_file():
                found.append(_medium(_OVERWRITE, f"overwrites: {_short(target)}"))
            else:
                found.append(_medium(_WRITE, f"writes: {_short(target)}"))
        return found

    def line_findings(self) -> list[_Finding]:
        line = self.line
        if not line.downloads:
            return []
        if line.stdin_runner is not None:
            return [_high(_PIPE_TO_SHELL, f"pipes a download into a shell ({line.stdin_runner})")]
        if line.dynamic_runner is not None:
            return [_high(_PIPE_TO_SHELL, f"runs a downloaded script ({line.dynamic_runner})")]
        ran = [s for s in line.scripts if s in line.downloaded_files]
        if ran:
            return [_high(_PIPE_TO_SHELL, f"runs a downloaded script: {ran[0]}")]
        return []

    # -- helpers ---------------------------------------------------------------------------------------------------

    def resolve(self, value: str) -> Path:
        if value == "~" or value.startswith("~/"):
            value = (self.env.get("HOME") or "~") + value[1:]
        return (self.cwd / value).resolve(strict=False)

    def inside(self, path: Path) -> bool:
        return any(path == f or path.is_relative_to(f) for f in self.folders)

    def operands(self, args: Iterable[Word], from_input: bool, already_split: bool = False) -> str:
        words = list(args) if already_split else _split_options(list(args))[1]
        if not words:
            return "the files named by its input" if from_input else "(no operands)"
        return _join(_shown(w) for w in words)


def _git_finding(sub: str, rest: list[str]) -> _Finding:
    """One git subcommand's finding; ``rest`` are the words after it."""
    flags = {r for r in rest if r.startswith("-")}
    operands = [r for r in rest if not r.startswith("-")]
    shown = f"git {sub}"
    if any(f.startswith(("--output", "--ext-diff", "--upload-pack", "--receive-pack", "--exec=")) for f in flags) or \
            (sub == "grep" and flags & {"-O", "--open-files-in-pager"}):
        return _medium(_RUNS_CODE, f"{shown} writes a file or runs a program it is given")
    if sub in ("status", "log", "diff", "show", "blame", "ls-files", "ls-tree", "rev-parse", "rev-list", "describe",
               "shortlog", "grep", "cat-file", "name-rev", "merge-base", "whatchanged", "help", "version",
               "count-objects", "fsck", "check-ignore", "show-ref", "for-each-ref", "var", "reflog", "annotate",
               "show-branch", "cherry", "range-diff", "check-attr", "verify-commit", "verify-tag"):
        if sub == "reflog" and operands[:1] in (["expire"], ["delete"]):
            return _high(_HISTORY, f"deletes history (git reflog {operands[0]})")
        if sub == "diff" and any(f.startswith("--output") for f in flags):
            return _medium(_WRITE, "writes a file (git diff --output)")
        return _low(shown)
    if sub == "push":
        if flags & {"--force", "-f", "--force-with-lease", "--force-if-includes", "--mirror", "--prune"} or \
                any(f.startswith(("--force-with-lease=", "--force")) for f in flags) or \
                any(o.startswith("+") for o in operands):
            return _high(_HISTORY, "force-pushes, rewriting the remote's history (git push --force)")
        if flags & {"--delete", "-d"} or any(o.startswith(":") for o in operands):
            return _high(_HISTORY, "deletes a remote branch or tag (git push --delete)")
        return _medium(_NETWORK, "pushes to a remote (git push)")
    if sub in ("pull", "fetch", "clone", "ls-remote", "submodule"):
        return _medium(_NETWORK, f"uses the network ({shown})")
    if sub == "reset":
        if "--hard" in flags:
            return _high(_HISTORY, "discards uncommitted changes (git reset --hard)")
        return _medium(_WRITE, f"moves the branch or the index ({shown})")
    if sub == "clean":
        if flags & {"-n", "--dry-run"} or any(not f.startswith("--") and "n" in f for f in flags):
            return _low("git clean --dry-run")
        return _high(_DELETE_HARD, "deletes untracked files (git clean)")
    if sub in ("rebase", "filter-branch", "filter-repo", "replace"):
        if flags & {"--abort", "--quit", "--show-current-patch"}:
            return _medium(_WRITE, f"{shown} {sorted(flags)[0]}")
        return _high(_HISTORY, f"rewrites history ({shown})")
    if sub == "commit" and "--amend" in flags:
        return _high(_HISTORY, "rewrites history (git commit --amend)")
    if sub == "checkout":
        if flags & {"-f", "--force"} or "." in operands or "--" in rest:
            return _high(_HISTORY, "discards uncommitted changes (git checkout)")
        return _medium(_WRITE, f"switches branch or files ({shown})")
    if sub == "restore":
        if flags <= {"--staged", "-S"} and flags:
            return _medium(_WRITE, "unstages changes (git restore --staged)")
        return _high(_HISTORY, "discards uncommitted changes (git restore)")
    if sub == "switch":
        if flags & {"-f", "--force", "--discard-changes"}:
            return _high(_HISTORY, "discards uncommitted changes (git switch --discard-changes)")
        return _medium(_WRITE, shown)
    if sub == "stash":
        action = operands[0] if operands else "push"
        if action in ("list", "show"):
            return _low(f"git stash {action}")
        if action in ("drop", "clear"):
            return _high(_HISTORY, f"discards stashed changes (git stash {action})")
        return _medium(_WRITE, f"git stash {action}")
    if sub == "branch":
        if "-D" in flags or (flags & {"-d", "--delete"} and flags & {"-f", "--force"}):
            return _high(_HISTORY, "force-deletes a branch (git branch -D)")
        if flags & {"-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-f", "--force", "-u",
                    "--set-upstream-to", "--unset-upstream", "--edit-description"} or operands:
            return _medium(_WRITE, f"changes branches ({shown})")
        return _low(shown)
    if sub == "tag":
        if flags & {"-d", "--delete", "-a", "-s", "-f", "--force", "-m"} or operands:
            return _medium(_WRITE, f"changes tags ({shown})")
        return _low(shown)
    if sub == "remote":
        if not operands or operands[0] in ("show", "get-url"):
            return _low(shown)
        return _medium(_WRITE, f"changes remotes (git remote {operands[0]})")
    if sub == "config":
        if flags & {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin"} or len(operands) <= 1 \
                and not flags & {"--unset", "--unset-all", "--add", "--replace-all", "--edit", "-e"}:
            return _low("git config (read)")
        return _medium(_WRITE, "changes git configuration (git config)")
    if sub == "rm":
        if any(f == "--force" or (not f.startswith("--") and "f" in f) for f in flags):
            return _high(_DELETE_HARD, f"force-deletes tracked files (git rm -f): {_join(operands)}")
        return _medium(_DELETE, f"deletes tracked files (git rm): {_join(operands)}")
    if sub == "prune" or (sub == "gc" and any(f.startswith("--prune") for f in flags)):
        return _high(_HISTORY, f"deletes unreachable objects ({shown})")
    if sub == "update-ref" and "-d" in flags:
        return _high(_HISTORY, "deletes a ref (git update-ref -d)")
    if sub in ("add", "commit", "merge", "cherry-pick", "revert", "mv", "apply", "am", "init", "worktree", "notes",
               "bisect", "gc", "pack-refs", "repack", "maintenance", "sparse-checkout", "lfs", "update-index",
               "format-patch", "archive", "bundle", "mergetool", "difftool"):
        return _medium(_WRITE, f"changes the repository ({shown})")
    return _medium(_UNKNOWN_PROGRAM, f"runs {shown}, which is not a known git command")


Handler = Callable[[_Classifier, str, list[Word], bool], list[_Finding]]

_HANDLERS: dict[str, Handler] = {
    "rm": _Classifier.delete, "rmdir": _Classifier.delete, "unlink": _Classifier.delete,
    "truncate": _Classifier.delete,
    **{p: _Classifier.permissions for p in _PERMISSIONS},
    "dd": _Classifier.dd,
    "ssh": _Classifier.ssh,
    "eval": _Classifier.eval_,
    "source": _Classifier.source, ".": _Classifier.source,
    "trap": _Classifier.trap,
    "git": _Classifier.git,
}


def _sed_reads_only(args: list[Word]) -> bool:
    """Whether a sed script can only read: no ``w``/``W`` (write a file) or ``e`` (run a command) command, no ``w``
    or ``e`` flag on an ``s`` command, no script file (``-f``) or script only known when it runs. Conservative: a
    script it cannot take apart counts as not read-only."""
    statics = [a.static for a in args]
    if any(s is None for s in statics) or any(s in ("-f", "--file") or (s or "").startswith("--file=")
                                              for s in statics):
        return False
    scripts = [statics[i + 1] for i, s in enumerate(statics[:-1]) if s in ("-e", "--expression")]
    scripts += [s.split("=", 1)[1] for s in statics if s and s.startswith("--expression=")]
    if not scripts:
        operands = _split_options(args)[1]
        scripts = [operands[0].static] if operands and operands[0].static is not None else []
    for script in scripts:
        for piece in re.split(r"[;\n]", script or ""):
            body = re.sub(r"^[\s\d,$!~+]*(/(\\.|[^/])*/[IM]*[\s,]*)*[\s\d,$!~+]*", "", piece).lstrip("{ ")
            if not body:
                continue
            if body[0] in "ewW":
                return False
            if body[0] == "s" and len(body) > 1:
                delim = re.escape(body[1])
                match = re.match(rf"s{delim}(\\.|[^\\])*?{delim}(\\.|[^\\])*?{delim}(?P<flags>\S*)", body)
                if match is None or re.search(r"[ewW]", match.group("flags")):
                    return False
    return True


def _split_options(args: list[Word]) -> tuple[list[str], list[Word]]:
    """Option words (``-rf``, ``--force``) and operands; everything after ``--`` is an operand."""
    flags: list[str] = []
    operands: list[Word] = []
    rest = False
    for w in args:
        s = w.static
        if not rest and s == "--":
            rest = True
        elif not rest and s is not None and s.startswith("-") and s != "-":
            flags.append(s)
        else:
            operands.append(w)
    return flags, operands


def _first_operand(args: list[Word]) -> str | None:
    for a in args:
        s = a.static
        if s is None:
            return None
        if not s.startswith("-"):
            return s
    return None


def _short(text: str, limit: int = 40) -> str:
    """Words quoted in reasons are cut: a reason is one line, and a command line may carry a token."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(word: Word) -> str:
    return _short(word.static if word.static is not None else word.text)


def _join(items: Iterable[str], limit: int = 3) -> str:
    items = list(items)
    head = ", ".join(items[:limit])
    return head + (f" and {len(items) - limit} more" if len(items) > limit else "")
