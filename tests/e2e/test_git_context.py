"""The git context through a real ``eca-notebook server`` over stdio: ``chat/queryContext`` offers ``@git`` and its
parts for a workspace that is a git repository, and a prompt carrying the offered context reaches the scripted model
with the repository's summary (branch, files, commits, diff) — secrets in the diff redacted."""

from __future__ import annotations

import asyncio
import os

import pytest

from eca_notebook.testing.llm_server import Reply

from ..engine.contexts.test_context_git import SECRET, git, make_repo
from .test_server_chat import completion_requests, sent_texts
from .test_server_commands import run

pytestmark = pytest.mark.e2e


async def test_git_context_is_offered_and_reaches_the_model(spawn, llm, workspace):
    make_repo(workspace)
    (workspace / "settings.py").write_text(f'OPENAI_API_KEY = "{SECRET}"\n')
    git(workspace, "add", "settings.py")
    eca = await spawn()
    await eca.initialize(workspace)
    offered = []
    for _ in range(600):  # a condition, with a generous guard (60 s)
        offered = (await eca.request("chat/queryContext", {"query": "git", "contexts": []}))["contexts"]
        if offered:
            break
        await asyncio.sleep(0.1)
    gits = [c for c in offered if c["type"] == "git"]
    assert gits == offered[:4] and [c.get("part") for c in gits] == [None, "status", "diff", "log"]
    assert gits[0]["description"].startswith("main · 3 staged, 1 modified, 1 untracked")

    llm.enqueue(Reply.text("Looks fine."))
    chat_id, _ = await run(eca, "review my work", model="openai/gpt-4.1", contexts=[gits[0]])
    await eca.wait_idle(chat_id)
    sent = sent_texts("openai-responses", completion_requests(llm)[-1].body)[-1][1]
    assert sent.startswith("review my work\n\n<contexts")
    assert f'<git repository="{workspace}">' in sent and "Branch: main" in sent
    assert "staged_new.py" in sent and "scratch.txt" in sent and "Commit number 3" in sent
    assert "+    return 2  # unstaged change" in sent and "OPENAI_API_KEY" in sent
    assert SECRET not in sent and "***" in sent


async def test_typing_at_and_attaching_git_run_none_of_the_repository_programs(spawn, llm, workspace, tmp_path):
    """#29 hole 4: a clean filter in ``.git/config`` picked by ``.gitattributes`` (and an fsmonitor hook) used to run
    when the user typed ``@`` in a repository someone else prepared."""
    make_repo(workspace)
    marker = tmp_path / "ran"
    program = tmp_path / "evil.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {marker}\ncat\n")
    program.chmod(0o755)
    git(workspace, "config", "filter.evil.clean", str(program))
    git(workspace, "config", "filter.evil.required", "true")
    git(workspace, "config", "core.fsmonitor", str(program))
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    for name in ("app.py", "notes.md", "history.txt"):
        os.utime(workspace / name, (2_000_000_000, 2_000_000_000))  # stat-dirty: git must read them again
    eca = await spawn()
    await eca.initialize(workspace)
    offered = []
    for query in ("", "gi", "git"):
        for _ in range(600):  # a condition, with a generous guard (60 s)
            offered = (await eca.request("chat/queryContext", {"query": query, "contexts": []}))["contexts"]
            if any(c["type"] == "git" for c in offered):
                break
            await asyncio.sleep(0.1)
    gits = [c for c in offered if c["type"] == "git"]
    assert gits and gits[0]["description"].startswith("main · 2 staged, 1 modified, 2 untracked")
    llm.enqueue(Reply.text("Looks fine."))
    chat_id, _ = await run(eca, "review my work", model="openai/gpt-4.1", contexts=[gits[0]])
    await eca.wait_idle(chat_id)
    sent = sent_texts("openai-responses", completion_requests(llm)[-1].body)[-1][1]
    assert "+    return 2  # unstaged change" in sent
    assert not marker.exists()
