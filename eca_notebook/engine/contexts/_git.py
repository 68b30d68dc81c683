"""Attaching the workspace's git state (``@git``, ``@git:status``, ``@git:diff``, ``@git:log``).

Everything comes from the ``git`` command line, run as asyncio subprocesses in the workspace folder — never from
reading ``.git`` by hand — because git alone knows every repository layout (worktrees, submodules, sparse
checkouts, split indexes) and the user's ignore rules. Each run is bounded: a deadline for the whole gathering, a
cap on the bytes read from one command (a 2 GB diff is cut while it streams, then git is killed), so a huge or
slow repository costs a truncation note, never a stuck turn or a blocked event loop.

Git is run through :func:`eca_notebook._git.run_git`, which switches off every program the repository's config could
name (filter drivers, hooks, fsmonitor, pagers, ssh, credential helpers …) and never takes the index lock the user's
own commands need: a repository must not run programs because someone typed ``@git``. The diffs add no external diff
or textconv driver, and submodules are not entered (``--ignore-submodules=dirty``: their config is their own).

The summary is shaped for a model: branch and upstream first, then the changed files by kind (long lists shortened
with "… and N more"), the last :data:`GIT_LOG_COMMITS` commits one a line, and the diffs last, so when the budget
runs out it is the diff that is cut, with a note saying so. A folder that is not a repository (or a machine without
git) renders as a short element saying exactly that: the model learns why there is no git state, and the user's
prompt goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..._git import GitError, run_git
from ..._redact import redact
from ..._text import visible
from ...protocol.context import GitContext
from ._blocks import Block, ContextProblem, truncate

__all__ = [
    "GIT_DIFF_BYTES",
    "GIT_LOG_COMMITS",
    "GIT_MAX_FILES",
    "GIT_PARTS",
    "GIT_QUERY_TIMEOUT",
    "GIT_TIMEOUT",
    "GitError",
    "GitStatus",
    "git_offers",
    "git_status",
    "render_git",
    "wants_git",
]

GIT_PARTS = ("status", "diff", "log")  # what ``GitContext.part`` may name; None is all of them
GIT_TIMEOUT = 15.0  # seconds for gathering one git context (every command together)
GIT_QUERY_TIMEOUT = 5.0  # seconds for the one-line summary shown in the @ completion
GIT_LOG_COMMITS = 10  # recent commits listed
GIT_MAX_FILES = 50  # files listed per kind (staged, modified, untracked, conflicted) before "… and N more"
GIT_DIFF_BYTES = 60_000  # of the staged and unstaged diffs together (less when the context's cap is smaller)
GIT_STATUS_BYTES = 2_000_000  # read from `git status` (a tree of untracked build output must not eat memory)
_SUBJECT_CHARS = 200  # of one commit's subject line
# never an external diff program or textconv filter (a repository's config must not run programs); submodules as
# one line each
_DIFF_ARGS = ("--no-ext-diff", "--no-textconv", "--no-color", "--submodule=short", "--ignore-submodules=dirty")

_PART_DETAILS = {
    "status": "Branch, staged, modified and untracked files",
    "diff": "Working diff: staged and unstaged changes",
    "log": f"The last {GIT_LOG_COMMITS} commits",
}
_STATUS_NAMES = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed", "C": "copied", "T": "type changed",
                 "U": "unmerged"}


@dataclass
class GitFile:
    path: str
    code: str  # one status letter (M, A, D, R, C, T, U) or "?" for untracked
    orig: str | None = None  # a rename's or copy's source path

    def line(self) -> str:
        what = _STATUS_NAMES.get(self.code, "")
        # a repository's file names are anyone's: "x\n\nRecent commits …" or a U+202E must not fake a line or hide
        # what the model (and the user, quoting it) reads
        where = f"{visible(self.orig)} -> {visible(self.path)}" if self.orig else visible(self.path)
        return f"  {what + ':':<14}{where}" if what else f"  {where}"


@dataclass
class GitStatus:
    """What ``git status --porcelain=v2 --branch`` says, parsed."""

    root: str = ""
    branch: str | None = None  # None when HEAD is detached
    oid: str | None = None  # None before the first commit
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    staged: list[GitFile] = field(default_factory=list)
    modified: list[GitFile] = field(default_factory=list)
    untracked: list[GitFile] = field(default_factory=list)
    conflicted: list[GitFile] = field(default_factory=list)
    cut: bool = False  # the output was larger than GIT_STATUS_BYTES: the lists are incomplete

    def branch_line(self) -> str:
        if self.branch is None:
            head = f"HEAD detached at {self.oid[:10]}" if self.oid else "HEAD detached"
        else:
            head = self.branch + ("" if self.oid else " (no commits yet)")
        if self.upstream:
            track = f"{self.upstream}: ahead {self.ahead}, behind {self.behind}" if self.ahead or self.behind else \
                f"{self.upstream}: up to date"
            head += f" (tracking {track})"
        return head

    def counts(self) -> str:
        """"2 staged, 1 modified, 3 untracked" (or "clean"), for one-line descriptions."""
        parts = [f"{len(files)}{'+' if self.cut else ''} {name}" for name, files in (
            ("staged", self.staged), ("modified", self.modified), ("untracked", self.untracked),
            ("conflicted", self.conflicted)) if files]
        return ", ".join(parts) if parts else "clean"


async def git_status(folder: Path) -> GitStatus:
    """The branch and changed files of the repository `folder` is in (raises :class:`GitError` when it is not)."""
    where, _ = await run_git(folder, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
    root, git_dir, common = [*where.strip().split("\n"), "", ""][:3]
    common_dir = (folder / common).resolve() if common else Path(git_dir).resolve()
    # the objects, refs and history live in the common dir: a plain repository's own git dir, or for a linked
    # worktree the main repository whose worktrees/ holds its git dir. A .git folder with a commondir file naming a
    # repository above (../../../.git) made @git show that repository's history and tracked files whole
    if common_dir != Path(git_dir).resolve() and Path(git_dir).resolve().parent != common_dir / "worktrees":
        raise GitError(f"the repository at {root} takes its history from {common_dir} (commondir), another "
                       "repository: its files and history are not described")
    if not _own_work_tree(Path(root), Path(git_dir)):
        raise GitError(f"the repository's config (core.worktree) points git at {root}, not at the folder holding its "
                       ".git: its files are not described")
    if (Path(root) / ".git").is_file() and not await _git_dir_names(Path(root), Path(git_dir)):
        raise GitError(f"the .git file of {root} names the repository {git_dir}, whose own work tree is another "
                       "folder: its files and history are not described")
    out, cut = await run_git(folder, "status", "--porcelain=v2", "--branch", "-z",
                             "--ignore-submodules=dirty", limit=GIT_STATUS_BYTES)
    status = _parse_status(out, cut)
    status.root = root.strip()
    return status


async def _git_dir_names(root: Path, git_dir: Path) -> bool:
    """Whether the git dir a ``.git`` file leads to names `root` as its own work tree: a linked worktree's admin
    folder by its ``gitdir`` file, a submodule's by its ``core.worktree``, a plain ``.git`` folder by being in it.
    A repository's ``.git`` file saying ``gitdir: ../../.git`` otherwise made ``@git`` describe the repository of a
    folder above it (a dotfiles repository in the home directory): its commits, and every file it tracks as a
    deleted file in the diff, whole."""
    try:
        link = git_dir / "gitdir"
        if link.is_file():
            target = Path(link.read_text(encoding="utf-8", errors="replace").strip())
            return (git_dir / target).resolve() == (root / ".git").resolve()
        value, _ = await run_git(root, "config", "--file", str(git_dir / "config"), "--default", "",
                                 "--get", "core.worktree")
        tree = (git_dir / value.strip()) if value.strip() else git_dir.parent if git_dir.name == ".git" else None
        return tree is not None and tree.resolve() == root.resolve()
    except (OSError, GitError):
        return False


def _own_work_tree(root: Path, git_dir: Path) -> bool:
    """Whether `root` is the work tree whose ``.git`` (a folder, or a file naming the git dir: linked worktrees,
    submodules) leads to `git_dir`. A ``core.worktree`` in the repository's config can point git at any folder —
    ``$HOME``, another project — and a crafted index then diffs that folder's files into the model's context."""
    dot = root / ".git"
    try:
        if dot.is_dir():
            return dot.resolve() == git_dir.resolve()
        if dot.is_file():
            first = dot.read_text(encoding="utf-8", errors="replace").partition("\n")[0].strip()
            return first.startswith("gitdir:") and (root / first[7:].strip()).resolve() == git_dir.resolve()
    except OSError:
        return False
    return False


def _parse_status(out: str, cut: bool) -> GitStatus:
    """Parse ``git status --porcelain=v2 --branch -z``: ``# branch.*`` headers, then one record per changed path
    (``1`` ordinary, ``2`` renamed/copied — followed by its source as a separate record —, ``u`` unmerged,
    ``?`` untracked)."""
    status = GitStatus(cut=cut)
    records = out.split("\0")
    if cut:
        records = records[:-1]  # the last one may be a fragment
    it = iter(records)
    for record in it:
        if not record:
            continue
        if record.startswith("# "):
            key, _, value = record[2:].partition(" ")
            if key == "branch.oid":
                status.oid = None if value == "(initial)" else value
            elif key == "branch.head":
                status.branch = None if value == "(detached)" else value
            elif key == "branch.upstream":
                status.upstream = value
            elif key == "branch.ab":
                ahead, _, behind = value.partition(" ")
                status.ahead, status.behind = _int(ahead), _int(behind)
            continue
        kind = record[0]
        if kind == "?":
            status.untracked.append(GitFile(record[2:], "?"))
        elif kind == "1":
            fields = record.split(" ", 8)
            if len(fields) == 9:
                _add_changed(status, fields[1], GitFile(fields[8], ""))
        elif kind == "2":
            fields = record.split(" ", 9)
            orig = next(it, "")
            if len(fields) == 10:
                _add_changed(status, fields[1], GitFile(fields[9], "", orig or None))
        elif kind == "u":
            fields = record.split(" ", 10)
            if len(fields) == 11:
                status.conflicted.append(GitFile(fields[10], "U"))
    return status


def _int(text: str) -> int:
    try:
        return abs(int(text))
    except ValueError:
        return 0


def _add_changed(status: GitStatus, xy: str, file: GitFile) -> None:
    xy = (xy + "..")[:2]
    staged, worktree = xy[0], xy[1]
    if staged != ".":
        status.staged.append(GitFile(file.path, staged, file.orig if staged in "RC" else None))
    if worktree != ".":
        status.modified.append(GitFile(file.path, worktree))


# -- rendering -----------------------------------------------------------------------------------------------------


def _file_list(title: str, files: list[GitFile], cut: bool) -> str:
    if not files:
        return ""
    shown = files[:GIT_MAX_FILES]
    more = len(files) - len(shown)
    lines = [f"{title} ({len(files)}{'+' if cut else ''}):"] + [f.line() for f in shown]
    if more or cut:
        lines.append(f"  … and {more}{'+' if cut else ''} more")
    return "\n".join(lines) + "\n"


def _status_text(status: GitStatus) -> str:
    sections = [
        _file_list("Staged for commit", status.staged, status.cut),
        _file_list("Modified, not staged", status.modified, status.cut),
        _file_list("Untracked", status.untracked, status.cut),
        _file_list("Conflicted (unmerged)", status.conflicted, status.cut),
    ]
    text = "\n".join(s for s in sections if s)
    return text or "Working tree clean: nothing staged, modified or untracked.\n"


async def _log_text(folder: Path, status: GitStatus) -> str:
    if status.oid is None:
        return "Recent commits: none yet (the branch has no commits).\n"
    out, _ = await run_git(folder, "log", f"-n{GIT_LOG_COMMITS}", "--no-show-signature",
                        "--date=format:%Y-%m-%d %H:%M", "--format=%h%x1f%ad%x1f%an%x1f%s%x1e", limit=200_000)
    lines = []
    for record in out.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) != 4:
            continue
        sha, date, author, subject = fields
        if len(subject) > _SUBJECT_CHARS:
            subject = subject[: _SUBJECT_CHARS - 1] + "…"
        lines.append(f"  {sha} {date} {visible(author)}: {visible(subject)}")
    if not lines:
        return "Recent commits: none.\n"
    return f"Recent commits (newest first, last {len(lines)}):\n" + "\n".join(lines) + "\n"


async def _diff_text(folder: Path, budget: int) -> str:
    """The staged diff, then the unstaged one, together at most `budget` bytes; a cut or left-out diff gets a note
    with its ``--shortstat`` (how much there is) and the command that shows it."""
    left = max(budget, 0)
    sections = []
    for title, kind, extra in (("Staged changes", "staged", ("--cached",)), ("Unstaged changes", "unstaged", ())):
        command = " ".join(("git", "diff", *extra))
        text, cut = ("", True) if left < 200 else await run_git(folder, "diff", *extra, *_DIFF_ARGS, limit=left + 1)
        if not text and not cut:
            sections.append(f"{title} ({command}): none.\n")
            continue
        body = truncate(text, left) if text else ""
        shown = len(body.encode("utf-8"))
        left -= shown
        note = ""
        if cut or shown < len(text.encode("utf-8")):
            stat, _ = await run_git(folder, "diff", *extra, "--shortstat", *_DIFF_ARGS, limit=2000)
            what = f" ({stat.strip()})" if stat.strip() else ""
            if not body:
                note = (f"[diff left out: the context budget is used up{what}; run `{command}` to see it]\n")
            else:
                note = (f"[diff truncated: showing the first {shown} bytes of the {kind} changes{what}; "
                        f"run `{command} -- <path>` for the rest of one file]\n")
        sections.append(f"{title} ({command}):\n{body}{note}")
    return "\n".join(sections)


async def render_git(part: str | None, folder: Path | None, cap: int, timeout: float = GIT_TIMEOUT) -> Block:
    """The ``<git>`` element for `part` (None: status, log and diff) of the repository `folder` is in, its body
    within `cap` bytes (the diff gets what the status and log leave). Not a repository: an element saying so."""
    if part is not None and part not in GIT_PARTS:
        raise ContextProblem(f"unknown git context part {part!r} (known: {', '.join(GIT_PARTS)})")
    attrs: dict[str, str | None] = {"part": part}
    if folder is None:
        return Block("git", attrs, "Not a git repository: there is no workspace folder.\n")
    try:
        async with asyncio.timeout(timeout):
            status = await git_status(folder)
            attrs = {"repository": status.root, "part": part}
            head = f"Branch: {status.branch_line()}\n"
            pieces = [head]
            if part in (None, "status"):
                pieces.append("\n" + _status_text(status))
            if part in (None, "log"):
                pieces.append("\n" + await _log_text(folder, status))
            if part in (None, "diff"):
                used = sum(len(p.encode("utf-8")) for p in pieces)
                budget = min(GIT_DIFF_BYTES, cap - used - 600)  # room for section titles and the notes
                pieces.append("\n" + await _diff_text(folder, budget))
    except TimeoutError:
        return Block("git", attrs, f"git did not answer within {timeout:g} s in {folder}; no git state attached.\n")
    except GitError as exc:
        return Block("git", attrs, f"{_capitalised(str(exc))}; no git state attached.\n")
    return Block("git", attrs, "".join(pieces),
                 more_hint="ask for a narrower part (@git:status, @git:log or @git:diff) or run git for the rest")


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- the @ completion ----------------------------------------------------------------------------------------------


def wants_git(query: str) -> bool:
    """Whether a ``chat/queryContext`` query may be asking for git: blank, a prefix of "git" of 2+ letters, or
    "git…" (``git:d``, ``gitlog``)."""
    q = "".join(query.lower().split())
    return not q or q.startswith("git") or (len(q) >= 2 and "git".startswith(q))


async def git_offers(query: str, folders: Sequence[Path], timeout: float = GIT_QUERY_TIMEOUT) -> list[GitContext]:
    """The git contexts to offer for `query`, each with a one-line description: for a blank query ``@git`` alone and
    only inside a repository (an ``@`` must not cost a line in every other folder); for "gi"/"git…", ``@git`` and
    the parts that match, or ``@git`` described as "not a git repository" so the user learns why nothing else
    comes."""
    if not wants_git(query) or not folders:
        return []
    q = "".join(query.lower().split())
    rest = q[3:].lstrip(":") if q.startswith("git") else ""
    try:
        async with asyncio.timeout(timeout):
            status = await git_status(folders[0])
    except (TimeoutError, GitError) as exc:
        if not q:
            return []
        why = f"git did not answer within {timeout:g} s" if isinstance(exc, TimeoutError) else str(exc)
        return [GitContext(description=redact(why))] if not rest else []
    where = status.branch or "detached HEAD"
    offers: list[GitContext] = []
    if not rest:
        offers.append(GitContext(description=redact(f"{where} · {status.counts()} · with commits and diff")))
    if q:
        for part in GIT_PARTS:
            if part.startswith(rest) or (rest and rest in part):
                offers.append(GitContext(part=part, description=redact(_PART_DETAILS[part])))
    return offers
