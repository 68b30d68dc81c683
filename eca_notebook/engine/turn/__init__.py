"""One turn of a chat: building the request, streaming the model's answer, running its tool calls, and keeping
the chat within its context window.

``_prompting`` is the pipeline of a ``chat/prompt`` (slash commands, contexts, system prompt, then the turn);
``_turn`` streams one model answer into contents; ``_toolcall`` runs a tool call through hooks, **approval**
(``_approval``, with ``_risk`` rating a command's risk) and the tool itself; ``_toolbox`` decides which tools a chat is
offered, and ``_client_requests`` is what they may ask the connected clients; ``_window`` measures the context and
**compacts** a long chat; ``_subagents`` runs a spawned agent's chat; ``_small_model`` keeps the embedded model in
its lane; ``_builtins`` and ``_introspect`` answer the built-in commands; ``_notebooks`` tracks the notebooks a turn
touches (per-cell undo). None of them sees the engine: each receives a protocol named for its role, which the engine
satisfies — ``_host``'s ``TurnHost`` (starting a turn in a chat), ``ReportHost`` (what the reports read) and
``Listener`` (a client), the toolbox's ``ToolboxHost``, the pipeline's ``PromptHost``, the built-in commands'
``BuiltinHost``, the subagents' ``SubagentsHost`` — or only the part it uses (``ClientRequests`` gets the
listeners). Below it: ``chats``, ``workspace``, ``contexts``, ``models``, ``config``.
"""

from __future__ import annotations

from ._approval import SessionApprovals
from ._builtins import BuiltinCommands, doctor
from ._client_requests import ClientRequests
from ._host import ChatRunner, Listener, ReportHost, TurnHost
from ._notebooks import UndoLog, revert_tool_call
from ._prompting import PromptPipeline
from ._subagents import Subagents, SubagentsPlugin
from ._toolbox import Toolbox
from ._toolcall import Answer, PendingApproval, ToolCallRunner, answer_approval
from ._turn import CURRENT_TURN, Turn

__all__ = [
    "CURRENT_TURN",
    "Answer",
    "BuiltinCommands",
    "ChatRunner",
    "ClientRequests",
    "Listener",
    "PendingApproval",
    "PromptPipeline",
    "ReportHost",
    "SessionApprovals",
    "Subagents",
    "SubagentsPlugin",
    "ToolCallRunner",
    "Toolbox",
    "Turn",
    "TurnHost",
    "UndoLog",
    "answer_approval",
    "doctor",
    "revert_tool_call",
]
