"""The notebook tools' front end: the connected client that has notebooks open, asked over ``notebook/*`` requests.

A door's client advertises ``capabilities.codeAssistant.editor.notebooks`` (JupyterLab's panel does); the engine
then hands the tools a :class:`ListenerNotebooks` over the first such listener, the way ``editor/getDiagnostics``
reaches the editor. A door with a front end of its own (a ``%eca`` talking to its notebook's page over a comm) injects
its :class:`~eca_notebook.tools.notebook.NotebookAccess` as ``Engine.notebook_access`` instead.

A client that fails or does not answer in time is treated as not having the notebook open for reads (the file is the
truth we fall back on), but a failed *write* is an error: the user approved a change to the document they see, and
writing the file behind the editor's back would leave it stale.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ...protocol import (
    ChatToolCallUndoResult,
    NotebookApplyEditParams,
    NotebookApplyEditResult,
    NotebookCell,
    NotebookCellEdit,
    NotebookGetCellsParams,
    NotebookGetCellsResult,
    NotebookRunCellsParams,
    NotebookRunCellsResult,
    TextContent,
    WireContent,
)
from ...protocol.errors import RpcError
from ...providers.base import ToolResultMessage
from ..chats import Chat

__all__ = ["ListenerNotebooks", "UndoLog", "named_notebooks", "revert_tool_call"]

log = logging.getLogger(__name__)

READ_TIMEOUT = 30.0
EDIT_TIMEOUT = 60.0
RUN_GRACE = 30.0  # beyond the run's own timeout: the client interrupts the kernel and answers
MAX_UNDO = 500


_SUFFIX = re.compile(r"\.ipynb\b", re.IGNORECASE)
_NAME_TAIL = re.compile(r"[\w./-]{0,255}$")


def named_notebooks(text: str) -> list[str]:
    r"""The ``.ipynb`` paths a message names (``data/analysis.ipynb``). Found from each suffix backwards, never with
    one pattern over the whole text: ``[\w./-]+\.ipynb`` backtracks quadratically on a long run of word
    characters (a 300 KB prompt took minutes)."""
    names = []
    for match in _SUFFIX.finditer(text):
        head = _NAME_TAIL.search(text, max(0, match.start() - 255), match.start())
        if head is not None and head.group():
            names.append(head.group() + text[match.start():match.end()])
    return names


class ListenerNotebooks:
    """:class:`~eca_notebook.tools.notebook.NotebookAccess` over a listener's ``request``."""

    def __init__(self, listener: Any) -> None:
        self.listener = listener

    async def get_cells(self, path: Path) -> list[NotebookCell] | None:
        try:
            raw = await self.listener.request("notebook/getCells", NotebookGetCellsParams(path=str(path)).dump(),
                                              timeout=READ_TIMEOUT)
            result = NotebookGetCellsResult.model_validate(raw or {})
        except Exception as exc:  # noqa: BLE001 - any client failure means "read the file"
            log.info("notebook/getCells for %s failed, reading the file: %s", path, exc)
            return None
        return list(result.cells) if result.open else None

    async def apply_edit(self, path: Path, edits: list[NotebookCellEdit], *, chat_id: str | None,
                         tool_call_id: str | None) -> NotebookApplyEditResult:
        params = NotebookApplyEditParams(path=str(path), edits=edits, chat_id=chat_id, tool_call_id=tool_call_id)
        try:
            raw = await self.listener.request("notebook/applyEdit", params.dump(), timeout=EDIT_TIMEOUT)
        except Exception as exc:
            raise OSError(f"the notebook's front end could not apply the edit: {_reason(exc)}") from None
        return NotebookApplyEditResult.model_validate(raw or {})

    async def run_cells(self, path: Path, cell_ids: list[str], timeout: float) -> NotebookRunCellsResult:
        params = NotebookRunCellsParams(path=str(path), cell_ids=cell_ids, timeout_ms=int(timeout * 1000))
        try:
            raw = await self.listener.request("notebook/runCells", params.dump(), timeout=timeout + RUN_GRACE)
        except TimeoutError:
            return NotebookRunCellsResult(open=True, error=f"the notebook did not finish within {timeout:g} s")
        except Exception as exc:
            raise OSError(f"the notebook's front end could not run the cells: {_reason(exc)}") from None
        return NotebookRunCellsResult.model_validate(raw or {})


def _reason(exc: Exception) -> str:
    """What a failed client request says, its ``error.data`` included (redacted): the model acts on the reason."""
    return exc.describe() if isinstance(exc, RpcError) else str(exc)


def listener_notebooks(listeners: list[Any]) -> ListenerNotebooks | None:
    """Over the first listener that advertised notebooks; None when none did."""
    listener = next((item for item in listeners if getattr(item, "supports_notebooks", False)), None)
    return ListenerNotebooks(listener) if listener is not None else None


class UndoLog:
    """What finished tool calls can undo, by ``(chat id, tool call id)``; the oldest are forgotten past a bound."""

    def __init__(self, limit: int = MAX_UNDO) -> None:
        self.limit = limit
        self._undo: OrderedDict[tuple[str, str], Callable[[], Awaitable[str]]] = OrderedDict()

    def add(self, chat_id: str, call_id: str, undo: Callable[[], Awaitable[str]]) -> None:
        """Keep the undo of a tool call's notebook edit (the oldest beyond ``limit`` are dropped)."""
        self._undo[(chat_id, call_id)] = undo
        while len(self._undo) > self.limit:
            self._undo.popitem(last=False)

    def pop(self, chat_id: str, call_id: str) -> Callable[[], Awaitable[str]] | None:
        """Take the undo of a tool call out (None if there is none or it was dropped)."""
        return self._undo.pop((chat_id, call_id), None)

    def put_back(self, chat_id: str, call_id: str, undo: Callable[[], Awaitable[str]]) -> None:
        """Return an undo taken by :meth:`pop` whose run failed, so the user can try again."""
        self._undo[(chat_id, call_id)] = undo

    def __contains__(self, key: object) -> bool:
        return key in self._undo


async def revert_tool_call(undo_log: UndoLog, chat_id: str, call_id: str, chats: Mapping[str, Chat],
                           emit: Callable[[Chat, str, WireContent], None],
                           save: Callable[[Chat], None]) -> ChatToolCallUndoResult:
    """Revert what a finished call changed (``chat/toolCallUndo``). The model is told in the call's result, so its
    next turn does not build on a change that is gone, and the chat (in ``chats`` once the undo ran) says so
    (``emit``, then ``save``); a refusal (the cell changed since) keeps the undo for a retry."""
    undo = undo_log.pop(chat_id, call_id)
    if undo is None:
        return ChatToolCallUndoResult(undone=False, message="Nothing to undo for this tool call: it was undone "
                                                            "already, or changed nothing that can be undone.")
    try:
        message = await undo()
    except (ValueError, OSError) as exc:
        undo_log.put_back(chat_id, call_id, undo)
        return ChatToolCallUndoResult(undone=False, message=f"Could not undo: {exc}")
    chat = chats.get(chat_id)
    if chat is not None:
        for item in chat.messages:
            if isinstance(item, ToolResultMessage) and item.tool_call_id == call_id:
                item.output += f"\n[Afterwards the user undid this change. {message}]"
        for record in chat.contents:  # a replayed chat shows the call as undone, with no Undo to offer
            content = record.get("content") or {}
            details = content.get("details")
            if content.get("type") == "toolCalled" and content.get("id") == call_id and isinstance(details, dict):
                details["undoable"] = False
        emit(chat, "system", TextContent(text=message))
        save(chat)
    return ChatToolCallUndoResult(undone=True, message=message)
