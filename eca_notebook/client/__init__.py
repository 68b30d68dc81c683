"""The Python API: prompt the assistant from scripts, notebooks and batch jobs — asyncio or blocking.

::

    from eca_notebook.client import EcaClient, SyncEcaClient, ApprovalRules

    async with await EcaClient.start(workspace=".") as eca:          # asyncio (e.g. top-level await in Jupyter)
        result = await eca.prompt("What does this project do?")
        print(result.text, result.usage)

    with SyncEcaClient(workspace=".") as eca:                        # blocking; also inside a running loop
        results = eca.batch(["Summarize README.md", "List the TODOs"], concurrency=2)

The client speaks ECA to an engine running in this process (over an in-memory stream), so everything an editor
sees — streamed contents, tool calls with diffs, approvals, saved chats — is available here too.

**Approvals.** Tool calls that ask for approval (by default: writes, edits, moves, shell commands, and anything
outside the workspace) are answered by a policy, since a script has nobody to click *Approve*. The default,
:data:`DEFAULT_UNATTENDED_POLICY`, rejects everything that changes files or runs code; pass ``approval=`` a callable
(``content -> True | "session" | False``), an :class:`ApprovalRules`, or :data:`MANUAL` to answer yourself with
``approve``/``reject``.
"""

from __future__ import annotations

from ._approval import (
    DEFAULT_UNATTENDED_POLICY,
    MANUAL,
    ApprovalPolicy,
    ApprovalRules,
    UnattendedPolicy,
)
from ._async import EcaClient, PromptStream
from ._executor import BatchExecutor, BatchPrompt, PromptOptions
from ._result import PromptResult, ToolCallRecord, results_table
from ._sync import SyncEcaClient, SyncPromptStream, prompt

__all__ = [
    "DEFAULT_UNATTENDED_POLICY",
    "MANUAL",
    "ApprovalPolicy",
    "ApprovalRules",
    "BatchExecutor",
    "BatchPrompt",
    "EcaClient",
    "PromptOptions",
    "PromptResult",
    "PromptStream",
    "SyncEcaClient",
    "SyncPromptStream",
    "ToolCallRecord",
    "UnattendedPolicy",
    "prompt",
    "results_table",
]
