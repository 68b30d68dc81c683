"""Rules loading (order, skipping, truncation) and rendering for the system prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eca_notebook.engine.workspace._rules import (
    MAX_RULE_BYTES,
    MAX_WORKSPACE_RULES_BYTES,
    Rule,
    load_rules,
    render_rules,
)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws1, ws2, glob = tmp_path / "ws1", tmp_path / "ws2", tmp_path / "config" / "eca"
    for p in (ws1, ws2, glob):
        p.mkdir(parents=True)
    return ws1, ws2, glob


def test_order_agents_then_project_rules_sorted_then_global(layout: tuple[Path, Path, Path]) -> None:
    ws1, ws2, glob = layout
    write(ws1 / "AGENTS.md", "agents one")
    write(ws1 / ".eca" / "rules" / "b.md", "rule b")
    write(ws1 / ".eca" / "rules" / "a.md", "rule a")
    write(ws1 / ".eca" / "rules" / "notes.txt", "not a rule")
    write(ws2 / ".eca" / "rules" / "z.md", "rule z")
    write(ws2 / "AGENTS.md", "agents two")
    write(glob / "rules" / "global.md", "global rule")
    (ws1 / ".eca" / "rules" / "dir.md").mkdir()

    rules = load_rules([ws1, ws2], glob)
    assert [(r.path, r.content) for r in rules] == [
        (ws1 / "AGENTS.md", "agents one"),
        (ws1 / ".eca" / "rules" / "a.md", "rule a"),
        (ws1 / ".eca" / "rules" / "b.md", "rule b"),
        (ws2 / "AGENTS.md", "agents two"),
        (ws2 / ".eca" / "rules" / "z.md", "rule z"),
        (glob / "rules" / "global.md", "global rule"),
    ]
    assert [r.name for r in rules][:2] == ["AGENTS.md", "a.md"]


def test_nothing_to_load(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    assert load_rules([ws1], glob) == []
    assert load_rules([], glob / "missing") == []
    assert render_rules([]) == ""


def test_same_folder_twice_loads_once(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / "AGENTS.md", "once")
    assert [r.content for r in load_rules([ws1, ws1], glob)] == ["once"]


def test_unreadable_non_utf8_and_empty_files_are_skipped(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / ".eca" / "rules" / "a.md", b"\xff\xfe\x00bad")
    write(ws1 / ".eca" / "rules" / "b.md", "   \n")
    write(ws1 / ".eca" / "rules" / "c.md", "good")
    locked = write(ws1 / ".eca" / "rules" / "d.md", "secret")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):  # running as root: permissions don't stop reading
            locked.chmod(0o644)
            locked.unlink()
        rules = load_rules([ws1], glob)
    finally:
        if locked.exists():
            locked.chmod(0o644)
    assert [r.content for r in rules] == ["good"]


def test_dangling_symlink_is_skipped(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / ".eca" / "rules" / "ok.md", "ok")
    (ws1 / ".eca" / "rules" / "gone.md").symlink_to(ws1 / "nowhere.md")
    assert [r.name for r in load_rules([ws1], glob)] == ["ok.md"]


def test_huge_rule_is_truncated_with_a_note(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    # a multi-byte character straddles the limit: it must be dropped, not make the file unreadable
    body = "x" * (MAX_RULE_BYTES - 1) + "é" + "tail" * 1000
    write(ws1 / "AGENTS.md", body)
    (rule,) = load_rules([ws1], glob)
    assert rule.content.startswith("x" * 1000)
    assert "tail" not in rule.content
    assert "truncated" in rule.content.lower()
    assert len(rule.content.encode()) < MAX_RULE_BYTES + 500


def test_rule_exactly_at_limit_is_not_truncated(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / "AGENTS.md", "y" * MAX_RULE_BYTES)
    (rule,) = load_rules([ws1], glob)
    assert rule.content == "y" * MAX_RULE_BYTES


def test_bom_is_dropped(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / "AGENTS.md", "\ufeffhello".encode())
    assert load_rules([ws1], glob)[0].content == "hello"


def test_render_puts_each_rule_under_a_heading_with_its_path(tmp_path: Path) -> None:
    rules = [Rule("AGENTS.md", tmp_path / "AGENTS.md", "Use tabs.\n"),
             Rule("style.md", tmp_path / "style.md", "Be brief.")]
    text = render_rules(rules)
    first = text.index(f"## AGENTS.md ({tmp_path / 'AGENTS.md'})")
    second = text.index(f"## style.md ({tmp_path / 'style.md'})")
    assert first < text.index("Use tabs.") < second < text.index("Be brief.")


FAKE_KEY = "sk-outside-rule-FAKE-1234567890abcdef"


def test_a_rule_symlinked_out_of_the_workspace_is_refused_with_a_note(layout: tuple[Path, Path, Path],
                                                                       tmp_path: Path) -> None:
    ws1, _, glob = layout
    outside = write(tmp_path / "outside" / "netrc.md", f"machine x password {FAKE_KEY}\n")
    (ws1 / "AGENTS.md").symlink_to(outside)
    (ws1 / ".eca" / "rules").mkdir(parents=True)
    (ws1 / ".eca" / "rules" / "env.md").symlink_to("/proc/self/environ")
    write(ws1 / "docs" / "style.md", "Prefer pathlib.")
    (ws1 / ".eca" / "rules" / "style.md").symlink_to(ws1 / "docs" / "style.md")  # inside: followed
    rules = load_rules([ws1], glob)
    assert [(r.name, r.skipped) for r in rules] == [
        ("AGENTS.md", "rule AGENTS.md skipped: symlink points outside the workspace"),
        ("env.md", "rule .eca/rules/env.md skipped: symlink points outside the workspace"),
        ("style.md", None),
    ]
    assert rules[2].content == "Prefer pathlib."
    text = render_rules(rules)
    assert FAKE_KEY not in text and "machine x" not in text
    assert "Note: rule AGENTS.md skipped: symlink points outside the workspace." in text


def test_the_users_own_rules_stay_in_the_config_folder(layout: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ws1, _, glob = layout
    write(ws1 / "secret.md", "workspace text")
    (glob / "rules").mkdir()
    (glob / "rules" / "ws.md").symlink_to(ws1 / "secret.md")
    (rule,) = load_rules([], glob)
    assert rule.skipped == f"rule rules/ws.md skipped: symlink points outside {glob}" and rule.content == ""


def test_special_files_are_never_read(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    (ws1 / ".eca" / "rules").mkdir(parents=True)
    os.mkfifo(ws1 / ".eca" / "rules" / "pipe.md")  # opening it to read would block for ever
    (rule,) = load_rules([ws1], glob)
    assert rule.skipped == "rule .eca/rules/pipe.md skipped: not a regular file"


def test_secrets_in_a_rule_are_redacted(layout: tuple[Path, Path, Path]) -> None:
    ws1, _, glob = layout
    write(ws1 / "AGENTS.md", f"Use the key {FAKE_KEY}.\nDEPLOY_TOKEN=abcDEF123456xyz\n")
    (rule,) = load_rules([ws1], glob)
    assert FAKE_KEY not in rule.content and "abcDEF123456xyz" not in rule.content
    assert "DEPLOY_TOKEN=***" in rule.content


def test_a_workspaces_rules_together_are_capped_and_never_push_out_the_users(layout: tuple[Path, Path, Path]) -> None:
    """A repository with a thousand 64 KB rule files put 64 MB into every request."""
    ws1, _, glob = layout
    for i in range(12):
        write(ws1 / ".eca" / "rules" / f"r{i:02}.md", "x" * (MAX_RULE_BYTES - 10))
    write(glob / "rules" / "mine.md", "Never push to main.")
    rules = load_rules([ws1], glob)
    read = [r for r in rules if not r.skipped]
    assert sum(len(r.content) for r in read if r.name != "mine.md") <= MAX_WORKSPACE_RULES_BYTES
    assert [r.name for r in read][-1] == "mine.md" and read[-1].content == "Never push to main."
    skipped = [r.skipped for r in rules if r.skipped]
    assert len(skipped) == 12 - (len(read) - 1) > 0
    assert all(s.endswith(f"the workspace's rules already take {MAX_WORKSPACE_RULES_BYTES // 1024} KB")
               for s in skipped), skipped
