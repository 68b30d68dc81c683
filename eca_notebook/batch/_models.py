"""What a batch is made of, as data: work units, their results, rate limits and the engine settings.

Why pydantic models rather than the client's objects: a work unit crosses process and machine boundaries (pickled
to a Dask worker) and a result goes to disk (one JSON line each) and back when a batch is resumed, so both must be
plain, versioned data — no callables, no event loops, no open files.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Literal, Required, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from ..protocol import JsonObject

__all__ = [
    "EngineSpec",
    "FileDiff",
    "ItemPrompt",
    "ItemResult",
    "RateLimit",
    "ToolCallSummary",
    "WorkItem",
    "item_id",
]

#: ``"unattended"``: the client's default policy (nothing that changes files or runs code). ``"workspace"``: file
#: changes (write, edit, move, notebook cell edits) are approved when every path is inside the item's workspace;
#: commands, code and MCP tools are still rejected.
ApprovalMode = Literal["unattended", "workspace"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def item_id(message: str, **parts: Any) -> str:
    """A stable id for a work unit that names none: a hash of what the model is asked (message and the options that
    change the answer), so rerunning the same batch finds the same ids in the results store."""
    data = json.dumps({"message": message, **{k: v for k, v in parts.items() if v is not None}}, sort_keys=True,
                      default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


class ItemPrompt(TypedDict, total=False):
    """A prompt of a batch given as a dict: its message and any :class:`WorkItem` field (validated into one)."""

    message: Required[str]
    id: str
    model: str | None
    behavior: str | None
    contexts: list[JsonObject] | None
    workspace: str | os.PathLike[str] | None
    approval: ApprovalMode | None
    timeout: float | None
    output_schema: JsonObject | None


class WorkItem(_Model):
    """One prompt of a batch: serialisable, so it can run in any process of a cluster."""

    id: str
    message: str
    model: str | None = None
    behavior: str | None = None
    contexts: list[JsonObject] | None = None
    #: a folder (a git repository, a project) or a single file (e.g. a notebook; its folder becomes the workspace)
    #: the item's engine works in; None: the batch's workspace
    workspace: str | None = None
    #: None: ``"workspace"`` when the item names its own workspace, else ``"unattended"``
    approval: ApprovalMode | None = None
    timeout: float | None = None
    #: a JSON schema: the answer must be one JSON object of that shape; it is parsed into ``ItemResult.data``
    output_schema: JsonObject | None = None

    def approval_mode(self) -> ApprovalMode:
        if self.approval is not None:
            return self.approval
        return "workspace" if self.workspace is not None else "unattended"


class FileDiff(_Model):
    """A file an item's tool calls changed: its path (relative to the item's workspace) and the unified diff."""

    path: str
    diff: str
    tool: str


class ToolCallSummary(_Model):
    """A tool call of the item's turn, without the streamed contents."""

    id: str
    name: str
    server: str = "eca"
    arguments: JsonObject = Field(default_factory=dict)
    status: str
    output: str | None = None
    details: JsonObject | None = None
    reason: str | None = None


class ItemResult(_Model):
    """The outcome of one work unit (one line of the results store).

    ``status``: ``"done"`` (answered), ``"failed"`` (an error after every allowed attempt — ``error`` says which)
    or ``"skipped"`` (never sent: the budget was reached or the batch was stopped; skipped results are not stored,
    so a rerun sends them). ``tokens`` is what the item's chat used in all (every model request of the turn);
    ``cost`` is in USD when the model has a price, else None.
    """

    id: str
    prompt: str
    status: Literal["done", "failed", "skipped"]
    text: str = ""
    error: str | None = None
    model: str | None = None
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    attempts: int = 0
    data: JsonObject | None = None
    files: list[FileDiff] = Field(default_factory=list)
    tool_calls: list[ToolCallSummary] = Field(default_factory=list)
    workspace: str | None = None
    #: the Dask worker (or ``"local"``) that produced the result; the only field that differs between executors
    worker: str | None = None
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "done"

    def comparable(self) -> JsonObject:
        """The result without where and how fast it ran: equal for the same item on any executor."""
        return self.model_dump(exclude={"worker", "seconds"})


class RateLimit(_Model):
    """A provider's limits, enforced across every worker of a batch.

    ``max_concurrent``: items being answered at once (a Dask ``Semaphore``-like lease on the scheduler; released when
    a worker dies). ``requests_per_minute`` / ``tokens_per_minute``: token buckets refilled continuously; ``burst``
    is how many requests may start at once from a full bucket (default: a second's worth, at least 1). An item
    reserves its estimated tokens before it starts and the bucket is corrected by what it really used.
    """

    max_concurrent: int | None = Field(default=None, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    burst: float | None = Field(default=None, ge=1)
    #: how long everybody waits after a 429 that outlasted the provider's own retries (seconds)
    penalty_seconds: float = Field(default=5.0, ge=0)


class EngineSpec(_Model):
    """How a worker builds the engine for an item: passed explicitly (workers share nothing with the driver)."""

    workspace: str
    config: JsonObject | None = None
    env: dict[str, str] | None = None
    keep_chats: bool = False
    #: the engine's default model (resolved by the driver when a limit is per provider): the provider whose limit
    #: holds an item that names no model
    default_model: str | None = None

    def key(self, workspace: str | None = None) -> str:
        """Identifies an engine a worker can reuse for items of the same workspace and settings."""
        data = json.dumps([workspace or self.workspace, self.config, self.env], sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()
