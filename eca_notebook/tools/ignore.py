"""`.gitignore`-aware walking, shared by the native tools and the workspace file index.

Why our own walker instead of ``git ls-files``: it must work in folders that are not git repositories (and on machines
without git), and it must prune ignored subtrees *before* entering them — a workspace with a 200k-file
``node_modules`` must cost one ``scandir`` of its parent, not a walk of the whole subtree.

Matching uses :class:`pathspec.GitIgnoreSpec`, one spec per ``.gitignore`` file, each applied to paths relative to
its own directory (as git does). Precedence follows git: a deeper ``.gitignore`` overrides a shallower one, the
repository's ``.git/info/exclude`` comes last, and within one file the last matching pattern wins. A path inside an
ignored directory stays ignored whatever a negation says (git cannot re-include it either). When the root sits inside
a larger repository, the ``.gitignore`` files between the repository top and the root apply too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = ["IgnoreMatcher", "iter_entries", "walk"]

log = logging.getLogger(__name__)

# (the .gitignore's directory relative to the matcher root, as a "/"-joined prefix ending in "/" — "" for the root —
#  which is stripped from a path before matching it against that file's spec, spec)
_Entry = tuple[str, GitIgnoreSpec]


def _read_spec(file: Path) -> GitIgnoreSpec | None:
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception as exc:  # a malformed pattern must not break walking the workspace
        log.debug("ignoring unparsable %s: %s", file, exc)
        return None


def _git_dir(repo_top: Path) -> Path | None:
    """The git directory of a work tree: ``.git`` itself, or where a ``.git`` file (worktree/submodule) points."""
    dot_git = repo_top / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if text.startswith("gitdir:"):
        target = Path(text[len("gitdir:") :].strip())
        return target if target.is_absolute() else (repo_top / target)
    return None


class IgnoreMatcher:
    """Answers "is this path ignored?" for one root, loading nested ``.gitignore`` files lazily (once per directory)."""

    def __init__(self, root: Path, *, use_gitignore: bool = True) -> None:
        self.root = Path(os.path.abspath(root))
        self._root_resolved = self.root.resolve()
        self._use_gitignore = use_gitignore
        self._dir_specs: dict[str, GitIgnoreSpec | None] = {}  # rel dir ("" = root, "a/b") -> its .gitignore spec
        self._chains: dict[str, tuple[_Entry, ...]] = {}  # rel dir -> specs applying inside it, deepest first
        self._dir_ignored: dict[str, bool] = {}  # rel dir -> ignored (for the ancestor check of ignored())
        # Specs from above the root (ancestor .gitignore files of an enclosing repo), deepest first, and the
        # repository's info/exclude; each with the path of the root relative to the spec's directory.
        self._outer: list[tuple[str, GitIgnoreSpec]] = []
        if use_gitignore:
            self._load_outer()

    @classmethod
    def for_root(cls, root: Path) -> IgnoreMatcher:
        """Root ``.gitignore``, nested ones (lazily), ancestors up to the enclosing repo top, ``.git/info/exclude``."""
        return cls(root)

    @classmethod
    def only_git(cls, root: Path) -> IgnoreMatcher:
        """A matcher that ignores nothing but ``.git`` — for walks that must see ignored files too."""
        return cls(root, use_gitignore=False)

    # -- loading ---------------------------------------------------------------------------------------------------

    def _load_outer(self) -> None:
        # Find the enclosing repository top (the root itself or an ancestor holding `.git`).
        top: Path | None = None
        for candidate in (self._root_resolved, *self._root_resolved.parents):
            if (candidate / ".git").exists():
                top = candidate
                break
        if top is None:
            return
        if top != self._root_resolved:
            rel_parts = self._root_resolved.relative_to(top).parts
            # Ancestor directories strictly between the top (inclusive) and the root (exclusive), deepest first.
            for i in range(len(rel_parts) - 1, -1, -1):
                anc = top.joinpath(*rel_parts[:i])
                spec = _read_spec(anc / ".gitignore")
                if spec is not None:
                    self._outer.append(("/".join(rel_parts[i:]) + "/", spec))
        git_dir = _git_dir(top)
        if git_dir is not None:
            spec = _read_spec(git_dir / "info" / "exclude")
            if spec is not None:
                prefix = "/".join(self._root_resolved.relative_to(top).parts)
                self._outer.append((prefix + "/" if prefix else "", spec))

    def _spec(self, rel_dir: str) -> GitIgnoreSpec | None:
        try:
            return self._dir_specs[rel_dir]
        except KeyError:
            pass
        spec = _read_spec(self.root / rel_dir / ".gitignore") if self._use_gitignore else None
        self._dir_specs[rel_dir] = spec
        return spec

    def _chain(self, rel_dir: str) -> tuple[_Entry, ...]:
        """Specs of `rel_dir` and its ancestors within the root, deepest first, as (prefix to strip, spec)."""
        chain = self._chains.get(rel_dir)
        if chain is not None:
            return chain
        own = self._spec(rel_dir)
        if rel_dir == "":
            parent_chain: tuple[_Entry, ...] = ()
        else:
            parent = rel_dir.rpartition("/")[0]
            parent_chain = self._chain(parent)
        chain = (((rel_dir + "/" if rel_dir else ""), own),) + parent_chain if own is not None else parent_chain
        self._chains[rel_dir] = chain
        return chain

    # -- matching --------------------------------------------------------------------------------------------------

    def _match(self, rel_dir: str, rel: str, is_dir: bool) -> bool:
        """Whether the entry `rel` (directly inside `rel_dir`) is ignored, assuming its parent directory is not."""
        name = rel.rpartition("/")[2]
        if name == ".git":
            return True
        if not self._use_gitignore:
            return False
        suffix = "/" if is_dir else ""
        for prefix, spec in self._chain(rel_dir):
            res = spec.check_file(rel[len(prefix) :] + suffix).include
            if res is not None:
                return res
        for prefix, spec in self._outer:
            res = spec.check_file(prefix + rel + suffix).include
            if res is not None:
                return res
        return False

    def _rel(self, path: Path) -> str | None:
        if not path.is_absolute():
            rel = os.path.normpath(path.as_posix())
            return "" if rel == "." else rel.replace(os.sep, "/")
        for base in (self.root, self._root_resolved):
            try:
                rel_path = Path(os.path.abspath(path)).relative_to(base)
            except ValueError:
                continue
            return rel_path.as_posix() if rel_path.parts else ""
        return None

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether `path` (absolute, or relative to the root) is ignored, including by an ignored ancestor dir.

        Paths outside the root are never ignored (only a `.git` component is); the root itself never is.
        """
        rel = self._rel(Path(path))
        if rel is None:
            return ".git" in Path(path).parts
        if rel == "" or rel.startswith("../") or rel == "..":
            return False
        parts = rel.split("/")
        # Every ancestor directory must be un-ignored for the entry's own patterns to count.
        for i in range(1, len(parts)):
            anc = "/".join(parts[:i])
            cached = self._dir_ignored.get(anc)
            if cached is None:
                cached = self._match("/".join(parts[: i - 1]), anc, True)
                self._dir_ignored[anc] = cached
            if cached:
                return True
        return self._match("/".join(parts[:-1]), rel, is_dir)


def walk(
    root: Path,
    *,
    matcher: IgnoreMatcher | None = None,
    max_depth: int | None = None,
    include_dirs: bool = True,
) -> Iterator[tuple[Path, bool]]:
    """Yield ``(path, is_dir)`` under `root`, depth first, entries sorted by name within each directory.

    Paths are ``root / relative`` (absolute when `root` is). Ignored entries are skipped and ignored directories are
    not entered. Symlinks are reported as non-directories and never followed. Depth 1 is the root's direct children;
    ``max_depth=None`` means unlimited. `matcher` defaults to ``IgnoreMatcher.for_root(root)``; pass a matcher for an
    enclosing folder to walk a sub-directory with the folder's rules. Unreadable directories are skipped silently.
    """
    for entry, _rel, _depth, is_dir in iter_entries(root, matcher=matcher, max_depth=max_depth):
        if is_dir and not include_dirs:
            continue
        yield Path(entry.path), is_dir


def iter_entries(
    root: Path,
    *,
    matcher: IgnoreMatcher | None = None,
    max_depth: int | None = None,
    skip_hidden: bool = False,
    skip_dirs: Collection[str] = (),
) -> Iterator[tuple[os.DirEntry[str], str, int, bool]]:
    """The engine of :func:`walk`, for callers that need more than the path: ``(entry, rel, depth, is_dir)``.

    `rel` is the "/"-joined path relative to `root`; the ``os.DirEntry`` gives cached ``is_symlink()``/``stat()``.
    `skip_hidden` also drops dot-entries (what ripgrep and ``tree`` do by default); `skip_dirs` names directories
    never entered nor yielded wherever they are (``node_modules`` for a caller that wants no vendored code even when
    no ``.gitignore`` says so).
    """
    root = Path(root)
    if matcher is None:
        matcher = IgnoreMatcher.for_root(root)
    if max_depth is not None and max_depth < 1:
        return
    base_rel = matcher._rel(root.absolute())
    if base_rel is not None and (base_rel == ".." or base_rel.startswith("../")):
        base_rel = None
    if base_rel is None:
        # Walking outside the matcher's root: its rules do not apply; only `.git` is skipped.
        matcher = IgnoreMatcher.only_git(root)
        base_rel = ""
    prefix_len = len(base_rel) + 1 if base_rel else 0

    def listing(dir_path: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(dir_path) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError:
            return []

    # A stack of (entries of one directory, that directory relative to the matcher root, depth of its entries).
    stack: list[tuple[Iterator[os.DirEntry[str]], str, int]] = [(iter(listing(str(root))), base_rel, 1)]
    while stack:
        entries, rel_dir, depth = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        if skip_hidden and name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir and name in skip_dirs:
            continue
        rel = f"{rel_dir}/{name}" if rel_dir else name
        if matcher._match(rel_dir, rel, is_dir):
            continue
        yield entry, rel[prefix_len:], depth, is_dir
        if is_dir and (max_depth is None or depth < max_depth):
            stack.append((iter(listing(entry.path)), rel, depth + 1))
