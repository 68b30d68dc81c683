"""What :mod:`._shell_risk` knows about programs: the levels and weights of a finding, the tables of programs by
what they do (read, write, delete, reach the network, run code…), git's subcommands, and the small word helpers.

Kept apart from the classifier so each reads in one sitting: this module is the knowledge (edit a table to teach the
classifier a program), ``_shell_risk.py`` the walk over a parsed command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ._shell_parse import Word

__all__ = [
    "DELETE",
    "DELETE_HARD",
    "DESTROY",
    "DESTROYERS",
    "DOWNLOADERS",
    "GIT_INTERNALS",
    "HISTORY",
    "INSTALL_SUBS",
    "INTERPRETERS",
    "MAX_NESTING",
    "NET",
    "NETWORK",
    "OUTSIDE",
    "OVERWRITE",
    "PACKAGE_MANAGERS",
    "PACKAGE_RUNNERS",
    "PERMISSIONS",
    "PIPE_TO_SHELL",
    "PRIVILEGE",
    "PRIVILEGED",
    "PROGRAM_ENV",
    "RANK",
    "READ",
    "READ_ONLY",
    "READ_PACKAGE_SUBS",
    "READ_SYSTEM_SUBS",
    "REMOTE",
    "RUNNERS",
    "RUNS_CODE",
    "RUNS_PROGRAM",
    "RUNS_PROGRAM_OPTIONS",
    "SHELLS",
    "SSH_PROGRAM_SETTINGS",
    "SUDO_OPTS_WITH_VALUE",
    "SYSTEM",
    "UNKNOWN",
    "UNKNOWN_PROGRAM",
    "VERSION_FLAGS",
    "WRAPPERS",
    "WRAPPER_ARG",
    "WRAPPER_OPTS_WITH_VALUE",
    "WRITE",
    "WRITERS",
    "Finding",
    "Level",
    "first_operand",
    "git_finding",
    "git_program_key",
    "high_risk",
    "join_some",
    "low_risk",
    "medium_risk",
    "option_value",
    "program_env",
    "sed_effect",
    "sed_reads_only",
    "short",
    "shown_word",
    "split_options",
]

Level = Literal["low", "medium", "high"]
RANK: dict[Level, int] = {"low": 0, "medium": 1, "high": 2}


# Among findings of the same level, the heavier one names the line: how decisive that kind of finding is for a person
# deciding whether to let it run ("pipes a download into a shell" says more than "uses the network").
PIPE_TO_SHELL = 90
PRIVILEGE = 80
RUNS_PROGRAM = 78  # a program hidden in an option or a variable of an otherwise harmless command
GIT_INTERNALS = 77  # a write under .git/: hooks and config run as code on the next git command
DESTROY = 75
DELETE_HARD = 70
HISTORY = 65
REMOTE = 62
OUTSIDE = 60
DELETE = 50
OVERWRITE = 45
NETWORK = 40
RUNS_CODE = 30
UNKNOWN_PROGRAM = 25
UNKNOWN = 22
WRITE = 20
READ = 0


@dataclass(frozen=True)
class Finding:
    level: Level
    weight: int
    reason: str

    @property
    def key(self) -> tuple[int, int]:
        return RANK[self.level], self.weight


def low_risk(what: str) -> Finding:
    return Finding("low", READ, what)


def medium_risk(weight: int, reason: str) -> Finding:
    return Finding("medium", weight, reason)


def high_risk(weight: int, reason: str) -> Finding:
    return Finding("high", weight, reason)


# ---------------------------------------------------------------------------------------------------------------
# Program tables

READ_ONLY = frozenset({
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
WRITERS = {
    "cp": "copies", "mv": "moves", "ln": "links", "mkdir": "creates directories", "touch": "touches",
    "tee": "writes", "install": "installs files", "patch": "patches", "unzip": "extracts", "zip": "archives",
    "gzip": "compresses", "gunzip": "extracts", "bzip2": "compresses", "bunzip2": "extracts", "xz": "compresses",
    "unxz": "extracts", "7z": "archives", "split": "writes", "csplit": "writes", "mktemp": "creates a file",
    "mkfifo": "creates a fifo", "rename": "renames", "cpio": "archives", "ar": "archives",
    "tar": "archives or extracts",
}
DESTROYERS = frozenset({"shred", "wipefs", "mkfs", "fdisk", "sfdisk", "cfdisk", "parted", "mkswap", "blkdiscard"})
PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "runas", "sudoedit"})
PERMISSIONS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
SYSTEM = frozenset({
    "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "mount", "umount", "swapon", "swapoff", "iptables",
    "ip6tables", "nft", "ufw", "useradd", "userdel", "usermod", "groupadd", "groupdel", "passwd", "chpasswd",
    "visudo", "chroot", "insmod", "rmmod", "modprobe", "sysctl", "launchctl", "service", "update-rc.d",
    "apt", "apt-get", "aptitude", "dpkg", "dnf", "yum", "rpm", "pacman", "apk", "zypper", "snap", "flatpak",
})
READ_SYSTEM_SUBS = {  # subcommands of system tools that only read
    "systemctl": {"status", "is-active", "is-enabled", "is-failed", "list-units", "list-unit-files", "show", "cat",
                  "list-timers", "list-sockets", "--version"},
    "apt": {"list", "search", "show", "policy", "--version"},
    "apt-cache": {"search", "show", "policy", "depends", "rdepends", "madison"},
    "dpkg": {"-l", "--list", "-L", "--listfiles", "-s", "--status", "-S", "--search", "--version"},
    "crontab": {"-l"},
}
DOWNLOADERS = frozenset({"curl", "wget", "http", "https", "xh", "aria2c", "fetch", "lwp-request"})
NET = {"scp": "copies files over the network", "sftp": "transfers files over the network",
        "rsync": "copies files", "nc": "opens a network connection", "ncat": "opens a network connection",
        "netcat": "opens a network connection", "socat": "opens a network connection",
        "telnet": "opens a network connection", "ftp": "transfers files over the network",
        "ping": "uses the network", "dig": "uses the network", "nslookup": "uses the network",
        "host": "uses the network", "traceroute": "uses the network", "mosh": "connects to another machine"}
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox"})
INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby|perl|php|lua[0-9.]*|Rscript|R|"
                           r"julia|irb|tclsh|osascript|pwsh|powershell)$")
WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "nice", "env", "xargs", "timeout", "stdbuf",
                       "ionice", "chrt", "taskset", "setsid", "unbuffer", "watch", "caffeinate", "flock"})
WRAPPER_ARG = re.compile(r"^(-.*|[A-Za-z_][A-Za-z0-9_]*=.*|\d+(\.\d+)?[smhd]?)$")
WRAPPER_OPTS_WITH_VALUE = frozenset({"-I", "-L", "-P", "-d", "-E", "-s", "-a", "-u", "-k", "-C", "-S", "--unset",
                                      "--chdir", "--signal", "--kill-after", "--max-args", "--max-procs",
                                      "--delimiter", "--replace", "--arg-file"})
SUDO_OPTS_WITH_VALUE = frozenset({"-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "--user", "--group"})
MAX_NESTING = 4  # sh -c inside eval inside sh -c …
#: options that make a program run another program (its value, or a string for a shell): high wherever they appear,
#: even on a command that otherwise only reads. A long option matches ``--x`` and ``--x=…``; a short one ``-X``,
#: ``-Xvalue`` and a cluster holding its letter (``tar -xIzstd``, ``rsync -avze ssh``).
RUNS_PROGRAM_OPTIONS: dict[str, tuple[str, ...]] = {
    "rg": ("--pre",),
    "sort": ("--compress-program",),
    "tar": ("--to-command", "-I", "--use-compress-program", "--checkpoint-action", "--info-script", "-F",
            "--new-volume-script", "--rsh-command", "--rmt-command"),
    "gtar": ("--to-command", "-I", "--use-compress-program", "--checkpoint-action", "--info-script", "-F",
             "--new-volume-script", "--rsh-command", "--rmt-command"),
    "man": ("-P", "--pager", "-H", "--html"),
    "zip": ("-TT", "--unzip-command"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "scp": ("-S", "-F"),
    "sftp": ("-S", "-D", "-F"),
    "ssh": ("-F",),
    "less": ("--lesskey-src", "--lesskey-file", "-k"),
    "vim": ("-c", "--cmd", "-S", "-s", "-u"),
    "vi": ("-c", "--cmd", "-S", "-s", "-u"),
    "nvim": ("-c", "--cmd", "-S", "-s", "-u", "-l"),
    "view": ("-c", "--cmd", "-S", "-s", "-u"),
    "ex": ("-c", "--cmd", "-S", "-s", "-u"),
    "emacs": ("--eval", "-l", "--load", "-f", "--funcall", "--batch", "--script", "-batch", "-script"),
    "fzf": ("--preview", "--bind"),
    "parallel": ("--ssh",),
}
#: ssh's ``-o`` settings that run a local program
SSH_PROGRAM_SETTINGS = frozenset({"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "match",
                                  "remotecommand"})
#: environment variables that name a program (or a file of settings that may name one) that the commands after them
#: run — set on a line, they turn a reader (``git log``, ``less x``, ``man ls``) into a runner
PROGRAM_ENV = frozenset({
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "MANPAGER", "SYSTEMD_PAGER",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "LESSOPEN",
    "LESSCLOSE", "LESSKEYIN", "LESSKEY", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG", "GIT_TEMPLATE_DIR", "GIT_DIR",
    "BROWSER", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "BASH_ENV",
    "ENV", "PROMPT_COMMAND", "PERL5OPT", "NODE_OPTIONS", "RUBYOPT", "TAR_OPTIONS", "RSYNC_RSH",
    "RIPGREP_CONFIG_PATH", "MANOPT", "SHELLOPTS", "PS4",
})
_PROGRAM_ENV_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
#: git settings that name a program to run (lower case; ``*`` one subsection)
_GIT_PROGRAM_KEYS = re.compile(
    r"^(core\.(pager|editor|sshcommand|askpass|fsmonitor|hookspath|gitproxy|alternaterefscommand|attributesfile)"
    r"|sequence\.editor|pager\..+|alias\..+|credential\.(.+\.)?helper|diff\.external|diff\..+\.(command|textconv)"
    r"|merge\..+\.driver|filter\..+\.(clean|smudge|process)|gpg\.(.+\.)?program|gpg\.ssh\.defaultkeycommand"
    r"|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|vcs)|protocol\.(.+\.)?allow|include\.path"
    r"|includeif\..+\.path|sendemail\..+|(web|man|browser|difftool|mergetool|instaweb)\..+|merge\.tool"
    r"|diff\.(gui)?tool|interactive\.difffilter|submodule\..+\.update|tar\..+\.command|ssh\.variant"
    r"|receive\.procreceiverefs|core\.worktree|safe\.directory)$")


def git_program_key(key: str) -> bool:
    """Whether the git setting `key` (``core.pager``, ``alias.x``, ``filter.lfs.clean``) names a program to run
    (or a file of settings, or lets a transport run one)."""
    return bool(_GIT_PROGRAM_KEYS.match(key.lower()))


def program_env(name: str) -> bool:
    """Whether setting the environment variable `name` chooses a program the commands after it run."""
    return name in PROGRAM_ENV or name.startswith(_PROGRAM_ENV_PREFIXES)


def option_value(statics: list[str], options: Iterable[str]) -> str | None:
    """The first option of `options` the words use (as written), None when none: ``--pre``/``--pre=…`` for a long
    one; ``-X``, ``-Xvalue`` or a cluster of single letters holding ``X`` for a short one."""
    opts = list(options)
    for s in statics:
        if s == "--":
            return None
        for o in opts:
            if o.startswith("--") or len(o) > 2:
                if s == o or s.startswith(o + "="):
                    return o
            elif s == o or (s.startswith(o) and not s.startswith("--")):
                return o
            elif s.startswith("-") and not s.startswith("--") and o[1] in s[1:] and s[1:].isalpha():
                return o
    return None
VERSION_FLAGS = frozenset({"--version", "-V", "-v", "--help", "-h", "version", "help"})
RUNNERS = frozenset({
    "make", "gmake", "cmake", "ninja", "meson", "bazel", "pytest", "py.test", "tox", "nox", "jest", "vitest",
    "mocha", "mvn", "gradle", "gradlew", "ant", "sbt", "tsc", "webpack", "vite", "rollup", "esbuild", "jupyter",
    "ipython", "black", "isort", "prettier", "eslint", "ruff", "cargo", "go", "rustc", "gcc", "g++", "cc", "clang",
    "clang++", "javac", "java", "dotnet", "swift", "kotlin", "scala", "hatch", "pdm", "poetry", "pipenv", "just",
    "task", "pre-commit", "coverage", "sphinx-build", "mkdocs", "uvicorn", "gunicorn", "flask", "django-admin",
    "manage.py", "docker", "podman", "kubectl", "helm", "terraform", "ansible", "ansible-playbook", "vagrant", "gh",
    "code", "open", "xdg-open", "kill", "pkill", "killall", "crontab", "systemctl", "at", "batch", "screen", "tmux",
})
INSTALL_SUBS = frozenset({"install", "i", "ci", "add", "update", "upgrade", "up", "sync", "download", "get",
                           "uninstall", "remove", "rm", "un", "lock", "create", "self-update"})
PACKAGE_MANAGERS = frozenset({"pip", "pip3", "uv", "npm", "pnpm", "yarn", "bun", "gem", "conda", "mamba",
                               "micromamba", "brew", "pipx", "poetry", "pdm", "cargo", "go", "composer", "bundle",
                               "pixi", "rye", "hatch"})
PACKAGE_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx"})
READ_PACKAGE_SUBS = frozenset({"list", "ls", "show", "freeze", "check", "info", "view", "outdated", "search",
                                "why", "tree", "audit", "config", "help", "--version", "-V", "version", "env",
                                "doctor", "which", "root", "prefix", "bin", "cache", "explain", "licenses"})




def git_finding(sub: str, rest: list[str]) -> Finding:
    """One git subcommand's finding; ``rest`` are the words after it."""
    flags = {r for r in rest if r.startswith("-")}
    operands = [r for r in rest if not r.startswith("-")]
    shown = f"git {sub}"
    runs = option_value(rest, ("--upload-pack", "--receive-pack", "--exec", "--extcmd")) or \
        (option_value(rest, ("-O", "--open-files-in-pager")) if sub == "grep" else None) or \
        (option_value(rest, ("-u",)) if sub in ("clone", "fetch", "pull", "ls-remote", "archive") else None) or \
        (option_value(rest, ("-x",)) if sub in ("difftool", "mergetool") else None)
    if runs:
        return high_risk(RUNS_PROGRAM, f"runs a program named in an option ({shown} {runs})")
    if any(f.startswith(("--output", "--ext-diff")) for f in flags):
        return medium_risk(RUNS_CODE, f"{shown} writes a file or runs a program it is given")
    if sub in ("status", "log", "diff", "show", "blame", "ls-files", "ls-tree", "rev-parse", "rev-list", "describe",
               "shortlog", "grep", "cat-file", "name-rev", "merge-base", "whatchanged", "help", "version",
               "count-objects", "fsck", "check-ignore", "show-ref", "for-each-ref", "var", "reflog", "annotate",
               "show-branch", "cherry", "range-diff", "check-attr", "verify-commit", "verify-tag"):
        if sub == "reflog" and operands[:1] in (["expire"], ["delete"]):
            return high_risk(HISTORY, f"deletes history (git reflog {operands[0]})")
        if sub == "diff" and any(f.startswith("--output") for f in flags):
            return medium_risk(WRITE, "writes a file (git diff --output)")
        return low_risk(shown)
    if sub == "push":
        if flags & {"--force", "-f", "--force-with-lease", "--force-if-includes", "--mirror", "--prune"} or \
                any(f.startswith(("--force-with-lease=", "--force")) for f in flags) or \
                any(o.startswith("+") for o in operands):
            return high_risk(HISTORY, "force-pushes, rewriting the remote's history (git push --force)")
        if flags & {"--delete", "-d"} or any(o.startswith(":") for o in operands):
            return high_risk(HISTORY, "deletes a remote branch or tag (git push --delete)")
        return medium_risk(NETWORK, "pushes to a remote (git push)")
    if sub in ("pull", "fetch", "clone", "ls-remote", "submodule"):
        return medium_risk(NETWORK, f"uses the network ({shown})")
    if sub == "reset":
        if "--hard" in flags:
            return high_risk(HISTORY, "discards uncommitted changes (git reset --hard)")
        return medium_risk(WRITE, f"moves the branch or the index ({shown})")
    if sub == "clean":
        if flags & {"-n", "--dry-run"} or any(not f.startswith("--") and "n" in f for f in flags):
            return low_risk("git clean --dry-run")
        return high_risk(DELETE_HARD, "deletes untracked files (git clean)")
    if sub in ("rebase", "filter-branch", "filter-repo", "replace"):
        if flags & {"--abort", "--quit", "--show-current-patch"}:
            return medium_risk(WRITE, f"{shown} {sorted(flags)[0]}")
        return high_risk(HISTORY, f"rewrites history ({shown})")
    if sub == "commit" and "--amend" in flags:
        return high_risk(HISTORY, "rewrites history (git commit --amend)")
    if sub == "checkout":
        if flags & {"-f", "--force"} or "." in operands or "--" in rest:
            return high_risk(HISTORY, "discards uncommitted changes (git checkout)")
        return medium_risk(WRITE, f"switches branch or files ({shown})")
    if sub == "restore":
        if flags <= {"--staged", "-S"} and flags:
            return medium_risk(WRITE, "unstages changes (git restore --staged)")
        return high_risk(HISTORY, "discards uncommitted changes (git restore)")
    if sub == "switch":
        if flags & {"-f", "--force", "--discard-changes"}:
            return high_risk(HISTORY, "discards uncommitted changes (git switch --discard-changes)")
        return medium_risk(WRITE, shown)
    if sub == "stash":
        action = operands[0] if operands else "push"
        if action in ("list", "show"):
            return low_risk(f"git stash {action}")
        if action in ("drop", "clear"):
            return high_risk(HISTORY, f"discards stashed changes (git stash {action})")
        return medium_risk(WRITE, f"git stash {action}")
    if sub == "branch":
        if "-D" in flags or (flags & {"-d", "--delete"} and flags & {"-f", "--force"}):
            return high_risk(HISTORY, "force-deletes a branch (git branch -D)")
        if flags & {"-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-f", "--force", "-u",
                    "--set-upstream-to", "--unset-upstream", "--edit-description"} or operands:
            return medium_risk(WRITE, f"changes branches ({shown})")
        return low_risk(shown)
    if sub == "tag":
        if flags & {"-d", "--delete", "-a", "-s", "-f", "--force", "-m"} or operands:
            return medium_risk(WRITE, f"changes tags ({shown})")
        return low_risk(shown)
    if sub == "remote":
        if not operands or operands[0] in ("show", "get-url"):
            return low_risk(shown)
        return medium_risk(WRITE, f"changes remotes (git remote {operands[0]})")
    if sub == "config":
        if flags & {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin"} or len(operands) <= 1 \
                and not flags & {"--unset", "--unset-all", "--add", "--replace-all", "--edit", "-e"}:
            return low_risk("git config (read)")
        key = next((o for o in operands if "." in o), "")
        if git_program_key(key):
            return high_risk(RUNS_PROGRAM, f"sets a program git runs (git config {short(key, 30)})")
        return medium_risk(WRITE, "changes git configuration (git config)")
    if sub == "rm":
        if any(f == "--force" or (not f.startswith("--") and "f" in f) for f in flags):
            return high_risk(DELETE_HARD, f"force-deletes tracked files (git rm -f): {join_some(operands)}")
        return medium_risk(DELETE, f"deletes tracked files (git rm): {join_some(operands)}")
    if sub == "prune" or (sub == "gc" and any(f.startswith("--prune") for f in flags)):
        return high_risk(HISTORY, f"deletes unreachable objects ({shown})")
    if sub == "update-ref" and "-d" in flags:
        return high_risk(HISTORY, "deletes a ref (git update-ref -d)")
    if sub in ("add", "commit", "merge", "cherry-pick", "revert", "mv", "apply", "am", "init", "worktree", "notes",
               "bisect", "gc", "pack-refs", "repack", "maintenance", "sparse-checkout", "lfs", "update-index",
               "format-patch", "archive", "bundle", "mergetool", "difftool"):
        return medium_risk(WRITE, f"changes the repository ({shown})")
    return medium_risk(UNKNOWN_PROGRAM, f"runs {shown}, which is not a known git command")


def sed_effect(args: list[Word]) -> Literal["reads", "writes", "runs"]:
    """What a sed script can do: run a command (``e`` command or ``s///e`` flag — and a script file or one only known
    when it runs, which may), write a file (``w``/``W``), or only read. Conservative: a script it cannot take apart
    counts as running commands."""
    statics = [a.static for a in args]
    if any(s is None for s in statics) or any(s in ("-f", "--file") or (s or "").startswith("--file=")
                                              for s in statics):
        return "runs"
    scripts = [statics[i + 1] for i, s in enumerate(statics[:-1]) if s in ("-e", "--expression")]
    scripts += [s.split("=", 1)[1] for s in statics if s and s.startswith("--expression=")]
    if not scripts:
        operands = split_options(args)[1]
        scripts = [operands[0].static] if operands and operands[0].static is not None else []
    effect: Literal["reads", "writes", "runs"] = "reads"
    for script in scripts:
        for piece in re.split(r"[;\n]", script or ""):
            body = re.sub(r"^[\s\d,$!~+]*(/(\\.|[^/])*/[IM]*[\s,]*)*[\s\d,$!~+]*", "", piece).lstrip("{ ")
            if not body:
                continue
            if body[0] == "e":
                return "runs"
            if body[0] in "wW":
                effect = "writes"
            if body[0] == "s" and len(body) > 1:
                delim = re.escape(body[1])
                match = re.match(rf"s{delim}(\\.|[^\\])*?{delim}(\\.|[^\\])*?{delim}(?P<flags>\S*)", body)
                if match is None or "e" in match.group("flags"):
                    return "runs"
                if re.search(r"[wW]", match.group("flags")):
                    effect = "writes"
    return effect


def sed_reads_only(args: list[Word]) -> bool:
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
        operands = split_options(args)[1]
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


def split_options(args: list[Word]) -> tuple[list[str], list[Word]]:
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


def first_operand(args: list[Word]) -> str | None:
    for a in args:
        s = a.static
        if s is None:
            return None
        if not s.startswith("-"):
            return s
    return None


def short(text: str, limit: int = 40) -> str:
    """Words quoted in reasons are cut: a reason is one line, and a command line may carry a token."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_word(word: Word) -> str:
    return short(word.static if word.static is not None else word.text)


def join_some(items: Iterable[str], limit: int = 3) -> str:
    items = list(items)
    head = ", ".join(items[:limit])
    return head + (f" and {len(items) - limit} more" if len(items) > limit else "")
