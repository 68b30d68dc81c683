"""Params and results of the background-job methods (reference server, ``docs/protocol.md`` "Background Jobs").

A ``shell_command`` call with ``background`` starts a job: a process group of its own whose output is kept in a
bounded ring. Clients list jobs (``jobs/list``), read a snapshot of their output (``jobs/readOutput``, which does not
move the model's read cursor), kill one (``jobs/kill``), and are sent the whole list again whenever it changes
(``jobs/updated``).
"""

from __future__ import annotations

from typing import Literal

from ._base import EcaModel

__all__ = [
    "JobOutputLine",
    "JobStatus",
    "JobSummary",
    "JobsKillParams",
    "JobsKillResult",
    "JobsListResult",
    "JobsReadOutputParams",
    "JobsReadOutputResult",
]

JobStatus = Literal["running", "completed", "failed", "killed"]


class JobSummary(EcaModel):
    """One background job as ``jobs/list`` and ``jobs/updated`` show it. ``summary`` and ``exitCode`` are sent as
    ``null`` when unknown (the reference's shape)."""

    id: str
    type: str = "shell"
    status: JobStatus
    #: The command line.
    label: str
    #: The brief description the model gave in ``background`` (e.g. "dev-server"), or null.
    summary: str | None
    #: ISO 8601, when it started.
    started_at: str
    #: e.g. "5m23s".
    elapsed: str
    exit_code: int | None
    chat_id: str
    #: The chat's title, or its id.
    chat_label: str


class JobsListResult(EcaModel):
    """The answer to ``jobs/list``, and the params of ``jobs/updated``: every job not yet evicted."""

    jobs: list[JobSummary]


class JobsKillParams(EcaModel):
    """``jobs/kill``: terminate a running job (its whole process group)."""

    job_id: str


class JobsKillResult(EcaModel):
    """Whether a running job was killed (false: unknown, or no longer running)."""

    killed: bool


class JobsReadOutputParams(EcaModel):
    """``jobs/readOutput``: a snapshot of a job's buffered output."""

    job_id: str


class JobOutputLine(EcaModel):
    """One line of output and the stream that wrote it."""

    text: str
    stream: Literal["stdout", "stderr"]


class JobsReadOutputResult(EcaModel):
    """The last buffered lines (at most 2000) of the job, its status and exit code (null while it runs)."""

    lines: list[JobOutputLine]
    status: JobStatus
    exit_code: int | None
