"""What a config layer may contain beyond plain JSON: comments and trailing commas, and dynamic strings.

The reference's docs show commented config files (its schema declares ``allowComments``), and its users put keys in
environment variables, files, password managers and ``~/.netrc`` rather than in the config file; a server that
rejected any of them would drop a user's whole file. Dynamic strings, in every string value (keys untouched):

* ``${env:NAME}`` / ``${env:NAME:default}`` — :func:`interpolate_env`;
* ``${file:/abs/path}`` / ``${file:../rel}`` (relative to the folder of the file the string is in) — the file's text;
* ``${cmd:some command}`` — the trimmed stdout of ``bash -c`` (10 s limit); failure → ``""`` and a problem;
* ``${netrc:[login@]machine[:port]}`` — the password of that entry of ``netrcFile`` / ``~/.netrc`` / ``~/_netrc``;
* ``${classpath:…}`` — a file inside the reference server's jar: we have none, so ``""`` (the built-in prompt then
  applies) and a problem.

:func:`resolve_dynamic` does the last four for one source (a config layer, a markdown agent or skill), since what is
allowed depends on where the string was written (:class:`DynamicSource`): a *workspace* file is the repository's,
not the user's, so its ``${cmd:}`` runs only when the user trusts that folder in their own ``trustedWorkspaces``
(otherwise ``""`` and a problem saying so), and its ``${file:}`` reads only inside that folder. Command output and
netrc passwords are registered as secrets (``_redact.add_secrets``) and never logged; problems name the reference,
never a value.
"""

from __future__ import annotations

import json
import logging
import netrc
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._redact import add_secrets

__all__ = ["CMD_TIMEOUT_SECONDS", "DynamicSource", "expand", "interpolate_env", "netrc_passwords", "parse_jsonc",
           "resolve_dynamic", "trusted_by_user", "workspace_of"]

log = logging.getLogger(__name__)

#: How long one ``${cmd:}`` may run (the reference allows 30 s; a password manager answers in far less, and a load
#: blocked longer looks like a hung server).
CMD_TIMEOUT_SECONDS = 10.0
_MAX_FILE_BYTES = 1024 * 1024  # a ${file:} beyond this is cut: it would go into every request


_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}")


def interpolate_env(value: Any, env: Mapping[str, str], problems: list[str] | None = None) -> Any:
    """Replace ``${env:NAME}`` / ``${env:NAME:default}`` in every string of *value* (recursively; keys untouched).

    The default applies when NAME is unset or empty. An unset NAME without a default becomes ``""`` and, when
    *problems* is given, a message naming the variable (never a value) is appended once.
    """
    if isinstance(value, str):
        if "${env:" not in value:
            return value

        def replace(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            current = env.get(name)
            if current:
                return current
            if default is not None:
                return default
            if current is None and problems is not None:
                msg = f"environment variable {name} is not set (referenced as ${{env:{name}}}); using an empty string"
                if msg not in problems:
                    problems.append(msg)
            return ""

        return _ENV_REF.sub(replace, value)
    if isinstance(value, Mapping):
        return {k: interpolate_env(v, env, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, env, problems) for v in value]
    return value


_DYNAMIC_REF = re.compile(r"\$\{(file|cmd|classpath|netrc):([^}]+)\}")


@dataclass
class DynamicSource:
    """Where the strings being resolved were written, which decides what they may do.

    ``base_dir``: what a relative ``${file:}`` is relative to (the folder of the config or markdown file; None → the
    process's working directory). ``workspace``: set when the source is a workspace's own file — ``${file:}`` then
    reads only inside it, and ``${cmd:}`` runs only when ``cmd_allowed`` (the user trusts the folder).
    ``label`` names the source in problems. ``cmd_cache``: one run per distinct command per load (share it between
    the sources of one load). ``netrc_file``: the config's ``netrcFile`` (else ``~/.netrc``, ``~/_netrc``).
    """

    label: str
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    base_dir: Path | None = None
    workspace: Path | None = None
    cmd_allowed: bool = True
    netrc_file: str | None = None
    cmd_cache: dict[str, str | None] = field(default_factory=dict)
    #: False for a workspace's file while that workspace is untrusted (engine/workspace/_trust.py): its ``${env:}``,
    #: ``${netrc:}`` and ``${file:}`` are not read (``""`` and a problem) — they would send the user's secrets (or a
    #: file their rules keep from the model) to the model
    secrets_allowed: bool = True


def expand(value: Any, source: DynamicSource, problems: list[str] | None = None) -> Any:
    """Every dynamic string of *value* (a markdown agent's or skill's front matter and body): ``${env:}`` then the
    others (:func:`resolve_dynamic`), each only as far as *source* allows."""
    if source.secrets_allowed:
        return resolve_dynamic(interpolate_env(value, source.env, problems), source, problems)
    return resolve_dynamic(_hold_env(value, source, problems), source, problems)


def _hold_env(value: Any, source: DynamicSource, problems: list[str] | None) -> Any:
    if isinstance(value, str):
        if "${env:" not in value:
            return value
        return _ENV_REF.sub(lambda m: _problem(problems, _held(source, f"${{env:{m.group(1)}}}")), value)
    if isinstance(value, Mapping):
        return {k: _hold_env(v, source, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_hold_env(v, source, problems) for v in value]
    return value


def _held(source: DynamicSource, ref: str) -> str:
    return (f"{source.label}: {ref}: not read until you trust the workspace {source.workspace} (/trust); "
            "using an empty string")


def resolve_dynamic(value: Any, source: DynamicSource, problems: list[str] | None = None) -> Any:
    """Replace ``${file:}``, ``${cmd:}``, ``${netrc:}`` and ``${classpath:}`` in every string of *value*
    (recursively; keys and ``${env:}`` untouched — see :func:`interpolate_env`). Never raises: a reference that
    cannot be resolved becomes ``""`` and a problem (appended once to *problems*; logged as a warning either way)."""
    if isinstance(value, str):
        if "${" not in value or _DYNAMIC_REF.search(value) is None:
            return value
        return _DYNAMIC_REF.sub(lambda m: _resolve_one(m.group(1), m.group(2), source, problems), value)
    if isinstance(value, Mapping):
        return {k: resolve_dynamic(v, source, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_dynamic(v, source, problems) for v in value]
    return value


def _problem(problems: list[str] | None, message: str) -> str:
    if problems is not None and message not in problems:
        problems.append(message)
        log.warning("config: %s", message)
    elif problems is None:
        log.warning("config: %s", message)
    return ""


def _resolve_one(kind: str, arg: str, source: DynamicSource, problems: list[str] | None) -> str:
    ref = f"${{{kind}:{arg}}}"
    where = f"{source.label}: {ref}"
    if kind == "file":
        if not source.secrets_allowed:
            return _problem(problems, _held(source, ref))
        return _read_file_ref(arg.strip(), source, problems, where)
    if kind == "cmd":
        return _run_cmd_ref(arg.strip(), source, problems, where)
    if kind == "netrc":
        if not source.secrets_allowed:
            return _problem(problems, _held(source, ref))
        return _netrc_ref(arg.strip(), source, problems, where)
    # classpath: a file inside the reference server's jar (its built-in prompts). Ours are built in, and an empty
    # prompt means "the built-in one", so empty is the equivalent; say so, since other uses get nothing.
    return _problem(problems, f"{where}: eca-notebook has no classpath (that is a file inside the reference "
                              "server); using an empty string — for a prompt, the built-in one applies")


def _read_file_ref(arg: str, source: DynamicSource, problems: list[str] | None, where: str) -> str:
    path = Path(os.path.expanduser(arg))
    if not path.is_absolute():
        path = (source.base_dir or Path.cwd()) / path
    if source.workspace is not None:
        try:
            inside = path.resolve().is_relative_to(source.workspace.resolve())
        except OSError:
            inside = False
        if not inside:
            return _problem(problems, f"{where}: a workspace file may only read files inside {source.workspace}; "
                                      "using an empty string")
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_FILE_BYTES)
        return data.decode("utf-8-sig", errors="replace")
    except OSError as exc:
        return _problem(problems, f"{where}: cannot read {path} ({exc.strerror or type(exc).__name__}); "
                                  "using an empty string")


def _run_cmd_ref(command: str, source: DynamicSource, problems: list[str] | None, where: str) -> str:
    if not source.cmd_allowed:
        folder = source.workspace or source.base_dir
        return _problem(problems, f"{where}: not run — commands in a workspace's own files run only when you trust "
                                  f"the folder in your user config (\"trustedWorkspaces\": [\"{folder}\"]); "
                                  "using an empty string")
    if command in source.cmd_cache:
        cached = source.cmd_cache[command]
        return "" if cached is None else cached
    shell = shutil.which("bash", path=source.env.get("PATH")) or "/bin/sh"
    try:
        done = subprocess.run([shell, "-c", command], capture_output=True, text=True, errors="replace",
                              timeout=CMD_TIMEOUT_SECONDS, env=dict(source.env), stdin=subprocess.DEVNULL,
                              cwd=source.base_dir if source.base_dir is not None and source.base_dir.is_dir()
                              else None)
    except subprocess.TimeoutExpired:
        source.cmd_cache[command] = None
        return _problem(problems, f"{where}: timed out after {CMD_TIMEOUT_SECONDS:g} s; using an empty string")
    except OSError as exc:
        source.cmd_cache[command] = None
        return _problem(problems, f"{where}: cannot run ({exc.strerror or type(exc).__name__}); "
                                  "using an empty string")
    if done.returncode != 0:
        source.cmd_cache[command] = None  # (stdout/stderr are not shown: they may hold the secret)
        return _problem(problems, f"{where}: exited with status {done.returncode}; using an empty string")
    out = done.stdout.strip()
    add_secrets([out])  # it is usually a key: keep it out of every log, saved chat and error message
    source.cmd_cache[command] = out
    return out


def _netrc_ref(spec: str, source: DynamicSource, problems: list[str] | None, where: str) -> str:
    login, _, machine = spec.rpartition("@")
    host = machine.split(":", 1)[0]  # (Python's netrc has no ports: the entry for the host is used)
    files = _netrc_files(source.env, source.netrc_file)
    for path in files:
        if not path.is_file():
            continue
        try:
            entry = netrc.netrc(str(path)).authenticators(host)
        except (OSError, netrc.NetrcParseError) as exc:
            _problem(problems, f"{where}: cannot read {path} ({type(exc).__name__})")
            continue
        if entry is not None and (not login or entry[0] == login) and entry[2]:
            add_secrets([entry[2]])
            return entry[2]
    return _problem(problems, f"{where}: no matching entry in {' or '.join(str(f) for f in files)}; "
                              "using an empty string")


def _netrc_files(env: Mapping[str, str], netrc_file: str | None) -> list[Path]:
    if netrc_file:
        return [Path(os.path.expanduser(netrc_file))]
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return [home / ".netrc", home / "_netrc"]


def netrc_passwords(env: Mapping[str, str], netrc_file: str | None = None) -> list[str]:
    """Every password of the user's netrc (``netrcFile``, else ``~/.netrc`` / ``~/_netrc``), for the redaction
    registry: a netrc password is a secret wherever it shows up — a script, a log, a file sent to the model — whether
    a ``${netrc:}`` reads it or not. An unreadable or malformed file gives none (and is not reported here: a
    ``${netrc:}`` that needs it says so)."""
    found: list[str] = []
    for path in _netrc_files(env, netrc_file):
        if not path.is_file():
            continue
        try:
            hosts = netrc.netrc(str(path)).hosts
        except (OSError, netrc.NetrcParseError, UnicodeDecodeError):
            continue
        found += [entry[2] for entry in hosts.values() if entry and entry[2]]
    return found


def workspace_of(path: Path, workspace_folders: Iterable[Path]) -> Path | None:
    """The workspace folder *path* is in (a workspace's own ``.eca`` files), or None (the user's own files)."""
    try:
        resolved = Path(path).resolve()
    except OSError:
        resolved = Path(path)
    for folder in workspace_folders:
        try:
            root = Path(folder).resolve()
        except OSError:
            root = Path(folder)
        if resolved == root or resolved.is_relative_to(root):
            return Path(folder)
    return None


def trusted_by_user(folder: Path, trusted: Any) -> bool:
    """Whether the user's ``trustedWorkspaces`` (a path or a list of them) lists *folder* or a folder above it."""
    values = [trusted] if isinstance(trusted, str) else trusted if isinstance(trusted, list) else []
    try:
        target = Path(folder).resolve()
    except OSError:
        target = Path(folder)
    for value in values:
        if not isinstance(value, str) or not value.strip():
            continue
        try:
            root = Path(os.path.expanduser(value)).resolve()
        except OSError:
            continue
        if target == root or target.is_relative_to(root):
            return True
    return False


def parse_jsonc(text: str) -> Any:
    """``json.loads`` that also accepts ``//`` and ``/* */`` comments and trailing commas.

    The reference's docs show commented config files and its schema declares ``allowComments``; rejecting them would
    drop a user's whole file. Comments become spaces so line/column numbers in error messages stay right.
    """
    if not text.strip():
        return {}
    return json.loads(_strip_jsonc(text))


def _strip_jsonc(text: str) -> str:
    out = list(text)
    n = len(text)
    i = 0
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
            continue
        elif c == ",":
            j = i + 1
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    nl = text.find("\n", j)
                    j = n if nl < 0 else nl
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    break
            if j < n and text[j] in "}]":
                out[i] = " "
        i += 1
    return "".join(out)
