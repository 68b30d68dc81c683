"""The background-job registry with real processes: output kept in a bounded ring (total bytes counted), read from an
offset, a snapshot of tagged lines, and a kill that takes the whole process group (no orphan survives)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eca_notebook.tools.base import ToolContext
from eca_notebook.tools.jobs import BgJobTool, Job, JobLimitError, JobRegistry
from tests._waiting import until


def alive(pid: int) -> bool:
    """A live (not zombie) process with this pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


async def test_ring_keeps_the_last_bytes_and_counts_all():
    job = Job(id="job-1", chat_id="c", command="x", summary=None, cwd="/", ring_bytes=100)
    for i in range(50):
        job.feed("stdout", f"{i:03d}\n".encode())  # 200 bytes in all
    assert job.total == 200 and job.kept == 100 and job.first == 100
    data, start, end = job.read(0, 1000)  # from an offset no longer kept: from the oldest kept
    assert (start, end) == (100, 200) and data.startswith(b"025\n")
    data, start, end = job.read(180, 8)
    assert data == b"045\n046\n" and (start, end) == (180, 188)
    job.feed("stderr", b"x" * 500)  # one chunk bigger than the ring
    assert job.kept == 100 and job.total == 700
    assert job.lines()[-1] == {"text": "x" * 100, "stream": "stderr"}


async def test_a_job_runs_is_read_from_an_offset_and_killed_with_its_group(tmp_path: Path):
    changes: list[int] = []
    registry = JobRegistry(on_change=lambda: changes.append(1), kill_grace=2.0)
    # the shell starts a child of its own: both are in the job's process group
    job = await registry.start("sleep 300 & echo child $!; echo started; echo oops >&2; wait",
                               cwd=str(tmp_path), env=dict(os.environ), chat_id="chat-a", summary="server")
    await until(lambda: b"started" in job.read(0, 10_000)[0] and b"oops" in job.read(0, 10_000)[0])
    text = job.read(0, 10_000)[0].decode()
    child = int(text.split("child ")[1].split()[0])
    assert alive(job.pid) and alive(child)
    lines = job.lines()
    assert {"text": "oops", "stream": "stderr"} in lines and {"text": "started", "stream": "stdout"} in lines
    offset = text.index("started")
    assert job.read(offset, 100)[0].decode().startswith("started")
    summary = registry.current()[0].summary_dict("My chat")
    assert summary["status"] == "running" and summary["exitCode"] is None and summary["summary"] == "server"
    assert summary["chatId"] == "chat-a" and summary["label"].startswith("sleep 300")
    assert await registry.kill(job.id) is True
    assert job.status == "killed"
    await until(lambda: not alive(child) and not alive(job.pid))
    assert await registry.kill(job.id) is False  # no longer running
    assert changes  # jobs/updated was due
    await registry.aclose()


async def test_jobs_of_a_chat_die_with_it_and_all_with_the_registry(tmp_path: Path):
    registry = JobRegistry()
    mine = await registry.start("sleep 300", cwd=str(tmp_path), env=dict(os.environ), chat_id="a")
    other = await registry.start("sleep 300", cwd=str(tmp_path), env=dict(os.environ), chat_id="b")
    assert await registry.kill_chat("a") == [mine.id]
    await until(lambda: not alive(mine.pid))
    assert alive(other.pid) and registry.get(mine.id) is None
    await registry.aclose()
    await until(lambda: not alive(other.pid))


async def test_a_finished_job_has_its_exit_code_and_the_limit_holds(tmp_path: Path):
    registry = JobRegistry(max_jobs=1)
    done = await registry.start("exit 3", cwd=str(tmp_path), env=dict(os.environ), chat_id="a")
    assert await registry.wait(done, 30)
    assert (done.status, done.exit_code) == ("failed", 3)
    await registry.start("sleep 300", cwd=str(tmp_path), env=dict(os.environ), chat_id="a")
    with pytest.raises(JobLimitError):
        await registry.start("sleep 300", cwd=str(tmp_path), env=dict(os.environ), chat_id="a")
    await registry.aclose()


async def test_a_chatty_job_stays_within_its_ring(tmp_path: Path):
    registry = JobRegistry(ring_bytes=64 * 1024)
    # 4 MiB of output, as fast as the shell can write it
    job = await registry.start("head -c 4194304 /dev/zero | tr '\\0' 'a'", cwd=str(tmp_path), env=dict(os.environ),
                               chat_id="a")
    assert await registry.wait(job, 60)
    await until(lambda: job.open_streams == 0)
    assert job.total == 4 * 1024 * 1024 and job.kept == 64 * 1024
    assert sum(len(chunk) for _, _, chunk in job.ring) == 64 * 1024
    await registry.aclose()


async def test_the_bg_job_tool_reads_from_the_cursor_waits_and_kills(tmp_path: Path):
    registry = JobRegistry()
    ctx = ToolContext(workspace_folders=[tmp_path], jobs=registry, chat_id="a")
    tool = BgJobTool()
    job = await registry.start("echo one; sleep 0.2; echo two; sleep 300", cwd=str(tmp_path), env=dict(os.environ),
                               chat_id="a")
    await until(lambda: b"two" in job.read(0, 100)[0])
    first = await tool.run(tool.prepare({"action": "read_output", "job_id": job.id}, ctx), ctx)
    assert "one\ntwo" in first.output and "next offset 8" in first.output
    again = await tool.run(tool.prepare({"action": "read_output", "job_id": job.id}, ctx), ctx)
    assert "(no new output)" in again.output  # from where the last read stopped
    from_offset = await tool.run(tool.prepare({"action": "read_output", "job_id": job.id, "offset": 4}, ctx), ctx)
    assert from_offset.output.endswith("\n\ntwo\n")
    waited = await tool.run(tool.prepare({"action": "wait", "job_id": job.id, "timeout_seconds": 1}, ctx), ctx)
    assert waited.output.startswith("Still running after 1 s.")
    listed = await tool.run(tool.prepare({"action": "list"}, ctx), ctx)
    assert job.id in listed.output and "running" in listed.output
    # another chat's model does not see it
    other = ToolContext(workspace_folders=[tmp_path], jobs=registry, chat_id="b")
    hidden = await tool.run(tool.prepare({"action": "kill", "job_id": job.id}, other), other)
    assert hidden.error and "not found" in hidden.output and job.running
    killed = await tool.run(tool.prepare({"action": "kill", "job_id": job.id}, ctx), ctx)
    assert not killed.error and job.status == "killed"
    await until(lambda: not alive(job.pid))
    await registry.aclose()
