"""Rules: user-written instructions (``AGENTS.md``, ``.eca/rules/*.md``) that go into the system prompt.

Where they come from, in this order (project first, so the model reads the most specific instructions first):
for each workspace folder ``<folder>/AGENTS.md`` then ``<folder>/.eca/rules/*.md`` (sorted by name), then the
global ``<global_config_dir>/rules/*.md`` (``~/.config/eca/rules`` as in the reference server).

Loading never fails: a rule file that cannot be read or is not UTF-8 is skipped with a warning (one bad file must not
cost the user the others), and a file over 64 KB is cut with a note, because a huge rule would eat the whole context
window on every request.

A rule is read only from inside its own root — the workspace folder for ``AGENTS.md`` and ``.eca/rules``, the global
config folder for the user's own — after resolving symlinks, and only when it is a regular file. Why: a cloned
repository's ``AGENTS.md`` may be a symlink to ``/proc/self/environ``, ``~/.netrc`` or the user's global config, and
its text goes to the model in the system prompt on every request. Such a rule is *skipped with a note* (``/rules``
shows it, and the model gets the one line, so neither wonders where the rule went) rather than silently; a FIFO or a
device would block or never end. What is read is redacted like every other file the model is sent.
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..._redact import redact

__all__ = ["MAX_RULE_BYTES", "MAX_WORKSPACE_RULES_BYTES", "Rule", "load_rules", "outside_root", "render_rules"]

log = logging.getLogger(__name__)

MAX_RULE_BYTES = 64 * 1024
#: All of a workspace folder's rules together (AGENTS.md and .eca/rules/*.md): a repository with a thousand 64 KB rule
#: files put 64 MB into every request's system prompt (paid for at every prompt, or refused by the provider). The
#: rules past it become notes; the user's own rules are never pushed out by a workspace's.
MAX_WORKSPACE_RULES_BYTES = 256 * 1024


@dataclass
class Rule:
    name: str  # the file name, e.g. "AGENTS.md", "style.md"
    path: Path
    content: str
    #: Set when the file was refused (a symlink out of its root, not a regular file): the one-line note that stands
    #: in for it in the system prompt and in ``/rules``; ``content`` is then empty.
    skipped: str | None = None


def _refused(path: Path, root: Path, why: str) -> Rule:
    try:
        label = path.relative_to(root).as_posix()
    except ValueError:
        label = path.name
    log.warning("rule file %s skipped: %s", path, why)
    return Rule(name=path.name, path=path, content="", skipped=f"rule {label} skipped: {why}")


def outside_root(path: Path, root: Path, where: str | None = None) -> str | None:
    """Why a prompt file (a rule, a custom command) at *path* may not be read from *root* — ``"symlink points outside
    <where, else root>"``, ``"not a regular file"`` — or None when it may (or is simply gone: reading it says so)."""
    try:
        real, real_root = path.resolve(strict=False), root.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return f"cannot resolve it ({type(exc).__name__})"
    if not real.is_relative_to(real_root):
        return f"symlink points outside {where or root}"
    try:
        mode = real.stat().st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else "not a regular file"


def _read_rule(path: Path, root: Path, where: str) -> Rule | None:
    """The rule at *path* when it really lies under *root* (symlinks resolved) and is a regular file; a refusal
    (:func:`_refused`) otherwise; None when it is gone or unreadable (logged)."""
    refused = outside_root(path, root, where)
    if refused:
        return _refused(path, root, refused)
    real = path.resolve(strict=False)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        # the resolved path, opened without following a last symlink (one swapped in since is refused) and without
        # blocking (a FIFO opens at once and is refused below)
        fd = os.open(real, flags)
    except FileNotFoundError:  # a dangling symlink, or deleted since it was listed
        return None
    except OSError as exc:
        log.warning("rule file %s skipped: cannot read (%s)", path, exc.strerror or type(exc).__name__)
        return None
    with open(fd, "rb", closefd=True) as f:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISDIR(mode):
            return None
        if not stat.S_ISREG(mode):
            return _refused(path, root, "not a regular file")
        try:
            data = f.read(MAX_RULE_BYTES + 1)
        except OSError as exc:
            log.warning("rule file %s skipped: cannot read (%s)", path, exc.strerror or type(exc).__name__)
            return None
    truncated = len(data) > MAX_RULE_BYTES
    if truncated:
        data = data[:MAX_RULE_BYTES]
    try:
        # final=False: a multi-byte character cut by the size limit is dropped instead of failing the whole file.
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=not truncated)
    except UnicodeDecodeError:
        log.warning("rule file %s skipped: not valid UTF-8", path)
        return None
    if not text.strip():
        return None
    if truncated:
        log.warning("rule file %s is larger than %d KB; truncated", path, MAX_RULE_BYTES // 1024)
        text = text.rstrip() + (
            f"\n\n[Rule truncated: {path.name} is larger than {MAX_RULE_BYTES // 1024} KB; "
            "only the beginning is shown.]"
        )
    return Rule(name=path.name, path=path, content=redact(text))


def _md_files(folder: Path) -> list[Path]:
    """The ``*.md`` entries of *folder* that are not directories — symlinks included (whatever they point at, the
    read decides: a dangling one is dropped, one pointing out of its root is refused with a note)."""
    try:
        entries = [p for p in folder.iterdir() if p.suffix.lower() == ".md" and not p.is_dir()]
    except OSError:  # missing folder (the usual case) or unreadable
        return []
    return sorted(entries, key=lambda p: (p.name.lower(), p.name))


def load_rules(workspace_folders: Sequence[Path], global_config_dir: Path) -> list[Rule]:
    """Every rule, in prompt order; a file reachable twice (same folder listed twice, symlinks) appears once.
    A refused file is in the list too, as a :attr:`Rule.skipped` note."""
    candidates: list[tuple[Path, Path, str]] = []  # (file, the root it must stay in, how the note names that root)
    for folder in workspace_folders:
        folder = Path(folder)
        agents = folder / "AGENTS.md"
        if os.path.lexists(agents) and not agents.is_dir():
            candidates.append((agents, folder, "the workspace"))
        candidates.extend((p, folder, "the workspace") for p in _md_files(folder / ".eca" / "rules"))
    config_dir = Path(global_config_dir)
    candidates.extend((p, config_dir, str(config_dir)) for p in _md_files(config_dir / "rules"))

    rules: list[Rule] = []
    seen: set[Path] = set()
    used: dict[Path, int] = {}  # bytes of rules read per workspace folder
    for path, root, where in candidates:
        try:
            key = path.resolve()
        except (OSError, RuntimeError):
            key = path
        if key in seen:
            continue
        seen.add(key)
        rule = _read_rule(path, root, where)
        if rule is not None and not rule.skipped and root != config_dir:
            size = len(rule.content.encode("utf-8"))
            if used.get(root, 0) + size > MAX_WORKSPACE_RULES_BYTES:
                rule = _refused(path, root, f"the workspace's rules already take "
                                            f"{MAX_WORKSPACE_RULES_BYTES // 1024} KB")
            else:
                used[root] = used.get(root, 0) + size
        if rule is not None:
            rules.append(rule)
    return rules


def render_rules(rules: Sequence[Rule]) -> str:
    """The rules section of the system prompt ("" without rules): each rule under a heading naming its file, so the
    model (and the user reading ``/prompt-show``) can tell where an instruction came from."""
    if not rules:
        return ""
    parts = ["# Rules", "", "Follow these rules from the user and the project:"]
    for rule in rules:
        if rule.skipped:
            parts += ["", f"Note: {rule.skipped}."]
            continue
        parts += ["", f"## {rule.name} ({rule.path})", "", rule.content.strip()]
    return "\n".join(parts) + "\n"
