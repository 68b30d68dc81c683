"""``@git`` in ``%eca`` prompts: found in the text, sent as a git context, rendered by the engine from the real
workspace repository and seen by the (scripted) model; never mistaken for a kernel variable named ``git``."""

from __future__ import annotations

from pathlib import Path

from eca_notebook.notebook._mentions import find_mentions, git_mentions
from eca_notebook.testing.llm_server import Reply

from ..engine.contexts.test_context_git import make_repo


def last_user_message(llm) -> str:
    return llm.requests[-1].body["messages"][-1]["content"]


def test_git_mentions_are_found_in_order_without_duplicates():
    assert git_mentions("what changed? @git") == [None]
    assert git_mentions("@git:diff then @git:LOG, again @git:diff and @git.") == ["diff", "log", None]
    assert git_mentions("mail me@git.com, use @gitlab or @git.Repo or @git[0]") == []
    assert find_mentions("see @git and @git:diff", {"git": 1}) == []  # reserved: never the kernel variable


def test_eca_prompt_with_git_mentions_sends_the_repository_state(shell, llm, workspace: Path):
    make_repo(workspace)
    shell.run_cell("git = 'a kernel value that must not be described'")
    llm.enqueue(Reply.text("Reviewed."))
    result = shell.run_cell("%eca review @git:diff and @git:log")
    assert result.success
    message = last_user_message(llm)
    assert message.startswith("review @git:diff and @git:log\n\n<contexts")
    assert f'<git repository="{workspace}" part="diff">' in message
    assert "+    return 2  # unstaged change" in message and "+print('staged new file')" in message
    assert '<git repository="' in message.split('part="diff"')[1] and "Commit number 3" in message
    assert "a kernel value" not in message


def test_eca_git_outside_a_repository_is_a_note_for_the_model_not_an_error(shell, llm, workspace: Path, capsys):
    llm.enqueue(Reply.text("No repository here."))
    result = shell.run_cell("%eca what is on my branch? @git")
    assert result.success
    assert f"Not a git repository: {workspace}" in last_user_message(llm)
    out = capsys.readouterr()
    assert "No repository here." in out.out and "Error" not in out.out + out.err
