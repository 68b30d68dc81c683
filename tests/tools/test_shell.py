"""shell_command with real processes: output, exit codes, process-group killing on timeout and cancellation."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.shell import ShellCommandTool

from .conftest import all_dead, call, pid_alive, write

shell = ShellCommandTool(kill_grace=0.5, drain_timeout=0.3)


def read_pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


async def wait_for_file(path: Path, lines: int = 1) -> None:
    for _ in range(3000):  # a liveness guard, not a timing assertion
        if path.exists() and len(path.read_text().split()) >= lines:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def kill_quietly(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def test_output_and_exit_code(ws: Path, ctx: ToolContext) -> None:
    assert shell.default_approval == "ask" and not shell.mutates
    prepared, result = await call(shell, {"command": "echo out; echo err >&2; echo more"}, ctx)
    assert prepared.summary == "$ echo out; echo err >&2; echo more"
    assert prepared.args["timeout"] == 60000
    assert not result.error
    assert result.output == "Exit code: 0\n\nout\nerr\nmore\n"


def test_the_summary_shows_a_second_line_and_invisible_characters(ctx: ToolContext) -> None:
    """A newline is a second command: it must not pass for a space in the one-line label the user approves, nor a
    bidi override reorder what the label shows."""
    prepared = shell.prepare({"command": "echo  safe\nrm -rf build   # \u202eok"}, ctx)
    assert prepared.summary == "$ echo safe\\nrm -rf build # \\u202eok"


async def test_nonzero_exit_is_an_error(ws: Path, ctx: ToolContext) -> None:
    _, result = await call(shell, {"command": "echo failing; exit 3"}, ctx)
    assert result.error
    assert result.output == "Exit code: 3\n\nfailing\n"


async def test_no_output(ws: Path, ctx: ToolContext) -> None:
    _, result = await call(shell, {"command": "true"}, ctx)
    assert result.output == "Exit code: 0\n\n(no output)"


async def test_stdin_is_closed(ws: Path, ctx: ToolContext) -> None:
    _, result = await call(shell, {"command": "cat; echo after-cat"}, ctx)  # would hang with an open stdin
    assert result.output == "Exit code: 0\n\nafter-cat\n"


async def test_working_directory(ws: Path, ctx: ToolContext) -> None:
    (ws / "sub" / "deeper").mkdir(parents=True)
    _, result = await call(shell, {"command": "pwd", "working_directory": "sub/deeper"}, ctx)
    assert result.output == f"Exit code: 0\n\n{(ws / 'sub' / 'deeper').resolve()}\n"
    _, default = await call(shell, {"command": "pwd"}, ctx)
    assert default.output == f"Exit code: 0\n\n{ws.resolve()}\n"


@pytest.mark.parametrize(
    "args, message",
    [
        ({"command": "ls", "working_directory": ".."}, "shell_command: working_directory must be inside the workspace"),
        ({"command": "ls", "working_directory": "/"}, "shell_command: working_directory must be inside the workspace"),
        ({"command": "ls", "working_directory": "nope"},
         "shell_command: working_directory not found or not a directory: nope"),
        ({"command": "ls", "working_directory": "file.txt"},
         "shell_command: working_directory not found or not a directory: file.txt"),
        ({}, "shell_command: missing required argument 'command'"),
        ({"command": ""}, "shell_command: argument 'command' must not be empty"),
        ({"command": "ls", "timeout": "soon"}, "shell_command: argument 'timeout' must be an integer (got 'soon')"),
        ({"command": "ls", "timeout": 0}, "shell_command: argument 'timeout' must be >= 1 (got 0)"),
    ],
)  # fmt: skip
async def test_bad_input(ws: Path, ctx: ToolContext, args: dict, message: str) -> None:
    write(ws / "file.txt", "")
    prepared, result = await call(shell, args, ctx)
    assert prepared.error is not None and prepared.error.startswith(message)
    assert result.error


async def test_symlink_escape_as_working_directory(ws: Path, ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (ws / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    prepared = shell.prepare({"command": "ls", "working_directory": "link"}, ctx)
    assert prepared.error is not None and "must be inside the workspace" in prepared.error


async def test_timeout_is_clamped_and_string_accepted(ws: Path, ctx: ToolContext) -> None:
    assert shell.prepare({"command": "ls", "timeout": "9999999"}, ctx).args["timeout"] == 600000
    assert shell.prepare({"command": "ls", "timeout": "1500"}, ctx).args["timeout"] == 1500


async def test_timeout_kills_the_whole_process_group(ws: Path, ctx: ToolContext) -> None:
    pidfile = ws / "pids"
    command = "sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; echo started; wait"
    _, result = await call(shell, {"command": command, "timeout": 300}, ctx)
    pids = read_pids(pidfile)
    try:
        assert result.error
        assert result.output == (
            "Command timed out after 300 ms; it was killed with its whole process group.\nOutput so far:\nstarted\n"
        )
        assert len(pids) == 2
        assert all_dead(pids)
    finally:
        kill_quietly(pids)


async def test_sigterm_ignoring_children_get_sigkilled(ws: Path, ctx: ToolContext) -> None:
    command = "sh -c 'trap \"\" TERM; echo $$ > pids; sleep 100' & sleep 100"
    _, result = await call(shell, {"command": command, "timeout": 300}, ctx)
    pids = read_pids(ws / "pids")
    try:
        assert result.error and "timed out" in result.output
        assert all_dead(pids)
    finally:
        kill_quietly(pids)


async def test_cancellation_kills_the_whole_process_group(ws: Path, ctx: ToolContext) -> None:
    prepared = shell.prepare({"command": "sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; wait"}, ctx)
    task = asyncio.create_task(shell.run(prepared, ctx))
    await wait_for_file(ws / "pids", lines=2)
    pids = read_pids(ws / "pids")
    try:
        assert all(pid_alive(pid) for pid in pids)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert all_dead(pids)
    finally:
        kill_quietly(pids)


async def test_background_child_holding_the_pipe_does_not_hang(ws: Path, ctx: ToolContext) -> None:
    _, result = await call(shell, {"command": "(sleep 100; echo late) & echo $! > pids; echo done"}, ctx)
    (pid,) = read_pids(ws / "pids")
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)  # the subshell and its sleep: the group the tool started
    except ProcessLookupError:
        pass
    assert not result.error
    assert result.output == "Exit code: 0\n\ndone\n"


async def test_output_is_truncated_with_note(ws: Path) -> None:
    ctx = ToolContext(workspace_folders=[ws], max_output_lines=5, max_output_bytes=10_000)
    _, result = await call(shell, {"command": "seq 1 100000"}, ctx)
    body = result.output.split("\n")
    assert body[:7] == ["Exit code: 0", "", "1", "2", "3", "4", "5"]
    assert body[-1] == (
        "[output truncated: showing 5 of 100000 lines / 10 B of 575 KB; "
        "redirect the output to a file and grep or read it]"
    )


async def test_killed_by_signal_is_reported(ws: Path, ctx: ToolContext) -> None:
    _, result = await call(shell, {"command": "kill -9 $$"}, ctx)
    assert result.error
    assert result.output == "Exit code: -9 (killed by SIGKILL)\n\n(no output)"


# -- what must be asked (issue #12, 3) -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["cat ../outside/secret.txt", "cd .. && cat outside/secret.txt", "cat ~/x",
                                     'cat "$HOME/x"', "echo x > /tmp/eca-x", "cat /etc/passwd"])
def test_commands_reaching_outside_are_flagged(command: str, ws: Path, ctx: ToolContext) -> None:
    prepared = shell.prepare({"command": command}, ctx)
    assert prepared.error is None
    assert prepared.outside_workspace is True
    assert prepared.paths[0] == ws.resolve() and len(prepared.paths) > 1  # the outside paths are listed too


@pytest.mark.parametrize("command", ["cat $(printf x)", "while read f; do cat \"$f\"; done < list", "echo 'open"])
def test_commands_that_cannot_be_analysed_must_ask(command: str, ctx: ToolContext) -> None:
    prepared = shell.prepare({"command": command}, ctx)
    assert prepared.error is None and prepared.outside_workspace is False
    assert prepared.must_ask


@pytest.mark.parametrize("command", ["ls -la", "git status", "pytest -q > out.log 2>&1", "cat a.txt | wc -l"])
def test_plain_inside_commands_are_not_flagged(command: str, ctx: ToolContext) -> None:
    prepared = shell.prepare({"command": command}, ctx)
    assert prepared.outside_workspace is False and prepared.must_ask is None


def test_cd_is_followed_from_the_working_directory(ws: Path, ctx: ToolContext) -> None:
    (ws / "sub").mkdir()
    assert not shell.prepare({"command": "cd .. && ls", "working_directory": "sub"}, ctx).outside_workspace
    assert shell.prepare({"command": "cd ../.. && ls", "working_directory": "sub"}, ctx).outside_workspace
