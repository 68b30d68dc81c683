"""Rules: user-written instructions (``AGENTS.md``, ``.eca/rules/*.md``) that go into the system prompt.

Where they come from, in this order (project first, so the model reads the most specific instructions first):
for each workspace folder ``<folder>/AGENTS.md`` then ``<folder>/.eca/rules/*.md`` (sorted by name), then the
global ``<global_config_dir>/rules/*.md`` (``~/.config/eca/rules`` as in the reference server).

Loading never fails: a rule file that cannot be read or is not UTF-8 is skipped with a warning (one bad file must not
cost the user the others), and a file over 64 KB is cut with a note, because a huge rule would eat the whole context
window on every request.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_RULE_BYTES", "Rule", "load_rules", "render_rules"]

log = logging.getLogger(__name__)

MAX_RULE_BYTES = 64 * 1024


@dataclass
class Rule:
    name: str  # the file name, e.g. "AGENTS.md", "style.md"
    path: Path
    content: str


def _read_rule(path: Path) -> Rule | None:
    try:
        with path.open("rb") as f:
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
    return Rule(name=path.name, path=path, content=text)


def _md_files(folder: Path) -> list[Path]:
    try:
        entries = [p for p in folder.iterdir() if p.suffix.lower() == ".md" and p.is_file()]
    except OSError:  # missing folder (the usual case) or unreadable
        return []
    return sorted(entries, key=lambda p: (p.name.lower(), p.name))


def load_rules(workspace_folders: Sequence[Path], global_config_dir: Path) -> list[Rule]:
    """Every rule, in prompt order; a file reachable twice (same folder listed twice, symlinks) appears once."""
    candidates: list[Path] = []
    for folder in workspace_folders:
        folder = Path(folder)
        agents = folder / "AGENTS.md"
        if agents.is_file():
            candidates.append(agents)
        candidates.extend(_md_files(folder / ".eca" / "rules"))
    candidates.extend(_md_files(Path(global_config_dir) / "rules"))

    rules: list[Rule] = []
    seen: set[Path] = set()
    for path in candidates:
        try:
            key = path.resolve()
        except OSError:
            key = path
        if key in seen:
            continue
        seen.add(key)
        rule = _read_rule(path)
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
        parts += ["", f"## {rule.name} ({rule.path})", "", rule.content.strip()]
    return "\n".join(parts) + "\n"
