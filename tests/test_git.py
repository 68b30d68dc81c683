"""Git without the repository's programs: a real repository whose config (and ``.gitattributes``) points each of git's
program settings at a script that leaves a marker file, then every git use of the project — the ``@`` completion
(``chat/queryContext``), ``@git`` (status, log, diff) and :func:`~eca_notebook._git.run_git` itself for commands
that would open an editor, run a hook, verify a signature or contact a remote — and no marker may appear."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from eca_notebook._git import GitError, run_git
from eca_notebook.engine.contexts import query_context
from eca_notebook.engine.contexts._git import render_git
from eca_notebook.engine.index._index import WorkspaceIndex

from .engine.contexts.test_context_git import git, make_repo


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "marker"


@pytest.fixture
def program(tmp_path: Path, marker: Path) -> Path:
    """A script that records it ran (and, as a filter, passes its input through)."""
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"ran $0 $*\" >> {shlex.quote(str(marker))}\ncat\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


async def every_git_use(repo: Path) -> str:
    """The @ completion and every part of @git, their texts joined."""
    index = WorkspaceIndex([repo])
    offers = [c.dump() for c in await query_context("git", index=index, already=[])]
    blank = [c.dump() for c in await query_context("", index=index, already=[])]
    texts = [str(offers), str(blank)]
    for part in (None, "status", "log", "diff"):
        texts.append((await render_git(part, repo, cap=100_000)).body)
    return "\n".join(texts)


def ran(marker: Path) -> str:
    return marker.read_text() if marker.exists() else ""


def touch_all(repo: Path) -> None:
    """Make every tracked file stat-dirty (same content, new mtime): git must read it, through its clean filter."""
    for name in ("app.py", "notes.md", "history.txt"):
        os.utime(repo / name, (2_000_000_000, 2_000_000_000))


@pytest.mark.parametrize("key", ["clean", "process"])
async def test_a_filter_driver_in_the_repository_config_does_not_run(
        repo: Path, program: Path, marker: Path, key: str) -> None:
    git(repo, "config", f"filter.evil.{key}", str(program))
    git(repo, "config", "filter.evil.smudge", str(program))
    git(repo, "config", "filter.evil.required", "true")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    touch_all(repo)
    text = await every_git_use(repo)
    assert ran(marker) == ""
    assert "Branch: main" in text and "+    return 2  # unstaged change" in text  # and @git still works
    assert "main · 2 staged, 1 modified, 2 untracked" in text


async def test_a_filter_from_an_included_config_file_and_with_a_dotted_name(
        repo: Path, program: Path, marker: Path, tmp_path: Path) -> None:
    extra = tmp_path / "included.cfg"
    extra.write_text(f'[filter "a.b"]\n\tclean = {program}\n\trequired = true\n')
    git(repo, "config", "include.path", str(extra))
    (repo / ".gitattributes").write_text("*.py filter=a.b\n")
    touch_all(repo)
    await every_git_use(repo)
    assert ran(marker) == ""


async def test_a_filter_in_a_submodule_config_does_not_run(
        tmp_path: Path, program: Path, marker: Path) -> None:
    sub = make_repo(tmp_path / "sub")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "all")
    repo = make_repo(tmp_path / "super")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    git(repo / "sub", "config", "filter.subevil.clean", str(program))
    (repo / "sub" / ".gitattributes").write_text("* filter=subevil\n")
    for name in ("app.py", "notes.md"):
        os.utime(repo / "sub" / name, (2_000_000_000, 2_000_000_000))
    text = await every_git_use(repo)
    assert ran(marker) == ""
    assert "sub" in text


async def test_fsmonitor_textconv_external_diff_and_pager_do_not_run(
        repo: Path, program: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(repo, "config", "core.fsmonitor", str(program))
    git(repo, "config", "diff.evil.textconv", str(program))
    git(repo, "config", "diff.evil.command", str(program))
    git(repo, "config", "diff.external", str(program))
    git(repo, "config", "core.pager", str(program))
    git(repo, "config", "pager.log", str(program))
    git(repo, "config", "status.submoduleSummary", "true")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    for name in ("GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER"):  # the server's own environment is not passed on
        monkeypatch.setenv(name, str(program))
    touch_all(repo)
    text = await every_git_use(repo)
    assert ran(marker) == ""
    assert "diff --git a/app.py b/app.py" in text


async def test_a_git_in_the_workspace_is_not_found_through_a_relative_path_entry(
        repo: Path, marker: Path, program: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "git").write_text(program.read_text())
    (repo / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{os.pathsep}.{os.pathsep}{os.environ['PATH']}")
    text = await every_git_use(repo)
    assert ran(marker) == ""
    assert "Branch: main" in text


async def test_hooks_and_editors_do_not_run(repo: Path, program: Path, marker: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = repo / ".git" / "hooks"
    for hook in ("pre-commit", "commit-msg", "post-commit", "post-index-change", "prepare-commit-msg"):
        (hooks / hook).write_text(program.read_text())
        (hooks / hook).chmod(0o755)
    git(repo, "config", "core.editor", str(program))
    git(repo, "config", "sequence.editor", str(program))
    monkeypatch.setenv("EDITOR", str(program))
    monkeypatch.setenv("GIT_EDITOR", str(program))
    await every_git_use(repo)
    await run_git(repo, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "x")
    with pytest.raises(GitError):  # the editor is ":": the message stays empty, the commit is refused
        await run_git(repo, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "--allow-empty")
    assert ran(marker) == ""


async def test_a_signature_is_not_verified_with_the_repository_gpg_program(
        repo: Path, program: Path, marker: Path) -> None:
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    commit = (f"tree {tree}\nparent {head}\nauthor A <a@example.com> 1700000000 +0000\n"
              "committer A <a@example.com> 1700000000 +0000\n"
              "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nSigned\n")
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=commit,
                         capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "update-ref", "HEAD", sha)
    for key in ("gpg.program", "gpg.openpgp.program"):
        git(repo, "config", key, str(program))
    git(repo, "config", "log.showSignature", "true")
    text = await every_git_use(repo)
    assert "Signed" in text
    await run_git(repo, "log", "--show-signature", "-n1")
    assert ran(marker) == ""


@pytest.mark.parametrize("url", ["ext::sh -c {program}", "ssh://example.invalid/x.git"])
async def test_no_transport_reaches_a_program(repo: Path, program: Path, marker: Path, url: str) -> None:
    git(repo, "remote", "add", "origin", url.format(program=program))
    for key in ("protocol.ext.allow", "protocol.ssh.allow", "protocol.https.allow", "protocol.allow"):
        git(repo, "config", key, "always")
    git(repo, "config", "core.sshCommand", str(program))
    git(repo, "config", "core.askPass", str(program))
    git(repo, "config", "credential.helper", f"!{program}")
    with pytest.raises(GitError):
        await run_git(repo, "fetch", "origin")
    assert ran(marker) == ""


async def test_a_core_worktree_pointing_elsewhere_is_not_described(repo: Path, tmp_path: Path) -> None:
    """``core.worktree`` in the repository's config can aim git at any folder; with a crafted index, @git:diff would
    carry that folder's files (``~/.ssh``, another project) to the model."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET\n")
    git(repo, f"--work-tree={outside}", "add", "secret.txt")
    (outside / "secret.txt").write_text("TOPSECRET CHANGED\n")
    git(repo, "config", "core.worktree", str(outside))
    text = await every_git_use(repo)
    assert "TOPSECRET" not in text and "secret.txt" not in text
    assert "core.worktree" in text and str(outside) in text


async def test_a_git_file_or_commondir_naming_a_repository_above_is_not_described(repo: Path) -> None:
    """A cloned folder whose ``.git`` is a file saying ``gitdir: ../../.git`` (a dotfiles repository in the home
    directory, say), or a ``.git`` folder whose ``commondir`` names it: its commits, and every file it tracks as a
    deleted file in the diff, went to the model."""
    (repo / "dotfile.txt").write_text("machine x password DOTFILE-SECRET\n")
    git(repo, "add", "dotfile.txt")
    git(repo, "commit", "-q", "-m", "private dotfiles message")
    clone = repo / "code" / "clone"
    clone.mkdir(parents=True)
    (clone / ".git").write_text("gitdir: ../../.git\n")
    (clone / "README.md").write_text("hi\n")
    text = await every_git_use(clone)
    assert "DOTFILE-SECRET" not in text and "private dotfiles message" not in text
    assert "whose own work tree is another folder" in text
    # a .git folder of its own whose commondir names the repository above: its history and index are that one's
    shared = repo / "code" / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (shared / ".git" / "commondir").write_text("../../../.git\n")
    # and a .git file naming an admin folder of its own that names it back but takes the history from above
    admin = repo / "code" / "crafted" / ".eca" / "adm"
    admin.mkdir(parents=True)
    (admin.parents[1] / ".git").write_text("gitdir: .eca/adm\n")
    (admin / "gitdir").write_text(str(admin.parents[1] / ".git") + "\n")
    (admin / "HEAD").write_text("ref: refs/heads/main\n")
    (admin / "commondir").write_text("../../../../.git\n")
    for folder in (shared, admin.parents[1]):
        text = await every_git_use(folder)
        assert "DOTFILE-SECRET" not in text and "private dotfiles message" not in text
        assert "another repository" in text or "another folder" in text, text


async def test_linked_worktrees_and_submodules_are_still_described(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    (linked / "app.py").write_text("changed in the linked worktree\n")
    el = (await render_git(None, linked, cap=100_000)).body
    assert "Branch: side" in el and "changed in the linked worktree" in el
    sub = make_repo(tmp_path / "sub")
    git(sub, "add", "-A")
    git(sub, "commit", "-q", "-m", "all")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    (repo / "vendored" / "app.py").write_text("changed in the submodule\n")
    el = (await render_git(None, repo / "vendored", cap=100_000)).body
    assert "Branch: main" in el and "changed in the submodule" in el
