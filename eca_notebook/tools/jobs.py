"""Background jobs: long commands (a training run, a dev server) started by ``shell_command`` with ``background``.

A job is a shell in a session of its own (``start_new_session``), so its *process group* holds everything it starts;
killing the job kills the group — SIGTERM, then SIGKILL after a grace period. Jobs belong to the chat that started
them and die with it (``chat/delete``), and with the engine (its ``aclose``, i.e. server exit); an ``atexit`` hook
SIGKILLs whatever is left if the interpreter exits without closing the engine.

Output (stdout and stderr, each chunk tagged with its stream) is kept in a ring of at most :data:`RING_BYTES` per
job: a chatty job never grows the server's memory, and the bytes it wrote in total are counted, so a reader that
asks from an offset the ring no longer holds is told how much was dropped. The model reads from an offset (by
default where it stopped last time) through the ``bg_job`` tool; clients read a snapshot of the last lines
(``jobs/readOutput``), which does not move the model's cursor. The names and shapes follow the reference server.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import datetime as dt
import logging
import os
import signal
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from ..protocol import JsonObject, ToolCallRisk
from ._args import ToolArgs
from ._tool import NativeTool
from .base import Prepared, ToolContext, ToolResult

__all__ = ["MAX_JOBS", "RING_BYTES", "BgJobArgs", "BgJobTool", "Job", "JobLimitError", "JobRegistry", "elapsed_text"]

log = logging.getLogger(__name__)

MAX_JOBS = 10  # running at once, per engine (the reference's limit)
RING_BYTES = 1 << 20  # output kept per job
MAX_LINES = 2000  # lines jobs/readOutput returns (the reference's)
EVICT_AFTER_SECONDS = 30 * 60  # a finished job is listed this long
READ_DEFAULT_BYTES = 16 * 1024  # what one read_output returns unless asked for more (and at most the tool limit)
WAIT_DEFAULT_SECONDS = 30
WAIT_MAX_SECONDS = 600
START_WAIT_SECONDS = 1.0  # how long shell_command waits for a background command's first output or early exit


class JobLimitError(Exception):
    """Too many jobs running: kill one first."""


def elapsed_text(seconds: float) -> str:
    """ "5s", "5m23s", "2h7m" — the reference's format."""
    secs = int(seconds)
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60}s"
    return f"{secs // 3600}h{(secs // 60) % 60}m"


@dataclass(eq=False)
class Job:
    """One background shell command and its output ring."""

    id: str
    chat_id: str
    command: str
    summary: str | None
    cwd: str
    ring_bytes: int = RING_BYTES
    pid: int | None = None
    status: Literal["running", "completed", "failed", "killed"] = "running"
    exit_code: int | None = None
    started_at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    total: int = 0  # bytes written, all of them
    kept: int = 0  # bytes in the ring
    cursor: int = 0  # where the model's next read_output starts
    open_streams: int = 0  # pipes still open: something in the group may still be alive
    ring: deque[tuple[int, str, bytes]] = field(default_factory=deque)  # (offset, stream, bytes)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    output_seen: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def first(self) -> int:
        """The offset of the oldest byte still in the ring."""
        return self.total - self.kept

    def feed(self, stream: str, data: bytes) -> None:
        """Append output; the oldest bytes go once the ring holds more than ``ring_bytes``."""
        if not data:
            return
        if len(data) > self.ring_bytes:
            skipped = len(data) - self.ring_bytes
            self.total += skipped
            data = data[skipped:]
        self.ring.append((self.total, stream, data))
        self.total += len(data)
        self.kept += len(data)
        while self.kept > self.ring_bytes:
            offset, kind, chunk = self.ring[0]
            over = self.kept - self.ring_bytes
            if len(chunk) <= over:
                self.ring.popleft()
                self.kept -= len(chunk)
            else:
                self.ring[0] = (offset + over, kind, chunk[over:])
                self.kept -= over
        self.output_seen.set()

    def read(self, offset: int, limit: int) -> tuple[bytes, int, int]:
        """Up to ``limit`` bytes from ``offset`` (or from the oldest byte kept, when that is later): (bytes, where
        they start, where the next read starts)."""
        start = max(offset, self.first)
        parts: list[bytes] = []
        size = 0
        for chunk_offset, _, chunk in self.ring:
            end = chunk_offset + len(chunk)
            if end <= start:
                continue
            piece = chunk[max(0, start - chunk_offset):]
            parts.append(piece[: limit - size])
            size += len(parts[-1])
            if size >= limit:
                break
        data = b"".join(parts)
        return data, start, start + len(data)

    def lines(self, limit: int = MAX_LINES) -> list[dict[str, str]]:
        """The ring as lines tagged with their stream, the last ``limit`` of them (a line split across chunks of
        one stream is joined; a last line without its newline is included)."""
        out: deque[dict[str, str]] = deque(maxlen=limit)
        carry: dict[str, bytes] = {}
        for _, stream, chunk in self.ring:
            pieces = (carry.pop(stream, b"") + chunk).split(b"\n")
            for piece in pieces[:-1]:
                out.append({"text": piece.decode("utf-8", "replace").rstrip("\r"), "stream": stream})
            if pieces[-1]:
                carry[stream] = pieces[-1]
        for stream, rest in carry.items():
            out.append({"text": rest.decode("utf-8", "replace"), "stream": stream})
        return list(out)

    def elapsed(self) -> str:
        return elapsed_text((self.ended or time.monotonic()) - self.started)

    def summary_dict(self, chat_label: str) -> JsonObject:
        """``JobSummary`` on the wire (``summary`` and ``exitCode`` as null when unknown, as the reference sends)."""
        return {"id": self.id, "type": "shell", "status": self.status, "label": self.command, "summary": self.summary,
                "startedAt": self.started_at, "elapsed": self.elapsed(), "exitCode": self.exit_code,
                "chatId": self.chat_id, "chatLabel": chat_label}

    def ended_note(self, tail_lines: int = 20) -> str:
        """What the model is told when the job ended by itself (the reference's words): status, exit code and the
        last lines of its output."""
        text = self.read(self.first, self.ring_bytes)[0].decode("utf-8", "replace")
        tail = "\n".join(text.splitlines()[-tail_lines:])
        note = f"Background job {self.id} (`{self.command}`) {self.status} with exit code {self.exit_code}."
        return note + (f"\nLast {tail_lines} lines of output:\n{tail}" if tail else "")

    def headline(self) -> str:
        name = f'"{self.summary}" ({self.id})' if self.summary else self.id
        code = f" (exit {self.exit_code})" if self.exit_code is not None else ""
        return f"Job {name} — {self.status}{code} | {self.elapsed()} | {self.command}"


_REGISTRIES: weakref.WeakSet[JobRegistry] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:  # pragma: no cover - runs at interpreter exit
    """The interpreter exits without the engine having closed (a crash, ``sys.exit`` in a door): no job may outlive
    it."""
    for registry in list(_REGISTRIES):
        registry.kill_all_now()


class JobRegistry:
    """The background jobs of one engine. ``on_change`` is called whenever the list changes (the engine sends
    ``jobs/updated``)."""

    def __init__(self, *, on_change: Callable[[], None] | None = None, on_end: Callable[[Job], None] | None = None,
                 ring_bytes: int = RING_BYTES, max_jobs: int = MAX_JOBS, kill_grace: float = 2.0,
                 shell: str = "/bin/sh") -> None:
        self.on_change = on_change
        self.on_end = on_end  # a job ended by itself (not killed): its chat's model is told at the next round
        self.ring_bytes = ring_bytes
        self.max_jobs = max_jobs
        self.kill_grace = kill_grace
        self.shell = shell
        self.jobs: dict[str, Job] = {}
        self._next = 1
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        _REGISTRIES.add(self)

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("jobs/updated failed")

    def running_count(self) -> int:
        return sum(1 for job in self.jobs.values() if job.running)

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def current(self, chat_id: str | None = None) -> list[Job]:
        """Jobs not yet evicted (finished ones stay listed for half an hour), oldest first; of one chat if given."""
        now = time.monotonic()
        stale = [j.id for j in self.jobs.values() if j.ended is not None and now - j.ended > EVICT_AFTER_SECONDS]
        for job_id in stale:
            del self.jobs[job_id]
        return [j for j in self.jobs.values() if chat_id is None or j.chat_id == chat_id]

    async def start(self, command: str, *, cwd: str, env: Mapping[str, str], chat_id: str,
                    summary: str | None = None) -> Job:
        """Start ``command`` through the shell in a new session; returns once it runs (JobLimitError when
        ``max_jobs`` are running already)."""
        if self._closed:
            raise JobLimitError("the server is shutting down")
        if self.running_count() >= self.max_jobs:
            raise JobLimitError(f"Maximum number of background jobs reached ({self.max_jobs}). Kill one first.")
        job = Job(id=f"job-{self._next}", chat_id=chat_id, command=command, summary=summary, cwd=cwd,
                  ring_bytes=self.ring_bytes)
        self._next += 1
        proc = await asyncio.create_subprocess_exec(
            self.shell, "-c", command, cwd=cwd, env=dict(env), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        job.pid = proc.pid
        job.open_streams = 2
        self.jobs[job.id] = job
        self._procs[job.id] = proc
        assert proc.stdout is not None and proc.stderr is not None
        self._spawn(self._capture(job, "stdout", proc.stdout))
        self._spawn(self._capture(job, "stderr", proc.stderr))
        self._spawn(self._watch(job, proc))
        log.info("background job %s started (pid %s): %s", job.id, proc.pid, command[:200])
        self._changed()
        return job

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _capture(job: Job, stream: str, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(1 << 16):
                job.feed(stream, chunk)
        finally:
            job.open_streams -= 1

    async def _watch(self, job: Job, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        if job.running:  # (a kill set "killed" first)
            job.status = "completed" if code == 0 else "failed"
            job.exit_code = code
            job.ended = time.monotonic()
        elif job.exit_code is None:
            job.exit_code = code
        self._procs.pop(job.id, None)
        job.done.set()
        log.info("background job %s ended: %s (%s)", job.id, job.status, code)
        if job.status != "killed" and self.on_end is not None:
            await asyncio.sleep(0)  # (the readers take the last output first)
            try:
                self.on_end(job)
            except Exception:
                log.exception("on_end failed")
        self._changed()

    async def wait(self, job: Job, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the job to end; True when it has."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.done.wait(), timeout)
        return job.done.is_set()

    async def kill(self, job_id: str) -> bool:
        """Kill a running job's process group (SIGTERM, SIGKILL after ``kill_grace``); False when it is unknown or
        not running."""
        job = self.jobs.get(job_id)
        if job is None or not job.running:
            return False
        job.status = "killed"
        job.ended = time.monotonic()
        await self._kill_group(job)
        self._changed()
        return True

    async def _kill_group(self, job: Job) -> None:
        if job.pid is None:
            return
        proc = self._procs.get(job.id)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGTERM)
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(proc.wait()), self.kill_grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)  # whatever ignored SIGTERM, or outlived the shell
        if proc is not None:
            await proc.wait()

    async def kill_chat(self, chat_id: str) -> list[str]:
        """Kill the chat's jobs (and anything their groups left running) and forget them: the chat is gone."""
        jobs = [j for j in self.jobs.values() if j.chat_id == chat_id]
        await self._kill_jobs(jobs)
        for job in jobs:
            self.jobs.pop(job.id, None)
        if jobs:
            self._changed()
        return [j.id for j in jobs]

    async def _kill_jobs(self, jobs: list[Job]) -> None:
        targets = []
        for job in jobs:
            if job.running:
                job.status = "killed"
                job.ended = time.monotonic()
                targets.append(job)
            elif job.open_streams > 0:  # the shell ended, a child it left still holds the pipe
                targets.append(job)
        await asyncio.gather(*(self._kill_group(j) for j in targets), return_exceptions=True)

    async def aclose(self) -> None:
        """Kill every job (server exit, engine close)."""
        self._closed = True
        await self._kill_jobs(list(self.jobs.values()))
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def kill_all_now(self) -> None:
        """SIGKILL every group still alive, without waiting (interpreter exit)."""
        for job in self.jobs.values():
            if job.pid is not None and (job.running or job.open_streams > 0):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(job.pid, signal.SIGKILL)


class BgJobArgs(ToolArgs):
    action: Literal["list", "read_output", "wait", "kill"] = Field(
        description="list: this chat's jobs; read_output: output from an offset (default: where the last read "
                    "stopped); wait: until the job ends (at most timeout_seconds), then its new output; kill: stop "
                    "it and everything it started.")
    job_id: str | None = Field(None, description='The job id (e.g. "job-1"); required except for list.')
    offset: int | None = Field(None, ge=0, description="read_output: the byte offset to read from (the 'next offset' "
                                                       "of an earlier read; 0 for the oldest output kept).")
    max_bytes: int | None = Field(None, ge=1, description="read_output/wait: at most this many bytes "
                                                          "(default 16384).")
    timeout_seconds: int | None = Field(None, ge=1, description="wait: the longest to wait, in seconds (default 30, "
                                                                "maximum 600).")


class BgJobTool(NativeTool[BgJobArgs]):
    name = "bg_job"
    description = (
        "Manage background jobs (long-running commands started by shell_command with `background`).\n\n"
        "Actions:\n"
        "- `list`: this chat's jobs with their id, status, elapsed time and command.\n"
        "- `read_output`: new output since your last read (or from `offset`), at most `max_bytes`; the answer gives "
        "the next offset. Output beyond the last 1 MiB is dropped, the answer says how much.\n"
        "- `wait`: wait until the job ends (at most `timeout_seconds`), then read its new output.\n"
        "- `kill`: terminate the job and every process it started.\n\n"
        "Jobs are killed when the chat is deleted or the server exits."
    )
    Args = BgJobArgs
    default_approval = "allow"
    generic_summary = "Managing background job"

    def _prepare(self, args: BgJobArgs, ctx: ToolContext) -> Prepared:
        if args.action != "list" and not args.job_id:
            raise self.fail(f"job_id is required for {args.action}")
        summary = {"list": "Listing background jobs", "read_output": f"Reading output of {args.job_id}",
                   "wait": f"Waiting for {args.job_id}", "kill": f"Killing {args.job_id}"}[args.action]
        return Prepared(args=args.model_dump(), summary=summary)

    def assess_risk(self, prepared: Prepared, ctx: ToolContext) -> ToolCallRisk:
        return ToolCallRisk(level="low", reason="background jobs of this chat")

    async def _run(self, prepared: Prepared, ctx: ToolContext) -> ToolResult:
        registry: JobRegistry | None = ctx.jobs
        if registry is None:
            return ToolResult(output="bg_job: background jobs are not available here.", error=True)
        args = prepared.args
        if args["action"] == "list":
            jobs = registry.current(ctx.chat_id)
            if not jobs:
                return ToolResult(output="No background jobs.")
            return ToolResult(output="\n".join(f"- {job.headline()}" for job in jobs))
        job = registry.get(args["job_id"])
        if job is None or (ctx.chat_id is not None and job.chat_id != ctx.chat_id):
            return ToolResult(output=f"Background job {args['job_id']} not found.", error=True)
        if args["action"] == "kill":
            if await registry.kill(job.id):
                return ToolResult(output=f"Background job {job.id} killed (with every process it started).")
            return ToolResult(output=f"Background job {job.id} is not running (status: {job.status}).", error=True)
        if args["action"] == "wait":
            timeout = min(args.get("timeout_seconds") or WAIT_DEFAULT_SECONDS, WAIT_MAX_SECONDS)
            if not await registry.wait(job, timeout):
                ended = f"Still running after {timeout} s."
            else:
                ended = "It has ended."
            return ToolResult(output=f"{ended}\n{_read_output(job, None, args.get('max_bytes'), ctx)}")
        return ToolResult(output=_read_output(job, args.get("offset"), args.get("max_bytes"), ctx))


def _read_output(job: Job, offset: int | None, max_bytes: int | None, ctx: ToolContext) -> str:
    """The model's view of a job's output from ``offset`` (default: its cursor), bounded; moves the cursor."""
    limit = min(max_bytes or READ_DEFAULT_BYTES, ctx.max_output_bytes)
    wanted = job.cursor if offset is None else offset
    data, start, end = job.read(wanted, limit)
    job.cursor = end
    notes = [job.headline(), f"Output bytes {start}–{end} of {job.total} (next offset {end})."]
    if wanted < start:
        notes.append(f"[{start - wanted} bytes before offset {start} were dropped: only the last "
                     f"{job.ring_bytes // 1024} KiB are kept]")
    if end < job.total:
        notes.append(f"[{job.total - end} more bytes: read again from offset {end}]")
    text = data.decode("utf-8", "replace") if data else "(no new output)"
    return "\n".join(notes) + "\n\n" + text
