"""Running ``git`` on a repository we do not trust: every git subprocess the project starts itself goes through
:func:`run_git`.

A repository's own files can name programs git runs: a ``filter.<name>.clean``/``smudge``/``process`` driver in
``.git/config`` (or a file it includes) picked by a ``filter=<name>`` line in ``.gitattributes``, ``core.fsmonitor``,
hooks, a pager, an external diff or textconv driver, ``core.sshCommand``, a credential helper, ``gpg.program``, an
editor, a lazy fetch of a partial clone over ``protocol.ext``. A repository cloned or unpacked from someone else must
not run any of them because the user typed ``@`` — so each run here is given, on the command line (which wins over
every config file):

- every filter driver the repository's config defines (read first with ``git config --get-regexp``, which runs
  nothing) switched off: empty ``clean``, ``smudge`` and ``process``, ``required=false``. A driver defined only in the
  user's own global or system config (git-lfs) keeps working: the user chose that program;
- hooks pointed at ``/dev/null``, ``core.fsmonitor=false``, ``core.pager=cat`` and ``--no-pager``, editors ``:``
  (git's "no editor"), ``core.sshCommand``/``gpg.*.program`` ``false``, no ``core.askPass`` or credential helper,
  ``log.showSignature=false``, no submodule summary, no automatic gc or maintenance, no untracked cache, and every
  transport forbidden (``protocol.allow=never`` and ``protocol.<name>.allow=never`` for each name the config
  allows), so a partial clone's lazy fetch cannot reach a remote helper;
- a clean environment: no ``GIT_*`` variable of ours (``GIT_DIR``, ``GIT_EXTERNAL_DIFF``, ``GIT_SSH_COMMAND``,
  ``GIT_CONFIG_PARAMETERS`` …), no ``PAGER``, ``LESSOPEN`` or ``EDITOR``; ``PATH`` without relative entries (and
  ``git`` itself found on it), ``HOME`` (the user's ``~/.gitconfig`` is theirs), ``GIT_OPTIONAL_LOCKS=0`` (never
  the index lock the user's own commands need), ``GIT_TERMINAL_PROMPT=0``, ``GIT_NO_LAZY_FETCH=1``.

The diff commands add ``--no-ext-diff --no-textconv`` themselves (options of the command, not config), and
``--ignore-submodules=dirty`` keeps git out of submodules, whose own config this module has not read.

The run itself is bounded: a cap on the bytes read (past it git is killed), and cancellation (the caller's deadline)
kills git, so a huge or hanging repository costs a truncation or a timeout, never a stuck event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path

__all__ = ["FIXED_CONFIG", "GitError", "git_argv", "git_env", "run_git"]


class GitError(Exception):
    """Git could not describe the folder (not a repository, git missing, timed out); the message is user-facing."""


#: config given on every run's command line (see the module's docstring)
FIXED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.quotepath", "off"),
    ("color.ui", "false"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("credential.helper", ""),  # the empty value empties the helper list
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.defaultKeyCommand", "false"),
    ("log.showSignature", "false"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
    ("diff.submodule", "short"),
    ("core.untrackedCache", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("protocol.allow", "never"),
)
#: transports forbidden by name as well (a repository's ``protocol.<name>.allow=always`` beats ``protocol.allow``)
_PROTOCOLS = ("ext", "file", "git", "http", "https", "ssh", "fd")
_FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
#: environment variables kept (the rest, ``GIT_*``, ``PAGER``, ``LESSOPEN``, ``EDITOR`` … included, are dropped)
_KEPT_ENV = ("HOME", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "XDG_CONFIG_HOME", "SYSTEMROOT", "WINDIR",
             "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PATHEXT", "COMSPEC")
#: the scopes of config the user owns: a filter defined only there is the user's program, not the repository's
_USER_SCOPES = ("system", "global")


def _path() -> str:
    """``PATH`` without relative entries (``.`` or an empty entry would find a ``git`` in the workspace)."""
    return os.pathsep.join(p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p))


def git_env() -> dict[str, str]:
    """The environment every git run gets: a few of ours, the rest fixed."""
    env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
    env.update(PATH=_path(), GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1",
               GIT_PAGER="cat", PAGER="cat", LC_ALL="C", LANGUAGE="C")
    return env


def _program() -> str:
    git = shutil.which("git", path=_path())
    if git is None:
        raise GitError("git is not installed (the `git` command was not found)")
    return git


def _config_args(pairs: list[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for key, value in pairs:
        out += ["-c", f"{key}={value}"]
    return out


async def _exec(folder: Path, argv: list[str], limit: int) -> tuple[int, bytes, bool, bytes]:
    """(exit code, stdout up to `limit` bytes, whether it was cut, stderr) of `argv` in `folder`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(folder), env=git_env(), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except FileNotFoundError:
        raise GitError("git is not installed (the `git` command was not found)") from None
    except OSError as exc:
        raise GitError(f"could not run git in {folder}: {exc.strerror or exc}") from None
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = proc.stdout, proc.stderr

    async def read(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
        """At most `cap` bytes of `stream`; past them git is killed (the rest is not wanted: it must not write
        gigabytes we would throw away) and the pipe drained to its end, which the process's exit waits for."""
        chunks: list[bytes] = []
        size = 0
        cut = False
        while chunk := await stream.read(65536):
            if cut:
                continue
            if size + len(chunk) > cap:
                chunks.append(chunk[: cap - size])
                cut = True
                if proc.returncode is None:
                    proc.kill()
                continue
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), cut

    try:
        (out, cut), (err, _) = await asyncio.gather(read(stdout, limit), read(stderr, 65536))
        code = await proc.wait()
    finally:
        if proc.returncode is None:  # cancelled (the deadline): kill git, and drain its pipes so it can be reaped
            proc.kill()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await asyncio.gather(_drain(stdout), _drain(stderr))
                    await proc.wait()
    return code, out, cut, err


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def git_argv(folder: Path) -> list[str]:
    """The program and options that start every git run in `folder`: the fixed config, then the switches for the
    filter drivers and transports the repository's config names (read with ``git config``, which runs nothing)."""
    base = [_program(), *_config_args(list(FIXED_CONFIG)), "--no-pager"]
    code, out, _, err = await _exec(
        folder, [*base, "config", "-z", "--show-scope", "--get-regexp", r"^(filter|protocol)\."], 1_000_000)
    scoped = True
    if code not in (0, 1):  # a git before 2.26 has no --show-scope: every filter counts as the repository's
        code, out, _, err = await _exec(
            folder, [*base, "config", "-z", "--get-regexp", r"^(filter|protocol)\."], 1_000_000)
        scoped = False
    if code not in (0, 1):
        raise GitError(_explain(err.decode("utf-8", "replace"), folder))
    filters: set[str] = set()
    protocols: set[str] = set(_PROTOCOLS)
    records = out.decode("utf-8", "surrogateescape").split("\0")
    # `scope NUL key LF value NUL` with --show-scope, `key LF value NUL` without
    entries = zip(records[0::2], records[1::2], strict=False) if scoped else (("", r) for r in records)
    for scope, entry in entries:
        key = entry.partition("\n")[0]
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[0]  # the subsection: between the first and the last dot
        if not name:
            continue
        if section.lower() == "protocol":
            protocols.add(name)
        elif section.lower() == "filter" and scope not in _USER_SCOPES:
            filters.add(name)
    pairs: list[tuple[str, str]] = [(f"protocol.{p}.allow", "never") for p in sorted(protocols)]
    for name in sorted(filters):
        if "=" in name:  # `-c` splits at the first "=": such a driver cannot be switched off on the command line
            raise GitError(f"the repository's config defines a filter driver named {name!r}, which cannot be "
                           "switched off; git was not run")
        pairs += [(f"filter.{name}.{key}", value) for key, value in _FILTER_KEYS]
    return [base[0], *_config_args(list(FIXED_CONFIG) + pairs), "--no-pager"]


async def run_git(folder: Path, *args: str, limit: int = 10_000_000) -> tuple[str, bool]:
    """(stdout decoded, whether it was cut at `limit` bytes) of ``git args`` in `folder`, with the repository's
    programs switched off (see the module's docstring). Raises :class:`GitError` when git fails or is missing.
    Cancellation (the caller's deadline) kills git; it never outlives this call."""
    if not folder.is_dir():  # else the missing working directory would read as a missing git
        raise GitError(f"not a git repository: {folder} is not a folder")
    argv = await git_argv(folder)
    code, out, cut, err = await _exec(folder, [*argv, *args], limit)
    if code != 0 and not cut:
        raise GitError(_explain(err.decode("utf-8", "replace"), folder))
    return out.decode("utf-8", "replace"), cut


def _explain(stderr: str, folder: Path) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " ".join(lines)
    if "not a git repository" in text.lower():
        return f"not a git repository: {folder}"
    first = lines[0] if lines else "git failed"
    for prefix in ("fatal: ", "error: "):
        if first.startswith(prefix):
            first = first[len(prefix):]
    return f"git: {first[:300]}"
