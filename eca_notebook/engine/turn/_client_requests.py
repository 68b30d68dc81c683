"""What the engine asks its clients: ``editor/getDiagnostics``, ``chat/askQuestion``, ``editor/getDefinition`` and
``editor/getReferences``, each of the first connected client that says it can answer (``supports_…``).

Split from the toolbox because it needs only the listeners: the toolbox hands these requests to the tools (the
:class:`~eca_notebook.tools.base.ToolContext`) and hides a tool no client can serve; the workspace trust asks its
one question with :meth:`ClientRequests.questions`. Each method answers ``None`` when no client can answer, so the
caller can say so instead of waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...protocol import (
    ChatAskQuestionParams,
    ChatAskQuestionResult,
    EditorGetDefinitionParams,
    EditorGetDefinitionResult,
    EditorGetReferencesParams,
    EditorGetReferencesResult,
    JsonObject,
)
from ...protocol.errors import RpcError

if TYPE_CHECKING:
    from ._host import Listener

__all__ = ["DIAGNOSTICS_TIMEOUT", "ClientRequests", "Definitions", "Diagnostics", "Questions", "References"]

DIAGNOSTICS_TIMEOUT = 30.0

Diagnostics = Callable[[str | None], Awaitable[list[JsonObject]]]
Questions = Callable[[ChatAskQuestionParams], Awaitable[ChatAskQuestionResult]]
Definitions = Callable[[EditorGetDefinitionParams], Awaitable[EditorGetDefinitionResult]]
References = Callable[[EditorGetReferencesParams], Awaitable[EditorGetReferencesResult]]


class ClientRequests:
    """Requests to the first connected client that can answer them; ``listeners`` gives the clients connected now
    (the engine's, read at each call: a client may connect or leave between two calls)."""

    def __init__(self, listeners: Callable[[], Sequence[Listener]]) -> None:
        self._listeners = listeners

    def _first(self, capability: str) -> Any:
        return next((item for item in self._listeners() if getattr(item, capability, False)), None)

    def diagnostics(self) -> Diagnostics | None:
        """Ask the first listener that can answer ``editor/getDiagnostics``; None when none can."""
        listener = self._first("supports_diagnostics")
        if listener is None:
            return None

        async def request(uri: str | None) -> list[JsonObject]:
            params = {"uri": uri} if uri else {}
            try:
                result = await listener.request("editor/getDiagnostics", params, timeout=DIAGNOSTICS_TIMEOUT)
            except RpcError as exc:  # the client's reason (error.data included) reaches the model
                raise OSError(f"the editor refused editor/getDiagnostics: {exc.describe()}") from None
            return list((result or {}).get("diagnostics") or [])

        return request

    def questions(self) -> Questions | None:
        """Ask the first listener that can answer ``chat/askQuestion`` (``supports_questions``); None when none can.
        No timeout here: the ``ask_user`` tool bounds the wait, and cancelling it (Stop) cancels the request."""
        listener = self._first("supports_questions")
        if listener is None:
            return None

        async def ask(params: ChatAskQuestionParams) -> ChatAskQuestionResult:
            result = await listener.request("chat/askQuestion", params.dump(), timeout=None)
            return ChatAskQuestionResult.model_validate(result or {"cancelled": True})

        return ask

    def definitions(self) -> Definitions | None:
        """Ask the first listener that answers ``editor/getDefinition`` (``supports_definition``); None when none
        can. No timeout here: the ``editor_definition`` tool bounds the wait (and retries a ``starting`` answer)."""
        listener = self._first("supports_definition")
        if listener is None:
            return None

        async def request(params: EditorGetDefinitionParams) -> EditorGetDefinitionResult:
            result = await listener.request("editor/getDefinition", params.dump(), timeout=None)
            return EditorGetDefinitionResult.model_validate(result or {"status": "error"})

        return request

    def references(self) -> References | None:
        """Ask the first listener that answers ``editor/getReferences`` (``supports_references``); None when none
        can. The ``editor_references`` tool bounds the wait."""
        listener = self._first("supports_references")
        if listener is None:
            return None

        async def request(params: EditorGetReferencesParams) -> EditorGetReferencesResult:
            result = await listener.request("editor/getReferences", params.dump(), timeout=None)
            return EditorGetReferencesResult.model_validate(result or {"status": "error"})

        return request
