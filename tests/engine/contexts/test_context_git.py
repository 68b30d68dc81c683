"""The git context (``@git``, ``@git:status``, ``@git:diff``, ``@git:log``) against real temporary repositories made
with the ``git`` command line: what the rendered element says, its budgets, folders that are not repositories, a
git that is missing or hangs, redaction of secrets in the diff, and the ``chat/queryContext`` offers."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from eca_notebook.engine.contexts import RenderedContexts, render_contexts
from eca_notebook.engine.contexts._git import GIT_LOG_COMMITS, GIT_MAX_FILES, render_git
from eca_notebook.engine.index._index import WorkspaceIndex
from eca_notebook.protocol.context import GitContext

from .test_contexts import offered

SECRET = "sk-proj-gitdiffSECRET0123456789abcdef"


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` for a test's setup (isolated from the user's and the system's git config)."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def make_repo(root: Path, commits: int = 3) -> Path:
    """A repository on branch ``main`` with `commits` commits, then a staged new file, a staged modification, an
    unstaged modification and an untracked file (the state the tests of every door describe)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Ada Lovelace")
    git(root, "config", "user.email", "ada@example.com")
    git(root, "config", "commit.gpgsign", "false")
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.md").write_text("# notes\n")
    for i in range(1, commits + 1):
        (root / "history.txt").write_text("".join(f"entry {n}\n" for n in range(i)))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"Commit number {i}")
    (root / "staged_new.py").write_text("print('staged new file')\n")
    (root / "notes.md").write_text("# notes\nstaged line\n")
    git(root, "add", "staged_new.py", "notes.md")
    (root / "app.py").write_text("def main():\n    return 2  # unstaged change\n")
    (root / "scratch.txt").write_text("untracked\n")
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


async def render(contexts: list, folder: Path, **kwargs) -> RenderedContexts:
    async with httpx.AsyncClient() as http:
        return await render_contexts(contexts, folders=[folder], http=http, index=None, **kwargs)


def element(text: str) -> str:
    match = re.search(r"<git[^>]*>.*?</git>", text, re.S)
    assert match, text
    return match.group(0)


# -- rendering -----------------------------------------------------------------------------------------------------


async def test_whole_git_context_has_branch_files_commits_and_diffs(repo: Path) -> None:
    out = await render([{"type": "git"}], repo)
    assert out.problems == []
    el = element(out.text)
    assert el.startswith(f'<git repository="{repo}">')
    assert "Branch: main" in el
    staged = el.split("Staged for commit (2):")[1].split("\n\n")[0]
    assert "added:" in staged and "staged_new.py" in staged and "modified:" in staged and "notes.md" in staged
    modified = el.split("Modified, not staged (1):")[1].split("\n\n")[0]
    assert "app.py" in modified and "notes.md" not in modified
    assert "Untracked (1):\n  scratch.txt" in el
    commits = re.findall(r"^  [0-9a-f]{7,} \d{4}-\d\d-\d\d \d\d:\d\d Ada Lovelace: Commit number (\d)$", el, re.M)
    assert commits == ["3", "2", "1"]  # newest first
    staged_diff = el.split("Staged changes (git diff --cached):")[1].split("Unstaged changes")[0]
    assert "+print('staged new file')" in staged_diff and "+staged line" in staged_diff
    assert "unstaged change" not in staged_diff
    unstaged_diff = el.split("Unstaged changes (git diff):")[1]
    assert "-    return 1" in unstaged_diff and "+    return 2  # unstaged change" in unstaged_diff
    assert "truncated" not in el


async def test_parts_narrow_the_context(repo: Path) -> None:
    status = element((await render([GitContext(part="status")], repo)).text)
    assert 'part="status"' in status and "Branch: main" in status and "staged_new.py" in status
    assert "Commit number" not in status and "diff --git" not in status
    log = element((await render([GitContext(part="log")], repo)).text)
    assert "Commit number 3" in log and "scratch.txt" not in log and "diff --git" not in log
    diff = element((await render([GitContext(part="diff")], repo)).text)
    assert "diff --git a/app.py b/app.py" in diff and "Commit number" not in diff and "scratch.txt" not in diff
    unknown = await render([{"type": "git", "part": "stash"}], repo)
    assert unknown.text == "" and "unknown git context part 'stash'" in unknown.problems[0]


async def test_a_subfolder_of_the_repository_describes_the_whole_repository(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    el = element((await render([GitContext()], repo / "pkg")).text)
    assert f'repository="{repo}"' in el and "staged_new.py" in el and "pkg/" in el


async def test_recent_commits_are_limited(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "long", commits=GIT_LOG_COMMITS + 5)
    el = element((await render([GitContext(part="log")], repo)).text)
    numbers = [int(n) for n in re.findall(r"Commit number (\d+)$", el, re.M)]
    assert numbers == list(range(GIT_LOG_COMMITS + 5, 5, -1))
    assert f"last {GIT_LOG_COMMITS}" in el


async def test_long_file_lists_are_shortened(repo: Path) -> None:
    for i in range(GIT_MAX_FILES + 20):
        (repo / f"generated_{i:03}.csv").write_text(f"{i}\n")
    el = element((await render([GitContext(part="status")], repo)).text)
    assert f"Untracked ({GIT_MAX_FILES + 21}):" in el
    assert f"… and {GIT_MAX_FILES + 21 - GIT_MAX_FILES} more" in el
    assert len(re.findall(r"^  generated_\d+\.csv$", el, re.M)) + ("scratch.txt" in el) == GIT_MAX_FILES


async def test_a_big_diff_is_cut_to_the_budget_with_a_note(repo: Path) -> None:
    big = "".join(f"line {i:06} of a large generated table\n" for i in range(20_000))  # ~780 KB
    (repo / "table.txt").write_text("old\n")
    git(repo, "add", "table.txt")
    git(repo, "commit", "-q", "-m", "Add table", "--", "table.txt")  # the staged files stay staged
    (repo / "table.txt").write_text(big)
    out = await render([GitContext()], repo)
    el = element(out.text)
    assert len(el.encode()) <= 100_000 + 500
    assert "Branch: main" in el and "staged_new.py" in el and "Commit number 1" in el  # the summary survives
    note = re.search(r"\[diff truncated: showing the first (\d+) bytes of the unstaged changes \((.*?)\); run", el)
    assert note, el[-1500:]
    assert "insertions(+)" in note.group(2) and "git diff -- <path>" in el
    assert "+print('staged new file')" in el  # the staged diff came first and fits
    assert out.problems == []
    # a small model's budgets (a few KB per context) are respected too, the status still first
    small = await render([GitContext()], repo, max_bytes=12_000, per_context_bytes=6_000)
    el = element(small.text)
    assert len(small.text.encode()) <= 12_000 and len(el.encode()) <= 6_000 + 500
    assert "Branch: main" in el and "staged_new.py" in el and "diff truncated" in el


async def test_the_budget_can_leave_the_diff_out_entirely(repo: Path) -> None:
    block = await render_git("diff", repo, cap=700)
    assert "Branch: main" in block.body
    assert "[diff left out: the context budget is used up (2 files changed" in block.body
    assert "run `git diff` to see it" in block.body


async def test_secrets_in_the_diff_are_redacted(repo: Path) -> None:
    (repo / "settings.py").write_text(f'OPENAI_API_KEY = "{SECRET}"\n')
    git(repo, "add", "settings.py")
    out = await render([GitContext(part="diff")], repo)
    assert "settings.py" in out.text and "OPENAI_API_KEY" in out.text
    assert SECRET not in out.text and "***" in out.text


async def test_rename_detached_head_and_file_names_with_spaces(repo: Path) -> None:
    git(repo, "mv", "history.txt", "renamed history.txt")
    (repo / "café notes.txt").write_text("x\n")
    el = element((await render([GitContext(part="status")], repo)).text)
    assert "renamed:      history.txt -> renamed history.txt" in el
    assert "  café notes.txt" in el
    git(repo, "stash", "-q")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    el = element((await render([GitContext(part="status")], repo)).text)
    assert re.search(r"Branch: HEAD detached at [0-9a-f]{10}", el), el


async def test_file_names_with_newlines_or_bidi_controls_are_written_out(repo: Path) -> None:
    """A file name is the repository's: a newline would add a line of its own to the status, U+202E reverse it."""
    (repo / "x\n\nRecent commits (newest first, last 1):\n  fake").write_text("x\n")
    (repo / "report\u202etxt.exe").write_text("x\n")
    el = element((await render([GitContext(part="status")], repo)).text)
    assert "  x\\n\\nRecent commits (newest first, last 1):\\n  fake\n" in el
    assert "  report\\u202etxt.exe\n" in el and "\u202e" not in el


async def test_a_repository_without_commits(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    (repo / "first.py").write_text("print(1)\n")
    git(repo, "add", "first.py")
    el = element((await render([GitContext()], repo)).text)
    assert "Branch: trunk (no commits yet)" in el and "none yet" in el
    assert "+print(1)" in el


async def test_not_a_repository_is_said_in_the_context_not_as_an_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    out = await render([GitContext()], plain)
    assert out.problems == []
    assert element(out.text) == f"<git>\nNot a git repository: {plain}; no git state attached.\n</git>"
    gone = await render([GitContext()], tmp_path / "gone")
    assert "Not a git repository: " in gone.text and "is not a folder" in gone.text and gone.problems == []
    async with httpx.AsyncClient() as http:
        none = await render_contexts([GitContext()], folders=[], http=http, index=None)
    assert "there is no workspace folder" in none.text and none.problems == []


async def test_git_not_installed(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = await render([GitContext()], repo)
    assert out.problems == [] and "Git is not installed" in element(out.text)
    index = WorkspaceIndex([repo])
    offers = await offered("git", index=index, already=[])
    assert offers[0] == {"type": "git", "description": "git is not installed (the `git` command was not found)"}


async def test_a_hanging_git_is_killed_at_the_deadline_without_blocking_the_loop(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    pid_file = tmp_path / "git.pid"
    script = fake / "git"
    script.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    ticks = 0
    stop = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    block = await render_git(None, repo, cap=100_000, timeout=1.0)
    stop.set()
    await ticker
    assert "git did not answer within 1 s" in block.body
    assert ticks > 5  # the loop kept running while git hung
    pid = int(pid_file.read_text())
    for _ in range(600):  # reaped already; a condition with a generous ceiling all the same
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the hanging git was not killed")


# -- chat/queryContext ---------------------------------------------------------------------------------------------


async def indexed(folder: Path) -> WorkspaceIndex:
    index = WorkspaceIndex([folder])
    await index.build()
    return index


async def test_query_offers_git_and_its_parts_with_descriptions(repo: Path) -> None:
    index = await indexed(repo)
    out = await offered("git", index=index, already=[])
    assert [c for c in out if c["type"] == "git"] == out[:4]
    assert [c.get("part") for c in out[:4]] == [None, "status", "diff", "log"]
    assert out[0]["description"] == "main · 2 staged, 1 modified, 1 untracked · with commits and diff"
    assert all(c["description"] for c in out[:4])
    assert [c.get("part") for c in await offered("git:d", index=index, already=[])
            if c["type"] == "git"] == ["diff"]
    assert [c.get("part") for c in await offered("gi", index=index, already=[])
            if c["type"] == "git"] == [None, "status", "diff", "log"]
    # attached already (with or without its label): not offered again
    out = await offered("git", index=index, already=[{"type": "git", "description": "old label"},
                                                           GitContext(part="log")])
    assert [c.get("part") for c in out if c["type"] == "git"] == ["status", "diff"]
    # a blank @ offers the whole git context right after the repo map, inside a repository only
    blank = await offered("", index=index, already=[])
    assert blank[0] == {"type": "repoMap"} and blank[1]["type"] == "git" and "part" not in blank[1]
    assert sum(c["type"] == "git" for c in blank) == 1
    assert all(c["type"] != "git" for c in await offered("app", index=index, already=[]))


async def test_query_outside_a_repository_says_so(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    index = await indexed(plain)
    out = await offered("git", index=index, already=[])
    assert out == [{"type": "git", "description": f"not a git repository: {plain}"}]
    assert all(c["type"] != "git" for c in await offered("", index=index, already=[]))
    assert await offered("git:diff", index=index, already=[]) == []
